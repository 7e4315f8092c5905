package amplify

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
)

// TestClipLaplaceExactEchoProb: the exact echo probability is a lower bound
// on every Clip-Laplace density ratio of a fine grid of inputs and outputs
// (the proof's claim), the grid attains it at its corners (so it is the
// infimum), and it is at least APES Lemma 6's and at most 1, with e^-eps
// for equal budgets.
func TestClipLaplaceExactEchoProb(t *testing.T) {
	const C, grid = 1.0, 121
	for _, tc := range []struct{ ei, eu float64 }{{0.05, 1}, {1, 0.05}, {0.5, 0.5}, {0.3, 0.9}, {2, 0.1}, {0.01, 0.04}, {5, 8}, {8, 5}} {
		p := ClipLaplaceExactEchoProb(tc.ei, tc.eu)
		worst := math.Inf(1)
		for a := range grid {
			xi := -C + 2*C*float64(a)/float64(grid-1)
			for b := 0; b < grid; b += 4 {
				xu := -C + 2*C*float64(b)/float64(grid-1)
				for c := range grid {
					z := -C + 2*C*float64(c)/float64(grid-1)
					r := clipLaplaceDensity(z, xi, tc.ei, C) / clipLaplaceDensity(z, xu, tc.eu, C)
					if r < p*(1-1e-12) {
						t.Fatalf("%+v: ratio %v at x_i=%v x_u=%v z=%v below the claimed infimum %v", tc, r, xi, xu, z, p)
					}
					worst = math.Min(worst, r)
				}
			}
		}
		if !near(worst, p, 1e-12*p) {
			t.Errorf("%+v: grid minimum %v, claimed infimum %v", tc, worst, p)
		}
		if lem := ClipLaplaceEchoProb(tc.ei, tc.eu); p < lem*(1-1e-15) || p > 1 {
			t.Errorf("%+v: exact %v, Lemma 6 %v", tc, p, lem)
		}
	}
	if p := ClipLaplaceExactEchoProb(0.7, 0.7); !near(p, math.Exp(-0.7), 1e-15) {
		t.Errorf("equal budgets: %v, want e^-0.7", p)
	}
}

// TestEoNExactEchoCoversEveryUser: the exact-echo pair (differing user at
// the largest budget, the smallest-budget user removed) is at least the
// bound for every possible differing user computed with its own budget and
// the others' exact echo probabilities against it (the stochastic-order
// argument of eonExactOthers), never above EoNWorstCase (Lemma 6's
// weights), equal to FMT's clones for equal budgets, and rejects bad input.
func TestEoNExactEchoCoversEveryUser(t *testing.T) {
	r := rng.Stream(13)
	for _, tc := range []struct {
		n      int
		lo, hi float64
		delta  float64
	}{{60, 0.05, 1, 1e-3}, {200, 0.5, 3, 1e-4}, {100, 5, 40, 1e-6}, {300, 0.02, 0.3, 1e-6}} {
		eps := make([]float64, tc.n)
		for i := range eps {
			eps[i] = tc.lo + (tc.hi-tc.lo)*r.Float64()
		}
		worst := 0.0
		for k, ek := range eps {
			others := make([]float64, 0, tc.n-1)
			for i, e := range eps {
				if i != k {
					others = append(others, ClipLaplaceExactEchoProb(e, ek))
				}
			}
			w := poissonBinomial(others, pbFloorFor(tc.delta, len(others)))
			worst = math.Max(worst, clonesSearch(w, ek, ek, tc.delta))
		}
		b, err := EoNExactEcho(eps, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if b.Epsilon < worst*(1-1e-6) {
			t.Errorf("%+v: exact echo %v below the max over differing users %v", tc, b.Epsilon, worst)
		}
		lw, err := EoNWorstCase(eps, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if b.Epsilon > lw.Epsilon*(1+1e-6) {
			t.Errorf("%+v: exact echo %v above Lemma 6's worst case %v", tc, b.Epsilon, lw.Epsilon)
		}
		t.Logf("%+v: exact echo %.5g, max over users %.5g, Lemma 6 worst case %.5g", tc, b.Epsilon, worst, lw.Epsilon)
	}
	eq := []float64{0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8}
	b, err := EoNExactEcho(eq, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := ClonesNumerical(0.8, len(eq), 1e-2); !near(b.Epsilon, f, 1e-6*f) {
		t.Errorf("equal budgets: exact echo %v, FMT clones %v", b.Epsilon, f)
	}
	wantInvalid(t, func() error { _, err := EoNExactEcho([]float64{1}, 1e-6); return err }(), "n >= 2")
	wantInvalid(t, func() error { _, err := EoNExactEcho([]float64{1, 1}, 0); return err }(), "delta must be in (0, 1)")
	wantInvalid(t, func() error { _, err := EoNExactEchoDelta([]float64{1, math.NaN()}, 0.1); return err }(), "eps[1]")
	wantInvalid(t, func() error { _, _, err := EoNClonePair([]float64{1, -1}, false); return err }(), "eps[1]")
}
