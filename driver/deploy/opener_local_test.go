package deploy

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// TestLocalOpenersEqualLocal: deploy-local whose analyzer opens on two
// openers over the embedded JetStream server releases the same model, bit
// for bit, as deploy-local opening in the analyzer (both in test mode with
// one seed), the same counts, and a model within the simulation's
// tolerance (TestLocalEqualsSimulation). After the run the opener queue
// and the results log hold nothing of it.
func TestLocalOpenersEqualLocal(t *testing.T) {
	cfg := testConfig("apes", 12, 2)
	split := testSplit(t, cfg)
	eng, _ := simulate(t, cfg, split)
	run := func(openers *LocalOpeners, dir string) *LocalResult {
		st, err := NewSetup(cfg, split, "openers")
		if err != nil {
			t.Fatal(err)
		}
		seed := cfg.Seed
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := RunLocal(ctx, st, LocalOptions{Dir: dir, TestSeed: &seed, Workers: 1, Logf: t.Logf, Openers: openers})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want := run(nil, t.TempDir())
	dir := t.TempDir()
	got := run(&LocalOpeners{InProcess: 2, Chunk: 100}, dir)
	for j := range want.Model {
		if math.Float64bits(got.Model[j]) != math.Float64bits(want.Model[j]) {
			t.Fatalf("parameter %d: %v with openers, %v without", j, got.Model[j], want.Model[j])
		}
		if d := math.Abs(got.Model[j]-eng.Weights()[j]) / math.Max(1, math.Abs(eng.Weights()[j])); d > 1e-9 {
			t.Fatalf("parameter %d: %v with openers, %v simulated", j, got.Model[j], eng.Weights()[j])
		}
	}
	if got.Opened != want.Opened || got.Opened.Accepted == 0 {
		t.Fatalf("opened %+v with openers, %+v without", got.Opened, want.Opened)
	}
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
	ctx := context.Background()
	q, err := openOpenerStreams(ctx, conn, true)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := q.chunks.Len(ctx)
	if err != nil {
		t.Fatal(err)
	}
	results, err := q.results.Count(ctx, openLogName+".>")
	if err != nil || chunks != 0 || results != 0 {
		t.Fatalf("after the run: %d chunks, %d results (%v)", chunks, results, err)
	}
}
