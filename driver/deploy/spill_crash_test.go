package deploy

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// The crash child's disk shuffle settings (TestCrashChild): SFL_SPILL is
// the shuffler's round memory budget in bytes, SFL_SPILL_PAUSE the stage
// of the disk shuffle at which it logs "spill: paused at STAGE" and waits
// to be killed.
func spillBudgetEnv() int64 {
	b, _ := strconv.ParseInt(os.Getenv("SFL_SPILL"), 10, 64)
	return b
}

func spillPauseEnv(t *testing.T) func(string) {
	stage := os.Getenv("SFL_SPILL_PAUSE")
	if stage == "" {
		return nil
	}
	return func(s string) {
		if s == stage {
			t.Logf("spill: paused at %s", s)
			select {} // until killed
		}
	}
}

// TestCrashSpill kills the shuffler (SIGKILL) in the middle of round 1's
// disk shuffle (every round is shuffled on disk: a budget of one byte) —
// after its messages were scattered to the spill files and before the
// batch was saved; and, in a second run, after the batch was saved and
// before its first forward — restarts it, and checks that
// the run completes with the simulation's model (nothing lost or counted
// twice), every round released once and every ledger charged for every
// round. After the first kill the round is still open in the inbox: the
// restarted shuffler discards the spill files and shuffles afresh (nothing
// was forwarded). After the second, it forwards the saved batch, never a
// fresh shuffle: each round is shuffled once in all.
func TestCrashSpill(t *testing.T) {
	longtest.Skip(t) // re-executes the test binary
	for _, stage := range []string{"scattered", "saved"} {
		t.Run(stage, func(t *testing.T) { crashSpill(t, stage) })
	}
}

func crashSpill(t *testing.T, stage string) {
	const clients, rounds = 20, 3
	dir := t.TempDir()
	writeDevCerts(t, filepath.Join(dir, "pki"), clients)
	cfg := testConfig("ss-double", clients, rounds)
	split := testSplit(t, cfg)
	eng, _ := simulate(t, cfg, split)
	st, err := NewSetup(cfg, split, "crash")
	if err != nil {
		t.Fatal(err)
	}
	seed := cfg.Seed
	env := crashEnv{role: "shuffler", dir: dir, proto: "ss-double", clients: clients, rounds: rounds,
		analyzer: freeAddr(t), shufflerPub: freeAddr(t), shufflerC: freeAddr(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	td := testDir{t, dir}
	an, _ := startSurvivor(ctx, td, env, st, &seed)
	logPath := filepath.Join(dir, "shuffler.log")
	child := startTestChild(t, "TestCrashChild", append(env.environ(), "SFL_SPILL=1", "SFL_SPILL_PAUSE="+stage), logPath)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	cdbs := td.startClients(ctx, st, env.shufflerPub, &seed, clients, &wg, errs)
	for !strings.Contains(readFile(logPath), "spill: paused at "+stage) {
		if ctx.Err() != nil {
			t.Fatalf("the shuffler never reached the %s stage (see %s)", stage, logPath)
		}
		time.Sleep(5 * time.Millisecond)
	}
	round := an.Round()
	if files, _ := filepath.Glob(filepath.Join(dir, "spill", "round-1", "*.spill")); stage == "scattered" && len(files) == 0 {
		t.Fatal("no spill files at the scattered stage")
	}
	kill(t, child)
	t.Logf("shuffler killed with a disk shuffle at the %s stage (analyzer at round %d)", stage, round)
	child = startTestChild(t, "TestCrashChild", append(env.environ(), "SFL_SPILL=1"), logPath)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	model := finalModel(ctx, td, an, child, st, rounds)
	want := eng.Weights()
	var worst float64
	for j := range want {
		worst = math.Max(worst, math.Abs(model[j]-want[j])/math.Max(1, math.Abs(want[j])))
	}
	if worst > 1e-9 {
		t.Fatalf("after the crash the model differs from the simulation's by %.3g (relative)", worst)
	}
	releasedModels(td, st, 1, rounds)
	for i, db := range cdbs {
		if es, err := db.LedgerStore().Entries(ClientID(i)); err != nil || len(es) != rounds {
			t.Fatalf("client %d's ledger: %d charges for %d released rounds (%v)", i, len(es), rounds, err)
		}
	}
	log := readFile(logPath)
	resumed := strings.Contains(log, "forwarding its saved batch")
	if (stage == "saved") != resumed {
		t.Errorf("killed at %s: the restarted shuffler forwarded a saved batch: %v", stage, resumed)
	}
	if n := strings.Count(log, ": shuffled on disk:"); n != rounds {
		t.Errorf("%d disk shuffles completed for %d rounds: a round was shuffled twice or not on disk", n, rounds)
	}
	t.Logf("killed at %s: model equal to the simulation's (largest relative difference %.3g); %d disk shuffles logged; every ledger charged %d times",
		stage, worst, strings.Count(log, ": shuffled on disk:"), rounds)
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
