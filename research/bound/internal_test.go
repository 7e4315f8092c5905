package bound

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// TestFormatSig: FormatSig rounds printed bounds to the safe side.
func TestFormatSig(t *testing.T) {
	tests := []struct {
		v    float64
		prec int
		up   bool
		want string
	}{
		{5.01e-6, 3, true, "5.01e-06"},
		{5.0149e-6, 3, true, "5.02e-06"},
		{5.0149e-6, 3, false, "5.01e-06"},
		{10 * 1e-6, 3, true, "1e-05"},
		{0.99999, 3, true, "1"},
		{1.0390852019190788, 6, false, "1.03908"},
		{1.0390852019190788, 6, true, "1.03909"},
		{0, 3, true, "0"},
	}
	for _, tc := range tests {
		if got := FormatSig(tc.v, tc.prec, tc.up); got != tc.want {
			t.Errorf("FormatSig(%v, %d, %v) = %s, want %s", tc.v, tc.prec, tc.up, got, tc.want)
		}
	}
}

// rrDelta returns the exact delta at eps of the k-fold composition of binary
// randomized response with parameter eps0, the worst case of k eps0-DP
// mechanisms (Kairouz, Oh and Viswanath 2015): the privacy loss is
// (2j - k) eps0 with j ~ Bin(k, e^eps0/(1+e^eps0)).
func rrDelta(eps0 float64, k int, eps float64) float64 {
	lp := -math.Log1p(math.Exp(-eps0)) // log p
	lq := lp - eps0                    // log(1-p)
	lk, _ := math.Lgamma(float64(k + 1))
	d := 0.0
	for j := 0; j <= k; j++ {
		if l := float64(2*j-k) * eps0; l > eps {
			a, _ := math.Lgamma(float64(j + 1))
			b, _ := math.Lgamma(float64(k - j + 1))
			d += math.Exp(lk-a-b+float64(j)*lp+float64(k-j)*lq) * -math.Expm1(eps-l)
		}
	}
	return d
}

// TestComposeRigorous: every composition method returns an epsilon at which
// the exact (optimal) delta of k-fold randomized response is at most the
// slack; pld is also close to the exact optimum.
func TestComposeRigorous(t *testing.T) {
	const slack = 1e-8
	for _, tc := range []struct {
		eps0 float64
		k    int
	}{{0.1, 100}, {0.0016821526841020193, 7850}, {1.3, 50}, {0.5, 1}, {3, 5}} {
		for _, m := range []string{"basic", "advanced", "rdp", "pld", "best"} {
			c, err := composeK(m, tc.eps0, 0, tc.k, slack)
			if err != nil {
				t.Errorf("%s eps0 = %v, k = %d: %v", m, tc.eps0, tc.k, err)
				continue
			}
			if d := rrDelta(tc.eps0, tc.k, c.eps); d > slack {
				t.Errorf("%s eps0 = %v, k = %d: epsilon %v has exact delta %v > %v", m, tc.eps0, tc.k, c.eps, d, slack)
			}
			if m == "pld" && c.eps < float64(tc.k)*tc.eps0 {
				// Within 1% of the optimum: the exact delta at 0.99 eps is above the slack.
				if d := rrDelta(tc.eps0, tc.k, 0.99*c.eps); d <= slack {
					t.Errorf("pld eps0 = %v, k = %d: epsilon %v is loose (exact delta at 0.99x is %v)", tc.eps0, tc.k, c.eps, d)
				}
			}
		}
	}
}

// TestPureDPRDP checks the RDP curve of eps-DP against its limits: the zCDP
// bound alpha eps^2/2, eps itself, and KL = eps tanh(eps/2) as alpha -> 1.
func TestPureDPRDP(t *testing.T) {
	for _, eps := range []float64{1e-4, 0.01, 0.1, 1, 5} {
		for _, a := range []float64{1.01, 1.5, 2, 10, 512} {
			r := pureDPRDP(eps, a)
			if r > a*eps*eps/2*(1+1e-12) || r > eps || r <= 0 {
				t.Errorf("pureDPRDP(%v, %v) = %v outside (0, min(eps, alpha eps^2/2)]", eps, a, r)
			}
		}
		if eps >= 0.01 {
			kl := eps * math.Tanh(eps/2)
			if r := pureDPRDP(eps, 1+1e-6); math.Abs(r-kl) > 1e-4*kl {
				t.Errorf("pureDPRDP(%v, 1+) = %v, want KL %v", eps, r, kl)
			}
		}
	}
}

// TestSetCompare: the best row of a comparison is never an
// approximation or legacy, and needs no extra assumption unless nothing else
// applies.
func TestSetCompare(t *testing.T) {
	rows := []amplify.Candidate{
		{Bound: amplify.Bound{Name: "approx", Epsilon: 0.1, Approximation: true}},
		{Bound: amplify.Bound{Name: "blanket-bennett-legacy-flame-typo-laplace", Epsilon: 0.2}},
		{Bound: amplify.Bound{Name: "assumed", Epsilon: 0.3, Assumption: "some assumption"}},
		{Bound: amplify.Bound{Name: "standard", Epsilon: 0.4}},
		{Bound: amplify.Bound{Name: "broken"}, Err: "not applicable"},
	}
	out := &Result{}
	if err := setCompare(out, rows); err != nil || out.Bound.Name != "standard" {
		t.Fatalf("best = %q, %v; want standard", out.Bound.Name, err)
	}
	if err := setCompare(out, rows[:3]); err != nil || out.Bound.Name != "assumed" {
		t.Fatalf("best = %q, %v; want assumed", out.Bound.Name, err)
	}
	if err := setCompare(out, rows[:2]); err == nil {
		t.Fatalf("approximation or legacy chosen: %v", out.Bound)
	}
}
