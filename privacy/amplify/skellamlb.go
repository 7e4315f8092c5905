package amplify

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// Skellam shift lower bound. The symmetric Skellam distribution of
// variance W is Poisson(W/2) - Poisson(W/2), with pmf
// p(k) = e^{-W} I_|k|(W) (I the modified Bessel function). A release
// Y = X + N, N ~ Sk(W), with X = 0 for one input and X >= D (an integer)
// for its neighbour, is told apart by the test {Y >= s}: for every s,
//
//	P_1(Y >= s) >= P(N >= s - D),   P_0(Y >= s) = P(N >= s),
//
// so the release's epsilon at delta is at least
// log((P(N >= s - D) - delta) / P(N >= s)) for every s (the test's
// hockey-stick divergence exceeds delta below it). The tails are bracketed
// rigorously: the ratios r_k = p(k+1)/p(k) = I_{k+1}(W)/I_k(W) satisfy the
// Bessel recurrence I_k - I_{k+2} = (2(k+1)/W) I_{k+1}, that is
//
//	r_k = W / (2(k+1) + W r_{k+1}),
//
// a decreasing function of r_{k+1}; every r lies in (0, 1) (I_k decreases
// in k), so starting from the bracket [0, 1] far beyond the window and
// recurring downwards gives a bracket of every r_k, which contracts by
// r_k^2 < 1 per step. Every operation's rounding is absorbed by widening
// the bracket by 4 ulps; products and sums are widened by their own
// rounding bounds. p(0) follows from normalisation (the mass beyond the
// window is at most R_K r_K/(1 - r_K), r being decreasing), and tails at
// s <= 0 from the symmetry P(N >= s) = 1 - P(N >= 1 - s).

// skellamTails holds brackets of the tail sums of Sk(W) on 0..K.
type skellamTails struct {
	k        int       // window end
	tlo, thi []float64 // brackets of P(N >= s), s = 0..k+1
	beyondHi float64   // an upper bound on P(N > k)
}

// maxSkellamWindow bounds the window (entries) of SkellamShiftLowerBound.
const maxSkellamWindow = 1 << 24

// newSkellamTails brackets the tails of Sk(w) up to k.
func newSkellamTails(w float64, k int) skellamTails {
	const u = 0x1p-53
	up, down := 1+4*u, 1-4*u
	// Recur from far beyond k: the bracket contracts by about
	// exp(-2 k n / w) over n steps near k.
	extra := int(math.Min(4e7, math.Ceil(40*w/float64(k+1)))) + 64
	rlo, rhi := 0.0, 1.0
	lo := make([]float64, k+1) // brackets of r_j, j = 0..k
	hi := make([]float64, k+1)
	for j := k + extra; j >= 0; j-- {
		a := 2 * float64(j+1)
		nlo := w / (a + w*rhi) * down
		nhi := math.Min(1, w/(a+w*rlo)*up)
		rlo, rhi = nlo, nhi
		if j <= k {
			lo[j], hi[j] = rlo, rhi
		}
	}
	// R_s = prod_{j < s} r_j, s = 0..k+1; sums from the top.
	Rlo := make([]float64, k+2)
	Rhi := make([]float64, k+2)
	Rlo[0], Rhi[0] = 1, 1
	for s := 1; s <= k+1; s++ {
		Rlo[s] = Rlo[s-1] * lo[s-1] * down
		Rhi[s] = Rhi[s-1] * hi[s-1] * up
	}
	// Mass beyond k+1 (relative to p(0)): R_{k+1} r/(1-r) with r = r_{k+1}
	// <= r_k's upper bound.
	rk := hi[k]
	beyond := math.Inf(1)
	if rk < 1 {
		beyond = Rhi[k+1] * rk / (1 - rk) * up
	}
	// Suffix sums S_s = sum_{j=s}^{k+1} R_j (+ beyond for the upper one).
	slo := make([]float64, k+3)
	shi := make([]float64, k+3)
	shi[k+2] = beyond
	for s := k + 1; s >= 0; s-- {
		slo[s] = slo[s+1] + Rlo[s]
		shi[s] = shi[s+1] + Rhi[s]
	}
	// Relative rounding of the sums: at most (k+3) u.
	sr := float64(k+3) * u
	for s := range slo {
		slo[s] *= 1 - sr
		shi[s] *= 1 + sr
	}
	// p(0) = 1/(1 + 2 sum_{j>=1} R_j).
	p0lo := 1 / (1 + 2*shi[1]) * down
	p0hi := 1 / (1 + 2*slo[1]) * up
	t := skellamTails{k: k, tlo: make([]float64, k+2), thi: make([]float64, k+2)}
	for s := 0; s <= k+1; s++ {
		t.tlo[s] = p0lo * slo[s] * down
		t.thi[s] = math.Min(1, p0hi*shi[s]*up)
	}
	t.beyondHi = t.thi[k+1]
	return t
}

// tail returns a bracket of P(N >= s) for any integer s.
func (t skellamTails) tail(s int) (lo, hi float64) {
	const u = 0x1p-53
	switch {
	case s > t.k+1:
		return 0, t.beyondHi
	case s >= 0:
		return t.tlo[s], t.thi[s]
	}
	// P(N >= s) = 1 - P(N >= 1 - s), 1 - s >= 1.
	l, h := t.tail(1 - s)
	return math.Max(0, (1-h)*(1-2*u)), math.Min(1, (1-l)*(1+2*u))
}

// SkellamShiftLowerBound returns a lower bound on the epsilon at delta of a
// release Y = X + Sk(w) with X = 0 on one input and X >= shift on its
// neighbour (shift >= 1), each observed tail perturbed by at most slack
// (an input-independent failure probability, e.g. wrap-around): the
// largest over thresholds s of log((P(N >= s - shift) - slack - delta) /
// (P(N >= s) + slack)), each tail bracketed rigorously (see above), rounded
// down. Cost: about 40 w / window + window operations, the window being
// shift + 12 sqrt(w) + 64 entries.
func SkellamShiftLowerBound(w float64, shift int64, slack, delta float64) (float64, error) {
	wrap := func(err error) (float64, error) { return 0, fmt.Errorf("skellam shift lower bound: %w", err) }
	if err := checks.Positive("variance", w); err != nil {
		return wrap(err)
	}
	if shift < 1 {
		return wrap(checks.Invalidf("the shift must be a positive integer, got %d", shift))
	}
	if err := checks.Delta("delta", delta); err != nil {
		return wrap(err)
	}
	if math.IsNaN(slack) || slack < 0 || slack >= 1 {
		return wrap(checks.Invalidf("slack must be in [0, 1), got %v", slack))
	}
	sd := math.Sqrt(w)
	win := float64(shift) + 12*sd + 64
	if win > maxSkellamWindow || w > 1e15 {
		return wrap(checks.Invalidf("variance %v and shift %d need a window of %.3g entries, more than %d", w, shift, win, maxSkellamWindow))
	}
	k := int(win)
	t := newSkellamTails(w, k)
	best := 0.0
	// Thresholds from shift - 12 sd (where P_1 is nearly 1) to k.
	for s := int(math.Max(float64(shift)-12*sd, -float64(k))); s <= k; s++ {
		pl, _ := t.tail(s - int(shift))
		_, qh := t.tail(s)
		num, den := pl-slack-delta, qh+slack
		if num <= 0 || den <= 0 {
			continue
		}
		best = math.Max(best, math.Log(num/den))
	}
	// The logarithm's and the division's rounding: a relative 1e-12.
	return best * (1 - 1e-12), nil
}

// SkellamSubsampledLowerBound returns a lower bound on the epsilon at delta
// of t independent rounds Y_r = X_r + N_r, N_r ~ Sk(v), where X_r = 0 on
// one input and, on its neighbour, X_r = 0 with probability 1 - q and
// X_r >= shift otherwise (Poisson subsampling, q in (0, 1]; X_r's rounds
// independent), every probability perturbed by at most slack (an
// input-independent failure: wrap-around, a void round). Two tests, each
// valid, the larger taken:
//
//   - the sum: S = sum_r Y_r is N ~ Sk(t v) against at least
//     J shift + N with J ~ Bin(t, q) (given J, stochastic dominance), so
//     P_1(S >= s) >= sum_j Bin(j; t, q) P(N >= s - j shift);
//   - the maximum: P_0(max_r Y_r >= s) = 1 - (1 - P(N_1 >= s))^t and
//     P_1(max_r Y_r >= s) >= 1 - (1 - q P(N_1 >= s - shift) - (1-q)
//     P(N_1 >= s))^t (independent rounds);
//
// each giving eps >= log((P_1 - slack - delta)/(P_0 + slack)) at every s,
// with the tails bracketed as in SkellamShiftLowerBound and the binomial
// weights deflated by their rounding.
func SkellamSubsampledLowerBound(v float64, t int, q float64, shift int64, slack, delta float64) (float64, error) {
	wrap := func(err error) (float64, error) { return 0, fmt.Errorf("subsampled skellam lower bound: %w", err) }
	if err := checks.IntAtLeast("rounds", t, 1); err != nil {
		return wrap(err)
	}
	if !(q > 0 && q <= 1) {
		return wrap(checks.Invalidf("the sampling rate must be in (0, 1], got %v", q))
	}
	if q == 1 {
		sum, err := SkellamShiftLowerBound(float64(t)*v, int64(t)*shift, slack, delta)
		if err != nil {
			return wrap(err)
		}
		one, err := skellamMaxLowerBound(v, t, 1, shift, slack, delta)
		if err != nil {
			return wrap(err)
		}
		return math.Max(sum, one), nil
	}
	if err := checks.Positive("variance", v); err != nil {
		return wrap(err)
	}
	if shift < 1 {
		return wrap(checks.Invalidf("the shift must be a positive integer, got %d", shift))
	}
	if err := checks.Delta("delta", delta); err != nil {
		return wrap(err)
	}
	if math.IsNaN(slack) || slack < 0 || slack >= 1 {
		return wrap(checks.Invalidf("slack must be in [0, 1), got %v", slack))
	}
	w := float64(t) * v
	sd := math.Sqrt(w)
	win := float64(t)*float64(shift) + 12*sd + 64
	if win > maxSkellamWindow || w > 1e15 || float64(t)*win > 4e9 {
		return wrap(checks.Invalidf("variance %v, %d rounds and shift %d need a window of %.3g entries, more than %d", v, t, shift, win, maxSkellamWindow))
	}
	k := int(win)
	tl := newSkellamTails(w, k)
	// Bin(j; t, q), deflated by a relative 1e-12 (log-gamma's rounding at
	// these sizes is far below it).
	lq, lp := math.Log(q), math.Log1p(-q)
	weights := make([]float64, t+1)
	for j := range weights {
		a, _ := math.Lgamma(float64(t + 1))
		b, _ := math.Lgamma(float64(j + 1))
		c, _ := math.Lgamma(float64(t - j + 1))
		weights[j] = math.Exp(a-b-c+float64(j)*lq+float64(t-j)*lp) * (1 - 1e-12)
	}
	best := 0.0
	for s := int(math.Max(-12*sd, -float64(k))); s <= k; s++ {
		p1 := 0.0
		for j, wj := range weights {
			if wj == 0 {
				continue
			}
			l, _ := tl.tail(s - j*int(shift))
			p1 += wj * l
		}
		p1 *= 1 - float64(t+2)*0x1p-53
		_, q0 := tl.tail(s)
		num, den := p1-slack-delta, q0+slack
		if num > 0 && den > 0 {
			best = math.Max(best, math.Log(num/den))
		}
	}
	one, err := skellamMaxLowerBound(v, t, q, shift, slack, delta)
	if err != nil {
		return wrap(err)
	}
	return math.Max(best*(1-1e-12), one), nil
}

// skellamMaxLowerBound is SkellamSubsampledLowerBound's maximum test.
func skellamMaxLowerBound(v float64, t int, q float64, shift int64, slack, delta float64) (float64, error) {
	sd := math.Sqrt(v)
	win := float64(shift) + 12*sd + 64 + 4*math.Log(float64(t)+1)*sd
	if win > maxSkellamWindow || v > 1e15 {
		return 0, checks.Invalidf("variance %v and shift %d need a window of %.3g entries, more than %d", v, shift, win, maxSkellamWindow)
	}
	k := int(win)
	tl := newSkellamTails(v, k)
	// 1 - (1 - x)^t, increasing in x; rounded by a relative 1e-12 either way.
	atLeastOne := func(x float64) float64 { return -math.Expm1(float64(t) * math.Log1p(-math.Min(x, 1))) }
	best := 0.0
	for s := int(math.Max(-12*sd, -float64(k))); s <= k; s++ {
		lo1, _ := tl.tail(s - int(shift))
		lo0, hi0 := tl.tail(s)
		p1 := atLeastOne(q*lo1*(1-4*0x1p-53)+(1-q)*lo0*(1-4*0x1p-53)) * (1 - 1e-12)
		p0 := atLeastOne(hi0) * (1 + 1e-12)
		num, den := p1-slack-delta, p0+slack
		if num > 0 && den > 0 {
			best = math.Max(best, math.Log(num/den))
		}
	}
	return best * (1 - 1e-12), nil
}
