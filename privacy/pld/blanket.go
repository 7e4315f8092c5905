package pld

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// The blanket pair of one shuffled column of FLAME's SS-Simple (Liu et al.,
// AAAI 2021, Algorithm 2) with the randomizer R_{gamma,b}, for the
// substitution relation.
//
// Setting. Each of n users reports one value of the column,
// R(x) = (1-gamma) Round_b(x) + gamma Unif{0..b} for its input x in [0, 1]
// (Round_b the randomized rounding to the b+1 levels, gamma =
// (b+1)/(e^eps0 + b)); the analyzer sees the multiset of the n values. The
// differing user has input x in one neighbour and x' in the other.
//
// Step 1 (the others' blanket; Balle, Bell, Gascon and Nissim, "The privacy
// blanket of the shuffle model", CRYPTO 2019, Section 3 / Lemma 3.1, and Su,
// Cheng and Wang, arXiv 2504.07414, whose Section 3 decomposition this is
// with the blanket omega = Unif{0..b}): every other report is the mixture
// R(x_i) = gamma omega + (1-gamma) LO_i, LO_i a distribution (each level
// has mass >= gamma/(b+1) under R(x_i)). Draw first which others are
// blanket draws (N of them, N ~ Bin(n-1, gamma), independent of the
// differing user) and the values of the others, LO_i; the shuffled column
// is a function of (N, LO values, the multiset of the user's value and the
// N blanket draws), and the first two do not depend on the differing user.
// By joint convexity of every hockey-stick divergence H_a (a >= 0) and
// post-processing, H_a(column(x) || column(x')) <= sum_N Bin(N)
// H_a(P_N || Q_N), P_N the multiset of R(x) and N draws of omega, Q_N that
// of R(x') and N draws; the right side is H_a of the pair with N revealed
// (supports disjoint in N).
//
// Step 2 (the worst inputs): R(x) = sum_y l_y(x) A_y with A_y the k-ary
// randomized response at level y (k = b+1: mass e^eps0/(e^eps0+b) on y,
// 1/(e^eps0+b) on every other level). P_N and Q_N are linear in R(x) and
// R(x'), so (P_N, Q_N) is a convex combination of the pairs with the
// user's value A_y against A_y', and by joint convexity H_a is at most the
// largest H_a of those: y = y' gives 0, and every y != y' is the pair
// y = 0, y' = 1 relabelled (a permutation of the levels, which fixes
// omega). So the levels 0 vs 1 are the worst inputs, and the pair is
// symmetric: swapping the two levels swaps P_N and Q_N, so both directions
// have the same privacy loss distribution.
//
// Step 3 (fewer blanket draws; the argument of alloc.go): the pair with N
// draws is a post-processing of the pair with m <= N (add N - m fresh draws
// of omega, a channel that does not depend on the user), and every pair is
// a post-processing of the user's value alone (A_0 vs A_1, add N draws).
// N is split into blocks [m_j, m_{j+1}) (blanketBlocks); the mixture,
// label revealed, of the user alone with weight u_0 >= P(N < m_0) and of
// the m_j-pair with weight u_{j+1} - u_j (u_j >= P(N < m_j), the last block
// open) has its label CDF above that of N, so the quantile coupling draws
// a true N >= m_j for every label j and the channel "add N - m_j draws"
// maps it onto the pair of Step 1: it dominates.
//
// The m-pair in closed form. Under omega^{m+1} (Q-reference) let C0, C1
// be the numbers of values at levels 0 and 1 among the m+1; the likelihood
// ratio of the multiset against omega^{m+1} is (1/(m+1)) sum_i
// dA_0/domega(y_i) = k/(e^eps0+b) ((e^eps0 - 1) C0 + m + 1)/(m + 1), so the
// privacy loss of P_m against Q_m is
//
//	L = log(((e^eps0 - 1) C0 + m + 1)/((e^eps0 - 1) C1 + m + 1)),
//
// |L| <= eps0, and the P-mass of the outcome (C0, C1) is its omega-mass
// Bin(m+1, 2/k)(C0+C1) Bin(C0+C1, 1/2)(C0) times the ratio above. The loss
// depends on the outcome only through (C0, C1), which is therefore a
// sufficient statistic: the PLD is the law of L under P over this finite
// set, exactly (per block). The user alone (A_0 vs A_1) has losses eps0, -eps0, 0 with
// P-masses e^eps0/(e^eps0+b), 1/(e^eps0+b), (b-1)/(e^eps0+b).
//
// Discretisation and error terms: the pmf windows are those of the clone
// pair (binomWindow: outcomes below 1e-45 trimmed, their omega-mass bounded
// geometrically; their P-mass is at most k e^eps0/(e^eps0+b) times that
// and goes to +Inf); losses are rounded up by a bound on their
// floating-point error and placed by connect-the-dots (builder.atom); the
// masses' relative rounding error (the windows' recurrences, at most
// (64 + 4 w) u each for windows of w terms, and 16 u for the products here)
// is the builder's rho. Every term is in the delta.

// maxBlanketAtoms bounds the outcomes ShuffleBlanketRR evaluates.
const maxBlanketAtoms = 4e8

// blanketBlocks splits the blanket count N ~ Bin(n-1, g) into blocks: it
// returns the block starts m_0 < m_1 < ... < m_J (from mean - 8 sd, steps
// of about sd/2, the last block open above mean + 8 sd) and u, where u[0]
// bounds P(N < m_0) from above, u[j+1] bounds P(N < m_{j+1}) from above
// (non-decreasing) and u[J+1] = 1. The mixture giving weight u[0] to the
// user alone and u[j+1] - u[j] to the pair with m_j draws has a CDF of m
// above that of the true N at every point, so the quantile coupling puts
// every true N at or above its block's m_j: it dominates (Step 3). The
// pmf is binomWindow's (relative error at most (64 + 4 w) u for w terms;
// its trimmed mass, both tails, counted below m_0), sums inflated by
// their rounding.
func blanketBlocks(n int, g float64) (blocks []int, u []float64) {
	if n <= 1 {
		return []int{0}, []float64{0, 1}
	}
	nn := float64(n - 1)
	mean, sd := nn*g, math.Sqrt(nn*g*(1-g))
	m0 := max(0, int(math.Floor(mean-8*sd)))
	top := min(n-1, int(math.Ceil(mean+8*sd)))
	step := max(1, int(math.Floor(sd/2)))
	for m := m0; m <= top; m += step {
		blocks = append(blocks, m)
	}
	lo, w, lost := binomWindow(n-1, g, 1-g)
	infl := 1 + (64+4*float64(len(w)))*unitRoundoff + 2*float64(len(w)+2)*unitRoundoff
	cdf := func(t int) float64 { // upper bound on P(N < t)
		s := lost
		for i, v := range w {
			if lo+i >= t {
				break
			}
			s += v
		}
		return math.Min(1, s*infl)
	}
	u = make([]float64, len(blocks)+1)
	for j, m := range blocks {
		u[j] = cdf(m)
		if j > 0 {
			u[j] = math.Max(u[j], u[j-1])
		}
	}
	u[len(blocks)] = 1
	return blocks, u
}

// ShuffleBlanketRR returns the PLD of the blanket pair above: the
// dominating pair, for the substitution relation, of one shuffled column
// of n reports of FLAME's R_{gamma,b} (levels b >= 2) at local epsilon
// eps0, built from the others' blanket (Balle et al. 2019; Su, Cheng and
// Wang 2025) rather than from clones. Both directions coincide. The number
// of outcomes is about 29^2 times the standard deviations of the two
// binomial windows (about 3e5 at n = 2000); above 4e8 an error is
// returned. eps0 must be in (0, 40].
func ShuffleBlanketRR(eps0 float64, levels, n int, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("shuffle blanket PLD: %w", err)
	}
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return nil, fmt.Errorf("shuffle blanket PLD: %w", err)
	}
	if eps0 > maxAllocEps0 {
		return nil, fmt.Errorf("shuffle blanket PLD: %w", checks.Invalidf("eps0 must be <= %d, got %v", maxAllocEps0, eps0))
	}
	if levels < 2 || levels > 1<<20 {
		return nil, fmt.Errorf("shuffle blanket PLD: %w", checks.Invalidf("levels (b of R_{gamma,b}) must be in [2, 2^20], got %d", levels))
	}
	if err := checks.IntAtLeast("n", n, 1); err != nil {
		return nil, fmt.Errorf("shuffle blanket PLD: %w", err)
	}
	if n > 1<<30 {
		return nil, fmt.Errorf("shuffle blanket PLD: %w", checks.Invalidf("n must be <= 2^30, got %d", n))
	}
	bf := float64(levels)
	k := bf + 1
	ee := math.Exp(eps0)
	em1 := math.Expm1(eps0)
	den := ee + bf
	g := k / den
	pk := 2 / k // an omega draw lands on level 0 or 1
	blocks, ucdf := blanketBlocks(n, g)
	// the windows' sizes at the largest block
	mTop := blocks[len(blocks)-1]
	sdM := math.Sqrt(float64(mTop+1) * pk * (1 - pk))
	sdC := math.Sqrt(float64(mTop+1) * pk / 4)
	l := math.Log(1 / binomFloor)
	work := float64(len(blocks)) * (2*math.Sqrt(2*l)*sdM + 2*l + 3) * (2*math.Sqrt(2*l)*sdC + 2*l + 3)
	if work > maxBlanketAtoms {
		return nil, fmt.Errorf("shuffle blanket PLD: %w", checks.Invalidf("n = %d: the blanket pair has about %.2g outcomes (limit %.0g): use a smaller n", n, work, float64(maxBlanketAtoms)))
	}
	b, err := newBuilder(o.Interval, -eps0, eps0)
	if err != nil {
		return nil, fmt.Errorf("shuffle blanket PLD: %w", err)
	}
	// the user alone, weight fail = ucdf[0]
	if fail := ucdf[0]; fail > 0 {
		b.atom(eps0, fail*ee/den)
		b.atom(-eps0, fail/den)
		b.atom(0, fail*(bf-1)/den)
	}
	rmax := k * ee / den // the largest ratio of P_m to omega^{m+1}
	var inf float64
	var bb, bm binomBuf
	steps, stepsM := 0, 0
	for j, m := range blocks {
		w1 := ucdf[j+1] - ucdf[j]
		if !(w1 > 0) {
			continue
		}
		m1 := float64(m + 1)
		mLo, pm, lostM := bm.window(m+1, pk, 1-pk)
		stepsM = max(stepsM, len(pm))
		inf += w1 * lostM * rmax
		for i, wm := range pm {
			tot := mLo + i // C0 + C1
			cLo, pc, lostC := bb.window(tot, 0.5, 0.5)
			steps = max(steps, len(pc))
			inf += w1 * wm * lostC * rmax
			for jj, wc := range pc {
				c0 := cLo + jj
				c1 := tot - c0
				pmass := w1 * wm * wc * (k / den) * (em1*float64(c0) + m1) / m1
				var loss float64
				switch {
				case c0 == c1:
					loss = 0
				case c0 > c1:
					loss = math.Log1p(em1 * float64(c0-c1) / (em1*float64(c1) + m1))
				default:
					loss = -math.Log1p(em1 * float64(c1-c0) / (em1*float64(c0) + m1))
				}
				loss += 8 * unitRoundoff * (math.Abs(loss) + 1)
				if loss > eps0 {
					loss = eps0 // |L| <= eps0 (the user's value alone is eps0-LDP)
				}
				b.atom(loss, pmass)
			}
		}
	}
	// the weights' differences are exact up to 4 u each: a deficit of that
	// much per block goes to +Inf
	inf += 4 * float64(len(blocks)+1) * unitRoundoff
	b.inf += inf * (1 + 1e-9)
	b.rho = (64+4*float64(stepsM))*unitRoundoff + (64+4*float64(steps))*unitRoundoff + 32*unitRoundoff
	logm := gridMoments(b.off, b.g, o.Interval)
	cinf := b.inf
	d := b.finish(o.TailMass)
	d.logm, d.cinf = logm, cinf
	out := symmetric(o.Interval, o, d)
	out.subst = true
	return out, nil
}

// BlanketSlots returns, for a column of n reports each of which contains
// the blanket with probability gamma (N ~ Bin(n-1, gamma) blanket draws
// among the others), a number of positions slots = m + 1 (the differing
// user's value and m draws, m about 8 standard deviations below the mean
// of N) and fail >= P(N + 1 < slots), the bound of blanketBlocks: the
// inputs of SparseShuffleAllocation(eps0, levels, 1, 1, slots) composed
// with (0, fail), which then dominates the column for add/remove against
// the reference "the user's value is a blanket draw" (alloc.go's
// argument with one column and the others' blanket draws as the dummies).
func BlanketSlots(n int, gamma float64) (slots int, fail float64, err error) {
	if n < 1 || n > 1<<30 {
		return 0, 0, checks.Invalidf("blanket slots: n must be in [1, 2^30], got %d", n)
	}
	if !(gamma > 0 && gamma <= 1) {
		return 0, 0, checks.Invalidf("blanket slots: gamma must be in (0, 1], got %v", gamma)
	}
	blocks, u := blanketBlocks(n, gamma)
	return blocks[0] + 1, u[0], nil
}
