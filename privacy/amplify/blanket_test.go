package amplify

import (
	"math"
	"testing"
)

type flameVectors struct {
	D, N, K, Np int
	EpsL        float64 `json:"eps_l"`
	DeltaC      float64 `json:"delta_c"`
	Cases       []struct {
		Name, Protocol, Variant string
		Subsample               bool
		Want, Tol, Published    float64
	}
	IndexPrivacy struct {
		N, Np, L int
		Beta, Nu float64
	} `json:"index_privacy"`
}

func TestFLAMEPublishedNumbers(t *testing.T) {
	var tv flameVectors
	loadJSON(t, "flame.json", &tv)
	if want := 0.01 / math.Pow(float64(tv.N), 1.1); !near(tv.DeltaC, want, 1e-18) {
		t.Fatalf("delta_c in testdata = %v, want 0.01/n^1.1 = %v", tv.DeltaC, want)
	}
	for _, c := range tv.Cases {
		t.Run(c.Name, func(t *testing.T) {
			v := Bennett
			if c.Variant == "legacy" {
				v = BennettLegacyFLAME
			}
			amp := BlanketAmplifier(Randomizer{Mech: Laplace}, v)
			var r ProtocolResult
			var err error
			if c.Protocol == "simple" {
				r, err = SSSimple(tv.EpsL, tv.D, tv.N, tv.DeltaC, amp)
			} else {
				r, err = SSDoubleFLAME(tv.EpsL, tv.D, tv.K, tv.N, tv.Np, tv.DeltaC, amp, c.Subsample)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !near(r.Epsilon, c.Want, c.Tol) {
				t.Errorf("epsilon = %.6f, want %v ± %v (published %v)", r.Epsilon, c.Want, c.Tol, c.Published)
			}
			if !near(r.Delta, tv.DeltaC, 1e-15) {
				t.Errorf("delta = %v, want %v", r.Delta, tv.DeltaC)
			}
		})
	}
}

// laplaceLMoments integrates the privacy amplification random variable of
// the Laplace mechanism (scale 1/eps0 on [0, 1]) for the worst pair
// x1 = 0, x1' = 1 numerically: L(y) = (mu_0(y) - e^eps mu_1(y))/omega(y),
// omega(y) = inf_x mu_x(y)/gamma. It returns max L and E_omega[L^2].
func laplaceLMoments(eps, eps0 float64) (maxL, m2 float64) {
	mu := func(x, y float64) float64 { return eps0 / 2 * math.Exp(-eps0*math.Abs(y-x)) }
	inf := func(y float64) float64 { return eps0 / 2 * math.Exp(-eps0*math.Max(math.Abs(y), math.Abs(y-1))) }
	gamma := math.Exp(-eps0 / 2)
	lo, hi := -60/eps0, 1+60/eps0
	const steps = 400000
	h := (hi - lo) / steps
	maxL = math.Inf(-1)
	for i := 0; i <= steps; i++ {
		y := lo + float64(i)*h
		om := inf(y) / gamma
		L := (mu(0, y) - math.Exp(eps)*mu(1, y)) / om
		maxL = math.Max(maxL, L)
		w := 2.0
		if i == 0 || i == steps {
			w = 1
		} else if i%2 == 1 {
			w = 4
		}
		m2 += w * L * L * om
	}
	return maxL, m2 * h / 3
}

func TestLaplaceBlanketParametersByIntegration(t *testing.T) {
	r := Randomizer{Mech: Laplace}
	for _, eps0 := range []float64{0.01, 0.5, 2} {
		for _, f := range []float64{0.1, 0.5} {
			eps := f * eps0
			maxL, m2 := laplaceLMoments(eps, eps0)
			if got := r.maxL(eps, eps0); !near(got, maxL, 1e-6*math.Abs(maxL)+1e-9) {
				t.Errorf("eps0=%v eps=%v: maxL = %v, integration %v", eps0, eps, got, maxL)
			}
			if got := r.secondMomentL(eps, eps0); !near(got, m2, 1e-5*m2) {
				t.Errorf("eps0=%v eps=%v: E[L^2] = %v, integration %v", eps0, eps, got, m2)
			}
		}
	}
}

func TestKRRBlanketParametersBySum(t *testing.T) {
	for _, k := range []int{2, 5, 50} {
		for _, eps0 := range []float64{0.5, 2} {
			r := Randomizer{Mech: KRR, K: k}
			eps := eps0 / 3
			kf := float64(k)
			g := kf / (math.Exp(eps0) + kf - 1)
			// mu_x(y) = e^eps0/(e^eps0+k-1) if y == x else 1/(e^eps0+k-1); omega uniform.
			mu := func(x, y int) float64 {
				if x == y {
					return math.Exp(eps0) / (math.Exp(eps0) + kf - 1)
				}
				return 1 / (math.Exp(eps0) + kf - 1)
			}
			maxL, m2 := math.Inf(-1), 0.0
			for y := 0; y < k; y++ {
				L := (mu(0, y) - math.Exp(eps)*mu(1, y)) * kf
				maxL = math.Max(maxL, L)
				m2 += L * L / kf
			}
			if gl, _ := r.gamma(eps0); !near(gl, g, 1e-15) {
				t.Errorf("gamma = %v, want %v", gl, g)
			}
			if got := r.maxL(eps, eps0); !near(got, maxL, 1e-12) {
				t.Errorf("k=%d eps0=%v: maxL %v, want %v", k, eps0, got, maxL)
			}
			if got := r.secondMomentL(eps, eps0); !near(got, m2, 1e-12*m2) {
				t.Errorf("k=%d eps0=%v: E[L^2] %v, want %v", k, eps0, got, m2)
			}
		}
	}
}

// bennettReference sums the blanket Bennett expectation term by term over
// Bin(n, gamma), with or without the legacy 1/(m a) factor.
func bennettReference(r Randomizer, eps, eps0 float64, n int, legacy bool) float64 {
	g, _ := r.gamma(eps0)
	a := math.Expm1(eps)
	b := r.maxL(eps, eps0)
	c := r.secondMomentL(eps, eps0)
	beta := a * b / c
	phiB := (1+beta)*math.Log(1+beta) - beta
	s := 0.0
	for m := 1; m <= n; m++ {
		term := binomPMF(n, m, g) * math.Exp(-float64(m)*c/(b*b)*phiB) * b / math.Log(1+beta)
		if legacy {
			term /= float64(m) * a
		}
		s += term
	}
	return s / (g * float64(n))
}

func TestBennettAgainstTermByTermSum(t *testing.T) {
	for _, r := range []Randomizer{{Mech: Laplace}, {Mech: KRR, K: 4}, {Mech: Generic}} {
		for _, tc := range []struct {
			eps, eps0 float64
			n         int
		}{{0.005, 0.01, 1000}, {0.2, 0.5, 333}, {0.5, 2, 5000}} {
			for _, legacy := range []bool{false, true} {
				v := Bennett
				if legacy {
					v = BennettLegacyFLAME
				}
				got, err := BlanketDelta(r, v, tc.eps, tc.eps0, tc.n)
				if err != nil {
					t.Fatal(err)
				}
				want := math.Min(1, bennettReference(r, tc.eps, tc.eps0, tc.n, legacy))
				if !near(got, want, 1e-9*want+1e-300) {
					t.Errorf("%v %v %+v: delta %.10g, term-by-term %.10g", r.Mech, v, tc, got, want)
				}
			}
		}
	}
}

func TestBlanketBoundsExactBinaryRR(t *testing.T) {
	// Binary RR is k-RR with k = 2 (and an eps0-LDP randomizer): the
	// corrected bounds, specific and generic, must dominate its exact
	// shuffled delta.
	r := Randomizer{Mech: KRR, K: 2}
	for _, n := range []int{100, 1000} {
		for _, eps0 := range []float64{0.5, 1, 2} {
			for _, f := range []float64{0.2, 0.4, 0.6} {
				eps := f * eps0
				exact := shuffledBinaryRRDelta(n, eps0, eps)
				for _, m := range []Randomizer{r, {Mech: Generic}} {
					for _, v := range []BlanketVariant{Bennett, Hoeffding} {
						d, _ := BlanketDelta(m, v, eps, eps0, n)
						if d < exact*(1-1e-9) {
							t.Errorf("%v %v n=%d eps0=%v eps=%v: bound %g < exact %g", m.Mech, v, n, eps0, eps, d, exact)
						}
					}
				}
			}
		}
	}
}

func TestLegacyUnderstatesDelta(t *testing.T) {
	// The legacy terms carry 1/(m (e^eps - 1)); for m (e^eps-1) > 1 on the
	// bulk of Bin(n, gamma) it is smaller than the corrected bound.
	r := Randomizer{Mech: Laplace}
	for _, tc := range []struct {
		eps, eps0 float64
		n         int
	}{{0.005, 0.01, 1000}, {0.2, 0.5, 333}} {
		c, _ := BlanketDelta(r, Bennett, tc.eps, tc.eps0, tc.n)
		l, _ := BlanketDelta(r, BennettLegacyFLAME, tc.eps, tc.eps0, tc.n)
		if !(l < c) {
			t.Errorf("%+v: legacy %g not below corrected %g", tc, l, c)
		}
	}
}

func TestBlanketInputErrors(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		wants string
	}{
		{"krr k<2", func() error {
			_, _, err := BlanketEpsilon(Randomizer{Mech: KRR, K: 1}, Bennett, 1, 100, 1e-6)
			return err
		}(), "k (domain size) must be >= 2"},
		{"n<2", func() error { _, _, err := BlanketEpsilon(Randomizer{Mech: Laplace}, Bennett, 1, 1, 1e-6); return err }(), "n must be >= 2"},
		{"delta", func() error { _, _, err := BlanketEpsilon(Randomizer{Mech: Laplace}, Bennett, 1, 100, 2); return err }(), "delta must be in (0, 1)"},
		{"eps0 nan", func() error {
			_, err := BlanketDelta(Randomizer{Mech: Laplace}, Bennett, 0.1, math.NaN(), 100)
			return err
		}(), "eps0 must be a finite number"},
		{"closed eps_c > 1", func() error { _, err := BlanketClosedForm(2, 10, 100, 1e-6); return err }(), "needs eps_c <= 1"},
		{"erlingsson eps0", func() error { _, err := Erlingsson(1, 100000, 1e-6); return err }(), "eps0 <= 1/2"},
		{"erlingsson n", func() error { _, err := Erlingsson(0.1, 999, 1e-6); return err }(), "n >= 1000"},
		{"erlingsson no amplification", func() error { _, err := Erlingsson(0.4, 1000, 1e-6); return err }(), "no amplification"},
		{"mechanism name", func() error { _, err := ParseMechanism("gauss"); return err }(), "mechanism must be one of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantInvalid(t, tc.err, tc.wants) })
	}
}

func TestBlanketClosedFormAndErlingsson(t *testing.T) {
	e, err := BlanketClosedForm(1, 10, 100000, 1e-6)
	want := math.Sqrt(14 * math.Log(2/1e-6) * (math.E + 9) / 99999)
	if err != nil || !near(e, want, 1e-15) {
		t.Errorf("BlanketClosedForm = %v, %v; want %v", e, err, want)
	}
	e, err = Erlingsson(0.5, 100000, 1e-6)
	want = 12 * 0.5 * math.Sqrt(math.Log(1e6)/100000)
	if err != nil || !near(e, want, 1e-15) {
		t.Errorf("Erlingsson = %v, %v; want %v", e, err, want)
	}
}

func TestBlanketEpsilonNoAmplification(t *testing.T) {
	e, ok, err := BlanketEpsilon(Randomizer{Mech: Laplace}, Bennett, 5, 10, 1e-9)
	if err != nil || ok || e != 5 {
		t.Errorf("tiny n: got (%v, %v, %v), want eps0 = 5 with ok = false", e, ok, err)
	}
}

// shuffledKRR3Delta is the exact delta(eps) of shuffling n reports of k-ary
// randomized response (k = 3) when user 1 holds 0 or 1 and everyone else
// holds 0: the output is the histogram of the reports.
func shuffledKRR3Delta(n int, eps0, eps float64) float64 {
	den := math.Exp(eps0) + 2
	ps, po := math.Exp(eps0)/den, 1/den // same / other symbol
	lf := func(k int) float64 { v, _ := math.Lgamma(float64(k) + 1); return v }
	others := func(h0, h1, h2 int) float64 { // Multinomial(n-1; ps, po, po)
		if h0 < 0 || h1 < 0 || h2 < 0 {
			return 0
		}
		return math.Exp(lf(n-1) - lf(h0) - lf(h1) - lf(h2) + float64(h0)*math.Log(ps) + float64(h1+h2)*math.Log(po))
	}
	ee := math.Exp(eps)
	d1, d2 := 0.0, 0.0
	for h0 := 0; h0 <= n; h0++ {
		for h1 := 0; h0+h1 <= n; h1++ {
			h2 := n - h0 - h1
			// user 1 with input 0 reports 0 w.p. ps, 1 or 2 w.p. po each;
			// with input 1 reports 1 w.p. ps, 0 or 2 w.p. po each.
			P := ps*others(h0-1, h1, h2) + po*others(h0, h1-1, h2) + po*others(h0, h1, h2-1)
			Q := po*others(h0-1, h1, h2) + ps*others(h0, h1-1, h2) + po*others(h0, h1, h2-1)
			d1 += math.Max(0, P-ee*Q)
			d2 += math.Max(0, Q-ee*P)
		}
	}
	return math.Max(d1, d2)
}

func TestBlanketBoundsExactKRR3(t *testing.T) {
	r := Randomizer{Mech: KRR, K: 3}
	for _, n := range []int{30, 120} {
		for _, eps0 := range []float64{0.5, 1.5} {
			for _, f := range []float64{0.3, 0.6} {
				eps := f * eps0
				exact := shuffledKRR3Delta(n, eps0, eps)
				for _, v := range []BlanketVariant{Bennett, Hoeffding} {
					d, _ := BlanketDelta(r, v, eps, eps0, n)
					if d < exact*(1-1e-9) {
						t.Errorf("%v n=%d eps0=%v eps=%v: bound %g < exact %g", v, n, eps0, eps, d, exact)
					}
				}
				c, _ := ClonesDelta(eps, eps0, n)
				if c < exact*(1-1e-9) {
					t.Errorf("clones n=%d eps0=%v eps=%v: bound %g < exact %g", n, eps0, eps, c, exact)
				}
			}
		}
	}
}
