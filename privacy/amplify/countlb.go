package amplify

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// The count statistic: a LOWER bound on the central epsilon of a shuffled
// release, from one post-processing of its output. If the analyzer's view
// contains M values that do not depend on the differing user and are i.i.d.
// with P(value > t) = pOther, plus m values of the differing user that
// exceed t with probability p0 (input x) or p1 (input x'), then the number
// of released values above t is
//
//	P = Bin(M, pOther) + Bin(m, p0)   against   Q = Bin(M, pOther) + Bin(m, p1),
//
// and, the count being a post-processing of the release, the release's
// epsilon at delta is at least the smallest eps with
// max(H_{e^eps}(P||Q), H_{e^eps}(Q||P)) <= delta. This needs no theorem: it
// is exact for one neighbouring pair and one test, so any stated figure
// below it is wrong. Per-coordinate shuffle protocols (FLAME SS-Simple,
// SS-Double, SS-Topk, S-APES) meet the premise when every other user holds
// an input whose report is distributed like the dummies (FLAMECountLowerBound).

// countFloorRel is the relative floor of the windows: entries below this
// fraction of the mode are dropped (they only lower the computed delta,
// which keeps the result a lower bound).
const countFloorRel = 1e-40

// normBinomial returns the Bin(n, p) pmf (q = 1 - p supplied) on the window
// [lo, lo+len(w)) where it exceeds countFloorRel times its mode, computed by
// the ratio recurrence from the mode and normalised by its own sum (so no
// log-gamma of large arguments enters), and a bound on the relative error
// of every entry.
func normBinomial(n int, p, q float64) (lo int, w []float64, relErr float64) {
	return normBinomialFloor(n, p, q, countFloorRel)
}

// normBinomialFloor is normBinomial with the relative floor given.
func normBinomialFloor(n int, p, q, floor float64) (lo int, w []float64, relErr float64) {
	switch {
	case n == 0 || p == 0:
		return 0, []float64{1}, 0
	case q == 0:
		return n, []float64{1}, 0
	}
	mode := int(math.Floor(float64(n+1) * p))
	if mode > n {
		mode = n
	}
	odds := p / q
	var down, up []float64
	v, k := 1.0, mode
	for k > 0 {
		v *= float64(k) / (float64(n-k+1) * odds)
		if v < floor {
			break
		}
		k--
		down = append(down, v)
	}
	lo = k
	v, k = 1.0, mode
	for k < n {
		v *= float64(n-k) * odds / float64(k+1)
		if v < floor {
			break
		}
		k++
		up = append(up, v)
	}
	w = make([]float64, 0, len(down)+1+len(up))
	for i := len(down) - 1; i >= 0; i-- {
		w = append(w, down[i])
	}
	w = append(w, 1)
	w = append(w, up...)
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	for i := range w {
		w[i] /= sum
	}
	// Each recurrence step rounds about 4 times, the sum len(w) times, the
	// division once; the dropped tails (below 1e-40 of the mode each, at
	// most n of them) make the normalised entries too large by at most
	// that relative amount.
	const u = 0x1p-53
	relErr = u*(4*float64(max(len(down), len(up)))+float64(len(w))+2) + float64(n+1)*floor
	return lo, w, relErr
}

// countPair holds the two count distributions P and Q on one window.
type countPair struct {
	p, q   []float64
	relErr float64 // relative error bound of every entry of p and q
	// drop bounds, at every count, the true probability the windows'
	// dropped tails would have added to an entry of P or of Q: a computed
	// term x - a y is too large by at most a times it. A convolution's
	// entry loses sum_i O(i) M(c-i) over the dropped i (or j), at most the
	// largest dropped O(i) (M sums to 1), which is below the floor; so
	// drop is the number of factors times the floor.
	drop float64
	// maxLoss bounds the privacy loss |log P(c)/Q(c)| at every count c
	// (countMaxLoss; +Inf when a support differs).
	maxLoss float64
}

// countMaxLoss bounds the privacy loss of the count pair: P(c)/Q(c) is a
// ratio of two mixtures, sum_j O(c-j) Bin(j; mine, p0) over the same sum
// with p1, so it is at most the largest ratio of the user's binomials,
// (p0/p1)^j ((1-p0)/(1-p1))^(mine-j) <= e^(mine L) with
// L = max(|log(p0/p1)|, |log((1-p0)/(1-p1))|), and likewise Q/P. Beyond it
// both divergences are 0 exactly, whatever the windows dropped. +Inf when
// one of the probabilities is 0 or 1 and the other is not.
func countMaxLoss(mine int, p0, p1 float64) float64 {
	l := math.Max(math.Abs(math.Log(p0)-math.Log(p1)), math.Abs(math.Log1p(-p0)-math.Log1p(-p1)))
	if math.IsNaN(l) { // both 0 or both 1 in one of the ratios
		l = math.Max(zeroNaN(math.Abs(math.Log(p0)-math.Log(p1))), zeroNaN(math.Abs(math.Log1p(-p0)-math.Log1p(-p1))))
	}
	// Rounded up by a relative 1e-12 (the logarithms' few ulps).
	return float64(mine) * l * (1 + 1e-12)
}

// zeroNaN returns 0 for NaN (the log ratio of two zero probabilities, a
// term that never occurs).
func zeroNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

func newCountPair(others, mine int, pOther, p0, p1 float64) countPair {
	loO, wo, eo := normBinomial(others, pOther, 1-pOther)
	lo0, w0, e0 := normBinomial(mine, p0, 1-p0)
	lo1, w1, e1 := normBinomial(mine, p1, 1-p1)
	l0, c0 := loO+lo0, convolve(wo, w0)
	l1, c1 := loO+lo1, convolve(wo, w1)
	lo, hi := min(l0, l1), max(l0+len(c0), l1+len(c1))
	p := make([]float64, hi-lo)
	q := make([]float64, hi-lo)
	copy(p[l0-lo:], c0)
	copy(q[l1-lo:], c1)
	const u = 0x1p-53
	// A convolution entry sums at most mine+1 products of entries.
	rel := eo + max(e0, e1) + u*float64(mine+3)
	return countPair{p: p, q: q, relErr: rel, drop: 2 * countFloorRel, maxLoss: countMaxLoss(mine, p0, p1)}
}

// delta returns a lower bound on max(H_{e^eps}(P||Q), H_{e^eps}(Q||P)): the
// computed divergence less a bound on its rounding error, and the mass
// where the other distribution is zero.
func (c countPair) delta(eps float64) float64 {
	a := math.Exp(eps)
	d1, d2 := 0.0, 0.0
	m1, m2 := 0.0, 0.0 // the masses x + a y of the positive terms
	miss := a * c.drop
	for i, x := range c.p {
		y := c.q[i]
		if t := x - a*y - miss; t > 0 {
			d1 += t
			m1 += x + a*y
		}
		if t := y - a*x - miss; t > 0 {
			d2 += t
			m2 += y + a*x
		}
	}
	const u = 0x1p-53
	// A positive term x - a y is off by at most relErr (x + a y) from the
	// entries' errors plus 2u (x + a y) from its own rounding (a rounded
	// exponential, a product, a difference), and each addition to the sum
	// by u times the partial sum, at most len u times the whole.
	rel := c.relErr + 3*u
	s := u * float64(len(c.p)+1)
	return math.Max(d1-rel*m1-s*d1, d2-rel*m2-s*d2)
}

// CountLowerBound returns a lower bound on the epsilon at delta of any
// mechanism that the count statistic applies to (see above): the largest eps
// at which the computed hockey-stick divergence of
// P = Bin(others, pOther) + Bin(mine, p0) and
// Q = Bin(others, pOther) + Bin(mine, p1), less its rounding-error bound,
// still exceeds delta (0 when it never does, +Inf when no finite eps
// suffices). Probabilities must be in [0, 1], mine >= 1, others >= 0.
//
// Cost: the windows are a few tens of standard deviations wide; for
// others = 2.6e6 and mine = 157 about 5e6 multiply-adds plus 200 passes of
// bisection.
func CountLowerBound(others, mine int, pOther, p0, p1, delta float64) (float64, error) {
	wrap := func(err error) (float64, error) { return 0, fmt.Errorf("count-statistic lower bound: %w", err) }
	if err := checks.IntAtLeast("others", others, 0); err != nil {
		return wrap(err)
	}
	if err := checks.IntAtLeast("mine", mine, 1); err != nil {
		return wrap(err)
	}
	for _, v := range []struct {
		name string
		p    float64
	}{{"pOther", pOther}, {"p0", p0}, {"p1", p1}} {
		if math.IsNaN(v.p) || v.p < 0 || v.p > 1 {
			return wrap(checks.Invalidf("%s must be a probability in [0, 1], got %v", v.name, v.p))
		}
	}
	if err := checks.Delta("delta", delta); err != nil {
		return wrap(err)
	}
	return newCountPair(others, mine, pOther, p0, p1).lowerEps(delta), nil
}

// lowerEps bisects for the largest eps whose (deflated) delta exceeds the
// target.
func (c countPair) lowerEps(delta float64) float64 {
	if !(c.delta(0) > delta) {
		return 0
	}
	if !math.IsInf(c.maxLoss, 1) {
		// Beyond the largest loss both divergences are 0: a computed
		// term whose other side the windows dropped (a disjoint window,
		// not a disjoint support) is not infinite loss. lastAbove keeps
		// the lower end of its bracket, where the computed delta (a
		// lower bound on the exact one) exceeds the target.
		return lastAbove(c.delta, delta, 0, c.maxLoss)
	}
	// An upper end: the largest finite log ratio bounds the loss where both
	// masses are positive; mass where one side is 0 is at +Inf.
	hi, inf := 0.0, 0.0
	for i, x := range c.p {
		y := c.q[i]
		switch {
		case x > 0 && y > 0:
			hi = math.Max(hi, math.Abs(math.Log(x/y)))
		case x > 0 || y > 0:
			inf += x + y
		}
	}
	if inf > delta && c.delta(hi+1) > delta {
		return math.Inf(1)
	}
	return lastAbove(c.delta, delta, 0, hi+1)
}

// CountAttack is the count statistic's setting for one threshold: the tail
// probabilities of the other values and of the differing user's values.
type CountAttack struct {
	// Threshold t: values above it are counted (for R_{gamma,b}, levels
	// >= Threshold).
	Threshold float64
	// POther, P0, P1: P(value counted) for a value that does not depend on
	// the differing user, and for the differing user's value on inputs 0
	// and 1 of [0, 1].
	POther, P0, P1 float64
}

// flameCountAttacks returns the thresholds tried for FLAME's randomizers on
// [0, 1] with local epsilon eps0, with every other value distributed as a
// dummy (the blanket):
//   - Laplace (scale 1/eps0): the dummies are Laplace(1/2, 1/eps0), the
//     report of input 1/2, so the other users hold 1/2; by symmetry only
//     thresholds t = 1/2 + s/eps0, s >= 0, are needed (counting values above
//     t), up to where fewer than 1e-3 others are expected above t.
//   - R_{gamma,b} (gamma = (b+1)/(e^eps0 + b), outputs {0..b}): the dummies
//     are Unif{0..b}; the other users hold 0, whose report y >= L (L >= 1)
//     happens only through the blanket, exactly as for a dummy; every level
//     L = 1..b is tried.
func flameCountAttacks(r Randomizer, eps0 float64, others int) ([]CountAttack, error) {
	switch r.Mech {
	case Laplace:
		tail := func(x, t float64) float64 { // P(x + Lap(1/eps0) > t), t >= x
			return 0.5 * math.Exp(-eps0*(t-x))
		}
		sMax := math.Log(0.5*float64(max(others, 1))/1e-3) + 1
		var out []CountAttack
		const steps = 160
		for i := 0; i <= steps; i++ {
			s := sMax * float64(i) / steps
			t := 0.5 + s/eps0
			p1 := 1 - 0.5*math.Exp(-eps0*(1-t)) // t <= 1
			if t > 1 {
				p1 = tail(1, t)
			}
			out = append(out, CountAttack{Threshold: t, POther: tail(0.5, t), P0: tail(0, t), P1: p1})
		}
		return out, nil
	case RGammaB:
		b := r.K
		if b < 2 {
			return nil, checks.Invalidf("R_{gamma,b} needs b >= 2, got %d", b)
		}
		g := float64(b+1) / (math.Exp(eps0) + float64(b))
		if !(g > 0 && g < 1) {
			return nil, checks.Invalidf("eps0 = %v gives no usable blanket weight for R_{gamma,b}", eps0)
		}
		var out []CountAttack
		for L := 1; L <= b; L++ {
			blanket := g * float64(b+1-L) / float64(b+1)
			out = append(out, CountAttack{Threshold: float64(L), POther: blanket, P0: blanket, P1: (1 - g) + blanket})
		}
		return out, nil
	}
	return nil, checks.Invalidf("the count statistic is implemented for the Laplace and R_{gamma,b} randomizers, not %v", r.Mech)
}

// FLAMECountLowerBound returns a lower bound on the central epsilon at delta
// of a per-coordinate shuffle release of FLAME's randomizer r (Laplace on
// [0, 1] with scale 1/eps0, or R_{gamma,b} with r.K = b) in which the
// differing user contributes `mine` randomized values and the analyzer sees
// `others` further values, each a randomizer report or a dummy:
// SS-Simple: mine = d, others = d (n - 1); SS-Double and SS-Topk: mine = k,
// others = d n_p - k. The differing user holds 0 or 1 in every coordinate,
// the others hold the input whose report is distributed as a dummy
// (flameCountAttacks), and the threshold is the best of a grid. It returns
// the bound and the threshold that attains it. With R_{gamma,b} and
// shuffler dummies (SS-Double, SS-Topk) the dummies are counted at another
// rate than the other users' values, which this function does not model:
// use FLAMESparseCountLowerBound there.
func FLAMECountLowerBound(r Randomizer, eps0 float64, mine, others int, delta float64) (eps, threshold float64, err error) {
	wrap := func(err error) (float64, float64, error) {
		return 0, 0, fmt.Errorf("FLAME count-statistic lower bound: %w", err)
	}
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return wrap(err)
	}
	attacks, err := flameCountAttacks(r, eps0, others)
	if err != nil {
		return wrap(err)
	}
	best, bestT := 0.0, math.NaN()
	for _, a := range attacks {
		e, err := CountLowerBound(others, mine, a.POther, a.P0, a.P1, delta)
		if err != nil {
			return wrap(err)
		}
		if e > best || math.IsNaN(bestT) {
			best, bestT = e, a.Threshold
		}
	}
	return best, bestT, nil
}
