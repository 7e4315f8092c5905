package deploy

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// TestLocalShardsEqualSimulation runs deploy-local in test mode with the
// shuffle split over shuffler shards (in this process, over the embedded
// JetStream server) for a per-coordinate protocol with padding (ss-double,
// 2 shards), a whole-report one (e-apes, 3 shards) and, with the long
// tests, one with metadata (apes): the model must equal the simulation's
// up to the rounding of sums taken in another order (the same reports and,
// in test mode, the same dummy values, drawn by every shard from the one
// shuffler's padding stream), every message one shuffler forwards must be
// opened (the same counts), the privacy statements must be the same, and
// the shard queue must be empty after the run.
func TestLocalShardsEqualSimulation(t *testing.T) {
	t.Parallel() // a whole deployment or several: overlaps the others' waits
	cases := []struct {
		proto  string
		shards int
	}{{"ss-double", 2}, {"e-apes", 3}}
	if longtest.Enabled() {
		cases = append(cases, struct {
			proto  string
			shards int
		}{"apes", 2})
	}
	for _, c := range cases {
		t.Run(c.proto, func(t *testing.T) {
			cfg := testConfig(c.proto, 12, 2)
			split := testSplit(t, cfg)
			eng, _ := simulate(t, cfg, split)
			want := eng.Weights()
			run := func(ls *LocalShards, dir string) *LocalResult {
				st, err := NewSetup(cfg, split, "shards-"+c.proto)
				if err != nil {
					t.Fatal(err)
				}
				seed := cfg.Seed
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				res, err := RunLocal(ctx, st, LocalOptions{Dir: dir, TestSeed: &seed, Workers: 1, Logf: t.Logf, ShufflerShards: ls})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			one := run(nil, t.TempDir())
			dir := t.TempDir()
			got := run(&LocalShards{Shards: c.shards}, dir)
			var worst float64
			for j := range want {
				worst = math.Max(worst, math.Abs(got.Model[j]-want[j])/math.Max(1, math.Abs(want[j])))
			}
			if worst > 1e-9 {
				t.Errorf("with %d shards the model differs from the simulation's by %.3g (relative)", c.shards, worst)
			}
			if got.Opened != one.Opened || got.Opened.Accepted == 0 {
				t.Errorf("opened %+v with %d shards, %+v with one shuffler", got.Opened, c.shards, one.Opened)
			}
			for j := range one.Model {
				if math.Float64bits(got.Model[j]) != math.Float64bits(one.Model[j]) {
					t.Fatalf("parameter %d: %v with %d shards, %v with one shuffler", j, got.Model[j], c.shards, one.Model[j])
				}
			}
			if got.Shuffler.Messages != 0 {
				t.Errorf("the front forwarded %d messages itself; want none (manifests only)", got.Shuffler.Messages)
			}
			if len(got.Statements) != len(one.Statements) {
				t.Fatalf("%d statements with shards, %d without", len(got.Statements), len(one.Statements))
			}
			for i := range got.Statements {
				if got.Statements[i].Epsilon != one.Statements[i].Epsilon {
					t.Errorf("statement %d: epsilon %v with shards, %v without", i, got.Statements[i].Epsilon, one.Statements[i].Epsilon)
				}
			}
			if n := shardQueueLen(t, dir); n != 0 {
				t.Errorf("the shard queue holds %d messages after the run", n)
			}
			t.Logf("%s over %d shards: %d messages opened; largest relative difference from the simulation %.3g", c.proto, c.shards, got.Opened.Accepted, worst)
		})
	}
}

// shardQueueLen reopens a finished run's embedded server and counts the
// shard queue's messages.
func shardQueueLen(t *testing.T, dir string) uint64 {
	t.Helper()
	srv, err := jetstream.Embedded(filepath.Join(dir, "nats"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	conn, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q, err := openShardQueue(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	n, err := q.q.Len(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}
