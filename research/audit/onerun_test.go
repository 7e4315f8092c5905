package audit

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
)

func oneRunConfig(t testing.TB, proto string) OneRunConfig {
	c := round.DefaultConfig()
	c.Dataset, c.Protocol, c.Out = "fashion-mnist-sample", proto, ""
	c.Clients, c.ClientsPerRound, c.SamplesPerClient, c.Rounds, c.LocalEpochs = 200, 0, 10, 2, 1
	c.Epsilon = 1
	return OneRunConfig{Train: c, Split: sampleSplit(t), Canaries: 100, Guesses: 25}
}

// TestOneRun: without privacy the canaries are found (every guess right,
// the largest bound 100 canaries and 50 guesses can give: about 2.7);
// through ldp-laplace the bound must stay below the claim.
func TestOneRun(t *testing.T) {
	res, err := OneRun(oneRunConfig(t, "nonprivate"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("nonprivate: %+v", res)
	if res.Correct != res.Guesses || res.EpsLower < 2.5 {
		t.Fatalf("canaries not found without privacy: %+v", res)
	}
	res, err = OneRun(oneRunConfig(t, "ldp-laplace"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ldp-laplace: %+v", res)
	if res.EpsClaimed == nil || res.Violation {
		t.Fatalf("ldp-laplace: %+v", res)
	}
}

func TestOneRunEpsLower(t *testing.T) {
	// All r guesses right: P[Bin(r, q) = r] = q^r <= 0.05 gives
	// q = 0.05^(1/r) and eps = log(q/(1-q)).
	for _, r := range []int{20, 50, 200} {
		q := math.Pow(0.05, 1/float64(r))
		want := math.Log(q / (1 - q))
		if got := OneRunEpsLower(1000, r, r, 0, 0.95); math.Abs(got-want) > 1e-3 {
			t.Fatalf("r = %d: eps_lower %v, want %v", r, got, want)
		}
	}
	// Half right: no evidence.
	if got := OneRunEpsLower(100, 50, 25, 0, 0.95); got != 0 {
		t.Fatalf("chance-level guesses give eps_lower %v", got)
	}
	// delta only weakens the bound.
	if a, b := OneRunEpsLower(1000, 100, 90, 0, 0.95), OneRunEpsLower(1000, 100, 90, 1e-5, 0.95); b > a {
		t.Fatalf("delta raised the bound: %v > %v", b, a)
	}
}

// TestOneRunSplitMix: the one-run canary audit on split-mix (noise
// calibrated to a target central epsilon of 8, canaries at L2 norm C as for
// dp-central): the audit's lower bound stays below the claim.
func TestOneRunSplitMix(t *testing.T) {
	cfg := oneRunConfig(t, "split-mix")
	cfg.Train.TargetEpsilon = 8
	res, err := OneRun(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.EpsClaimed != nil {
		t.Logf("split-mix: eps_lower %.3f, claim %.3f", res.EpsLower, *res.EpsClaimed)
	}
	if res.EpsClaimed == nil || res.Violation || res.EpsLower >= *res.EpsClaimed {
		t.Fatalf("split-mix: %+v", res)
	}
}
