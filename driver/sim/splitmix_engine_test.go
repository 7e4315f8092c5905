package sim

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
)

// TestSplitMixEnginePaths: split-mix through the engine releases the same
// model bit for bit whether clients send m shares per coordinate (streamed
// into the aggregate) or their noisy vector once (fast path, streamed or
// through the faithful shuffler), and each round spends what the plan says.
func TestSplitMixEnginePaths(t *testing.T) {
	split := loadSample(t)
	run := func(fast float64, faithful bool) ([]round.RoundResult, []float64) {
		cfg := smallConfig()
		cfg.Protocol = "split-mix"
		cfg.Clip = 1
		cfg.Delta = 1e-5
		cfg.TargetEpsilon = 4
		cfg.Rounds = 2
		cfg.Faithful = faithful
		cfg.Options = map[string]float64{"fast": fast}
		e, err := New(cfg, split, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []round.RoundResult
		for range cfg.Rounds {
			r, err := e.Step()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out, e.Weights()
	}
	shares, w1 := run(0, false)
	fast, w2 := run(1, false)
	faithful, w3 := run(1, true)
	for j := range w1 {
		if math.Float64bits(w1[j]) != math.Float64bits(w2[j]) || math.Float64bits(w2[j]) != math.Float64bits(w3[j]) {
			t.Fatalf("parameter %d: shares %v, fast %v, fast faithful %v", j, w1[j], w2[j], w3[j])
		}
	}
	for i := range shares {
		if shares[i].TestAccuracy != fast[i].TestAccuracy || fast[i].TestAccuracy != faithful[i].TestAccuracy {
			t.Errorf("round %d: accuracy %v, %v, %v", i+1, shares[i].TestAccuracy, fast[i].TestAccuracy, faithful[i].TestAccuracy)
		}
		if p := shares[i].Privacy; p.CumulativeEpsilon > 4 || p.TV <= 0 {
			t.Errorf("round %d: cumulative epsilon %v, TV %v", i+1, p.CumulativeEpsilon, p.TV)
		}
	}
	t.Logf("2 rounds: accuracy %v, cumulative epsilon %.4g (%s)", shares[1].TestAccuracy, shares[1].Privacy.CumulativeEpsilon, shares[1].Privacy.CumulativeMethod)
}
