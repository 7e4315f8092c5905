package deploy

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestOpenerThroughput measures the opening of one big per-coordinate batch
// of pre-sealed messages: in the analyzer on all cores, then on 1 and on 2
// opener processes (each on all cores) over an embedded JetStream server,
// with the wall time, the messages per second and every process's CPU
// time. Set SHUFFLEFL_OPENBENCH=1 to run it (SHUFFLEFL_OPENBENCH_MESSAGES
// sets the batch's size, 100,000 by default); docs/PERFORMANCE.md quotes
// it.
func TestOpenerThroughput(t *testing.T) {
	if os.Getenv("SHUFFLEFL_OPENBENCH") == "" {
		t.Skip("set SHUFFLEFL_OPENBENCH=1")
	}
	n := 100_000
	if v := os.Getenv("SHUFFLEFL_OPENBENCH_MESSAGES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SHUFFLEFL_OPENBENCH_MESSAGES=%q", v)
		}
	}
	f := newOpenFixture(t, "ss-double")
	ms := sealMany(t, f, n)
	count := func(seal.Label, []float64) {}
	cpu0, t0 := selfCPU(), time.Now()
	st, err := f.analyzer(t, nil, 0, t.Logf).openLocal(1, ms, count)
	if err != nil || st.Accepted != int64(n) {
		t.Fatalf("local: %+v, %v", st, err)
	}
	wall := time.Since(t0)
	t.Logf("in the analyzer (%d cores): %d messages in %.2fs = %.0f messages/s, CPU %.2fs", runtimeProcs(), n, wall.Seconds(), float64(n)/wall.Seconds(), selfCPU()-cpu0)
	keyFile := filepath.Join(t.TempDir(), "analyzer-hpke.key")
	pem, _ := f.creds.HPKE.MarshalPEM()
	if err := os.WriteFile(keyFile, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 2} {
		openOnProcesses(t, f, ms, k, keyFile)
	}
}

// openOnProcesses opens ms on k opener processes over a fresh embedded
// server and logs the wall time, the rate and the processes' CPU times.
func openOnProcesses(t *testing.T, f *openFixture, ms []*wire.SealedMessage, k int, keyFile string) {
	srv, err := jetstream.Embedded(t.TempDir(), jetstream.WithLoopbackPort(0))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	conn, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	a := f.analyzer(t, conn, 0, t.Logf)
	var pids []int
	for range k {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenerChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), openerChildEnv+"=serve", openerURLEnv+"="+srv.URL(), openerKeyEnv+"="+keyFile)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		pids = append(pids, cmd.Process.Pid)
	}
	time.Sleep(2 * time.Second) // the processes start and join the group
	before := make([]float64, k)
	for i, p := range pids {
		before[i] = procCPU(t, p)
	}
	cpu0, t0 := selfCPU(), time.Now()
	st, err := a.openRemote(context.Background(), 1, ms, func(seal.Label, []float64) {})
	if err != nil || st.Accepted != int64(len(ms)) {
		t.Fatalf("%d openers: %+v, %v", k, st, err)
	}
	wall := time.Since(t0)
	var per []string
	for i, p := range pids {
		c := procCPU(t, p) - before[i]
		per = append(per, strconv.FormatFloat(c, 'f', 2, 64)+"s")
	}
	t.Logf("on %d opener processes: %d messages in %.2fs = %.0f messages/s; CPU of the openers %s, of the analyzer with the embedded server %.2fs",
		k, len(ms), wall.Seconds(), float64(len(ms))/wall.Seconds(), strings.Join(per, " and "), selfCPU()-cpu0)
}

// sealMany seals n coordinate messages of round 1 (coordinate i mod d) on
// every core.
func sealMany(t *testing.T, f *openFixture, n int) []*wire.SealedMessage {
	t.Helper()
	ms := make([]*wire.SealedMessage, n)
	d := f.st.Dim()
	var wg sync.WaitGroup
	workers := runtimeProcs()
	for w := range workers {
		wg.Go(func() {
			s, err := seal.NewSealer(f.creds.HPKEPublic, f.st.RunID)
			if err != nil {
				t.Error(err)
				return
			}
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for i := w; i < n; i += workers {
				ct, err := s.Seal(1, seal.Coord(i%d), []float64{r.NormFloat64()})
				if err != nil {
					t.Error(err)
					return
				}
				ms[i] = &wire.SealedMessage{Ciphertext: ct}
			}
		})
	}
	wg.Wait()
	return ms
}

func runtimeProcs() int { return goMaxProcs() }

// selfCPU is this process's CPU time (user and system) in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// procCPU is process pid's CPU time (user and system) in seconds, from
// /proc (Linux).
func procCPU(t *testing.T, pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100 // clock ticks (USER_HZ = 100)
}
