package deploy

import (
	"context"
	"crypto/ed25519"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// writeDevCerts writes the layout of `shufflefl certs` for n clients.
func writeDevCerts(t *testing.T, dir string, n int) {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA("test CA", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.crt", pki.EncodeCertPEM(ca.Cert))
	for _, r := range []pki.Role{pki.RoleShuffler, pki.RoleAnalyzer} {
		is, err := ca.Issue(r, pki.DefaultHosts, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		k, err := pki.EncodeKeyPEM(is.Key)
		if err != nil {
			t.Fatal(err)
		}
		write(string(r)+".crt", pki.EncodeCertPEM(is.Cert))
		write(string(r)+".key", k)
	}
	hk, err := seal.GenerateKey(seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	hp, err := hk.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	write("analyzer-hpke.key", hp)
	write("analyzer-hpke.pub", hk.Public().MarshalPEM())
	reg := pki.NewRegistry()
	for i := 0; i < n; i++ {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Add(ClientID(i), pub); err != nil {
			t.Fatal(err)
		}
		k, err := pki.EncodeKeyPEM(priv)
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join("clients", ClientID(i)+".key"), k)
	}
	rj, err := reg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	write("clients.json", rj)
}

// crashEnv is the child's configuration.
type crashEnv struct {
	role, dir, proto                 string
	clients, rounds                  int
	analyzer, shufflerPub, shufflerC string
}

func (e crashEnv) environ() []string {
	return append(os.Environ(), "SFL_CHILD="+e.role, "SFL_DIR="+e.dir, "SFL_PROTO="+e.proto,
		"SFL_CLIENTS="+strconv.Itoa(e.clients), "SFL_ROUNDS="+strconv.Itoa(e.rounds),
		"SFL_A="+e.analyzer, "SFL_P="+e.shufflerPub, "SFL_C="+e.shufflerC)
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestCrashChild is the child process of the crash tests: it runs the
// analyzer or the shuffler (SFL_CHILD) until it is killed or, for the
// analyzer, the run is done. It does nothing in a normal test run.
func TestCrashChild(t *testing.T) {
	role := os.Getenv("SFL_CHILD")
	if role == "" {
		t.Skip("child process of the crash tests")
	}
	dir := os.Getenv("SFL_DIR")
	clients, _ := strconv.Atoi(os.Getenv("SFL_CLIENTS"))
	rounds, _ := strconv.Atoi(os.Getenv("SFL_ROUNDS"))
	cfg := testConfig(os.Getenv("SFL_PROTO"), clients, rounds)
	st, err := NewSetup(cfg, testSplit(t, cfg), "crash")
	if err != nil {
		t.Fatal(err)
	}
	seed := cfg.Seed
	creds, err := LoadCredentials(filepath.Join(dir, "pki"), role, "")
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, role+".db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	serve := func(g *grpc.Server, addr string) {
		l, err := listenRetry(addr)
		if err != nil {
			t.Fatal(err)
		}
		go g.Serve(l)
	}
	switch role {
	case "analyzer":
		conn, err := DialShufflerControl(creds, os.Getenv("SFL_C"))
		if err != nil {
			t.Fatal(err)
		}
		an, err := NewAnalyzer(AnalyzerConfig{Setup: st, DB: db, Key: creds.HPKE, Shuffler: wire.NewShufflerControlClient(conn),
			RoundTimeout: time.Minute, TestSeed: &seed, Workers: 1, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		serve(AnalyzerServer(creds, an), os.Getenv("SFL_A"))
		if _, err := an.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	case "shuffler":
		conn, err := DialAnalyzer(creds, os.Getenv("SFL_A"))
		if err != nil {
			t.Fatal(err)
		}
		sh, err := NewShuffler(ShufflerConfig{Setup: st, DB: db, Registry: creds.Registry, AnalyzerKey: creds.HPKEPublic,
			Analyzer: wire.NewAnalyzerClient(conn), TestSeed: &seed, Logf: t.Logf, ShuffleMemory: spillBudgetEnv()})
		if err != nil {
			t.Fatal(err)
		}
		sh.onSpill = spillPauseEnv(t)
		pub, ctl := ShufflerServers(creds, sh)
		serve(pub, os.Getenv("SFL_P"))
		serve(ctl, os.Getenv("SFL_C"))
		select {} // until killed
	}
}

// listenRetry listens on addr, retrying while a killed predecessor's
// socket is released.
func listenRetry(addr string) (net.Listener, error) {
	var err error
	for i := 0; i < 100; i++ {
		var l net.Listener
		if l, err = net.Listen("tcp", addr); err == nil {
			return l, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, err
}

// startChild starts the test binary as a child running e.role.
func startChild(t *testing.T, e crashEnv) *exec.Cmd {
	t.Helper()
	return startTestChild(t, "TestCrashChild", e.environ(), filepath.Join(e.dir, e.role+".log"))
}

// startTestChild starts the test binary running only test, with env, its
// output appended to logPath; the child is killed when the test ends if it
// is still running.
func startTestChild(t *testing.T, test string, env []string, logPath string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = env
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		}
		logf.Close()
	})
	return cmd
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestCrashRestart kills the analyzer, then (in its own run) the shuffler,
// with SIGKILL in the middle of the run, restarts it from its database,
// and checks that the run completes with the model the simulation computes
// (so no accepted report was lost or counted twice: test mode makes the
// deployment's values the simulation's), every round released exactly
// once, and every client's ledger charged for every round it reported in
// (never below what was released).
func TestCrashRestart(t *testing.T) {
	longtest.Skip(t) // re-executes the test binary
	for _, victim := range []string{"analyzer", "shuffler"} {
		t.Run(victim, func(t *testing.T) { crashRun(t, victim) })
	}
}

func crashRun(t *testing.T, victim string) {
	const clients, rounds = 30, 4
	proto := "ss-double"
	dir := t.TempDir()
	writeDevCerts(t, filepath.Join(dir, "pki"), clients)
	cfg := testConfig(proto, clients, rounds)
	split := testSplit(t, cfg)
	eng, _ := simulate(t, cfg, split)
	st, err := NewSetup(cfg, split, "crash")
	if err != nil {
		t.Fatal(err)
	}
	seed := cfg.Seed
	env := crashEnv{role: victim, dir: dir, proto: proto, clients: clients, rounds: rounds,
		analyzer: freeAddr(t), shufflerPub: freeAddr(t), shufflerC: freeAddr(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	td := testDir{t, dir}
	// The survivor runs in this process.
	an, sh := startSurvivor(ctx, td, env, st, &seed)
	child := startChild(t, env)
	// The clients.
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	cdbs := td.startClients(ctx, st, env.shufflerPub, &seed, clients, &wg, errs)
	// Kill the victim once round 1 is through and round 2 under way.
	progress := func() int64 {
		if an != nil {
			return an.Round()
		}
		return sh.Stats().Forwarded
	}
	waitRound2(ctx, td, sh, progress, clients)
	kill(t, child)
	if sh != nil {
		t.Logf("analyzer killed after round %d; shuffler stats then: %+v", progress(), sh.Stats())
	} else {
		t.Logf("shuffler killed after round %d", progress())
	}
	child = startChild(t, env)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	model := finalModel(ctx, td, an, child, st, rounds)
	if b, err := os.ReadFile(filepath.Join(dir, "shuffler.log")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "resumed") {
				t.Log(strings.TrimSpace(line))
			}
		}
	}
	want := eng.Weights()
	var worst float64
	for j := range want {
		worst = math.Max(worst, math.Abs(model[j]-want[j])/math.Max(1, math.Abs(want[j])))
	}
	if worst > 1e-9 {
		t.Fatalf("after the crash the model differs from the simulation's by %.3g (relative)", worst)
	}
	for i, db := range cdbs {
		es, err := db.LedgerStore().Entries(ClientID(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != rounds {
			t.Fatalf("client %d's ledger has %d charges for %d released rounds", i, len(es), rounds)
		}
	}
	t.Logf("%s: SIGKILL and restart; model equal to the simulation's (largest relative difference %.3g); every ledger charged %d times", victim, worst, rounds)
}

// startSurvivor starts, in this process, the service env.role does not
// kill: the shuffler when the analyzer is the victim, else the analyzer
// (which then drives the run).
func startSurvivor(ctx context.Context, td testDir, env crashEnv, st *Setup, seed *uint64) (*Analyzer, *Shuffler) {
	t := td.t
	serve := func(g *grpc.Server, addr string) { serveAt(t, g, addr) }
	if env.role == "analyzer" {
		creds := td.creds("shuffler", "")
		conn, err := DialAnalyzer(creds, env.analyzer)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := NewShuffler(ShufflerConfig{Setup: st, DB: td.db("shuffler.db"), Registry: creds.Registry, AnalyzerKey: creds.HPKEPublic,
			Analyzer: wire.NewAnalyzerClient(conn), TestSeed: seed, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sh.Close)
		pub, ctl := ShufflerServers(creds, sh)
		serve(pub, env.shufflerPub)
		serve(ctl, env.shufflerC)
		return nil, sh
	}
	creds := td.creds("analyzer", "")
	conn, err := DialShufflerControl(creds, env.shufflerC)
	if err != nil {
		t.Fatal(err)
	}
	an, err := NewAnalyzer(AnalyzerConfig{Setup: st, DB: td.db("analyzer.db"), Key: creds.HPKE, Shuffler: wire.NewShufflerControlClient(conn),
		RoundTimeout: time.Minute, TestSeed: seed, Workers: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	serve(AnalyzerServer(creds, an), env.analyzer)
	go func() { _, _ = an.Run(ctx) }()
	return an, nil
}

// waitRound2 waits until round 1 is through and round 2 is under way, with
// some of its reports accepted and others not yet.
func waitRound2(ctx context.Context, td testDir, sh *Shuffler, progress func() int64, clients int) {
	t := td.t
	for progress() < 1 {
		if ctx.Err() != nil {
			t.Fatal("round 1 never finished")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var sdb *store.DB
	if sh == nil {
		sdb = td.db("shuffler.db") // a second connection to the child's database
	}
	partial := func() bool {
		if sh != nil {
			n := sh.Stats().Accepted
			return n > int64(clients) && n < 2*int64(clients)
		}
		r, err := sdb.InboxRound(2)
		return err == nil && r.Reports > 0 && r.Reports < int64(clients)
	}
	for !partial() {
		if ctx.Err() != nil {
			t.Fatal("never caught round 2 in progress")
		}
		time.Sleep(time.Millisecond)
	}
}

// finalModel waits for the run to finish and returns the analyzer's last
// model: the surviving analyzer's, or the restarted one's last checkpoint
// (every round of its log released).
func finalModel(ctx context.Context, td testDir, an *Analyzer, child *exec.Cmd, st *Setup, rounds int) []float64 {
	t := td.t
	if an != nil {
		for an.Round() < int64(rounds) && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		model := an.Model()
		kill(t, child)
		return model
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("restarted analyzer: %v (see %s)", err, filepath.Join(td.dir, "analyzer.log"))
	}
	return releasedModels(td, st, 1, rounds)[0]
}

// releasedModels checks that the analyzer's database has every round
// released and its last checkpoint is of round rounds, and returns that
// checkpoint's k models.
func releasedModels(td testDir, st *Setup, k, rounds int) [][]float64 {
	t := td.t
	adb := td.db("analyzer.db")
	cp, err := adb.LatestCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if cp.Round != int64(rounds) {
		t.Fatalf("last checkpoint of round %d, want %d", cp.Round, rounds)
	}
	models, err := unpackModels(cp.Model, k, st.Dim())
	if err != nil {
		t.Fatal(err)
	}
	log, err := adb.RoundLog()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		if e.Status != store.RoundReleased {
			t.Fatalf("round %d is %s, want released", e.Round, e.Status)
		}
	}
	return models
}
