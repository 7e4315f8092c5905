package deploy

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpillEqualsMemory runs deploy-local in test mode with a round memory
// budget of one byte, so that every round is shuffled on disk from its
// first report, and in memory, for a per-coordinate protocol with padding
// (ss-double), one with metadata (apes) and a whole-report one (e-apes):
// the disk shuffle must release the same model as the simulation up to
// the rounding of sums taken in another order (the same reports and, in
// test mode, the same dummy values: only their order differs), with the
// same counts of forwarded and opened messages as in memory.
func TestSpillEqualsMemory(t *testing.T) {
	for _, p := range []string{"ss-double", "apes", "e-apes"} {
		t.Run(p, func(t *testing.T) {
			cfg := testConfig(p, 30, 2)
			split := testSplit(t, cfg)
			eng, _ := simulate(t, cfg, split)
			want := eng.Weights()
			run := func(budget int64) (*LocalResult, int64) {
				st, err := NewSetup(cfg, split, "spill-"+p) // a Setup holds the run's accountant
				if err != nil {
					t.Fatal(err)
				}
				seed := cfg.Seed
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				var spilled atomic.Int64
				logf := func(f string, a ...any) {
					if strings.Contains(f, ": shuffled on disk:") {
						spilled.Add(1)
					}
				}
				res, err := RunLocal(ctx, st, LocalOptions{Dir: t.TempDir(), TestSeed: &seed, RoundTimeout: time.Minute,
					Workers: 1, Logf: logf, ShuffleMemory: budget})
				if err != nil {
					t.Fatal(err)
				}
				return res, spilled.Load()
			}
			mem, nmem := run(0)
			disk, ndisk := run(1)
			if nmem != 0 || ndisk != int64(cfg.Rounds) {
				t.Fatalf("%d rounds shuffled on disk with the default budget, %d with one byte; want 0 and %d", nmem, ndisk, cfg.Rounds)
			}
			var worst float64
			for j := range want {
				worst = math.Max(worst, math.Abs(disk.Model[j]-want[j])/math.Max(1, math.Abs(want[j])))
			}
			if worst > 1e-9 {
				t.Errorf("shuffled on disk, the model differs from the simulation's by %.3g (relative)", worst)
			}
			if disk.Shuffler.Messages != mem.Shuffler.Messages || disk.Opened != mem.Opened || disk.Shuffler.Forwarded != mem.Shuffler.Forwarded {
				t.Errorf("on disk: forwarded %d rounds, %d messages, opened %+v; in memory %d, %d, %+v",
					disk.Shuffler.Forwarded, disk.Shuffler.Messages, disk.Opened, mem.Shuffler.Forwarded, mem.Shuffler.Messages, mem.Opened)
			}
			t.Logf("%s: %d messages in %d rounds shuffled on disk; largest relative difference from the simulation %.3g", p, disk.Shuffler.Messages, ndisk, worst)
		})
	}
}
