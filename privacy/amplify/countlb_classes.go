package amplify

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// CountClass is a group of released values that do not depend on the
// differing user: N values, independent, each counted (above the threshold)
// with probability P.
type CountClass struct {
	N int
	P float64
}

// ThresholdCount is one count statistic: the values the analyzer counts are
// the classes of other values plus Mine values of the differing user, each
// counted with probability P0 on one input and P1 on its neighbour. The
// number counted is then, exactly,
//
//	P = Bin(N_1, P_1) + ... + Bin(N_c, P_c) + Bin(Mine, P0)
//	Q = Bin(N_1, P_1) + ... + Bin(N_c, P_c) + Bin(Mine, P1),
//
// and (the count being a post-processing of the release) the release's
// epsilon at delta is at least the smallest eps with
// max(H_{e^eps}(P||Q), H_{e^eps}(Q||P)) <= delta (the package's count
// statistic, with the other values in several classes instead of one).
type ThresholdCount struct {
	// Threshold is the test's threshold, for the report (it does not enter
	// the computation).
	Threshold float64
	Classes   []CountClass
	Mine      int
	P0, P1    float64
}

// validate checks the statistic's sizes and probabilities.
func (tc ThresholdCount) validate() error {
	if err := checks.IntAtLeast("mine", tc.Mine, 1); err != nil {
		return err
	}
	probs := []float64{tc.P0, tc.P1}
	for i, c := range tc.Classes {
		if err := checks.IntAtLeast(fmt.Sprintf("class %d's values", i), c.N, 0); err != nil {
			return err
		}
		probs = append(probs, c.P)
	}
	for _, p := range probs {
		if math.IsNaN(p) || p < 0 || p > 1 {
			return checks.Invalidf("a counting probability must be in [0, 1], got %v", p)
		}
	}
	return nil
}

// maxCountWindow bounds the entries of the others' count window (a few tens
// of standard deviations of a count of up to about 10^12 values): larger
// statistics are refused rather than computed for minutes.
const maxCountWindow = 1 << 24

// binomialWindowEstimate bounds the width of normBinomialFloor's window
// before it is computed: by Bernstein's inequality a binomial's pmf is
// below floor times its mode once |k - np| > sqrt(2 L n p q) + 2L/3,
// L = log(1/floor) (doubled for margin).
func binomialWindowEstimate(n int, p, floor float64) float64 {
	l := -math.Log(floor)
	v := float64(n) * p * (1 - p)
	return 2*(2*(math.Sqrt(2*l*v)+2*l/3)) + 3
}

// othersWindow returns the pmf of the sum of the classes' binomials on its
// window (lo, w) and a bound on the relative error of every entry. Each
// convolution of two windows adds, to the entries' relative errors, their
// product and the rounding of a sum of at most min(len) products.
func othersWindow(classes []CountClass, floor float64) (lo int, w []float64, relErr float64, factors int, err error) {
	lo, w = 0, []float64{1}
	const u = 0x1p-53
	for _, c := range classes {
		if c.N == 0 {
			continue
		}
		if est := binomialWindowEstimate(c.N, c.P, floor); float64(len(w))+est > maxCountWindow {
			return 0, nil, 0, 0, checks.Invalidf("the count of %d other values needs a window of about %.3g entries, more than %d", c.N, est, maxCountWindow)
		}
		l, b, e := normBinomialFloor(c.N, c.P, 1-c.P, floor)
		// Every factor's dropped entries are below floor (countPair.drop).
		factors++
		if len(w)+len(b) > maxCountWindow {
			return 0, nil, 0, 0, checks.Invalidf("the count of %d other values needs a window of more than %d entries", c.N, maxCountWindow)
		}
		relErr = relErr + e + relErr*e + u*float64(min(len(w), len(b))+3)
		lo, w = lo+l, convolve(w, b)
	}
	return lo, w, relErr, factors, nil
}

// pair returns the statistic's two count distributions on one window.
func (tc ThresholdCount) pair(delta float64) (countPair, error) {
	others := 0
	for _, c := range tc.Classes {
		others += c.N
	}
	floor := thresholdFloor(delta, others)
	loO, wo, eo, factors, err := othersWindow(tc.Classes, floor)
	if err != nil {
		return countPair{}, err
	}
	c, err := pairWithOthers(loO, wo, eo, tc.Mine, tc.P0, tc.P1, floor)
	if err != nil {
		return countPair{}, err
	}
	c.drop = float64(factors+1) * floor
	return c, nil
}

// thresholdFloor is the relative floor of the windows for a target delta:
// 1e-16 delta, within [1e-40, 1e-24], and 1e-290 without other values (the
// user's binomials alone are cheap). The dropped mass is accounted for
// (countPair.drop, relErr), so the floor trades only tightness for time:
// the windows are about 10 instead of 13.6 standard deviations wide on
// each side, and a bound cannot exceed about log(1/(3 floor)) (55 at
// 1e-24, 666 at 1e-290), where e^eps times the dropped mass per entry
// reaches 1. (Every kept entry stays a normal float, so the rounding
// bounds hold: the walk stops below the floor.)
func thresholdFloor(delta float64, others int) float64 {
	if others == 0 {
		return 1e-290
	}
	return math.Min(1e-24, math.Max(1e-40, 1e-16*delta))
}

// pairWithOthers is newCountPair with the others' window given.
func pairWithOthers(loO int, wo []float64, eo float64, mine int, p0, p1, floor float64) (countPair, error) {
	if est := binomialWindowEstimate(mine, 0.5, floor); est > maxCountWindow {
		return countPair{}, checks.Invalidf("the count of the user's %d values needs a window of about %.3g entries, more than %d", mine, est, maxCountWindow)
	}
	lo0, w0, e0 := normBinomialFloor(mine, p0, 1-p0, floor)
	lo1, w1, e1 := normBinomialFloor(mine, p1, 1-p1, floor)
	l0, c0 := loO+lo0, convolve(wo, w0)
	l1, c1 := loO+lo1, convolve(wo, w1)
	lo, hi := min(l0, l1), max(l0+len(c0), l1+len(c1))
	p := make([]float64, hi-lo)
	q := make([]float64, hi-lo)
	copy(p[l0-lo:], c0)
	copy(q[l1-lo:], c1)
	const u = 0x1p-53
	// A convolution entry sums at most min(len) products of entries, each
	// off by the two relative errors (and their product).
	rel := eo + max(e0, e1) + eo*max(e0, e1) + u*float64(min(len(wo), max(len(w0), len(w1)))+3)
	return countPair{p: p, q: q, relErr: rel, drop: 2 * floor, maxLoss: countMaxLoss(mine, p0, p1)}, nil
}

// ThresholdCountLowerBound returns a lower bound on the epsilon at delta of
// any release the statistic tc applies to: the largest eps at which the
// computed hockey-stick divergence of its two count distributions, less
// its rounding-error bound, still exceeds delta (0 when it never does, +Inf
// when no finite eps suffices). Every rounding lowers the computed
// divergence (see countPair.delta), so the result is a lower bound on the
// statistic's exact epsilon, which is a lower bound on the release's.
func ThresholdCountLowerBound(tc ThresholdCount, delta float64) (float64, error) {
	wrap := func(err error) (float64, error) { return 0, fmt.Errorf("count-statistic lower bound: %w", err) }
	if err := tc.validate(); err != nil {
		return wrap(err)
	}
	if err := checks.Delta("delta", delta); err != nil {
		return wrap(err)
	}
	c, err := tc.pair(delta)
	if err != nil {
		return wrap(err)
	}
	// The probabilities are the mechanisms' tails in floating point, not
	// exactly. The user's binomials: every pmf entry is within the
	// relative factor e^(mine rho) of the exact one (userRelErr), which
	// joins the entries' relative errors. The other classes: the computed
	// pair is within total variation tv of the exact (othersTV), which
	// moves either divergence by at most (1 + e^eps) tv; the bound is then
	// computed at delta + kappa, kappa covering that at the first pass's
	// epsilon plus a margin (the second pass's epsilon is smaller, so kappa
	// still covers it). A probability of exactly 0, 1/2 or 1 (the
	// midpoint's others) has no error.
	c.relErr += tc.userRelErr()
	tv := tc.othersTV()
	if tv == 0 {
		return c.lowerEps(delta), nil
	}
	e1 := c.lowerEps(delta)
	kappa := (1 + math.Exp(math.Min(e1+1, 700))) * tv * (1 + 1e-9)
	if !(delta+kappa < 1) {
		return 0, nil
	}
	return c.lowerEps(delta + kappa), nil
}

// probRel and probAbs bound the error of a computed counting probability
// p~ against the mechanism's: |p~ - p| <= probRel min(p~, 1-p~) + probAbs.
// The tails are closed forms of exp, expm1 and erfc (each within a few
// ulps) at arguments that carry the rounding of the mechanisms' scales (a
// relative u on an exponent of at most a few hundred), and differences
// 1 - x (an absolute u): probRel = 1e-12, probAbs = 4u cover them.
const (
	probRel = 1e-12
	probAbs = 4 * 0x1p-53
)

// probErr bounds |p~ - p| for a computed probability p~ (0 for the exact
// values 0, 1/2 and 1).
func probErr(p float64) float64 {
	if p == 0 || p == 0.5 || p == 1 {
		return 0
	}
	return probRel*math.Min(p, 1-p) + probAbs
}

// userRelErr bounds the relative error of every entry of the user's two
// binomials from their probabilities' errors: Bin(k; m, p~)/Bin(k; m, p) =
// (p~/p)^k ((1-p~)/(1-p))^(m-k) is within e^(+-m rho) with rho the larger
// log ratio over the error interval; expm1(m rho), +Inf past all use.
func (tc ThresholdCount) userRelErr() float64 {
	worst := 0.0
	for _, p := range []float64{tc.P0, tc.P1} {
		dp := probErr(p)
		if dp == 0 {
			continue
		}
		lo, hi := math.Min(p, 1-p)-dp, math.Min(p, 1-p)
		if !(lo > 0) {
			return math.Inf(1)
		}
		rho := math.Log(hi+dp) - math.Log(lo) // the larger log ratio of min(p, 1-p); the other side's is smaller
		worst = math.Max(worst, math.Expm1(float64(tc.Mine)*rho*(1+1e-9)))
	}
	return worst
}

// othersTV bounds the total variation between the other classes' count
// and the same with the exact probabilities: a sum over the classes of
// TV(Bin(n, p~), Bin(n, p)), each at most min(1, n dp, dp sqrt(n/(2 p(1-p))))
// (the last by Pinsker's inequality and KL <= chi^2 = n dp^2/(p(1-p))),
// with p(1-p) at its smallest over the error interval.
func (tc ThresholdCount) othersTV() float64 {
	tv := 0.0
	for _, c := range tc.Classes {
		dp := probErr(c.P)
		if c.N == 0 || dp == 0 {
			continue
		}
		lo, hi := math.Max(0, c.P-dp), math.Min(1, c.P+dp)
		v := math.Min(lo*(1-lo), hi*(1-hi))
		t := math.Min(1, float64(c.N)*dp)
		if v > 0 {
			t = math.Min(t, dp*math.Sqrt(float64(c.N)/(2*v)))
		}
		tv += t
	}
	return tv * (1 + 1e-9)
}

// BestThresholdCount evaluates the statistics in order and returns the
// largest lower bound and the statistic that attains it. Each statistic's
// bound is a valid lower bound, so their maximum is one too; the search
// stops after patience consecutive statistics that do not improve on the
// best (patience <= 0: evaluate all), which only trades tightness for time.
func BestThresholdCount(tcs []ThresholdCount, delta float64, patience int) (float64, ThresholdCount, error) {
	if len(tcs) == 0 {
		return 0, ThresholdCount{}, checks.Invalidf("count-statistic lower bound: no statistic to evaluate")
	}
	best, at, worse := math.Inf(-1), tcs[0], 0
	for _, tc := range tcs {
		e, err := ThresholdCountLowerBound(tc, delta)
		if err != nil {
			return 0, ThresholdCount{}, err
		}
		if e > best {
			best, at, worse = e, tc, 0
			continue
		}
		if worse++; patience > 0 && worse >= patience {
			break
		}
	}
	return best, at, nil
}

// BestThresholdCountProbe is BestThresholdCount with the threshold chosen
// on a smaller problem: every size divided by shrink (at least one value of
// the user), searched with patience; only the chosen statistic is then
// evaluated at full size. Its bound is a valid lower bound like any
// statistic's; the probe only picks which one to compute (for a run of t
// rounds, shrink = t probes one round). The first statistic is always
// evaluated at full size as well, and the larger bound returned. shrink <=
// 1 is BestThresholdCount.
func BestThresholdCountProbe(tcs []ThresholdCount, delta float64, patience, shrink int) (float64, ThresholdCount, error) {
	if shrink <= 1 || len(tcs) <= 1 {
		return BestThresholdCount(tcs, delta, patience)
	}
	small := make([]ThresholdCount, len(tcs))
	for i, tc := range tcs {
		s := tc
		s.Classes = make([]CountClass, len(tc.Classes))
		for j, c := range tc.Classes {
			s.Classes[j] = CountClass{N: c.N / shrink, P: c.P}
		}
		s.Mine = max(1, tc.Mine/shrink)
		small[i] = s
	}
	_, at, err := BestThresholdCount(small, delta, patience)
	if err != nil {
		return 0, ThresholdCount{}, err
	}
	// The first statistic (the midpoint of the protocols' thresholds) is
	// evaluated too, so that the result is never below its bound.
	best, err := ThresholdCountLowerBound(tcs[0], delta)
	if err != nil {
		return 0, ThresholdCount{}, err
	}
	bestAt := tcs[0]
	for i, tc := range tcs[1:] {
		if small[i+1].Threshold != at.Threshold {
			continue
		}
		e, err := ThresholdCountLowerBound(tc, delta)
		if err != nil {
			return 0, ThresholdCount{}, err
		}
		if e > best {
			best, bestAt = e, tc
		}
		break
	}
	return best, bestAt, nil
}

// FLAMESparseCountLowerBound is FLAMECountLowerBound for releases with
// shuffler dummies (SS-Double, SS-Topk): users values of other users and
// dummies values drawn from the blanket, counted with their own
// probabilities. For the Laplace randomizer the two coincide (the other
// users hold 1/2, whose report is the blanket) and the result is
// FLAMECountLowerBound's with others = users + dummies; for R_{gamma,b} an
// other user's value at input 0 is counted with probability
// gamma (b+1-L)/(b+1) but a dummy (Unif{0..b}) with (b+1-L)/(b+1), so
// FLAMECountLowerBound, which counts every other value at the first rate,
// does not describe the release exactly when there are dummies; this one
// does (two classes, ThresholdCount). It returns the bound and the
// threshold that attains it.
func FLAMESparseCountLowerBound(r Randomizer, eps0 float64, mine, users, dummies int, delta float64) (eps, threshold float64, err error) {
	wrap := func(err error) (float64, float64, error) {
		return 0, 0, fmt.Errorf("FLAME count-statistic lower bound: %w", err)
	}
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return wrap(err)
	}
	if r.Mech == Laplace {
		return FLAMECountLowerBound(r, eps0, mine, users+dummies, delta)
	}
	attacks, dummy, err := RGammaBCountAttacks(r.K, eps0)
	if err != nil {
		return wrap(err)
	}
	tcs := make([]ThresholdCount, len(attacks))
	for i, a := range attacks {
		tcs[i] = ThresholdCount{Threshold: a.Threshold, Classes: []CountClass{{N: users, P: a.POther}, {N: dummies, P: dummy[i]}}, Mine: mine, P0: a.P0, P1: a.P1}
	}
	e, at, err := BestThresholdCount(tcs, delta, 0)
	if err != nil {
		return wrap(err)
	}
	return e, at.Threshold, nil
}

// ThresholdCountCost estimates the multiply-adds of
// ThresholdCountLowerBound(tc, delta): the two convolutions of the others'
// window with the user's, and the bisection's passes over the result
// (windows as wide as normBinomialFloor's at the floor used). Callers use
// it to keep a bound within a time budget by counting fewer values (a
// subset of the coordinates or of the rounds, itself a post-processing).
func ThresholdCountCost(tc ThresholdCount, delta float64) float64 {
	others := 0
	for _, c := range tc.Classes {
		others += c.N
	}
	floor := thresholdFloor(delta, others)
	l := -math.Log(floor)
	width := func(n int, p float64) float64 {
		return 2*(math.Sqrt(2*l*float64(n)*p*(1-p))+2*l/3) + 1
	}
	wo := 1.0
	for _, c := range tc.Classes {
		if c.N > 0 {
			wo += width(c.N, c.P)
		}
	}
	wm := math.Max(width(tc.Mine, tc.P0), width(tc.Mine, tc.P1))
	return 2*wo*wm + 200*(wo+2*wm)
}
