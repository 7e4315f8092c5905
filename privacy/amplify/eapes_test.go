package amplify

import (
	"math"
	"testing"
)

// TestGDPConversionAgainstClosedForm checks amplify's GDP names (one
// implementation, in package account) against the textbook formula
// Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), evaluated directly where it
// does not cancel, and against the formula's 40-digit values (independent
// numbers; a relative change of 1e-8 in mu/2 fails them all).
func TestGDPConversionAgainstClosedForm(t *testing.T) {
	for _, mu := range []float64{0.05, 0.5, 1, 3} {
		for _, eps := range []float64{0, 0.1, 1, 5} {
			got, err := GDPDelta(mu, eps)
			if err != nil {
				t.Fatal(err)
			}
			want := phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
			if !near(got, want, 1e-12+1e-9*want) {
				t.Errorf("mu=%v eps=%v: %g vs closed form %g", mu, eps, got, want)
			}
		}
	}
	// The same formula in 40-digit arithmetic (mpmath 1.3.0, mp.dps = 40:
	// Phi(x) = erfc(-x/sqrt(2))/2), including far-tail points where the
	// double-precision formula above cancels to nothing.
	for _, c := range []struct{ mu, eps, want float64 }{
		{1, 0, 0.38292492254802620728},
		{1, 1, 0.1269367375066439458},
		{0.5, 0.1, 0.15926050741399166315},
		{2, 3, 0.18381307654447215597},
		{3, 10, 0.018589514315857806058},
		{0.1, 1, 1.2308359836427112292e-25},
		{0.05, 0.5, 4.7972913626623444106e-26},
	} {
		got, err := GDPDelta(c.mu, c.eps)
		if err != nil || math.Abs(got-c.want) > 1e-10*c.want {
			t.Errorf("GDPDelta(%v, %v) = %.17g, %v; 40-digit value %.17g", c.mu, c.eps, got, err, c.want)
		}
	}
}

func TestGDPRoundTrip(t *testing.T) {
	for _, mu := range []float64{0.01, 0.3, 1, 2} {
		for _, delta := range []float64{1e-10, 1e-6, 1e-3} {
			e, err := GDPEpsilon(mu, delta)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := GDPDelta(mu, e)
			if d > delta*(1+1e-9) {
				t.Errorf("mu=%v delta=%v: delta(eps=%v) = %g exceeds target", mu, delta, e, d)
			}
			if e > 0 {
				d2, _ := GDPDelta(mu, e*(1-1e-6))
				if d2 <= delta {
					t.Errorf("mu=%v delta=%v: eps %v not the smallest", mu, delta, e)
				}
			}
			m, err := GDPMu(e, delta)
			if err != nil || !near(m, mu, 1e-6*mu) {
				t.Errorf("GDPMu(%v, %v) = %v, %v; want %v", e, delta, m, err, mu)
			}
		}
	}
}

func TestEAPESMu(t *testing.T) {
	eps := []float64{0, 0.1, 1, 2, 700, 1e6}
	deltas := []float64{0, 1e-5, 0, 0.1, 0, 0}
	mu, err := EAPESMu(eps, deltas)
	if err != nil {
		t.Fatal(err)
	}
	var ps []float64
	for i, e := range eps {
		ps = append(ps, 2*(1-deltas[i])/(1+math.Exp(e)))
	}
	s, mx := 0.0, 0.0
	for _, p := range ps {
		s += p
		mx = math.Max(mx, p)
	}
	if want := 2 / math.Sqrt(s-mx); !near(mu, want, 1e-12*want) || math.IsNaN(mu) {
		t.Errorf("mu = %v, want %v", mu, want)
	}
	// eps_i = 0 everywhere is allowed (p_i = 1 - delta_i).
	if mu, err := EAPESMu(make([]float64, 101), nil); err != nil || !near(mu, 0.2, 1e-12) {
		t.Errorf("all-zero budgets: mu = %v, %v; want 0.2", mu, err)
	}
	// Budgets so large that no one else clones: an error, not Inf or NaN.
	if _, err := EAPESMu([]float64{1e6, 1e6}, nil); err == nil {
		t.Error("want an error for budgets with no amplification")
	}
	wantInvalid(t, func() error { _, err := EAPESMu([]float64{1, -1}, nil); return err }(), "eps[1] must be >= 0")
	wantInvalid(t, func() error { _, err := EAPESMu([]float64{1, 1}, []float64{0, 1}); return err }(), "delta[1] must be in [0, 1)")
}

func TestEAPESIsLabelledApproximation(t *testing.T) {
	eps := make([]float64, 10000)
	for i := range eps {
		eps[i] = 0.05 + 0.95*float64(i)/float64(len(eps)-1)
	}
	b, mu, err := EAPES(eps, nil, 1e-8)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Approximation || mu <= 0 {
		t.Errorf("E-APES result %+v not labelled as an approximation", b)
	}
	best, err := BestPersonal(eps, 1e-8)
	if err != nil {
		t.Fatal(err)
	}
	if best.Approximation || best.Name == "eapes-gdp" {
		t.Errorf("BestPersonal chose the approximation %+v", best)
	}
	// E-APES beats Theorem 4's closed form but not EoN's numerical bound.
	cf, _ := EoNClosedForm(eps, 1e-8)
	num, _ := EoNNumerical(eps, 1e-8)
	if !(b.Epsilon < cf.Epsilon) || !(b.Epsilon > num.Epsilon) {
		t.Errorf("E-APES %v, EoN closed %v, EoN numerical %v: expected closed > E-APES > numerical", b.Epsilon, cf.Epsilon, num.Epsilon)
	}
}

func TestEAPESBerryEsseenExample(t *testing.T) {
	var tv struct {
		N, M       int
		Eps0       float64
		TVPrinted  float64 `json:"tv_printed"`
		TVUnitCell float64 `json:"tv_unit_cell"`
	}
	loadJSON(t, "eapes.json", &tv)
	got, err := EAPESTVDistanceAsPrinted(tv.M, tv.Eps0, 1/float64(tv.N))
	if err != nil || !near(got, tv.TVPrinted, 5e-5) {
		t.Errorf("printed-cell TV = %.5f, %v; paper %v", got, err, tv.TVPrinted)
	}
	got, err = EAPESTVDistance(tv.M, tv.Eps0, 1/float64(tv.N))
	if err != nil || !near(got, tv.TVUnitCell, 5e-5) {
		t.Errorf("unit-cell TV = %.5f, %v; want %v", got, err, tv.TVUnitCell)
	}
}

func TestEAPESCorrection(t *testing.T) {
	// tau = 0, deltaMax = 0: the corrected curve is the plain GDP curve.
	for _, mu := range []float64{0.05, 0.5, 2} {
		for _, eps := range []float64{0, 0.1, 1} {
			got, err := EAPESCorrectedDelta(mu, 0, 0, eps)
			want, _ := GDPDelta(mu, eps)
			if err != nil || !near(got, want, 1e-9) {
				t.Errorf("mu=%v eps=%v: corrected %v, GDP %v (%v)", mu, eps, got, want, err)
			}
		}
	}
	// The correction can only increase delta, by at least (1-deltaMax) tau.
	d0, _ := EAPESCorrectedDelta(0.3, 0, 0, 0.5)
	d1, _ := EAPESCorrectedDelta(0.3, 0.0206, 1e-5, 0.5)
	if !(d1 >= d0+0.0206*(1-1e-5)-1e-12) {
		t.Errorf("corrected delta %v not >= %v + tau", d1, d0)
	}
	// Round trip and the vacuous regime.
	e, err := EAPESCorrectedEpsilon(0.3, 0.001, 0, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := EAPESCorrectedDelta(0.3, 0.001, 0, e); d > 0.01 {
		t.Errorf("delta at eps %v is %v > 0.01", e, d)
	}
	wantInvalid(t, func() error { _, err := EAPESCorrectedEpsilon(0.3, 0.0206, 0, 1e-8); return err }(), "vacuous")
}
