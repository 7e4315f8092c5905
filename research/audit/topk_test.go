package audit

import (
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
)

// TestTopkShuffler: the uniform guesser's success must match FLAME's 1/l
// (its 95% interval contains it; a 5% false-reject rate if the engine is
// right), and the popularity guesser, which uses the data-dependence of
// top-k indexes that Definition 3's uniform prior ignores, must do better.
func TestTopkShuffler(t *testing.T) {
	c := round.DefaultConfig()
	c.Dataset, c.Protocol, c.Out = "fashion-mnist-sample", "ss-topk", ""
	c.Clients, c.ClientsPerRound, c.Rounds, c.LocalEpochs = 40, 20, 3, 1
	c.Epsilon = 10
	c.Options = map[string]float64{"k": 50, "nu": 4}
	res, err := TopkShuffler(c, sampleSplit(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Uniform.Lo > res.OneOverL || res.Uniform.Hi < res.OneOverL {
		t.Fatalf("uniform guesser %.4f [%.4f, %.4f], want 1/l = %.4f", res.Uniform.Rate, res.Uniform.Lo, res.Uniform.Hi, res.OneOverL)
	}
	if res.Popularity.Lo <= res.Uniform.Hi {
		t.Fatalf("popularity guesser %+v not better than uniform %+v", res.Popularity, res.Uniform)
	}
}
