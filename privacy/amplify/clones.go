package amplify

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// validateUniform checks the common inputs of the uniform shuffle bounds.
func validateUniform(eps0 float64, n int, delta float64) error {
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return err
	}
	if err := checks.IntAtLeast("n", n, 2); err != nil {
		return err
	}
	return checks.Delta("delta", delta)
}

// ClonesMaxEps0 returns the largest local epsilon for which the closed forms
// of Feldman, McMillan and Talwar 2022 (Theorem 3.1) hold:
// log(n / (16 log(4/delta))). It may be negative for small n.
func ClonesMaxEps0(n int, delta float64) float64 {
	return math.Log(float64(n) / (16 * math.Log(4/delta)))
}

func clonesClosedCheck(eps0 float64, n int, delta float64) error {
	if err := validateUniform(eps0, n, delta); err != nil {
		return err
	}
	if m := ClonesMaxEps0(n, delta); eps0 > m {
		return checks.Invalidf("the clones closed form needs eps0 <= log(n/(16 log(4/delta))) = %.6g, got eps0 = %v", m, eps0)
	}
	return nil
}

// ClonesTheorem returns the central epsilon of Feldman, McMillan and Talwar
// 2022, Theorem 3.1, as printed (and quoted as APES Eq. 2): shuffling n
// reports of an eps0-LDP randomizer is (eps, delta)-DP with
//
//	eps = log(1 + (e^eps0-1)/(e^eps0+1) (8 sqrt(e^eps0 log(4/delta))/sqrt(n) + 8 e^eps0/n)),
//
// valid for eps0 <= log(n/(16 log(4/delta))); outside it an error is
// returned. The result is capped at eps0.
func ClonesTheorem(eps0 float64, n int, delta float64) (float64, error) {
	if err := clonesClosedCheck(eps0, n, delta); err != nil {
		return 0, fmt.Errorf("clones closed form (FMT Theorem 3.1): %w", err)
	}
	nf := float64(n)
	e := math.Exp(eps0)
	s := 8*math.Sqrt(e*math.Log(4/delta))/math.Sqrt(nf) + 8*e/nf
	// Capped at eps0: shuffling never hurts (post-processing).
	return math.Min(eps0, math.Log1p(math.Tanh(eps0/2)*s)), nil
}

// ClonesClosedForm returns the closed-form bound of Feldman, McMillan and
// Talwar 2022 in the form evaluated by the authors' reference code
// ("closedformanalysis"): with a = 8 sqrt(e^eps0 log(4/delta)/n),
// c = 8 e^eps0/n and e' = log(1+a+c),
//
//	eps = log(1 + (1-e^-eps0)/(1+e^(-eps0-e')) (a + c)).
//
// It is slightly looser than ClonesTheorem (0.5378 against 0.5346 for
// n = 1e5, eps0 = 4, delta = 1e-6, the authors' published example) and has
// the same validity condition eps0 <= log(n/(16 log(4/delta))).
func ClonesClosedForm(eps0 float64, n int, delta float64) (float64, error) {
	if err := clonesClosedCheck(eps0, n, delta); err != nil {
		return 0, fmt.Errorf("clones closed form: %w", err)
	}
	nf := float64(n)
	a := 8 * math.Sqrt(math.Exp(eps0)*math.Log(4/delta)/nf)
	c := 8 * math.Exp(eps0) / nf
	ep := math.Log1p(a + c)
	b := -math.Expm1(-eps0)
	d := 1 + math.Exp(-eps0-ep)
	// Capped at eps0: shuffling never hurts (post-processing).
	return math.Min(eps0, math.Log1p(b/d*(a+c))), nil
}

// cloneHockey returns an upper bound on the hockey-stick divergence
// D_{e^eps}(P_c || Q_c) of the conditional clone-count distributions of
// Feldman, McMillan and Talwar 2022 given c clones:
//
//	P_c = alpha (A+1) + (1-alpha) A,  Q_c = (1-alpha)(A+1) + alpha A,
//
// A ~ Bin(c, 1/2), alpha = e^eps1/(1+e^eps1), where eps1 is the local epsilon
// of the differing user. By the symmetry a -> c+1-a the divergence of Q_c
// from P_c is the same. The sum over a is exact (positive terms only); the
// tail is cut when a geometric bound on it falls below tol and that bound is
// added.
//
// Numerics (stable for every 0 <= eps < eps1, including eps1 of several
// hundred): with b(a) = C(c,a) 2^-c the term at a is
// a1 (b(a-1) - tau b(a)), where
//
//	a1  = alpha - e^eps (1-alpha) = -expm1(eps-eps1)/(1+e^-eps1),
//	tau = (e^(eps+eps1) - 1)/(e^eps1 - e^eps) = e^eps expm1(-(eps+eps1))/expm1(eps-eps1),
//
// so neither 1 - alpha nor alpha - e^eps (1-alpha) is formed by subtracting
// nearly equal numbers. The first positive term is located from
// x = (c+1)/(1+tau) without forming tau/(1+tau), which rounds to 1 once
// tau > 2^53 (eps near 36.7) and used to drop every term.
func cloneHockey(c int, eps, eps1, tol float64) float64 {
	return newClonePair(eps, eps1).hockey(c, tol)
}

// clonePair holds the coefficients of cloneHockey that depend only on
// (eps, eps1), so that a delta evaluation computes them once for all clone
// counts. a1 = 0 means eps >= eps1 (divergence 0).
type clonePair struct{ a1, tau float64 }

func newClonePair(eps, eps1 float64) clonePair {
	if !(eps < eps1) {
		return clonePair{}
	}
	return clonePair{
		a1:  -math.Expm1(eps-eps1) / (1 + math.Exp(-eps1)),
		tau: math.Exp(eps) * (math.Expm1(-(eps + eps1)) / math.Expm1(eps-eps1)),
	}
}

// hockey is cloneHockey for c clones.
func (p clonePair) hockey(c int, tol float64) float64 {
	a1, tau := p.a1, p.tau
	if !(a1 > 0) {
		return 0
	}
	cf := float64(c)
	// Term a (1 <= a <= c) is positive iff a > (c+1) - x, x = (c+1)/(1+tau);
	// a = c+1 (b(c+1) = 0) always is. Start one index early so that a
	// rounding error in x cannot drop a positive term; non-positive computed
	// terms are skipped.
	x := (cf + 1) / (1 + tau)
	astar := c + 1
	if x > 0 && !math.IsInf(tau, 1) {
		astar = c + 2 - int(math.Ceil(x)) - 1
	}
	if astar < 0 {
		astar = 0
	}
	// b(astar-1), with b(a) = C(c,a) 2^-c.
	var bprev float64
	if astar-1 >= 0 {
		bprev = math.Exp(logChoose(c, astar-1) - cf*math.Ln2)
	}
	sum := 0.0
	sb := 0.0 // sum of b(a-1) over the evaluated terms (rounding allowance)
	steps := 0
	for a := astar; a <= c+1; a++ {
		steps++
		var bcur float64
		if a <= c {
			if a == 0 {
				bcur = math.Exp(-cf * math.Ln2)
			} else {
				bcur = bprev * float64(c-a+1) / float64(a)
			}
		}
		t := bprev
		if bcur > 0 {
			t -= tau * bcur
		}
		if t > 0 {
			sum += t
		}
		sb += bprev
		// Remaining terms sum to at most sum_{j >= a} b(j) <=
		// b(a) / (1 - r) with r = (c-a)/(a+1) the (decreasing) ratio.
		// Checked every 8 terms (the check costs a division).
		if a <= c && a > c/2 && (a-astar)&7 == 7 {
			r := float64(c-a) / float64(a+1)
			rest := bcur / (1 - r)
			if a1*rest < tol {
				sum += rest
				break
			}
		}
		bprev = bcur
	}
	// Rounding: log-gamma of c+1 carries an absolute error of a few ulps of
	// its magnitude (about c log c), which becomes a relative error of b;
	// each recurrence step adds about two ulps. Each difference
	// b(a-1) - tau b(a) with tau b(a) <= b(a-1) carries an absolute error of
	// a few ulps of b(a-1) (covered by 1e-15 sb).
	sum = (sum+1e-15*sb)*(1+4e-16*(cf*math.Log(cf+2)+cf+1)+4e-16*float64(steps)) + 1e-300
	h := a1 * sum * (1 + 1e-15)
	if h > 1 {
		h = 1
	}
	return h
}

// roundSlack inflates a computed delta to cover floating-point error in the
// recurrences (relative 1e-9 is orders of magnitude above the accumulated
// rounding of the sums used here).
func roundSlack(d float64) float64 { return d*(1+1e-9) + 1e-300 }

// maxCloneBlocks bounds the number of divergence evaluations per delta.
// Windows with at most this many clone counts are summed count by count
// (exactly); wider windows (n beyond about 10^7 at eps0 = 4) group
// consecutive counts and charge each group at its smallest count's
// divergence, which is an upper bound because the divergence is
// non-increasing in the clone count.
const maxCloneBlocks = 4096

// maxCloneWork is the largest estimated number of inner-loop operations per
// delta evaluation that the numerical clones bounds accept (about 50 ms).
const maxCloneWork = 5e7

// cloneWork estimates the inner-loop operations of one delta evaluation.
func cloneWork(w pmfWindow) float64 {
	nb := math.Min(float64(len(w.P)), maxCloneBlocks)
	c := float64(w.Lo) + float64(len(w.P))/2
	return nb * math.Min(c+2, 12*math.Sqrt(c)+10)
}

func checkCloneWork(w pmfWindow) error {
	if wk := cloneWork(w); wk > maxCloneWork {
		return checks.Invalidf("the exact numerical bound needs about %.1e operations per evaluation at these parameters (limit %.0e); use the closed form", wk, maxCloneWork)
	}
	return nil
}

// clonesDeltaWindow returns a guaranteed upper bound on delta(eps) for the
// clone-count distribution w and differing-user epsilon eps1; target scales
// the truncation tolerances (pass the delta being searched for, or the
// expected magnitude).
func clonesDeltaWindow(w pmfWindow, eps, eps1, target float64) float64 {
	if eps >= eps1 {
		return 0
	}
	pair := newClonePair(eps, eps1)
	B := (len(w.P) + maxCloneBlocks - 1) / maxCloneBlocks
	nb := float64((len(w.P)+B-1)/B + 1)
	tolW := 1e-4 * target / nb
	skip := 1e-5 * target / nb
	// h(c) is non-increasing in c (more clones hide the differing user
	// better), so once h(c) is negligible the remaining mass contributes
	// at most h(c) times that mass.
	s := 0.0
	lost := w.Lost
	rest := 0.0
	for _, x := range w.P {
		rest += x
	}
	for start := 0; start < len(w.P); start += B {
		end := min(start+B, len(w.P))
		wb := 0.0
		for _, x := range w.P[start:end] {
			wb += x
		}
		if wb < skip {
			lost += wb
			rest -= wb
			continue
		}
		h := pair.hockey(w.Lo+start, tolW/wb)
		if h < 1e-7*target {
			s += h * math.Max(rest, 0)
			break
		}
		s += wb * h
		rest -= wb
	}
	return roundSlack(s + lost)
}

// ClonesDelta returns a guaranteed upper bound on the delta for which
// shuffling n reports of an eps0-LDP randomizer is (eps, delta)-DP, by the
// numerical analysis of Feldman, McMillan and Talwar 2022: the number of
// clones is C ~ Bin(n-1, e^-eps0), and delta = E[D_{e^eps}(P_C || Q_C)] is
// summed over every clone count c exactly (no blocks, no normal
// approximation) whenever at most 4096 counts carry mass, which covers n up
// to about 10^7 at eps0 = 4 (beyond, see maxCloneBlocks); the neglected
// binomial tails are bounded and added. Parameters whose exact evaluation
// would be impractically slow are rejected with an error.
// eps >= eps0 returns 0.
func ClonesDelta(eps, eps0 float64, n int) (float64, error) {
	if err := checks.EpsilonOrZero("eps", eps); err != nil {
		return 0, fmt.Errorf("clones numerical delta: %w", err)
	}
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return 0, fmt.Errorf("clones numerical delta: %w", err)
	}
	if err := checks.IntAtLeast("n", n, 2); err != nil {
		return 0, fmt.Errorf("clones numerical delta: %w", err)
	}
	if err := checkWindow("n", n, n-1, math.Exp(-eps0), -math.Expm1(-eps0)); err != nil {
		return 0, fmt.Errorf("clones numerical delta: %w", err)
	}
	w := binomialWindowPQ(n-1, math.Exp(-eps0), -math.Expm1(-eps0))
	if err := checkCloneWork(w); err != nil {
		return 0, fmt.Errorf("clones numerical delta: %w", err)
	}
	return clonesDeltaWindow(w, eps, eps0, 1e-12), nil
}

// ClonesNumerical returns the smallest epsilon (to relative precision 1e-6,
// rounded up) such that ClonesDelta(eps, eps0, n) <= delta: a guaranteed
// upper bound on the central epsilon of shuffling n eps0-LDP reports
// (Feldman, McMillan and Talwar 2022, numerical analysis, every clone count
// computed exactly). If no eps < eps0 qualifies, eps0 itself is returned
// (the shuffled output is always eps0-DP).
func ClonesNumerical(eps0 float64, n int, delta float64) (float64, error) {
	if err := validateUniform(eps0, n, delta); err != nil {
		return 0, fmt.Errorf("clones numerical bound: %w", err)
	}
	if err := checkWindow("n", n, n-1, math.Exp(-eps0), -math.Expm1(-eps0)); err != nil {
		return 0, fmt.Errorf("clones numerical bound: %w", err)
	}
	w := binomialWindowPQ(n-1, math.Exp(-eps0), -math.Expm1(-eps0))
	if err := checkCloneWork(w); err != nil {
		return 0, fmt.Errorf("clones numerical bound: %w", err)
	}
	start := eps0
	if cf, err := ClonesTheorem(eps0, n, delta); err == nil && cf < start {
		start = cf
	}
	return clonesSearch(w, eps0, start, delta), nil
}

// clonesSearch bisects delta(eps) <= target over (0, eps1].
// start is a hint (typically a closed-form bound) used only if it verifies.
func clonesSearch(w pmfWindow, eps1, start, target float64) float64 {
	f := func(e float64) float64 { return clonesDeltaWindow(w, e, eps1, target) }
	hi := eps1
	if start < eps1 && f(start) <= target {
		hi = start
	}
	// Probe geometrically downwards for a tighter bracket.
	for x := hi / 2; x > 1e-9; x /= 2 {
		if f(x) > target {
			break
		}
		hi = x
	}
	return searchSmallest(f, target, hi, 1e-6)
}
