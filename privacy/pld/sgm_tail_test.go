package pld_test

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// sgmRemoveAtoms returns the privacy loss of the remove direction of the
// Poisson-subsampled Gaussian pair (q N(1, s^2) + (1-q) N(0, s^2) against
// N(0, s^2)) as atoms, by the midpoint rule in the output space x with
// step dx on [-14 s, 1 + 10 s] (the P-mass above, at most
// erfc(10/sqrt 2)/2 + erfc((1+10 s)/(s sqrt 2))/2, is returned; the mass
// below carries losses near log(1-q) < 0, irrelevant to delta at eps >= 0),
// independently of package pld.
func sgmRemoveAtoms(q, sigma, dx float64) (ls, ps []float64, outside float64) {
	s2 := sigma * sigma
	lo, hi := -14*sigma, 1+10*sigma
	norm := 1 / (sigma * math.Sqrt(2*math.Pi))
	for x := lo + dx/2; x < hi; x += dx {
		q0 := norm * math.Exp(-x*x/(2*s2)) * dx
		p1 := norm * math.Exp(-(x-1)*(x-1)/(2*s2)) * dx
		ls = append(ls, math.Log1p(q*math.Expm1((2*x-1)/(2*s2))))
		ps = append(ps, q*p1+(1-q)*q0)
	}
	outside = 0.5*math.Erfc(10/math.Sqrt2) + 0.5*math.Erfc(hi/(sigma*math.Sqrt2))
	return ls, ps, outside
}

// refRoundTilted puts the atoms on the grid of spacing h, every loss
// rounded up (up) or down, and tilts the result by e^{lam l}, normalised:
// it returns the tilted pmf and log a, with pmf_i = a m_i e^{lam l_i}.
func refRoundTilted(ls, ps []float64, h, lam float64, up bool) (refPMF, float64) {
	round := math.Floor
	if up {
		round = math.Ceil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range ls {
		lo, hi = math.Min(lo, round(l/h)), math.Max(hi, round(l/h))
	}
	r := refPMF{off: int(lo), p: make([]float64, int(hi-lo)+1)}
	for i, l := range ls {
		r.p[int(round(l/h))-r.off] += ps[i]
	}
	top := float64(r.off+len(r.p)-1) * h
	s := 0.0
	for i := range r.p {
		r.p[i] *= math.Exp(lam * (float64(r.off+i)*h - top))
		s += r.p[i]
	}
	for i := range r.p {
		r.p[i] /= s
	}
	return r, -lam*top - math.Log(s)
}

// refLambda returns the tilt minimising the Chernoff bound
// k log E[e^{lam L}] + log c_lam - lam eps of the atoms (golden section on
// log lam), so that the tilted k-fold measure is centred near eps.
func refLambda(ls, ps []float64, k int, eps float64) float64 {
	top := math.Inf(-1)
	for _, l := range ls {
		top = math.Max(top, l)
	}
	F := func(x float64) float64 {
		lam := math.Exp(x)
		s := 0.0
		for i, l := range ls {
			s += ps[i] * math.Exp(lam*(l-top))
		}
		lc := -math.Log1p(lam) + lam*(math.Log(lam)-math.Log1p(lam))
		return float64(k)*(math.Log(s)+lam*top) + lc - lam*eps
	}
	a, b := math.Log(1e-2), math.Log(1e3)
	for i := 0; i < 60; i++ {
		m1, m2 := a+(b-a)/3, b-(b-a)/3
		if F(m1) <= F(m2) {
			b = m2
		} else {
			a = m1
		}
	}
	return math.Exp((a + b) / 2)
}

// refTiltedDelta is the delta at eps of k compositions from the tilted
// k-fold measure c (c_j = a^k m_j e^{lam l_j}, logA = log a).
func refTiltedDelta(c refPMF, h, lam, logA float64, k int, eps float64) float64 {
	s := 0.0
	for i, v := range c.p {
		if l := float64(c.off+i) * h; l > eps {
			s += v * math.Exp(-float64(k)*logA-lam*l) * -math.Expm1(eps-l)
		}
	}
	return s
}

// TestSampledGaussianSmallDelta: below delta ~ 1e-12 the FFT's absolute
// round-off (about 1e-12) used to dominate: q = 0.001, sigma = 1, 100 steps
// stated 2.0e-12 at eps = 1 where the truth is about 2e-14, and 2.3e-13 at
// eps = 2, worse than RDP's 2.0e-13. The tilted bound must lie within an
// independent bracket (the per-step loss by the midpoint rule, rounded up
// and down to a grid of 4e-5, each composed under an exponential tilt by
// gonum's FFT: the rounded-down composition is a lower bound on the exact
// delta, the rounded-up one an upper bound) up to 20% above its top, and
// below RDP.
func TestSampledGaussianSmallDelta(t *testing.T) {
	longtest.Skip(t) // the independent reference is long
	const (
		q, sigma = 0.001, 1.0
		steps    = 100
		h        = 4e-5
	)
	p, err := pld.SampledGaussian(q, sigma, pld.Options{TailMass: 1e-25})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.SelfCompose(steps)
	if err != nil {
		t.Fatal(err)
	}
	acc := account.NewRDPAccountant()
	if err := acc.AddSampledGaussian(q, sigma, steps); err != nil {
		t.Fatal(err)
	}
	ls, ps, outside := sgmRemoveAtoms(q, sigma, 2e-4)
	for _, c2 := range []struct{ eps float64 }{{1}, {2}} {
		got := c.Delta(c2.eps)
		var bracket [2]float64
		lam := refLambda(ls, ps, steps, c2.eps)
		for i, up := range []bool{false, true} {
			r, logA := refRoundTilted(ls, ps, h, lam, up)
			bracket[i] = refTiltedDelta(refPower(r, steps), h, lam, logA, steps, c2.eps)
		}
		bracket[1] += steps * outside
		rdp, _, err := account.RDPToDelta(account.DefaultRDPOrders(), acc.Curve(), c2.eps)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("eps = %v: PLD delta %.4g, exact in [%.4g, %.4g] (tilt %.3g), RDP %.4g", c2.eps, got, bracket[0], bracket[1], lam, rdp)
		if got < bracket[0]*(1-1e-3) {
			t.Errorf("eps = %v: PLD delta %.4g below the reference's lower bound %.4g", c2.eps, got, bracket[0])
		}
		if got > bracket[1]*1.2 {
			t.Errorf("eps = %v: PLD delta %.4g more than 20%% above the reference's upper bound %.4g", c2.eps, got, bracket[1])
		}
		if got >= rdp {
			t.Errorf("eps = %v: PLD delta %.4g not below RDP's %.4g", c2.eps, got, rdp)
		}
	}
}
