package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// clusteredCrashConfig is the run of TestClusteredAnalyzerCrash.
func clusteredCrashConfig(clients, rounds int) round.Config {
	return clusteredConfig("ifca-dp", clients, rounds, map[string]float64{"k": 2, "nu": 1})
}

// TestClusteredCrashChild is the child process of
// TestClusteredAnalyzerCrash: an ifca-dp analyzer that runs until it is
// killed or the run is done. It does nothing in a normal test run.
func TestClusteredCrashChild(t *testing.T) {
	if os.Getenv("SFL_CCHILD") != "analyzer" {
		t.Skip("child process of TestClusteredAnalyzerCrash")
	}
	dir := os.Getenv("SFL_DIR")
	clients, _ := strconv.Atoi(os.Getenv("SFL_CLIENTS"))
	rounds, _ := strconv.Atoi(os.Getenv("SFL_ROUNDS"))
	cfg := clusteredCrashConfig(clients, rounds)
	st, err := NewSetup(cfg, testSplit(t, cfg), "ccrash")
	if err != nil {
		t.Fatal(err)
	}
	seed := cfg.Seed
	creds, err := LoadCredentials(filepath.Join(dir, "pki"), "analyzer", "")
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "analyzer.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := DialShufflerControl(creds, os.Getenv("SFL_C"))
	if err != nil {
		t.Fatal(err)
	}
	an, err := NewAnalyzer(AnalyzerConfig{Setup: st, DB: db, Key: creds.HPKE, Shuffler: wire.NewShufflerControlClient(conn),
		RoundTimeout: time.Minute, TestSeed: &seed, Workers: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	l, err := listenRetry(os.Getenv("SFL_A"))
	if err != nil {
		t.Fatal(err)
	}
	g := AnalyzerServer(creds, an)
	go g.Serve(l)
	if _, err := an.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.GracefulStop()
}

func startClusteredChild(t *testing.T, dir, analyzer, control string, clients, rounds int) *exec.Cmd {
	t.Helper()
	env := append(os.Environ(), "SFL_CCHILD=analyzer", "SFL_DIR="+dir, "SFL_A="+analyzer, "SFL_C="+control,
		"SFL_CLIENTS="+strconv.Itoa(clients), "SFL_ROUNDS="+strconv.Itoa(rounds))
	return startTestChild(t, "TestClusteredCrashChild", env, filepath.Join(dir, "analyzer.log"))
}

// TestClusteredAnalyzerCrash kills an ifca-dp analyzer (k = 2) with SIGKILL
// while round 2 is half collected, restarts it from its database, and
// checks that it resumed from round 1's checkpoint with both models (a
// restart that lost a hypothesis would end elsewhere), that the run ends
// with the engine's k models, every round released once, and every
// client's d-privacy ledger charged n/nu once per round.
func TestClusteredAnalyzerCrash(t *testing.T) {
	longtest.Skip(t) // re-executes the test binary
	const clients, rounds = 20, 3
	dir := t.TempDir()
	writeDevCerts(t, filepath.Join(dir, "pki"), clients)
	cfg := clusteredCrashConfig(clients, rounds)
	split := testSplit(t, cfg)
	eng, _ := simulate(t, cfg, split)
	st, err := NewSetup(cfg, split, "ccrash")
	if err != nil {
		t.Fatal(err)
	}
	init := append([][]float64{st.Init}, st.Hypotheses...)
	seed := cfg.Seed
	aaddr, paddr, caddr := freeAddr(t), freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	td := testDir{t, dir}
	load := td.creds
	openDB := td.db
	serve := func(g *grpc.Server, addr string) { serveAt(t, g, addr) }
	screds := load("shuffler", "")
	conn, err := DialAnalyzer(screds, aaddr)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := NewShuffler(ShufflerConfig{Setup: st, DB: openDB("shuffler.db"), Registry: screds.Registry, AnalyzerKey: screds.HPKEPublic,
		Analyzer: wire.NewAnalyzerClient(conn), TestSeed: &seed, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	pub, ctl := ShufflerServers(screds, sh)
	serve(pub, paddr)
	serve(ctl, caddr)
	child := startClusteredChild(t, dir, aaddr, caddr, clients, rounds)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	cdbs := td.startClients(ctx, st, paddr, &seed, clients, &wg, errs)
	for sh.Stats().Forwarded < 1 {
		if ctx.Err() != nil {
			t.Fatal("round 1 never finished")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for n := sh.Stats().Accepted; n <= clients || n >= 2*clients; n = sh.Stats().Accepted {
		if ctx.Err() != nil {
			t.Fatal("never caught round 2 in progress")
		}
		time.Sleep(time.Millisecond)
	}
	kill(t, child)
	t.Logf("analyzer killed after round 1; shuffler stats then: %+v", sh.Stats())
	child = startClusteredChild(t, dir, aaddr, caddr, clients, rounds)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("restarted analyzer: %v (see %s)", err, filepath.Join(dir, "analyzer.log"))
	}
	models := resumedModels(td, st, rounds)
	worst, moved := modelsDiff(t, models, eng.Models(), init)
	if !moved {
		t.Fatal("the simulation's models never moved")
	}
	// Exact: ifca-dp's released values lie on power-of-two grids, so the
	// k-means sums do not depend on the order (TestLocalClusteredEqualsSimulation).
	if worst != 0 {
		t.Fatalf("after the crash the k models differ from the simulation's by %.3g (relative)", worst)
	}
	checkDLedgers(t, cdbs, st, rounds)
	t.Logf("SIGKILL and restart of the ifca-dp analyzer: k = %d models equal to the simulation's (largest relative difference %.3g); every d-privacy ledger charged %d × %v", st.K, worst, rounds, st.DLevel)
}

// resumedModels checks that the restarted analyzer resumed after round 1
// and released every round, and returns the k models of its last
// checkpoint.
func resumedModels(td testDir, st *Setup, rounds int) [][]float64 {
	t := td.t
	b, err := os.ReadFile(filepath.Join(td.dir, "analyzer.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "resumed after round 1") {
		t.Fatalf("the restarted analyzer did not resume after round 1 (see %s)", filepath.Join(td.dir, "analyzer.log"))
	}
	return releasedModels(td, st, st.K, rounds)
}

// checkDLedgers checks that every client's ledger holds one charge of the
// d-privacy level of ifca-dp per round.
func checkDLedgers(t *testing.T, cdbs []*store.DB, st *Setup, rounds int) {
	for i, db := range cdbs {
		es, err := db.LedgerStore().Entries(ClientID(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != rounds {
			t.Fatalf("client %d's ledger has %d charges for %d released rounds", i, len(es), rounds)
		}
		for _, e := range es {
			if e.LocalEpsilon != st.DLevel || e.Mechanism != "ifca-dp" {
				t.Fatalf("client %d's charge %+v, want the d-privacy level %v of ifca-dp", i, e, st.DLevel)
			}
		}
	}
}
