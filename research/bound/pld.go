package bound

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// pldOptions returns the discretisation for the per-round pair of an
// (eps, delta)-DP guarantee, whose finite losses are +-eps: a grid spacing
// h = eps/ceil(eps) (at most 1, as pld requires) puts both losses on the grid,
// so the k-fold composition lives on the lattice of multiples of h and the
// pessimistic rounding costs nothing; h is enlarged by 1e-12 relative so that
// floating-point division never rounds eps one whole step up. Such a grid is
// also far coarser than pld.DefaultInterval for small eps (FLAME composes
// eps ~ 0.002 over thousands of dimensions), which keeps the FFTs short.
func pldOptions(eps float64) pld.Options {
	m := math.Ceil(eps)
	h := eps / m
	if h != 1 {
		h = math.Min(1, h*(1+1e-12))
	}
	return pld.Options{Interval: h}
}

// maxPLDFold is the largest number of compositions handed to
// pld.PLD.SelfCompose. Far larger counts need FFTs beyond pld.MaxBins anyway,
// and counts near 2^62 overflow inside the package (it then reports
// epsilon 0), so they are rejected here.
const maxPLDFold = 1 << 40

func checkPLDFold(k int) error {
	if k > maxPLDFold {
		return checks.Invalidf("the pld accountant composes at most 2^40 = %d times, got %d", maxPLDFold, k)
	}
	return nil
}

// composePLD composes k rounds of an (eps, delta)-DP guarantee with the
// privacy loss distribution of the pair that dominates every such mechanism
// (pld.ApproxDP; pld.PureDP when delta = 0), and reports the smallest epsilon
// whose composed delta is at most k delta + deltaPrime. Since the composed
// pair is the optimal one (Kairouz, Oh and Viswanath 2015), this is never
// looser than composing the pure part and adding k delta (composeApprox with
// rdp), and it is reported with the same total delta, k delta + deltaPrime.
// pld.PLD.Delta includes every discretisation and floating-point error term,
// so the result is a rigorous upper bound.
func composePLD(eps, delta float64, k int, deltaPrime float64) (composed, error) {
	d, err := totalDelta("pld", eps, delta, k, deltaPrime)
	if err != nil {
		return composed{}, err
	}
	if err := checkPLDFold(k); err != nil {
		return composed{}, fmt.Errorf("pld composition: %w", err)
	}
	c := composed{delta: d, method: "pld"}
	if eps == 0 {
		return c, nil
	}
	o := pldOptions(eps)
	var p *pld.PLD
	if delta == 0 {
		p, err = pld.PureDP(eps, o)
	} else {
		p, err = pld.ApproxDP(eps, delta, o)
	}
	if err != nil {
		return composed{}, fmt.Errorf("pld composition: %w", err)
	}
	if k > 1 {
		if p, err = p.SelfCompose(k); err != nil {
			return composed{}, fmt.Errorf("pld composition: %w", err)
		}
	}
	e, err := p.Epsilon(c.delta)
	if err != nil {
		return composed{}, fmt.Errorf("pld composition: %w", err)
	}
	if !isFinite(e) {
		return composed{}, fmt.Errorf("pld composition: %w", checks.Invalidf("no finite epsilon at total delta %v", c.delta))
	}
	c.eps = math.Min(e, float64(k)*eps)
	return c, nil
}

// sgmPLD returns (epsilon, delta) of the composed sampled Gaussian mechanism
// by the privacy loss distribution accountant (pld.SampledGaussian composed
// --steps times): the epsilon at --delta, or the delta at --epsilon.
//
// Small deltas. The PLD's construction moves an upper tail of up to
// TailMass/2 per step to its +Inf atom, a floor of about steps x TailMass/2
// on every delta (5e-14 for 100 steps at the default 1e-15). So a delta
// within a factor 1000 of that floor is computed with TailMass
// sgmMinTailMass instead: at --delta when --delta is, at --epsilon when
// the delta found with the default is (the smaller figure kept; both are
// rigorous). The tilted bound of package pld then resolves deltas far
// below the FFT's round-off.
func sgmPLD(o *Params) (float64, float64, error) {
	if err := checkPLDFold(o.Steps); err != nil {
		return 0, 0, err
	}
	build := func(tail float64) (*pld.PLD, error) {
		p, err := pld.SampledGaussian(o.Q, o.Sigma, pld.Options{TailMass: tail})
		if err != nil {
			return nil, err
		}
		if o.Steps > 1 {
			return p.SelfCompose(o.Steps)
		}
		return p, nil
	}
	if o.Given["delta"] {
		var p *pld.PLD
		var err error
		if nearTailFloor(o.Delta, o.Steps) {
			p, err = build(sgmMinTailMass)
		}
		if p == nil {
			// far from the floor, or the smaller TailMass's grid is
			// beyond the package's limits
			if p, err = build(pld.DefaultTailMass); err != nil {
				return 0, 0, err
			}
		}
		e, err := p.Epsilon(o.Delta)
		if err != nil {
			return 0, 0, err
		}
		if !isFinite(e) {
			return 0, 0, checks.Invalidf("no finite epsilon at delta = %v for q = %v, sigma = %v, steps = %d (noise far too small)", o.Delta, o.Q, o.Sigma, o.Steps)
		}
		return e, o.Delta, nil
	}
	p, err := build(pld.DefaultTailMass)
	if err != nil {
		return 0, 0, err
	}
	d := p.Delta(o.Epsilon)
	if nearTailFloor(d, o.Steps) {
		// near the floor of the default TailMass: again with the
		// smallest (the true delta may be anywhere below)
		if p2, err := build(sgmMinTailMass); err == nil {
			d = math.Min(d, p2.Delta(o.Epsilon))
		}
	}
	return o.Epsilon, d, nil
}

// sgmMinTailMass is the smallest TailMass sgmPLD uses (the Gaussian of
// pld.SampledGaussian keeps a tail of 1e-30 anyway).
const sgmMinTailMass = 1e-30

// nearTailFloor reports whether delta lies within a factor 1000 of the
// floor steps x pld.DefaultTailMass/2 of steps compositions.
func nearTailFloor(delta float64, steps int) bool {
	return delta < 1e3*float64(steps)*pld.DefaultTailMass/2
}
