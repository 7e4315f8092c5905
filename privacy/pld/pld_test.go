package pld_test

import (
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// gaussianDelta is the exact hockey-stick divergence of the Gaussian
// mechanism (Balle and Wang 2018, Theorem 8).
func gaussianDelta(sigma, s, eps float64) float64 {
	return phi(-eps*sigma/s+s/(2*sigma)) - math.Exp(eps)*phi(-eps*sigma/s-s/(2*sigma))
}

// rrComposedDelta is the exact delta of k-fold binary randomized response
// with parameter e: the loss is e (2X - k), X ~ Bin(k, e^e/(1+e^e)).
func rrComposedDelta(e float64, k int, eps float64) float64 {
	p := 1 / (1 + math.Exp(-e))
	s := 0.0
	for x := 0; x <= k; x++ {
		l := e * float64(2*x-k)
		if l <= eps {
			continue
		}
		lc, _ := math.Lgamma(float64(k + 1))
		la, _ := math.Lgamma(float64(x + 1))
		lb, _ := math.Lgamma(float64(k - x + 1))
		lp := lc - la - lb + float64(x)*math.Log(p) + float64(k-x)*math.Log1p(-p)
		s += math.Exp(lp) * -math.Expm1(eps-l)
	}
	return s
}

// laplaceDelta is the exact delta of the Laplace mechanism with
// sensitivity/scale e: 1 - exp((eps - e)/2) for eps < e.
func laplaceDelta(e, eps float64) float64 {
	if eps >= e {
		return 0
	}
	return -math.Expm1((eps - e) / 2)
}

// checkBound asserts that got is a rigorous upper bound on exact (up to a
// relative 1e-9 for the rounding of the reference formula) and within the
// relative tolerance tol (plus an absolute floor abs for tiny deltas).
func checkBound(t *testing.T, name string, got, exact, tol, abs float64) {
	t.Helper()
	if got < exact*(1-1e-9)-1e-300 {
		t.Errorf("%s: PLD delta %.10g is below the exact %.10g", name, got, exact)
	}
	if got > exact*(1+tol)+abs {
		t.Errorf("%s: PLD delta %.10g exceeds the exact %.10g by more than %.0f%%", name, got, exact, 100*tol)
	}
}

func TestGaussianAgainstExact(t *testing.T) {
	for _, c := range []struct {
		sigma, s float64
		k        int
	}{
		{1, 1, 1}, {2, 1, 1}, {0.5, 1, 1}, {1, 2, 1},
		{1, 1, 10}, {3, 1, 20}, {5, 1, 100},
	} {
		p, err := pld.Gaussian(c.sigma, c.s, pld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p, err = p.SelfCompose(c.k); err != nil {
			t.Fatal(err)
		}
		se := c.sigma / math.Sqrt(float64(c.k))
		for _, eps := range []float64{0, 0.1, 0.5, 1, 2, 4, 8} {
			exact := gaussianDelta(se, c.s, eps)
			if exact < 1e-10 {
				continue
			}
			checkBound(t, "Gaussian", p.Delta(eps), exact, 0.03, 1e-12)
		}
	}
}

func TestRandomizedResponseComposedAgainstExact(t *testing.T) {
	for _, c := range []struct {
		e float64
		k int
	}{{0.5, 1}, {0.5, 50}, {0.1, 300}, {1, 20}, {2, 10}} {
		p, err := pld.RandomizedResponse(c.e, pld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// PureDP is the same PLD.
		q, err := pld.PureDP(c.e, pld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Delta(c.e/2) != q.Delta(c.e/2) {
			t.Errorf("PureDP differs from RandomizedResponse")
		}
		if p, err = p.SelfCompose(c.k); err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0, 0.25, 0.5, 1, 2, 3, 5} {
			exact := rrComposedDelta(c.e, c.k, eps)
			if exact < 1e-10 {
				continue
			}
			checkBound(t, "RR", p.Delta(eps), exact, 0.02, 1e-12)
		}
	}
}

func TestLaplaceAgainstExact(t *testing.T) {
	for _, c := range []struct{ scale, s float64 }{{1, 1}, {0.5, 1}, {2, 1}, {1, 3}, {10, 1}} {
		p, err := pld.Laplace(c.scale, c.s, pld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := c.s / c.scale
		for _, f := range []float64{0, 0.1, 0.3, 0.5, 0.9, 0.99} {
			eps := f * e
			checkBound(t, "Laplace", p.Delta(eps), laplaceDelta(e, eps), 0.01, 1e-12)
		}
		if d := p.Delta(e * 1.01); d > 1e-12 {
			t.Errorf("Laplace delta beyond eps = s/b is %v, want ~0", d)
		}
	}
}

func TestApproxDPAndFromPair(t *testing.T) {
	// ApproxDP(eps, delta) at eps: exactly delta.
	p, err := pld.ApproxDP(1, 1e-6, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Delta(1); d < 1e-6 || d > 1e-6*(1+1e-6) {
		t.Errorf("ApproxDP(1, 1e-6).Delta(1) = %v, want 1e-6", d)
	}
	// At eps = 0 it is delta + (1-delta) tanh(eps/2).
	want := 1e-6 + (1-1e-6)*math.Tanh(0.5)
	if d := p.Delta(0); d < want || d > want*(1+1e-9) {
		t.Errorf("ApproxDP(1, 1e-6).Delta(0) = %v, want %v", d, want)
	}
	// FromPair of RR equals RandomizedResponse.
	e := 0.7
	a := 1 / (1 + math.Exp(-e))
	fp, err := pld.FromPair([]float64{a, 1 - a}, []float64{1 - a, a}, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rr, _ := pld.RandomizedResponse(e, pld.Options{})
	for _, eps := range []float64{0, 0.3, 0.69} {
		if x, y := fp.Delta(eps), rr.Delta(eps); math.Abs(x-y) > 1e-12 {
			t.Errorf("FromPair(RR) delta(%v) = %v, RandomizedResponse %v", eps, x, y)
		}
	}
	// An asymmetric pair: the two directions differ, Delta is the max.
	p2, err := pld.FromPair([]float64{0.5, 0.5, 0}, []float64{0.25, 0.5, 0.25}, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// remove: losses log 2 (0.5), 0 (0.5); add: log(1/2) (0.25), 0 (0.5), +Inf (0.25)
	if d := p2.Delta(0); math.Abs(d-0.25) > 1e-9 {
		t.Errorf("asymmetric pair delta(0) = %v, want 0.25 (TV distance)", d)
	}
	if d := p2.Delta(5); d < 0.25 || d > 0.25+1e-9 {
		t.Errorf("asymmetric pair delta(5) = %v, want 0.25 (the +Inf atom of the add direction)", d)
	}
	if e, err := p2.Epsilon(0.1); err != nil || !math.IsInf(e, 1) {
		t.Errorf("Epsilon(0.1) = %v, %v; want +Inf and no error", e, err)
	}
}

func TestShuffleClonesAgainstAmplify(t *testing.T) {
	for _, c := range []struct {
		eps0 float64
		n    int
	}{{1, 1000}, {4, 100000}, {0.5, 10000}, {0.05, 1000}} {
		p, err := pld.ShuffleClones(c.eps0, c.n, pld.Options{Interval: math.Min(1e-4, c.eps0/200)})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []float64{0, 0.02, 0.05, 0.1, 0.2} {
			eps := f * c.eps0
			want, err := amplify.ClonesDelta(eps, c.eps0, c.n)
			if err != nil {
				t.Fatal(err)
			}
			if want < 1e-10 {
				continue
			}
			got := p.Delta(eps)
			// ClonesDelta is itself an upper bound with a 1e-9 relative slack.
			if got < want*(1-1e-6) {
				t.Errorf("eps0 = %v, n = %d, eps = %v: PLD %.10g below the exact %.10g", c.eps0, c.n, eps, got, want)
			}
			if got > want*1.02+1e-12 {
				t.Errorf("eps0 = %v, n = %d, eps = %v: PLD %.10g more than 2%% above the exact %.10g", c.eps0, c.n, eps, got, want)
			}
		}
		// the shuffled output is eps0-DP
		if d := p.Delta(c.eps0); d > 1e-12 {
			t.Errorf("delta(eps0) = %v, want ~0", d)
		}
	}
}

func TestShuffleClonesExtremeEps0(t *testing.T) {
	// eps0 = 40, n = 1000: essentially binary RR with eps 40 (P(C >= 1)
	// ~ 4e-15), whose epsilon at delta 1e-6 is 40 + log(1 - 1e-6).
	p, err := pld.ShuffleClones(40, 1000, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Epsilon(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if e < 39.9 || e > 40+1e-3 {
		t.Errorf("eps0 = 40: epsilon(1e-6) = %v, want ~39.999999", e)
	}
	// eps0 = 1e-6: the shuffled output is at most 1e-6-DP; delta at 0 is
	// tiny and agrees with the exact computation.
	for _, n := range []int{1000, 1000000} {
		p, err := pld.ShuffleClones(1e-6, n, pld.Options{Interval: 1e-8})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := amplify.ClonesDelta(0, 1e-6, n)
		got := p.Delta(0)
		if got < want*(1-1e-6) || got > want*1.02 {
			t.Errorf("eps0 = 1e-6, n = %d: delta(0) = %v, exact %v", n, got, want)
		}
		if e, err := p.Epsilon(1e-12); err != nil || e > 1e-6*(1+1e-6) {
			t.Errorf("eps0 = 1e-6, n = %d: epsilon(1e-12) = %v, %v", n, e, err)
		}
	}
}

func TestShuffleClonesHetero(t *testing.T) {
	// equal probabilities reproduce the binomial case
	const n, eps0 = 2000, 1.0
	probs := make([]float64, n-1)
	for i := range probs {
		probs[i] = math.Exp(-eps0)
	}
	h, err := pld.ShuffleClonesHetero(probs, eps0, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := pld.ShuffleClones(eps0, n, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, eps := range []float64{0, 0.05, 0.1, 0.2} {
		a, b := h.Delta(eps), u.Delta(eps)
		if math.Abs(a-b) > 1e-9*b+1e-14 {
			t.Errorf("hetero %v vs binomial %v at eps %v", a, b, eps)
		}
	}
	// APES personalized budgets through amplify.EoNCloneProbs: the PLD bound
	// agrees with amplify.EoNDelta.
	eps := make([]float64, 1000)
	for i := range eps {
		eps[i] = 0.05 + 0.95*float64(i)/float64(len(eps)-1)
	}
	q, err := amplify.EoNCloneProbs(eps)
	if err != nil {
		t.Fatal(err)
	}
	im := 0
	for i := range q {
		if q[i] > q[im] {
			im = i
		}
	}
	others := append(append([]float64(nil), q[:im]...), q[im+1:]...)
	p, err := pld.ShuffleClonesHetero(others, 1, pld.Options{Interval: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []float64{0.05, 0.1, 0.2} {
		want, err := amplify.EoNDelta(eps, e)
		if err != nil {
			t.Fatal(err)
		}
		got := p.Delta(e)
		if want > 1e-10 && (got < want*(1-1e-6) || got > want*1.02+1e-12) {
			t.Errorf("EoN eps %v: PLD %v, amplify.EoNDelta %v", e, got, want)
		}
	}
}

func TestComposeConsistency(t *testing.T) {
	sg, err := pld.SampledGaussian(0.05, 1.2, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := pld.RandomizedResponse(0.3, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    *pld.PLD
		k    int
	}{{"sampled Gaussian", sg, 8}, {"RR", rr, 13}} {
		self, err := c.p.SelfCompose(c.k)
		if err != nil {
			t.Fatal(err)
		}
		chain := c.p
		for i := 1; i < c.k; i++ {
			if chain, err = chain.Compose(c.p); err != nil {
				t.Fatal(err)
			}
		}
		for _, eps := range []float64{0, 0.5, 1, 2, 3} {
			a, b := self.Delta(eps), chain.Delta(eps)
			if math.Abs(a-b) > 1e-6*math.Max(a, b)+1e-10 {
				t.Errorf("%s: SelfCompose(%d) delta(%v) = %.12g, chained Compose %.12g", c.name, c.k, eps, a, b)
			}
		}
	}
	// Accountant = Compose of SelfComposes.
	var acc pld.Accountant
	if d := acc.Delta(0.5); d != 0 {
		t.Errorf("empty accountant delta = %v", d)
	}
	if err := acc.Add(sg, 5); err != nil {
		t.Fatal(err)
	}
	if err := acc.Add(rr, 3); err != nil {
		t.Fatal(err)
	}
	a5, _ := sg.SelfCompose(5)
	r3, _ := rr.SelfCompose(3)
	both, err := a5.Compose(r3)
	if err != nil {
		t.Fatal(err)
	}
	if x, y := acc.Delta(1), both.Delta(1); math.Abs(x-y) > 1e-12 {
		t.Errorf("accountant delta %v, direct %v", x, y)
	}
	if acc.Steps() != 8 {
		t.Errorf("steps = %d", acc.Steps())
	}
	// Different intervals: composed on the coarser grid.
	fine, _ := pld.RandomizedResponse(0.3, pld.Options{Interval: 1e-5})
	mixed, err := fine.Compose(rr)
	if err != nil {
		t.Fatal(err)
	}
	if mixed.Interval() != rr.Interval() {
		t.Errorf("mixed interval %v", mixed.Interval())
	}
	if d, want := mixed.Delta(0.2), rrComposedDelta(0.3, 2, 0.2); d < want*(1-1e-9) || d > want*1.01 {
		t.Errorf("mixed-interval compose delta %v, exact %v", d, want)
	}
}

// TestMonotoneAndInverse checks that Delta is non-increasing on a grid of
// epsilons (step 0.05; 0.01 with the long tests) and that Epsilon inverts it.
func TestMonotoneAndInverse(t *testing.T) {
	step := 0.05
	if longtest.Enabled() {
		step = 0.01
	}
	sg, _ := pld.SampledGaussian(0.01, 1, pld.Options{})
	sgk, err := sg.SelfCompose(200)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := pld.Gaussian(2, 1, pld.Options{})
	sc, _ := pld.ShuffleClones(1, 1000, pld.Options{})
	for _, p := range []*pld.PLD{sgk, g, sc} {
		prev := 2.0
		for eps := 0.0; eps < 6; eps += step {
			d := p.Delta(eps)
			if d > prev || d < 0 || d > 1 {
				t.Fatalf("Delta not non-increasing in [0,1] at eps = %v: %v after %v", eps, d, prev)
			}
			prev = d
		}
		for _, delta := range []float64{1e-3, 1e-5, 1e-8, 1e-10} {
			e, err := p.Epsilon(delta)
			if err != nil {
				t.Fatal(err)
			}
			if math.IsInf(e, 1) {
				continue
			}
			if d := p.Delta(e); d > delta {
				t.Errorf("Delta(Epsilon(%v)) = %v > delta", delta, d)
			}
			if e > 1e-9 {
				if d := p.Delta(e * (1 - 1e-6)); d <= delta {
					t.Errorf("Epsilon(%v) = %v is not the smallest: Delta(%v) = %v", delta, e, e*(1-1e-6), d)
				}
			}
		}
	}
}

func TestInvalidInput(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	o := pld.Options{}
	g, _ := pld.Gaussian(1, 1, o)
	calls := map[string]func() error{
		"Gaussian sigma NaN":      func() error { _, err := pld.Gaussian(nan, 1, o); return err },
		"Gaussian sigma 0":        func() error { _, err := pld.Gaussian(0, 1, o); return err },
		"Gaussian sens Inf":       func() error { _, err := pld.Gaussian(1, inf, o); return err },
		"Gaussian huge range":     func() error { _, err := pld.Gaussian(1e-4, 1, o); return err },
		"Laplace scale -1":        func() error { _, err := pld.Laplace(-1, 1, o); return err },
		"RR eps NaN":              func() error { _, err := pld.RandomizedResponse(nan, o); return err },
		"PureDP eps 0":            func() error { _, err := pld.PureDP(0, o); return err },
		"ApproxDP delta 1":        func() error { _, err := pld.ApproxDP(1, 1, o); return err },
		"ApproxDP delta -0.1":     func() error { _, err := pld.ApproxDP(1, -0.1, o); return err },
		"SampledGaussian q 0":     func() error { _, err := pld.SampledGaussian(0, 1, o); return err },
		"SampledGaussian q 1.5":   func() error { _, err := pld.SampledGaussian(1.5, 1, o); return err },
		"SampledGaussian q NaN":   func() error { _, err := pld.SampledGaussian(nan, 1, o); return err },
		"FromPair lengths":        func() error { _, err := pld.FromPair([]float64{1}, []float64{0.5, 0.5}, o); return err },
		"FromPair empty":          func() error { _, err := pld.FromPair(nil, nil, o); return err },
		"FromPair negative":       func() error { _, err := pld.FromPair([]float64{1.5, -0.5}, []float64{0.5, 0.5}, o); return err },
		"FromPair sum":            func() error { _, err := pld.FromPair([]float64{0.5, 0.4}, []float64{0.5, 0.5}, o); return err },
		"ShuffleClones n 0":       func() error { _, err := pld.ShuffleClones(1, 0, o); return err },
		"ShuffleClones eps0 Inf":  func() error { _, err := pld.ShuffleClones(inf, 10, o); return err },
		"Hetero prob 2":           func() error { _, err := pld.ShuffleClonesHetero([]float64{2}, 1, o); return err },
		"Options interval NaN":    func() error { _, err := pld.Gaussian(1, 1, pld.Options{Interval: nan}); return err },
		"Options interval -1":     func() error { _, err := pld.Gaussian(1, 1, pld.Options{Interval: -1}); return err },
		"Options tail 0.5":        func() error { _, err := pld.Gaussian(1, 1, pld.Options{TailMass: 0.5}); return err },
		"SelfCompose 0":           func() error { _, err := g.SelfCompose(0); return err },
		"SubsamplePoisson q 0":    func() error { _, err := g.SubsamplePoisson(0); return err },
		"SubsamplePoisson q NaN":  func() error { _, err := g.SubsamplePoisson(nan); return err },
		"Compose nil":             func() error { _, err := g.Compose(nil); return err },
		"Compose zero":            func() error { _, err := g.Compose(&pld.PLD{}); return err },
		"Epsilon delta 0":         func() error { _, err := g.Epsilon(0); return err },
		"Epsilon delta 1":         func() error { _, err := g.Epsilon(1); return err },
		"Epsilon delta NaN":       func() error { _, err := g.Epsilon(nan); return err },
		"Accountant nil":          func() error { var a pld.Accountant; return a.Add(nil, 1) },
		"Accountant times 0":      func() error { var a pld.Accountant; return a.Add(g, 0) },
		"Accountant epsilon 1":    func() error { var a pld.Accountant; _, err := a.Epsilon(1); return err },
		"Regrid finer":            func() error { _, err := g.Regrid(1e-5); return err },
		"SelfCompose too large":   func() error { _, err := g.SelfCompose(1 << 40); return err },
		"Laplace huge range":      func() error { _, err := pld.Laplace(1e-6, 1, o); return err },
		"Hetero eps0 NaN":         func() error { _, err := pld.ShuffleClonesHetero([]float64{0.5}, nan, o); return err },
		"ShuffleClones eps0 1000": func() error { _, err := pld.ShuffleClones(1000, 10, o); return err },
		"Subsample substitution": func() error {
			s, err := pld.ShuffleClones(1, 10, o)
			if err != nil {
				return nil
			}
			_, err = s.SubsamplePoisson(0.5)
			return err
		},
	}
	for name, f := range calls {
		err := f()
		if err == nil || !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: got %v, want an error wrapping checks.ErrInvalid", name, err)
		}
	}
	if d := g.Delta(nan); d != 1 {
		t.Errorf("Delta(NaN) = %v, want 1", d)
	}
	if d := g.Delta(-1); d != 1 {
		t.Errorf("Delta(-1) = %v, want 1", d)
	}
}
