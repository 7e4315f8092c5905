package audit

import (
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// TestOptimalCompositionOneRelease: for k = 1 the bound is randomized
// response's own curve, eps(delta) = log((p - delta)/(1 - p)).
func TestOptimalCompositionOneRelease(t *testing.T) {
	for _, tc := range []struct{ eps0, delta float64 }{{1, 1e-5}, {0.1, 1e-3}, {3, 0.01}} {
		p := math.Exp(tc.eps0) / (1 + math.Exp(tc.eps0))
		want := math.Log((p - tc.delta) / (1 - p))
		got, err := OptimalCompositionLowerBound(tc.eps0, 1, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if got > want || want-got > 1e-9 {
			t.Errorf("eps0 %v, delta %v: %v, want %v (rounded down)", tc.eps0, tc.delta, got, want)
		}
	}
}

// TestOptimalCompositionBelowPLD: the exact composition never exceeds the
// PLD accountant's pessimistic composition of the same pure-DP pair, lies
// within 1% of it (the PLD's discretisation), and agrees with
// amplify.CountLowerBound on the same pair to 1e-6.
func TestOptimalCompositionBelowPLD(t *testing.T) {
	for _, tc := range []compCase{{0.1, 100, 1e-5}, {1, 10, 1e-6}, {0.01, 2000, 1e-5}} {
		lb, err := OptimalCompositionLowerBound(tc.eps0, tc.k, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		one, err := pld.PureDP(tc.eps0, pld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		all, err := one.SelfCompose(tc.k)
		if err != nil {
			t.Fatal(err)
		}
		ub, err := all.Epsilon(tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		// The same pair through amplify's count statistic (its own code):
		// k randomized-response values and no others.
		q := 1 / (1 + math.Exp(tc.eps0))
		cnt, err := amplify.CountLowerBound(0, tc.k, q, q, 1-q, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("eps0 %v, k %d, delta %v: exact %.6f, count statistic %.6f, PLD %.6f", tc.eps0, tc.k, tc.delta, lb, cnt, ub)
		if lb > ub || lb < 0.99*ub {
			t.Errorf("eps0 %v, k %d: exact %v vs PLD %v", tc.eps0, tc.k, lb, ub)
		}
		if math.Abs(lb-cnt) > 1e-6*lb {
			t.Errorf("eps0 %v, k %d: exact %v vs the count statistic %v", tc.eps0, tc.k, lb, cnt)
		}
	}
}

// compCase is a k-fold composition of eps0-DP releases at delta.
type compCase struct {
	eps0  float64
	k     int
	delta float64
}

func TestOptimalCompositionBadInput(t *testing.T) {
	for _, c := range []compCase{{0, 1, 1e-5}, {1, 0, 1e-5}, {1, 1, -1}, {math.NaN(), 1, 1e-5}, {1, 1, 1}, {1, 1, math.NaN()}} {
		if _, err := OptimalCompositionLowerBound(c.eps0, c.k, c.delta); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestCheckAccountantPureLocal: a pure local run's statement is checked
// against the optimal composition of its d·t per-coordinate releases; a
// claim below it (an accountant that composed half the rounds, say) is
// flagged, and protocols without a bound here say why.
func TestCheckAccountantPureLocal(t *testing.T) {
	const d, rounds, eps, delta = 10, 4, 2.0, 1e-5
	truth, err := OptimalCompositionLowerBound(eps/d, d*rounds, delta)
	if err != nil {
		t.Fatal(err)
	}
	facts := func(claim float64) RunFacts {
		f := RunFacts{Protocol: "ldp-laplace", Dim: d, Clients: 5}
		for r := 1; r <= rounds; r++ {
			f.Rounds = append(f.Rounds, RunRound{Round: r, Participants: 5, LocalEps: eps, LocalEpsMin: eps, LocalCoordEps: eps / d,
				Claimed: claim * float64(r) / rounds, Delta: delta})
		}
		return f
	}
	for _, tc := range []struct {
		name      string
		claim     float64
		violation bool
	}{
		{"basic composition", eps * rounds, false},
		{"half the rounds", 0.5 * truth, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, why, err := CheckAccountant(facts(tc.claim))
			if err != nil || why != "" {
				t.Fatalf("%v %q", err, why)
			}
			if len(cs) != 2 || cs[0].Round != 1 || cs[1].Round != rounds {
				t.Fatalf("checks %+v, want rounds 1 and %d", cs, rounds)
			}
			if cs[1].Lower != truth || cs[1].Violation != tc.violation {
				t.Fatalf("last round: %+v, want lower %v, violation %v", cs[1], truth, tc.violation)
			}
		})
	}
	for _, name := range []string{"nonprivate", "s-apes", "dp-central"} {
		if cs, why, err := CheckAccountant(RunFacts{Protocol: name}); err != nil || why == "" || cs != nil {
			t.Errorf("%s: %v, %q, %v", name, cs, why, err)
		}
	}
	sampled := facts(1)
	sampled.Sampled = true
	if _, why, _ := CheckAccountant(sampled); !strings.Contains(why, "sampled") {
		t.Errorf("a sampled run: %q", why)
	}
}

// TestCheckAccountantSparseFLAME: the SS-Double run (d = 7,850,
// k = 1, n = 1,000, n_p = 333, eps_l = 1, Laplace) stated 4.4e-5 under
// FLAME's Theorems 3-4; the count statistic shows at least 0.00138 at its
// delta, and the sound statement is above it.
func TestCheckAccountantSparseFLAME(t *testing.T) {
	facts := func(claim float64) RunFacts {
		return RunFacts{Protocol: "ss-double", Dim: 7850, Clients: 1000, Randomizer: &amplify.Randomizer{Mech: amplify.Laplace},
			Rounds: []RunRound{{Round: 1, Participants: 1000, LocalEps: 1, LocalEpsMin: 1, LocalCoordEps: 1, Claimed: claim, Delta: 3.33e-7, K: 1, NP: 333}}}
	}
	for _, tc := range []struct {
		name      string
		claim     float64
		violation bool
	}{{"FLAME Theorems 3-4", 4.39762e-05, true}, {"sound statement", 0.3255, false}} {
		cs, why, err := CheckAccountant(facts(tc.claim))
		if err != nil || why != "" || len(cs) != 1 {
			t.Fatalf("%s: %+v %q %v", tc.name, cs, why, err)
		}
		c := cs[0]
		t.Logf("%s: stated %g, lower %g (%s)", tc.name, c.Claimed, c.Lower, c.Bound)
		if c.Error != "" || c.Lower < 0.00137 || c.Violation != tc.violation {
			t.Errorf("%s: %+v, want lower >= 0.00137 and violation %v", tc.name, c, tc.violation)
		}
	}
}

// TestCheckAccountantGenericShuffle: an SS-Simple round with R_{gamma,b}
// gets the shuffled randomized-response bounds and the count statistic
// with its own randomizer, all computed and below a statement that is
// rounds times the local budget (basic composition of pure DP).
func TestCheckAccountantGenericShuffle(t *testing.T) {
	f := RunFacts{Protocol: "ss-simple", Dim: 50, Clients: 100, Randomizer: &amplify.Randomizer{Mech: amplify.RGammaB, K: 2}}
	for r := 1; r <= 3; r++ {
		f.Rounds = append(f.Rounds, RunRound{Round: r, Participants: 100, LocalEps: 5, LocalEpsMin: 5, LocalCoordEps: 0.1,
			Claimed: 5 * float64(r), Delta: 1e-6})
	}
	cs, why, err := CheckAccountant(f)
	if err != nil || why != "" {
		t.Fatalf("%v %q", err, why)
	}
	if len(cs) != 6 {
		t.Fatalf("%d checks, want 3 bounds after rounds 1 and 3: %+v", len(cs), cs)
	}
	for _, c := range cs {
		if c.Error != "" || c.Violation || !(c.Lower > 0) {
			t.Errorf("%+v", c)
		}
	}
}
