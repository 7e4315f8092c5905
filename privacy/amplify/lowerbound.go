package amplify

import (
	"fmt"
	"math"
)

// rrCurve holds the Bin(n-1, q) pmf of the other users' ones in shuffled
// binary randomized response, q = 1/(1+e^eps0), on the window where it
// matters, with log of the ratio B(k)/B(k-1) for every k in the window.
type rrCurve struct {
	eps0   float64
	m      int       // n - 1 other users
	lo     int       // B[i] is the pmf at lo + i
	B      []float64 // deflated: never above the exact pmf
	lratio []float64 // log(B(k)/B(k-1)) = log((m-k+1)/k) - eps0 at k = lo + i
}

// newRRCurve tabulates the pmf once (it does not depend on the central
// epsilon). Entries below delta e^-60 are left out: dropping positive terms
// keeps every delta computed from the table a lower bound.
func newRRCurve(eps0 float64, n int, delta float64) rrCurve {
	m := n - 1
	l1p := math.Log1p(math.Exp(-eps0))
	lq, lp := -eps0-l1p, -l1p // log q (report 1 | input 0), log(1-q)
	q := math.Exp(lq)
	mode := int(math.Floor(float64(m+1) * q))
	if mode > m {
		mode = m
	}
	cut := math.Log(delta) - 60
	lpmf := func(k int) float64 { return logChoose(m, k) + float64(k)*lq + float64(m-k)*lp }
	lm := lpmf(mode)
	lo, hi := mode, mode
	// Walk outward with the exact log ratio; stop below the cut-off.
	v := lm
	for lo > 0 {
		v -= math.Log(float64(m-lo+1)/float64(lo)) - eps0
		if v < cut {
			break
		}
		lo--
	}
	v = lm
	for hi < m {
		v += math.Log(float64(m-hi)/float64(hi+1)) - eps0
		if v < cut {
			break
		}
		hi++
	}
	c := rrCurve{eps0: eps0, m: m, lo: lo, B: make([]float64, hi-lo+1), lratio: make([]float64, hi-lo+1)}
	mf := float64(m)
	// Log-gamma carries a few ulps of m log m; each term is recomputed
	// from log-gamma, so the relative error is bounded uniformly.
	deflate := 1 - 4e-16*(mf*math.Log(mf+2)+mf+1) - 1e-14
	for i := range c.B {
		k := lo + i
		c.B[i] = math.Exp(lpmf(k)) * deflate
		if k > 0 {
			c.lratio[i] = math.Log(float64(m-k+1)/float64(k)) - eps0
		} else {
			c.lratio[i] = math.Inf(1)
		}
	}
	return c
}

// delta returns a lower bound on the exact delta(eps) of the pair
// (user 1 holds 0, user 1 holds 1; every other user holds 0), the larger of
// the two directions. With alpha = e^eps0/(1+e^eps0),
//
//	P(k) - e^eps Q(k) = a1 (B(k) - tau B(k-1)),  Q(k) - e^eps P(k) = a1 (B(k-1) - tau B(k)),
//
// a1 = alpha (1 - e^(eps-eps0)), tau = e^eps (1 - e^-(eps+eps0))/(1 - e^(eps-eps0)),
// and each positive part is B (1 - e^(log tau -+ log ratio)), formed with
// expm1 (no cancellation).
func (c rrCurve) delta(eps float64) float64 {
	e0 := c.eps0
	if !(eps < e0) {
		return 0
	}
	a1 := -math.Expm1(eps-e0) / (1 + math.Exp(-e0))
	ltau := eps + log1mexp(eps+e0) - log1mexp(e0-eps)
	d1, d2 := 0.0, 0.0
	for i, b := range c.B {
		// Direction 1: B(k) - tau B(k-1) = B(k) (1 - tau B(k-1)/B(k)).
		if lr := c.lratio[i]; lr > ltau {
			d1 += b * -math.Expm1(ltau-lr)
		}
		// Direction 2, term k+1: B(k) - tau B(k+1) = B(k)(1 - tau ratio(k+1)).
		k := c.lo + i
		lr1 := math.Inf(-1) // B(m+1) = 0
		if k < c.m {
			if i+1 < len(c.lratio) {
				lr1 = c.lratio[i+1]
			} else {
				lr1 = math.Log(float64(c.m-k)/float64(k+1)) - e0
			}
		}
		if lr1 < -ltau {
			d2 += b * -math.Expm1(ltau+lr1)
		}
	}
	d := math.Max(d1, d2) * a1
	return d * (1 - 1e-14)
}

// ShuffledRRLowerBound returns the exact central epsilon at delta (to within
// a few ulps, rounded down) of shuffling n reports of binary randomized
// response with local epsilon eps0, for the neighbouring pair in which user 1
// holds 0 or 1 and every other user holds 0 (the output is the number of
// ones). Binary randomized response is one eps0-LDP randomizer, so this is a
// valid LOWER bound on the epsilon of any shuffle bound that claims to hold
// for every eps0-LDP randomizer (and for k-ary randomized response with
// k = 2): such a bound returning less is wrong.
//
// The pmf is evaluated in log space and every difference with expm1, so the
// result is accurate for eps0 from 1e-6 to several hundred; every rounding
// is directed downwards (the computed delta never exceeds the exact one, and
// the largest epsilon whose computed delta exceeds the target is returned).
// Cost: one pass over the Bin(n-1, 1/(1+e^eps0)) window per bisection step,
// about 60 steps.
func ShuffledRRLowerBound(eps0 float64, n int, delta float64) (float64, error) {
	if err := validateUniform(eps0, n, delta); err != nil {
		return 0, fmt.Errorf("shuffled randomized response lower bound: %w", err)
	}
	c := newRRCurve(eps0, n, delta)
	if c.delta(0) <= delta {
		return 0, nil
	}
	return lastAbove(c.delta, delta, 0, eps0), nil
}

// lastAbove bisects a non-increasing curve for the largest eps in [lo, hi]
// at which curve(eps) > target still holds, given curve(lo) > target >=
// curve(hi); it returns the lower end of the final bracket, so that the
// result is a lower bound on the crossing.
func lastAbove(curve func(float64) float64, target, lo, hi float64) float64 {
	for range 200 {
		m := lo + (hi-lo)/2
		if m <= lo || m >= hi {
			break
		}
		if curve(m) > target {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}
