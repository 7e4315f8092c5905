package deploy

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
)

// testConfig is a small run: 50 blobs clients, logistic regression
// (d = 9·classes), every client in every round.
func testConfig(proto string, clients, rounds int) round.Config {
	cfg := round.DefaultConfig()
	cfg.Protocol, cfg.Dataset, cfg.Clients, cfg.Rounds = proto, "blobs", clients, rounds
	cfg.LocalEpochs, cfg.Workers, cfg.Seed = 1, 2, 7
	cfg.Epsilon, cfg.Clip = 4, 0.5
	cfg.SecureNoise = true
	return cfg
}

func testSplit(t testing.TB, cfg round.Config) data.Split {
	t.Helper()
	split, err := data.Load(cfg.Dataset, data.Options{Seed: cfg.Seed})
	if err != nil {
		t.Fatal(err)
	}
	return split
}

// TestLocalEqualsSimulation runs the deployment in test mode on loopback
// and compares its final model with the simulation engine's for the same
// configuration and seed (faithful shuffler, every client every round).
// Both add the same values; only the order of the floating-point sums
// differs (the engine sums reports in participant blocks, the analyzer in
// shuffled order), so each parameter must agree to a relative 1e-9 (the
// sums have at most a few hundred terms of similar magnitude: rounding
// differences are around 1e-14 relative).
func TestLocalEqualsSimulation(t *testing.T) {
	t.Parallel() // a whole deployment or several: overlaps the others' waits
	clients := 50
	for _, p := range []string{"ss-double", "apes", "e-apes"} {
		t.Run(p, func(t *testing.T) {
			cfg := testConfig(p, clients, 3)
			split := testSplit(t, cfg)
			eng, _ := simulate(t, cfg, split)
			want := eng.Weights()

			st, err := NewSetup(cfg, split, "test-"+p)
			if err != nil {
				t.Fatal(err)
			}
			seed := cfg.Seed
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var rounds int
			res, err := RunLocal(ctx, st, LocalOptions{Dir: t.TempDir(), TestSeed: &seed, RoundTimeout: time.Minute,
				Workers: 1, Observe: func(round.RoundResult) { rounds++ }, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			if rounds != cfg.Rounds {
				t.Fatalf("%d rounds observed, want %d", rounds, cfg.Rounds)
			}
			if len(res.Model) != len(want) {
				t.Fatalf("model of %d parameters, want %d", len(res.Model), len(want))
			}
			var worst float64
			for j := range want {
				d := math.Abs(res.Model[j]-want[j]) / math.Max(1, math.Abs(want[j]))
				worst = math.Max(worst, d)
			}
			moved := 0.0
			for j := range want {
				moved = math.Max(moved, math.Abs(want[j]-st.Init[j]))
			}
			if moved == 0 {
				t.Fatal("the simulation's model never moved: the comparison would prove nothing")
			}
			if worst > 1e-9 {
				t.Fatalf("largest relative difference from the simulation %.3g > 1e-9", worst)
			}
			t.Logf("%s: d = %d, largest relative difference %.3g; opened %+v; shuffler %+v", p, len(want), worst, res.Opened, res.Shuffler)
		})
	}
}
