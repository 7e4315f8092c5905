package deploy

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// TestSpillEqualsMemory runs deploy-local in test mode with a round memory
// budget of one byte, so that every round is shuffled on disk from its
// first report, and in memory, for a per-coordinate protocol with padding
// (ss-double), one with metadata (apes) and a whole-report one (e-apes):
// the disk shuffle must release the same model as the simulation up to
// the rounding of sums taken in another order (the same reports and, in
// test mode, the same dummy values: only their order differs), with the
// same counts of forwarded and opened messages as in memory. apes runs
// with the long tests (SHUFFLEFL_LONG=1).
func TestSpillEqualsMemory(t *testing.T) {
	t.Parallel() // a whole deployment or several: overlaps the others' waits
	protos := []string{"ss-double", "e-apes"}
	if longtest.Enabled() {
		protos = append(protos, "apes")
	}
	for _, p := range protos {
		t.Run(p, func(t *testing.T) {
			cfg := testConfig(p, 20, 2)
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

// BenchmarkShufflerSpill measures the shuffler's peak live heap over one
// round of 200 pre-sealed dense SS-Simple reports at d = 7,850 (1.57
// million messages; accept, close, save, forward to a counting analyzer)
// shuffled in memory (the default 1 GiB budget) and on disk (a 16 MiB
// budget). The heap is sampled every 2 ms (runtime/metrics' heap objects,
// live and not yet swept) with the collector at GOGC = 20 so that the
// peak follows what is live. The peak is above the heap with the round's
// requests built (the decoded requests a gRPC server would hold): in
// memory the round machine keeps their ciphertexts until the round is
// forwarded; on disk they are garbage once stored. The peaks of the two
// phases are reported apart: accepting 200 concurrent dense reports
// (decoding, the inbox's packing) costs the same either way.
func BenchmarkShufflerSpill(b *testing.B) {
	for _, c := range []struct {
		name   string
		budget int64
	}{{"memory", 0}, {"disk", 16 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			r := newBenchRig(b, "ss-simple", 200)
			r.sh.cfg.ShuffleMemory = c.budget
			defer debug.SetGCPercent(debug.SetGCPercent(20))
			var peak, acc uint64 // close + forward; accept
			var wall time.Duration
			for i := range b.N {
				t := int64(i + 1)
				reqs := r.reports(b, t)
				runtime.GC()
				heap0 := heapBytes()
				m := startSampler()
				start := time.Now()
				r.round(b, t, reqs)
				reqs = nil // what the shuffler keeps of them stays reachable
				m.finish()
				acc = max(acc, m.peakHeap-heap0)
				m = startSampler()
				for r.sh.Stats().Forwarded < t {
					time.Sleep(time.Millisecond)
				}
				wall += time.Since(start)
				m.finish()
				peak = max(peak, m.peakHeap-heap0)
			}
			b.ReportMetric(float64(acc)/1e6, "accept-peak-MB")
			b.ReportMetric(float64(peak)/1e6, "close+fwd-peak-MB")
			b.ReportMetric(wall.Seconds()/float64(b.N), "s/round")
			b.ReportMetric(float64(r.sh.Stats().Messages)/float64(b.N), "msgs/round")
		})
	}
}
