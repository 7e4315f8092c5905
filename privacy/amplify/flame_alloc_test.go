package amplify

import (
	"math"
	"testing"
)

// exactBinomTail is P(Bin(n, p) >= a) by direct summation (log-gamma).
func exactBinomTail(n int, p float64, a int) float64 {
	s := 0.0
	lg, _ := math.Lgamma(float64(n + 1))
	for c := a; c <= n; c++ {
		x, _ := math.Lgamma(float64(c + 1))
		y, _ := math.Lgamma(float64(n - c + 1))
		s += math.Exp(lg - x - y + float64(c)*math.Log(p) + float64(n-c)*math.Log1p(-p))
	}
	return s
}

func TestSSDoubleAllocPlan(t *testing.T) {
	// the Chernoff tails bound the exact ones
	for _, tc := range []struct {
		n int
		p float64
		a int
	}{{999, 0.02, 60}, {999, 0.0044, 26}, {299, 0.0196, 25}, {10, 0.5, 10}, {10, 0.5, 3}, {100, 0.01, 0}} {
		if got, want := binomUpperChernoff(tc.n, tc.p, tc.a), exactBinomTail(tc.n, tc.p, tc.a); got < math.Min(1, want*(1-1e-12)) {
			t.Errorf("Chernoff tail %+v = %v below the exact %v", tc, got, want)
		}
	}
	// FLAME: eps_l = 78.5, d = 7850, k = 157, n = 1000, n_p = 333, Laplace
	p, err := SSDoubleAlloc(78.5, 7850, 157, 1000, 333, 0, 1e-10)
	if err != nil {
		t.Fatal(err)
	}
	if p.Slots != 333-p.LO || p.LO < 10 || p.LO > 40 || !(p.Fail > 0 && p.Fail < 1e-9) || math.Abs(p.Gamma-math.Exp(-0.25)) > 1e-15 {
		t.Errorf("plan %+v", p)
	}
	// the failure bound covers both of its terms
	beta := 157.0 / 7850
	want := 7850 * (exactBinomTail(999, beta, 333) + exactBinomTail(999, beta*(1-p.Gamma), p.LO+1))
	if p.Fail < want {
		t.Errorf("failure %v below the exact union bound %v", p.Fail, want)
	}
	for _, tc := range []struct {
		epsL                float64
		d, k, n, np, levels int
		budget              float64
	}{
		{math.NaN(), 10, 2, 10, 5, 0, 1e-6}, {1, 10, 11, 10, 5, 0, 1e-6}, {1, 10, 0, 10, 5, 0, 1e-6},
		{1, 10, 2, 0, 5, 0, 1e-6}, {1, 10, 2, 10, 0, 0, 1e-6}, {1, 10, 2, 10, 5, 1, 1e-6}, {1, 10, 2, 10, 5, 0, 0},
		{1, 10, 2, 10, 5, 0, math.NaN()}, {100, 10, 2, 1000, 2, 0, 1e-12},
	} {
		if _, err := SSDoubleAlloc(tc.epsL, tc.d, tc.k, tc.n, tc.np, tc.levels, tc.budget); err == nil {
			t.Errorf("%+v: no error", tc)
		}
	}
}
