package amplify

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/account"
)

// With equal budgets E-APES's model is the clones reduction with clone
// probability p = 2/(1+e^eps0) (Theorem 1, delta_i = 0); its exact
// divergence at the epsilon of the Gaussian step can exceed the claimed
// delta by orders of magnitude: the Gaussian step is not an upper bound.
func TestEAPESNotAnUpperBound(t *testing.T) {
	for _, tc := range []struct {
		n        int
		eps0, d  float64
		minRatio float64
	}{{1000, 4, 1e-9, 100}, {100, 4, 1e-3, 10}} {
		p := 2 / (1 + math.Exp(tc.eps0))
		eps := make([]float64, tc.n+1) // n others plus the differing user
		for i := range eps {
			eps[i] = tc.eps0
		}
		b, mu, err := EAPES(eps, nil, tc.d)
		if err != nil {
			t.Fatal(err)
		}
		if want := 2 / math.Sqrt(float64(tc.n)*p); !near(mu, want, 1e-12*want) {
			t.Fatalf("mu = %v, want %v", mu, want)
		}
		exact := clonesDeltaWindow(binomialWindow(tc.n, p), b.Epsilon, tc.eps0, tc.d)
		if exact < tc.minRatio*tc.d {
			t.Errorf("%+v: exact model delta %g at GDP eps %v, expected > %v x claimed", tc, exact, b.Epsilon, tc.minRatio)
		}
	}
}

// Every closed form must hold for one concrete eps0-LDP mechanism, binary
// randomized response (R_{gamma,b} with b = 2), whose shuffled delta is
// computed exactly.
func TestClosedFormsHoldForBinaryRR(t *testing.T) {
	type cf struct {
		name string
		f    func(eps0 float64, n int, delta float64) (float64, error)
	}
	forms := []cf{
		{"erlingsson", Erlingsson},
		{"blanket-closed", func(e float64, n int, d float64) (float64, error) { return BlanketClosedForm(e, 2, n, d) }},
		{"clones-theorem", ClonesTheorem},
		{"clones-closed", ClonesClosedForm},
	}
	checked := 0
	for _, f := range forms {
		for _, n := range []int{2000, 20000, 200000} {
			for _, eps0 := range []float64{0.1, 0.5, 1, 3} {
				for _, delta := range []float64{1e-3, 1e-6} {
					e, err := f.f(eps0, n, delta)
					if err != nil {
						continue // outside the form's validity region
					}
					checked++
					if d := shuffledBinaryRRDelta(n, eps0, e); d > delta {
						t.Errorf("%s eps0=%v n=%d: eps %v but exact binary-RR delta %g > %g", f.name, eps0, n, e, d, delta)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d (form, parameter) pairs were in range", checked)
	}
}

// With equal budgets S = (n-1) e^-eps, so Theorem 4 is FMT Theorem 3.1 for
// n-1 reports.
func TestEoNClosedFormEqualBudgets(t *testing.T) {
	for _, e0 := range []float64{0.3, 1, 2} {
		eps := make([]float64, 50000)
		for i := range eps {
			eps[i] = e0
		}
		b, err := EoNClosedForm(eps, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ClonesTheorem(e0, len(eps)-1, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if !near(b.Epsilon, want, 1e-9*want) {
			t.Errorf("eps0=%v: EoN closed %v, FMT Theorem 3.1 (n-1) %v", e0, b.Epsilon, want)
		}
	}
}

// Proposition 1 is advanced composition over 2b dimension-level guarantees.
func TestSAPESMatchesAdvancedComposition(t *testing.T) {
	for _, tc := range []struct {
		eps, delta float64
		b          int
		dp         float64
	}{{0.05749, 4.62e-9, 1570, 2.1489e-5}, {0.3, 1e-9, 10, 1e-6}} {
		s, err := SAPESUserLevel(tc.eps, tc.delta, tc.b, tc.dp)
		if err != nil {
			t.Fatal(err)
		}
		e, d, err := account.ComposeAdvanced(tc.eps, tc.delta, 2*tc.b, tc.dp)
		if err != nil {
			t.Fatal(err)
		}
		if !near(s.Epsilon, e, 1e-12*e) || !near(s.Delta, d, 1e-18) {
			t.Errorf("%+v: S-APES (%v, %v), advanced composition (%v, %v)", tc, s.Epsilon, s.Delta, e, d)
		}
	}
}
