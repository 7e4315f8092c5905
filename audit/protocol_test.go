package audit

import (
	"context"
	"testing"

	"shufflefl/protocol"
)

// TestProtocolGame runs the round-level game for every private protocol
// at a budget where the round's claim is large enough to be approached,
// and checks that eps_lower stays below the claim (at most a 5% false
// reject per protocol if a protocol met its claim with equality; the
// figures with the fixed seed are far below). The negative control (ldp-
// laplace with noise 2x too small) must be caught.
func TestProtocolGame(t *testing.T) {
	trials := int64(4000)
	if testing.Short() {
		trials = 2000
	}
	for _, name := range []string{"ldp-laplace", "dp-central", "apes", "ss-simple"} {
		t.Run(name, func(t *testing.T) {
			cfg := ProtocolConfig{Protocol: name, Epsilon: 2, Dim: 2, Clients: 10,
				Params: protocol.Params{Clip: 1, Delta: 1e-5, Epsilon: 2},
				Game:   GameConfig{Trials: trials, Seed: 3}}
			if name == "dp-central" {
				cfg.Params.Epsilon = 4
			}
			res, err := ProtocolGame(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: eps_lower %.3f, claim %.3f %s", name, res.EpsLower, res.EpsClaimed, res.Bound)
			if res.Violation {
				t.Fatalf("eps_lower %.3f above the claim %.3f", res.EpsLower, res.EpsClaimed)
			}
		})
	}
	t.Run("miscalibrated ldp-laplace", func(t *testing.T) {
		cfg := ProtocolConfig{Protocol: "ldp-laplace", Epsilon: 2, Dim: TightDim, Clients: TightClients, Miscalibrate: 2,
			Params: protocol.Params{Clip: 1, Delta: 1e-5}, Game: GameConfig{Trials: 40000, Seed: 3}}
		res, err := ProtocolGame(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("eps_lower %.3f, claim %.3f", res.EpsLower, res.EpsClaimed)
		if !res.Violation {
			t.Fatalf("noise 2x too small not caught: eps_lower %.3f, claim %.3f", res.EpsLower, res.EpsClaimed)
		}
	})
}
