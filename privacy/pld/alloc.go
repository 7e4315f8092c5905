package pld

import (
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// Random allocation under a blanket: the dominating pair of FLAME's
// SS-Double (Liu et al., AAAI 2021, Algorithm 3) for one user's k reported
// coordinates, and of one coordinate's shuffle with dummy padding.
//
// Setting. A value is released by a local randomizer R on [0, 1] whose
// blanket omega (Balle et al., CRYPTO 2019) satisfies R(x) >= gamma omega
// pointwise for every x, and the shuffler's dummies are draws of omega:
//
//   - Laplace on [0, 1] (levels 0): R(x) = Lap(x, 1/eps0), omega = R(1/2),
//     gamma = e^{-eps0/2} (|x - 1/2| <= 1/2);
//   - R_{gamma,b} (levels b >= 2): R(x) = (1-gamma) Round_b(x) + gamma
//     Unif{0..b}, omega = Unif{0..b}, gamma = (b+1)/(e^eps0 + b).
//
// The base pair. A* is the user's value at the worst input: Lap(0, 1/eps0)
// for Laplace, and for R_{gamma,b} the law with mass e^eps0/(e^eps0+b) on
// one level and 1/(e^eps0+b) on each other. Claim: (R(x), omega) is a
// post-processing of (A*, omega) for every x in [0, 1] (Blackwell
// dominance; Blackwell 1953, see Dong, Roth and Su 2022, Section 2, for
// the DP form: a channel K with K A* = R(x) and K omega = omega exists iff
// H_a(A* || omega) >= H_a(R(x) || omega) for every a >= 0). Proof, Laplace:
// (Lap(1/2 + s), Lap(1/2)), s >= 0, has a likelihood ratio non-decreasing
// in y, so by Neyman-Pearson H_a = sup_c [P(Y > c) - a Q(Y > c)] over
// thresholds, and P(Y > c) = S(c - 1/2 - s) is non-decreasing in s (S the
// Laplace survival function): H_a grows with s up to s = 1/2, i.e. x = 1;
// x < 1/2 is the mirror image (y -> 1 - y maps Lap(x) to Lap(1-x) and
// omega to itself), and Lap(1) vs omega is the mirror of Lap(0) vs omega.
// R_{gamma,b}: R(x) = l A_y1 + (1-l) A_y2 for the two levels y1, y2 next to
// x b, and A_y2 = A_y1 o pi for the transposition pi of y1 and y2, which
// fixes omega; the channel "identity with probability l, else pi" maps
// (A_y1, omega) to (R(x), omega), and every A_y is such an image of A*.
//
// One column. A column is shuffled: the analyzer sees the multiset of its
// n_p values, the differing user's slot (its report if the column is one
// of its k, else a dummy) and n_p - 1 others, each another user's report
// R(x_i) or a dummy omega, independent. Write every report as
// R(x_i) = gamma omega + (1-gamma) LO_i (LO_i = (R(x_i) - gamma omega)/(1-gamma)
// >= 0 is a distribution) and reveal which of the others are blanket
// draws and the values of the others (LO_i): revealing more only helps the
// adversary (post-processing the other way). The LO values do not depend
// on the differing user, so what remains is the multiset of the user's
// slot and the N_j blanket draws of the column: with the user's report
// R(x_j) (column reported) against with omega (not reported), i.e. R(x_j)
// at a uniformly random one of N_j + 1 positions, omega elsewhere,
// against omega everywhere. With fewer blanket draws the pair is more
// revealing: from m <= N_j + 1 positions one obtains N_j + 1 by adding
// N_j + 1 - m fresh draws of omega (a channel that does not depend on the
// user's data). So each column is dominated by the same structure with
// m positions, m the least N_j + 1 over the columns (see
// SparseShuffleAllocation for how m is guaranteed), and the differing
// user's report R(x_j) by A* (the channel K above, applied to every
// position: it fixes omega and maps A* to R(x_j)).
//
// One block (1-of-t). If the user reports in exactly one of t columns,
// uniformly, the columns are independent given the others' randomness, so
// the pair is P = (1/t) sum_j A_j (x) B_{-j} against Q = (x)_j B_j, with A_j
// the column with the user's report and B_j without. Applying the
// column-wise channels above to the 1-of-(t m) allocation of (A*, omega) —
// A* at a uniformly random one of T = t m positions, grouped into t
// columns of m, omega elsewhere — gives exactly (P, Q): the position is
// uniform within a uniform column. So BlanketAllocation(eps0, levels, t m)
// dominates the block. Its likelihood ratio is, with r = dA*/domega and
// y_1..y_T the values,
//
//	P/Q (y) = (1/T) sum_i r(y_i),
//
// so with S = sum_i r(y_i) under Q (y_i iid omega): the remove direction is
// the loss log(S/T) under P, whose law is the Q-law of S reweighted by
// S/T, and the add direction the loss -log(S/T) under Q (the remove and
// add pairs of the 1-of-t random allocation of Feldman and Shenfeld,
// "Privacy amplification by random allocation", arXiv 2502.08202, here
// computed exactly rather than bounded). The Q-law of S is the T-fold
// convolution of the Q-law of r: a convolution in ratio space.
//
// Pessimistic discretisation in ratio space. Two pairs compare in the
// Blackwell order exactly as the Q-laws of their likelihood ratios compare
// in the convex order (a pair dominates iff its ratio law is a
// mean-preserving spread). The Q-law of r is put on the lattice
// {(j + s) D} (D a power of two, s in {0, 1/4, 1/2, 3/4}) by connect-the-
// dots in ratio space: Q-mass q at ratio u in [l_j, l_{j+1}] becomes
// q (l_{j+1} - u)/D at l_j and q (u - l_j)/D at l_{j+1} (a mean-preserving
// spread: the original is their merge), the continuous part cell by cell
// in closed form. The discretised base pair dominates (A*, omega), and so
// its allocation dominates the true allocation (the channel, applied
// position-wise, maps one allocation to the other). S is then a lattice
// variable whose T-fold convolution is computed by one FFT, a T-th power
// per frequency and one inverse FFT (powerWindow: a Chernoff window with
// at most tau = TailMass/8 outside on each side, rigorous round-off bound),
// and the two directions are built from it by connect-the-dots in loss
// space (losses rounded up by a bound on their floating-point error).
//
// Error terms. The lattice offset s is chosen so that every atom (and the
// ends of the continuous part) lies well away from the lattice points
// (kappa = max r/dist, dist the distance to the nearer point, at most
// 2^24), so the uncertainty of their computed positions (a few ulps) is a
// relative error of the split masses, rho0 <= 8u (kappa + 8); the T-fold
// convolution of masses with relative error rho0 has relative error
// (1+rho0)^T - 1 (all terms non-negative). The FFT round-off efft, the
// cyclic wrap-around (at most 2 tau) and the mass outside the window (at
// most 2 tau, missing from the computed measure) are an l1 error of the
// Q-law of S, which becomes an l1 error of at most r_max times that in the
// remove direction (P-mass = Q-mass times S/T <= r_max) and of that in the
// add direction: both go into ErrorBound, hence into every delta.
// Delta and Epsilon then bound the true hockey-stick divergences of the
// allocation (remove: P vs Q; add: Q vs P). The relation is add/remove
// with the reference "the user's slots hold dummies" (Substitution() is
// false); see ChainEpsilon for substitution.

// Blanket randomizers (the levels argument).
const (
	// BlanketLaplace selects the Laplace randomizer on [0, 1], scale
	// 1/eps0, blanket Lap(1/2, 1/eps0).
	BlanketLaplace = 0
)

// maxAllocEps0 bounds the local epsilon of the allocation pairs (the
// ratio range e^{eps0/2} stays far from overflow and the lattice small).
const maxAllocEps0 = 40

// maxAllocT bounds the number of positions of one allocation.
const maxAllocT = 1 << 30

// blanketRatio is the law, under the blanket omega, of the likelihood
// ratio r = dA*/domega: atoms (position, Q-mass) and, for Laplace, the
// density cont u^{-3/2} on (rmin, rmax).
type blanketRatio struct {
	rmin, rmax float64
	atomR      []float64
	atomQ      []float64
	cont       float64
}

// newBlanketRatio returns the ratio law of (A*, omega) for the randomizer.
//
// Laplace: r(y) = exp(eps0 (|y - 1/2| - |y|)) is e^{eps0/2} =: R for y <= 0
// (omega-mass e^{-eps0/2}/2), 1/R for y >= 1/2 (mass 1/2), and
// e^{eps0 (1/2 - 2y)} on (0, 1/2); with u = r(y), y = 1/4 - log(u)/(2 eps0),
// the omega-density of u there is (eps0/2) e^{-eps0/4} u^{-1/2} times
// |dy/du| = 1/(2 eps0 u), i.e. (1/4) e^{-eps0/4} u^{-3/2} on (1/R, R)
// (mass (1 - e^{-eps0/2})/2; the three parts sum to 1 and E[r] = 1).
//
// R_{gamma,b}: r = (b+1)(1-gamma) + gamma = (b+1) e^eps0/(e^eps0+b) on one
// level (mass 1/(b+1)) and gamma = (b+1)/(e^eps0+b) on the b others.
func newBlanketRatio(eps0 float64, levels int) blanketRatio {
	if levels == BlanketLaplace {
		R := math.Exp(eps0 / 2)
		return blanketRatio{
			rmin: 1 / R, rmax: R,
			atomR: []float64{R, 1 / R},
			atomQ: []float64{0.5 * math.Exp(-eps0/2), 0.5},
			cont:  0.25 * math.Exp(-eps0/4),
		}
	}
	b := float64(levels)
	e := math.Exp(eps0)
	hi := (b + 1) / (1 + b/e)
	lo := (b + 1) / (e + b)
	return blanketRatio{rmin: lo, rmax: hi, atomR: []float64{hi, lo}, atomQ: []float64{1 / (b + 1), b / (b + 1)}}
}

// lattice discretises the ratio law on {(j + s) D}: it returns the index
// j0 of pmf[0] and kappa, the largest r/dist over the atoms (and the ends
// of the continuous part), dist the distance of r to its nearer lattice
// point: the computed positions carry a relative error of a few ulps, so
// the split masses carry one of a few ulps times kappa.
func (br blanketRatio) lattice(D, s float64) (j0 int, pmf []float64, kappa float64) {
	for _, r := range br.atomR {
		l0 := (math.Floor(r/D-s) + s) * D
		dist := math.Min(r-l0, l0+D-r)
		if !(dist > 0) {
			return 0, nil, math.Inf(1)
		}
		kappa = math.Max(kappa, r/dist)
	}
	j0 = int(math.Floor(br.rmin/D - s))
	j1 := int(math.Floor(br.rmax/D-s)) + 1
	pmf = make([]float64, j1-j0+1)
	point := func(j int) float64 { return (float64(j) + s) * D }
	for k, r := range br.atomR {
		q := br.atomQ[k]
		j := int(math.Floor(r/D - s))
		l0, l1 := point(j), point(j+1)
		pmf[j-j0] += q * (l1 - r) / D
		pmf[j+1-j0] += q * (r - l0) / D
	}
	if br.cont > 0 {
		c := br.cont
		for j := j0; j < j1; j++ {
			l0, l1 := point(j), point(j+1)
			a, b := math.Max(l0, br.rmin), math.Min(l1, br.rmax)
			if !(b > a) {
				continue
			}
			sa, sb := math.Sqrt(a), math.Sqrt(b)
			sab := math.Sqrt(a * b)
			// Q-mass 2c (a^-1/2 - b^-1/2), and int u dQ = q sqrt(ab);
			// moved up q (sqrt(ab) - l0)/D, kept q (l1 - sqrt(ab))/D, each
			// written with non-negative terms only.
			q := 2 * c * (b - a) / (sab * (sa + sb))
			up := q * (a*(b-l0) + l0*(a-l0)) / (D * (sab + l0))
			lo := q * (l1*(l1-b) + b*(l1-a)) / (D * (l1 + sab))
			pmf[j-j0] += lo
			pmf[j+1-j0] += up
		}
	}
	return j0, pmf, kappa
}

// allocSum is the Q-law of S = sum of T ratios on the lattice: S/T =
// (j0 + s + (lo + t)/T) D for window entry t, with relative error rho and
// l1 error err (round-off, wrap-around and the mass outside the window).
type allocSum struct {
	j0       int
	s, D     float64
	T        int
	lo       int
	res      []float64
	rho, err float64
	rmax     float64
}

// allocKey identifies an allocSum (a deterministic function of it).
type allocKey struct {
	eps0   float64
	levels int
	T      int
	tail   float64
}

// allocMemo keeps the last few sums (each at most 8 MB; larger ones are
// not kept): a run's accountant rebuilds the same pairs on several grids.
var allocMemo struct {
	mu   sync.Mutex
	keys []allocKey
	vals []*allocSum
}

const allocMemoSize = 6

func allocSumFor(k allocKey) (*allocSum, error) {
	allocMemo.mu.Lock()
	for i, ki := range allocMemo.keys {
		if ki == k {
			v := allocMemo.vals[i]
			allocMemo.mu.Unlock()
			return v, nil
		}
	}
	allocMemo.mu.Unlock()
	v, err := newAllocSum(k)
	if err != nil {
		return nil, err
	}
	if len(v.res) > 1<<20 { // 8 MB: not kept
		return v, nil
	}
	allocMemo.mu.Lock()
	defer allocMemo.mu.Unlock()
	if len(allocMemo.keys) == allocMemoSize {
		allocMemo.keys = allocMemo.keys[1:]
		allocMemo.vals = allocMemo.vals[1:]
	}
	allocMemo.keys = append(allocMemo.keys, k)
	allocMemo.vals = append(allocMemo.vals, v)
	return v, nil
}

// newAllocSum computes the Q-law of S for T positions.
func newAllocSum(k allocKey) (*allocSum, error) {
	br := newBlanketRatio(k.eps0, k.levels)
	width := br.rmax - br.rmin
	if !(width > 0) || math.IsInf(br.rmax, 0) {
		return nil, checks.Invalidf("the ratio range [%v, %v] of eps0 = %v is degenerate", br.rmin, br.rmax, k.eps0)
	}
	// Sizing pass: the standard deviation of r (on a fine lattice; the
	// discretisation only spreads it).
	sd := 0.0
	for _, s := range []float64{0, 0.25, 0.5, 0.75} {
		D0 := math.Ldexp(1, math.Ilogb(width/512))
		j0, pmf, kappa := br.lattice(D0, s)
		if math.IsInf(kappa, 1) {
			continue
		}
		v := 0.0
		for i, p := range pmf {
			d := (float64(j0+i)+s)*D0 - 1
			v += p * d * d
		}
		sd = math.Sqrt(v)
		break
	}
	if !(sd > 0) {
		return nil, checks.Invalidf("cannot size the ratio lattice at eps0 = %v", k.eps0)
	}
	D := math.Ldexp(1, math.Ilogb(math.Min(sd/32, width/8)))
	// Offsets: quarters of D, and, when the smallest ratio is below 2D, one
	// that puts the lowest lattice point near 63 rmin/64 (a multiple of
	// 2^-20 D, so that lattice points stay exact): a lowest point at 0 would be
	// an add-direction loss of +Inf for the event that every position sits
	// there, which coarse lattices (large eps0) make far from negligible.
	// Preferred: a positive lowest point, then the smallest kappa; kappa
	// above 2^24 is refused.
	cands := []float64{0, 0.25, 0.5, 0.75}
	if x := br.rmin * (63.0 / 64) / D; x < 2 {
		// lowest point near 63 rmin/64 (kappa about 64)
		if s0 := math.Ldexp(math.Floor(math.Ldexp(x-math.Floor(x), 20)), -20); s0 > 0 {
			cands = append(cands, s0)
		}
	}
	var j0 int
	var pmf []float64
	s, kappa := 0.0, math.Inf(1)
	bestPos := false
	for _, c := range cands {
		cj0, cpmf, ck := br.lattice(D, c)
		if !(ck <= 1<<24) {
			continue
		}
		pos := (float64(cj0)+c)*D > 0
		if pmf == nil || pos && !bestPos || pos == bestPos && ck < kappa {
			j0, pmf, s, kappa, bestPos = cj0, cpmf, c, ck, pos
		}
	}
	if pmf == nil {
		return nil, checks.Invalidf("no lattice offset keeps the ratio atoms away from the lattice points at eps0 = %v", k.eps0)
	}
	if len(pmf) > 1<<16 {
		return nil, checks.Invalidf("the ratio lattice needs %d points at eps0 = %v (limit 65536)", len(pmf), k.eps0)
	}
	// trim zeros
	f, l := 0, len(pmf)-1
	for f < l && pmf[f] == 0 {
		f++
	}
	for l > f && pmf[l] == 0 {
		l--
	}
	pmf = pmf[f : l+1]
	j0 += f
	u := unitRoundoff
	rho0 := 8 * u * (kappa + 8)
	out := &allocSum{j0: j0, s: s, D: D, T: k.T, rmax: br.rmax}
	out.rho = math.Expm1(float64(k.T)*math.Log1p(rho0)) + 8*u
	if k.T == 1 || len(pmf) == 1 {
		if k.T != 1 {
			return nil, checks.Invalidf("degenerate ratio lattice")
		}
		out.res = append([]float64(nil), pmf...)
		return out, nil
	}
	m, _ := norms(pmf)
	tau := k.tail / 8
	lo, res, efft, err := powerWindowExact(pmf, m, k.T, tau)
	if err != nil {
		return nil, err
	}
	out.lo, out.res = lo, res
	// round-off, wrap-around (2 tau) and the mass outside (2 tau, relative
	// error rho)
	out.err = (efft + 2*tau + 2*tau*(1+out.rho)/(1-out.rho)) * (1 + 1e-9)
	return out, nil
}

// ratio returns S/T for window entry t.
func (a *allocSum) ratio(t int) float64 {
	return (float64(a.j0) + a.s + float64(a.lo+t)/float64(a.T)) * a.D
}

// dirs builds the remove (loss log(S/T), P-mass Q-mass times S/T) and add
// (loss -log(S/T), Q-mass) directions on the loss grid h.
func (a *allocSum) dirs(h, tail float64) (rem, add dir, err error) {
	u := unitRoundoff
	// loss range of the window's non-zero entries; a ratio sum of 0 (every
	// position at the lattice point 0, which the discretised base pair may
	// have) is loss -Inf for remove (P-mass 0) and +Inf for add
	first, last := -1, -1
	zero := 0.0
	for t, v := range a.res {
		if v > 0 {
			if !(a.ratio(t) > 0) {
				zero += v
				continue
			}
			if first < 0 {
				first = t
			}
			last = t
		}
	}
	if first < 0 {
		return dir{}, dir{}, checks.Invalidf("the allocation's ratio sum has no mass at a positive ratio")
	}
	xlo, xhi := a.ratio(first), a.ratio(last)
	pad := 8 * u * (1 + math.Abs(math.Log(xlo)) + math.Abs(math.Log(xhi)))
	llo, lhi := math.Log(xlo)-pad, math.Log(xhi)+pad
	br, err := newBuilder(h, llo, lhi)
	if err != nil {
		return dir{}, dir{}, err
	}
	ba, err := newBuilder(h, -lhi, -llo)
	if err != nil {
		return dir{}, dir{}, err
	}
	for t := first; t <= last; t++ {
		v := a.res[t]
		if v <= 0 {
			continue
		}
		x := a.ratio(t)
		l := math.Log(x)
		e := 8 * u * (1 + math.Abs(l))
		br.atom(l+e, v*x)
		ba.atom(-l+e, v)
	}
	ba.inf += zero
	rho := a.rho + 64*u
	br.rho, ba.rho = rho, rho
	rem, add = br.finish(tail), ba.finish(tail)
	// S/T is at most the top lattice point, below rmax + D
	rem.err = a.err * (a.rmax + a.D) * (1 + 4*u)
	add.err = a.err
	rem.cinf, add.cinf = 1, 1
	return rem, add, nil
}

// BlanketAllocation returns the PLD of the 1-of-T allocation of the base
// pair (A*, omega) of the randomizer (levels BlanketLaplace or b >= 2 for
// R_{gamma,b}) at local epsilon eps0: A* at a uniformly random one of T
// positions and blanket draws omega elsewhere, against omega everywhere
// (remove; add is the reverse). It dominates one column's shuffle with
// dummy padding and at least T blanket values (T = m), and one block of t
// columns of SS-Double (T = t m): see the derivation at the top of this
// file. The relation is add/remove against the reference in which the
// user's slots hold dummies; ChainEpsilon turns it into substitution.
// eps0 must be in (0, 40], T in [1, 2^30]; the ratio-space sum is
// memoised (it does not depend on the loss grid).
func BlanketAllocation(eps0 float64, levels, T int, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("blanket allocation PLD: %w", err)
	}
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return nil, fmt.Errorf("blanket allocation PLD: %w", err)
	}
	if eps0 > maxAllocEps0 {
		return nil, fmt.Errorf("blanket allocation PLD: %w", checks.Invalidf("eps0 must be <= %d, got %v", maxAllocEps0, eps0))
	}
	if levels != BlanketLaplace {
		if err := checks.IntInRange("levels", levels, 2, 1<<20); err != nil {
			return nil, fmt.Errorf("blanket allocation PLD: %w (0 selects Laplace)", err)
		}
	}
	if err := checks.IntInRange("T", T, 1, maxAllocT); err != nil {
		return nil, fmt.Errorf("blanket allocation PLD: %w", err)
	}
	a, err := allocSumFor(allocKey{eps0: eps0, levels: levels, T: T, tail: o.TailMass})
	if err != nil {
		return nil, fmt.Errorf("blanket allocation PLD: %w", err)
	}
	rem, add, err := a.dirs(o.Interval, o.TailMass)
	if err != nil {
		return nil, fmt.Errorf("blanket allocation PLD: %w", err)
	}
	return &PLD{h: o.Interval, opt: o, rem: rem, add: add}, nil
}

// SparseShuffleAllocation returns the PLD dominating one round of a user
// that reports k of d coordinates, chosen uniformly without replacement,
// each randomized by the blanket randomizer at eps0, every coordinate
// shuffled and holding at least m blanket values (the user's slot
// included) — FLAME's SS-Double with dummy padding; the caller charges the
// probability that some coordinate has fewer (see amplify.SSDoubleAlloc).
//
// Proof (k-of-d as k blocks of 1-of-(d/k)). Draw a uniformly random
// ordered partition of [d] into k blocks, d mod k of size floor(d/k)+1 and
// the rest of size floor(d/k), and one uniform coordinate in each block.
// The chosen set has exactly k elements, and its law is invariant under
// every permutation of [d] (the partition's law is, and choosing one
// uniform element per block commutes with relabelling); the permutations
// act transitively on the k-subsets, so the set is a uniform k-subset: the
// same mechanism. Revealing the partition only helps the adversary
// (dropping it is post-processing, and the partition does not depend on
// the data, so H_a(P || Q) <= E_partition H_a(P_part || Q_part)). Given the
// partition (and the other users' randomness, same law under both inputs),
// the user's choices in different blocks are independent and the
// coordinates are independent, so the pair is the product over blocks of
// 1-of-t allocations, each dominated by BlanketAllocation(eps0, levels,
// t m) (file comment: the column-wise channels, applied to every block,
// map the product of dominating pairs to the real one). Their PLDs
// compose. The result is add/remove against the reference in which the
// user contributes nothing; see ChainEpsilon.
func SparseShuffleAllocation(eps0 float64, levels, d, k, m int, o Options) (*PLD, error) {
	if err := checks.IntAtLeast("k", k, 1); err != nil {
		return nil, fmt.Errorf("sparse shuffle allocation PLD: %w", err)
	}
	if err := checks.IntAtLeast("m", m, 1); err != nil {
		return nil, fmt.Errorf("sparse shuffle allocation PLD: %w", err)
	}
	if d < k {
		return nil, fmt.Errorf("sparse shuffle allocation PLD: %w", checks.Invalidf("k = %d exceeds d = %d", k, d))
	}
	t0, r := d/k, d%k
	if int64(t0+1)*int64(m) > maxAllocT {
		return nil, fmt.Errorf("sparse shuffle allocation PLD: %w", checks.Invalidf("(d/k) m = %d x %d positions per block exceed %d", t0+1, m, maxAllocT))
	}
	var out *PLD
	for _, b := range []struct{ t, n int }{{t0, k - r}, {t0 + 1, r}} {
		if b.n == 0 {
			continue
		}
		p, err := BlanketAllocation(eps0, levels, b.t*m, o)
		if err != nil {
			return nil, fmt.Errorf("sparse shuffle allocation PLD: %w", err)
		}
		if p, err = p.SelfCompose(b.n); err != nil {
			return nil, fmt.Errorf("sparse shuffle allocation PLD: %w", err)
		}
		if out == nil {
			out = p
		} else if out, err = out.Compose(p); err != nil {
			return nil, fmt.Errorf("sparse shuffle allocation PLD: %w", err)
		}
	}
	return out, nil
}

// dirEpsilon is Epsilon for one direction: the smallest eps of the grid
// bound, the Chernoff certificate and the tilted bound, checked (and nudged
// up) so that the returned function, a rigorous delta bound of the
// direction, is at most delta there.
func (d *dir) dirEpsilon(h, delta float64) (float64, func(float64) float64) {
	ed, fd := d.epsFFT(h, delta), func(x float64) float64 { return d.fftDelta(h, x) }
	if ec := d.epsChernoff(delta); ec < ed {
		ed, fd = ec, d.chernoffDelta
	}
	if d.tiltWorthwhile(delta) && !math.IsInf(ed, 1) {
		if et, ft := d.epsTilted(h, delta, ed); ft != nil && et < ed {
			ed, fd = et, ft
		}
	}
	if math.IsInf(ed, 1) {
		return ed, fd
	}
	step := 1e-12 * (1 + ed)
	for i := 0; i < 200 && fd(ed) > delta; i++ {
		ed += step
		step *= 2
	}
	if fd(ed) > delta {
		return math.Inf(1), fd
	}
	return ed, fd
}

// ChainEpsilon returns an epsilon at delta for the SUBSTITUTION relation
// of a mechanism whose PLD p is for add/remove against a reference
// distribution M0 (remove: M(x) vs M0; add: M0 vs M(x)) valid for every
// input x — as BlanketAllocation and SparseShuffleAllocation are, with M0
// "the user's slots hold dummies", and every composition of such PLDs.
// Chaining x -> M0 -> x': for every event E,
//
//	M(x)(E) <= e^eps1 M0(E) + delta_rem(eps1)
//	        <= e^eps1 (e^eps2 M(x')(E) + delta_add(eps2)) + delta_rem(eps1),
//
// so delta_sub(eps1 + eps2) <= delta_rem(eps1) + e^eps1 delta_add(eps2)
// (the (eps, delta) form of group privacy for two steps; the same bound
// holds with x and x' exchanged). The split of delta is searched over a
// grid; every candidate is a valid statement, the smallest epsilon is
// returned (+Inf, no error, if none is finite). The PLD must not be a
// substitution PLD itself.
func (p *PLD) ChainEpsilon(delta float64) (float64, error) {
	if err := p.validate("receiver"); err != nil {
		return 0, fmt.Errorf("PLD chain epsilon: %w", err)
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("PLD chain epsilon: %w", err)
	}
	if p.subst {
		return 0, fmt.Errorf("PLD chain epsilon: %w", checks.Invalidf("the PLD is for the substitution relation already; chaining applies to add/remove PLDs"))
	}
	u := unitRoundoff
	try := func(f float64) float64 {
		e1, f1 := p.rem.dirEpsilon(p.h, f*delta)
		if math.IsInf(e1, 1) {
			return e1
		}
		d1 := f1(e1)
		g := math.Exp(e1) * (1 + 4*u)
		d2 := (delta - d1) / g * (1 - 1e-12)
		if !(d2 > 0) {
			return math.Inf(1)
		}
		e2, f2 := p.add.dirEpsilon(p.h, d2)
		if math.IsInf(e2, 1) {
			return e2
		}
		if d1+g*f2(e2) > delta {
			return math.Inf(1)
		}
		return (e1 + e2) * (1 + 4*u)
	}
	best, bf := math.Inf(1), 0.5
	for i := 1; i < 20; i++ {
		f := float64(i) / 20
		if e := try(f); e < best {
			best, bf = e, f
		}
	}
	for _, df := range []float64{-0.03, -0.02, -0.01, 0.01, 0.02, 0.03} {
		if f := bf + df; f > 0 && f < 1 {
			if e := try(f); e < best {
				best = e
			}
		}
	}
	return best, nil
}
