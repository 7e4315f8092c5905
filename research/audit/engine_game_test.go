package audit

import (
	"context"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
)

// TestEngineGame runs the game through the engine (fresh NoiseSalt per
// trial) for ldp-laplace with a small model dimension budget: the bound
// must stay below the claim (5% false-reject rate at most).
func TestEngineGame(t *testing.T) {
	c := round.DefaultConfig()
	c.Dataset, c.Protocol, c.Out = "fashion-mnist-sample", "ldp-laplace", ""
	c.Clients, c.SamplesPerClient, c.LocalEpochs, c.Epsilon = 5, 10, 1, 3
	trials := int64(600)
	if testing.Short() {
		trials = 200
	}
	res, err := EngineGame(context.Background(), c, sampleSplit(t), GameConfig{Trials: trials, Seed: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Violation {
		t.Fatalf("eps_lower %.3f above the claim %.3f", res.EpsLower, res.EpsClaimed)
	}
}
