package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

func init() {
	Register("ss-double", "FLAME SS-Double: k random coordinates per user with eps_l/k, dummy padding to n_p per dimension; sound accounting (random allocation of the k coordinates under the blanket, or k clone-pair shuffles: FLAME Theorems 3-4 are not an upper bound)", newSSDouble)
	Register("ss-topk", "FLAME SS-Topk: top-k coordinates plus k(l-1) blanket dummies for nu-index privacy, padding to n_p, FLAME Algorithm 4 and Theorem 5", newSSTopk)
	RegisterInfo("ss-double", Info{
		Summary: "FLAME SS-Double: k random coordinates per user with eps_l/k, dummy padding to n_p per dimension",
		Paper:   "FLAME (Liu et al., AAAI 2021), Algorithms 2-3 (its Theorems 3-4 are not used: not an upper bound)",
		Options: append([]OptionSpec{
			flameKInfo("k, the coordinates each user samples uniformly and reports"),
			{Name: flameOptNp, Default: "max(n/3, the smallest n_p that some dimension overflows with probability <= 1e-9)",
				Meaning: "n_p, the values per dimension after the shuffler's dummy padding (FLAME Algorithm 3)",
				Range:   "integer >= that smallest safe n_p for n, k and d (any np >= n works)"},
		}, flameOptionInfo()...),
		Budgets: "one public --epsilon (user level, eps/k per reported coordinate)",
	})
	RegisterInfo("ss-topk", Info{
		Summary: "FLAME SS-Topk: top-k coordinates plus blanket dummies for nu-index privacy, padding to n_p",
		Paper:   "FLAME (Liu et al., AAAI 2021), Algorithm 4 and Theorem 5",
		Options: append([]OptionSpec{
			flameKInfo("k, the top coordinates (by |clipped update|) each user reports"),
			{Name: flameOptNp, Default: "n (the participants)",
				Meaning: "n_p, the values per dimension after the shuffler's dummy padding (FLAME Algorithm 3)",
				Range:   "integer >= n (top-k indexes are data-dependent)"},
			{Name: flameOptNu, Default: "the strongest nu the slots allow, l = min(floor(n_p d/(n k)), floor(d/k))",
				Meaning: "requested nu-index privacy (FLAME Definition 3): sets the slots l per top index; a weaker nu sends fewer blanket dummies",
				Range:   "[1, d/k], and reachable with the l that n_p allows"},
		}, flameOptionInfo()...),
		Budgets: "one public --epsilon (user level, eps/k per reported coordinate)",
	})
}

// flameScratch is per-goroutine working memory of the sparse encoders.
type flameScratch struct {
	perm  []int32 // identity permutation of [d] between uses (SS-Double)
	swaps []int32
	idx   []int32 // SS-Topk selection
	key   []float64
}

func newFlameScratchPool() *sync.Pool {
	return &sync.Pool{New: func() any { return new(flameScratch) }}
}

// flameDefaultK is FLAME's k = d/50 (k = 157 for d = 7,850, eps_lk = 0.5).
func flameDefaultK(d int) int {
	return max(1, int(math.Round(float64(d)/flameDefaultBetaInv)))
}

// flameResolveK returns the option k or its default, checked against d.
func flameResolveK(name string, k, d int) (int, error) {
	if k == 0 {
		return min(flameDefaultK(d), d), nil
	}
	if k > d {
		return 0, fmt.Errorf("%s: %w", name, checks.Invalidf("k = %d exceeds the dimension d = %d: each user reports k of the d coordinates, beta = k/d must be in (0, 1] (FLAME, SS-Double and Algorithm 4)", k, d))
	}
	return k, nil
}

// flamePadFailBound bounds the probability that some of the d dimensions
// receives more than np of the n users' reports when each user samples k of
// d coordinates uniformly (n_s,j ~ Bin(n, beta), beta = k/d): by the union
// bound and the Chernoff bound P(X >= a) <= exp(-n KL(a/n || beta)),
// d exp(-n KL((np+1)/n || beta)), capped at 1.
func flamePadFailBound(n, k, d, np int) float64 {
	if np >= n {
		return 0
	}
	beta := float64(k) / float64(d)
	a := float64(np+1) / float64(n)
	if a <= beta {
		return 1
	}
	kl := a * math.Log(a/beta)
	if a < 1 {
		kl += (1 - a) * math.Log((1-a)/(1-beta))
	}
	return math.Min(1, float64(d)*math.Exp(-float64(n)*kl))
}

// flameSafePad is the smallest n_p for which flamePadFailBound is at most
// flamePadFailure.
func flameSafePad(n, k, d int) int {
	lo := max(1, int(math.Ceil(float64(n)*float64(k)/float64(d))))
	for np := lo; np < n; np++ {
		if flamePadFailBound(n, k, d, np) <= flamePadFailure {
			return np
		}
	}
	return n
}

// flamePad is the shuffler's dummy padding of FLAME Algorithm 3: dimension j
// gets n_n,j = n_p - n_s,j draws of the blanket omega_R. Emitting single
// values instead of Algorithm 3's k-index dummy vectors gives the same
// per-dimension multisets, which is all the per-coordinate shuffle releases.
func flamePad(name string, r *rand.Rand, c flameCodec, np int, counts []int64, emit func(int, float64)) error {
	for j, cnt := range counts {
		if cnt > int64(np) {
			return fmt.Errorf("%s: %w", name, checks.Invalidf("dimension %d received n_s,j = %d real reports, more than n_p = %d: FLAME Algorithm 3 pads n_n,j = n_p - n_s,j >= 0 dummies, so n_p must be at least every dimension's count (np = participants always suffices)", j, cnt, np))
		}
	}
	if c.laplace {
		for j, cnt := range counts {
			for i := cnt; i < int64(np); i++ {
				emit(j, c.blanket(r))
			}
		}
		return nil
	}
	// Unif{0, ..., b}, several draws per random word: padding dominates the
	// shuffler's time (n_p d draws, 26 million for n = 10,000, d = 7,850).
	g := newFlameDigits(r, uint64(c.rr.B())+1)
	for j, cnt := range counts {
		for i := cnt; i < int64(np); i++ {
			emit(j, float64(g.next()))
		}
	}
	return nil
}

// flameDigits draws independent uniform integers in [0, m) several at a
// time: a 64-bit word uniform on [0, m^per) (by rejection, accepting with
// probability above 3/4) has per independent uniform base-m digits.
type flameDigits struct {
	r         *rand.Rand
	m, lim    uint64 // lim = m^per <= 2^62
	bound     uint64 // largest multiple of lim below 2^64
	per, left int
	word      uint64
}

func newFlameDigits(r *rand.Rand, m uint64) flameDigits {
	g := flameDigits{r: r, m: m, lim: 1}
	for g.lim <= (1<<62)/m {
		g.lim *= m
		g.per++
	}
	g.bound = (math.MaxUint64 / g.lim) * g.lim
	return g
}

func (g *flameDigits) next() uint64 {
	if g.left == 0 {
		w := g.r.Uint64()
		for w >= g.bound {
			w = g.r.Uint64()
		}
		g.word, g.left = w%g.lim, g.per
	}
	d := g.word % g.m
	g.word /= g.m
	g.left--
	return d
}

// SSDouble is FLAME's SS-Double protocol (Liu et al. 2021, "Double
// Amplification", Algorithm 3, Theorems 3-4): each user samples k of the d
// coordinates uniformly without replacement (K_r^beta, beta = k/d) and
// randomizes each with eps_lk = eps_l/k; the shuffler pads every dimension
// to n_p values with draws from the blanket distribution (dummy padding,
// Algorithm 3) and permutes every dimension; the analyzer de-biases knowing
// n_p and beta.
//
// Options (Params.Extra):
//
//	k           coordinates per user, 1 <= k <= d (default round(d/50), at
//	            least 1: FLAME's k = 157 of d = 7,850, eps_lk = 0.5)
//	np          padding size n_p per dimension (default max(floor(n/3),
//	            the smallest safe n_p): FLAME's n/n_p = 3)
//	randomizer  0 = R_{gamma,b} (default), 1 = Laplace on [0, 1]
//	levels      b of R_{gamma,b}, >= 2 (default 2)
//
// The padding constraint. Algorithm 3 needs n_n,j = n_p - n_s,j >= 0 for
// every dimension. The paper's own setting n_p = n/3 is below the number of
// participants n, yet honourable: n_s,j ~ Bin(n, beta) has mean 20 for
// n = 1,000 and beta = 1/50. So Check does not demand n_p >= n (which would
// always suffice); it rejects an n_p for which some dimension exceeds n_p
// with probability above 1e-9 (union and Chernoff bounds,
// flamePadFailBound), and that probability is added to the round's central
// delta. Pad returns an error in the unlikely event.
//
// Estimator. The analyzer sees Count_j = n_p, not n_s,j. Every value v
// satisfies E[v/b - 1/2] = (1-gamma)(x - 1/2) for a real report and 0 for a
// dummy, and a user reports coordinate j with probability beta, so
//
//	z_j = 2C (Sum_j/b - n_p/2) / ((1-gamma) beta n)
//
// is unbiased for the mean clipped update of the n participants over both
// the randomizer and the sampling (it equals FLAME Eq. 1 with n replaced by
// n_s,j's expectation beta n and the dummies' mean n_n/2 removed; the 1/beta
// is the d/k scaling of random sparsification). Its variance is
// 4C^2 [beta sum_i Var(y_i)/b^2 + (n_p - beta n)(b+2)/(12b)
// + (1-gamma)^2 beta(1-beta) sum_i (x_i - 1/2)^2] / ((1-gamma) beta n)^2
// (flame_test.go checks it). For Laplace, b = 1, gamma = 0 and dummies are
// Laplace(1/2, k/eps_l).
//
// Accounting: NOT FLAME's Theorems 3-4, which take a subsampling credit on
// 2 beta d dimension-level releases and so count the k-of-d sampling twice
// (refuted by a count of the released values: amplify.SSDoubleFLAME,
// TestSSDoubleFLAMERefuted). The round's own statement is the sound one of
// amplify.SSDouble: the k dimensions a user reports in, each a shuffle of
// n_p eps_l/k-LDP values (dummies are randomizer outputs), composed without
// sampling credit by advanced composition of the blanket Bennett bound. The
// run's accountant composes a tighter one (Account's component,
// account.KindAlloc): the k coordinates are a random allocation (k blocks
// of 1-of-d/k), each coordinate a 1-of-m allocation under the blanket
// (pld.SparseShuffleAllocation, planned by amplify.SSDoubleAlloc), for
// add/remove against "the user's slots hold dummies", chained to
// substitution across the whole run; or the PLD of FMT's clone pairs if
// smaller.
type SSDouble struct {
	flameBase
	k, np int // 0: default
	pool  *sync.Pool
}

func newSSDouble(p Params) (Protocol, error) {
	if err := extraKeys(p, flameOptK, flameOptNp, flameOptRandomizer, flameOptLevels, flameOptDeltaC); err != nil {
		return nil, err
	}
	f, err := newFlameBase("ss-double", p)
	if err != nil {
		return nil, err
	}
	m := SSDouble{flameBase: f, pool: newFlameScratchPool()}
	if m.k, _, err = flameIntOption(p, flameOptK, 1, math.MaxInt32); err != nil {
		return nil, fmt.Errorf("ss-double: %w (FLAME: each user samples k >= 1 coordinates)", err)
	}
	if m.np, _, err = flameIntOption(p, flameOptNp, 1, math.MaxInt32); err != nil {
		return nil, fmt.Errorf("ss-double: %w (FLAME Algorithm 3 pads every dimension to n_p >= 1 values)", err)
	}
	return m, nil
}

// Name implements Protocol.
func (SSDouble) Name() string { return "ss-double" }

// Plan returns k and n_p for the round's shape (the options or their
// defaults), validated against FLAME's constraints.
func (p SSDouble) Plan(s Shape) (k, np int, err error) {
	if err := s.Validate(); err != nil {
		return 0, 0, fmt.Errorf("ss-double: %w", err)
	}
	if k, err = flameResolveK("ss-double", p.k, s.Dim); err != nil {
		return 0, 0, err
	}
	n := s.Participants
	safe := flameSafePad(n, k, s.Dim)
	if p.np == 0 {
		return k, max(n/3, safe), nil
	}
	if p.np < safe {
		return 0, 0, fmt.Errorf("ss-double: %w", checks.Invalidf(
			"n_p = %d is too small for n = %d participants: FLAME Algorithm 3 pads n_p - n_s,j >= 0 dummies per dimension, and with n_s,j ~ Bin(n, k/d = %d/%d) some dimension exceeds n_p with probability up to %.3g > %g; use np >= %d (np >= participants always suffices)",
			p.np, n, k, s.Dim, flamePadFailBound(n, k, s.Dim, p.np), flamePadFailure, safe))
	}
	return k, p.np, nil
}

// Check implements Protocol: k <= d, a safe n_p (see SSDouble) and every
// budget equal to eps_l.
func (p SSDouble) Check(s Shape, budgets []Budget) error {
	if _, _, err := p.Plan(s); err != nil {
		return err
	}
	return p.checkUniform(s, budgets)
}

// Mode implements Protocol.
func (SSDouble) Mode() ShuffleMode { return PerCoordinate }

// Encode implements Protocol (FLAME Algorithm 2 lines 8-10 with K_r^beta):
// a sparse report of k uniformly sampled coordinates, each randomized with
// eps_l/k.
func (p SSDouble) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return fmt.Errorf("ss-double: %w", err)
	}
	if err := p.checkBudget(b); err != nil {
		return fmt.Errorf("ss-double: %w", err)
	}
	d := s.Dim
	k, err := flameResolveK("ss-double", p.k, d)
	if err != nil {
		return err
	}
	c, err := p.codec(p.eps / float64(k))
	if err != nil {
		return err
	}
	sc := p.pool.Get().(*flameScratch)
	defer p.pool.Put(sc)
	if len(sc.perm) != d {
		sc.perm = make([]int32, d)
		for i := range sc.perm {
			sc.perm[i] = int32(i)
		}
	}
	sc.swaps = sc.swaps[:0]
	perm := sc.perm
	for i := 0; i < k; i++ { // partial Fisher-Yates: perm[:k] is a uniform k-subset
		j := i + r.IntN(d-i)
		perm[i], perm[j] = perm[j], perm[i]
		sc.swaps = append(sc.swaps, int32(j))
	}
	out.Reset()
	out.Coords = append(out.Coords[:0], perm[:k]...)
	for i := k - 1; i >= 0; i-- { // restore the identity
		j := sc.swaps[i]
		perm[i], perm[j] = perm[j], perm[i]
	}
	for _, j := range out.Coords {
		out.Values = append(out.Values, c.randomize(r, p.toUnit(update[j])))
	}
	return nil
}

// Pad implements Protocol: FLAME Algorithm 3, padding every dimension to n_p
// values with blanket draws.
func (p SSDouble) Pad(r *rand.Rand, s Shape, counts []int64, emit func(int, float64)) error {
	k, np, err := p.Plan(s)
	if err != nil {
		return err
	}
	c, err := p.codec(p.eps / float64(k))
	if err != nil {
		return err
	}
	return flamePad("ss-double", r, c, np, counts, emit)
}

// Estimate implements Protocol: z_j = 2C (Sum_j/b - Count_j/2)/((1-gamma) beta n),
// unbiased for the participants' mean clipped update (see SSDouble).
func (p SSDouble) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	k, _, err := p.Plan(s)
	if err != nil {
		return err
	}
	c, err := p.codec(p.eps / float64(k))
	if err != nil {
		return err
	}
	m := float64(k) / float64(s.Dim) * float64(s.Participants)
	return p.estimate(s, agg, dst, c, func(int) float64 { return m })
}

// Account implements Protocol: the sound SS-Double statement
// (amplify.SSDouble: k per-dimension shuffles of n_p values, no subsampling
// credit), plus the padding-failure probability in delta. Its component is
// the round's random allocation (account.KindAlloc, see allocComponents),
// which the run's PLD accountant composes instead of the advanced
// composition (with the k clone pairs as the alternative). FLAME's
// Theorems 3-4 are not used: they are not an upper bound
// (amplify.SSDoubleFLAME).
func (p SSDouble) Account(s Shape, budgets []Budget) (Privacy, error) {
	k, np, err := p.Plan(s)
	if err != nil {
		return Privacy{}, err
	}
	d, n := s.Dim, s.Participants
	priv, err := p.account(s, budgets, flameRelease{
		coordEps: p.eps / float64(k), dims: k, reporters: np, fallback: p.eps,
		extraDelta: flamePadFailBound(n, k, d, np),
		theorem:    fmt.Sprintf("sound SS-Double: k=%d per-dimension shuffles of n_p=%d, no subsampling credit", k, np),
		res: func(deltaC float64) (amplify.ProtocolResult, error) {
			return amplify.SSDouble(p.eps, d, k, n, np, deltaC, p.amplifier())
		},
		components: func(eps, delta float64) []account.Component {
			return p.allocComponents(s, k, np, eps, delta)
		},
	})
	if err == nil && len(priv.Components) == 1 && priv.Components[0].Kind == account.KindAlloc {
		c := priv.Components[0]
		priv.Bound += fmt.Sprintf("; run accountant: random allocation of the k coordinates (k blocks of 1-of-%d, 1-of-%d blanket slots per coordinate, failure %.3g), chained to substitution, or the clone pairs if smaller", d/k, c.Slots, c.Fail)
	}
	return priv, err
}

// allocComponents returns the round's random-allocation component
// (account.KindAlloc: pld.SparseShuffleAllocation, planned by
// amplify.SSDoubleAlloc with a failure budget of 1e-4 of the round's
// delta), carrying the round's statement (eps, delta) as its generic
// figure, or nil when the plan fails (the components of the clone-pair
// statement then stay). The run's PLD accountant composes the allocation
// pairs of all rounds for add/remove against "the user's slots hold
// dummies" and chains them to substitution (account.KindAlloc), and also
// composes the clone pairs without the allocation credit; the smaller
// epsilon is the run's.
func (p SSDouble) allocComponents(s Shape, k, np int, eps, delta float64) []account.Component {
	levels := p.levels
	if p.laplace {
		levels = 0
	}
	d, n := s.Dim, s.Participants
	eps0 := p.eps / float64(k)
	if !(eps0 <= 40) || math.IsInf(eps, 0) || !(delta < 1) {
		return nil
	}
	plan, err := amplify.SSDoubleAlloc(p.eps, d, k, n, np, levels, 1e-4*p.deltaC(n))
	if err != nil || plan.Fail >= 0.5 {
		return nil
	}
	// Fewer slots and a larger failure probability give a dominating pair
	// (pld.BlanketAllocation: fewer blanket values reveal more), so the
	// round's pair is rounded to a coarse grid — slots down to 6
	// significant bits (less than 1/32 fewer), the failure probability up to a
	// power of two — and rounds whose participation differs a little
	// share one pair (the accountant builds each distinct pair).
	return []account.Component{{
		Kind: account.KindAlloc, Epsilon: eps, Delta: delta, Count: 1,
		Eps0: eps0, Reporters: np, Dim: d, K: k, Slots: roundDownBits(plan.Slots, 6), Levels: levels, Fail: roundUpPow2(plan.Fail),
	}}
}

// roundDownBits returns m with all but its `bits` most significant bits
// cleared (m >= 1).
func roundDownBits(m, bits int) int {
	if m < 1<<bits {
		return m
	}
	shift := 0
	for m>>shift >= 1<<bits {
		shift++
	}
	return m >> shift << shift
}

// roundUpPow2 returns the smallest power of two >= q (q > 0), 0 for 0.
func roundUpPow2(q float64) float64 {
	if !(q > 0) {
		return q
	}
	f, e := math.Frexp(q)
	if f == 0.5 {
		return q
	}
	return math.Ldexp(1, e)
}

// SSTopk is FLAME's SS-Topk protocol (Liu et al. 2021, Algorithm 4,
// Definition 3, Proposition 2, Theorem 5): each user reports its k
// coordinates of largest magnitude, randomized with eps_lk = eps_l/k, plus
// k(l-1) other coordinates chosen uniformly from the rest carrying blanket
// dummies, in a random order; the shuffler pads every dimension to n_p and
// permutes every dimension (Algorithm 3); the analyzer de-biases as in
// SS-Double.
//
// Options (Params.Extra):
//
//	k           top coordinates per user, 1 <= k <= d (default round(d/50))
//	np          padding size n_p, >= participants (default: participants)
//	nu          requested nu-index privacy, 1 <= nu <= 1/beta (Proposition
//	            2); default: the strongest Theorem 5 allows
//	randomizer  0 = R_{gamma,b} (default), 1 = Laplace on [0, 1]
//	levels      b of R_{gamma,b}, >= 2 (default 2)
//
// Slots. l is the smallest number of slots per top index meeting nu
// (Algorithm 4 line 1, amplify.FLAMEIndexSlots), and must fit Theorem 5,
// l <= floor(n_p/(n beta)), and lk <= d. Without nu, l is Theorem 5's
// largest: l = min(floor(n_p/(n beta)), floor(d/k)). IndexPrivacy reports
// the nu achieved.
//
// Departures from the paper, each for soundness:
//
//   - Top-k is taken by the magnitude of the clipped update |x_j| (that is
//     |x~_j - 1/2|), not of the [0, 1]-mapped x~_j that Algorithm 4 line 2
//     writes, which would rank large negative updates last.
//   - n_p >= n is required. Top-k indexes are data-dependent: one dimension
//     can be in every user's top-k, so n_s,j can reach n, and Algorithm 3
//     cannot pad it down. FLAME's own setting (n_p = n/3, l = 16) even has
//     expected count n l beta = 320 per dimension for uniformly spread
//     indexes, just under n_p = 333, so about a fifth of the dimensions would
//     overflow (flame_test.go shows it). With n_p = n and no nu the slots
//     cover every coordinate (l k = d for k | d) and nu = 1.
//   - Theorem 5's nu = max{1, 1/(l beta)} ignores the second inequality of
//     Definition 3, Pr[I_j = 0 | reported] = 1 - 1/l >= (1 - beta)/nu; the
//     achieved nu is max{1, 1/(l beta), (1-beta) l/(l-1)}, and l = 1 gives no
//     index privacy at all (nu = +Inf, not Proposition 2's 1/beta).
//   - Accounting takes no subsampling credit: which users report a real value
//     in dimension j is decided by their data (top-k), not by a random
//     sample, so FLAME Theorem 3's Lemma 4 step does not apply. The sound
//     figure is Theorem 4's composition over 2k dimensions of the shuffle
//     bound at n_p reports (amplify.SSDouble with subsample = false, the
//     paper's own "20.53 without the amplification from subsampling").
//
// Estimator: z_j = 2C (Sum_j/b - Count_j/2)/((1-gamma) n) is unbiased for
// the mean over the participants of the top-k sparsified clipped updates
// (1/n) sum_i x_ij 1[j in Top_k(x_i)] — the usual top-k sparsification
// target, not the dense mean.
type SSTopk struct {
	flameBase
	k, np int     // 0: default
	nu    float64 // 0: strongest allowed
	pool  *sync.Pool
}

func newSSTopk(p Params) (Protocol, error) {
	if err := extraKeys(p, flameOptK, flameOptNp, flameOptNu, flameOptRandomizer, flameOptLevels, flameOptDeltaC); err != nil {
		return nil, err
	}
	f, err := newFlameBase("ss-topk", p)
	if err != nil {
		return nil, err
	}
	m := SSTopk{flameBase: f, pool: newFlameScratchPool()}
	if m.k, _, err = flameIntOption(p, flameOptK, 1, math.MaxInt32); err != nil {
		return nil, fmt.Errorf("ss-topk: %w (FLAME Algorithm 4: each user reports its top k >= 1 coordinates)", err)
	}
	if m.np, _, err = flameIntOption(p, flameOptNp, 1, math.MaxInt32); err != nil {
		return nil, fmt.Errorf("ss-topk: %w (FLAME Algorithm 3 pads every dimension to n_p >= 1 values)", err)
	}
	if nu, ok := p.Extra[flameOptNu]; ok {
		if math.IsNaN(nu) || nu < 1 {
			return nil, fmt.Errorf("ss-topk: %w", checks.Invalidf("nu = %v is outside [1, 1/beta]: nu-index privacy (FLAME Definition 3, Proposition 2) needs nu >= 1", nu))
		}
		m.nu = nu
	}
	return m, nil
}

// Name implements Protocol.
func (SSTopk) Name() string { return "ss-topk" }

// topkFallback is SS-Topk's central epsilon without amplification, for k
// top coordinates of d. In every dimension the analyzer sees user 1's report
// R(x_j) if j is in its top k and a blanket draw omega otherwise (its own
// dummy slot or the shuffler's padding); from x to x' the m dimensions in
// both top-k sets change a report (eps0 each) and the 2(k-m) in only one of
// them swap a report for omega, each by at most
// lambda = max |log(R(x)(y)/omega(y))|, with m >= max(0, 2k-d). So the
// release is max(k eps0, m0 eps0 + 2(k-m0) lambda)-DP, m0 = max(0, 2k-d).
// For the Laplace randomizer omega = R(1/2) and lambda = eps0/2, which gives
// eps_l; for R_{gamma,b} (omega = Unif{0..b}, gamma = (b+1)/(e^eps0 + b))
// lambda = max(log((b+1) e^eps0/(e^eps0 + b)), log((e^eps0 + b)/(b+1))),
// which exceeds eps0/2 (b = 2, eps0 = 0.5: 0.304 against 0.25), so claiming
// eps_l there would understate the loss (TestTopkFallbackRGammaB).
func (p SSTopk) topkFallback(k, d int) float64 {
	if p.laplace {
		return p.eps
	}
	eps0 := p.eps / float64(k)
	b := float64(p.levels)
	ee := math.Exp(eps0)
	lambda := math.Max(math.Log((b+1)*ee/(ee+b)), math.Log((ee+b)/(b+1)))
	m0 := float64(max(0, 2*k-d))
	return math.Max(p.eps, m0*eps0+2*(float64(k)-m0)*lambda)
}

// flameIndexNu is the nu-index privacy (FLAME Definition 3) of reporting l
// slots per top index at beta = k/d: Pr[I_j = 1 | reported] = 1/l must be at
// most nu beta and 1 - 1/l at least (1 - beta)/nu.
func flameIndexNu(l int, beta float64) float64 {
	if beta >= 1 { // k = d: every coordinate is a top coordinate, nothing to hide
		return 1
	}
	if l <= 1 {
		return math.Inf(1)
	}
	lf := float64(l)
	return math.Max(1, math.Max(1/(lf*beta), (1-beta)*lf/(lf-1)))
}

// Plan returns k, n_p and the number of slots l for the round's shape, and
// the nu-index privacy it achieves, validated against FLAME's constraints.
func (p SSTopk) Plan(s Shape) (k, np, l int, nu float64, err error) {
	fail := func(err error) (int, int, int, float64, error) { return 0, 0, 0, 0, err }
	if err := s.Validate(); err != nil {
		return fail(fmt.Errorf("ss-topk: %w", err))
	}
	d, n := s.Dim, s.Participants
	if k, err = flameResolveK("ss-topk", p.k, d); err != nil {
		return fail(err)
	}
	np = p.np
	if np == 0 {
		np = n
	}
	if np < n {
		return fail(fmt.Errorf("ss-topk: %w", checks.Invalidf(
			"n_p = %d is smaller than the %d participants: top-k indexes are data-dependent, so a dimension may be reported by every participant, and FLAME Algorithm 3 needs n_p >= n_s,j for every dimension",
			np, n)))
	}
	beta := float64(k) / float64(d)
	// Theorem 5: l <= floor(n_p/(n beta)) = floor(n_p d/(n k)); and l k <= d.
	lmax := min(int(int64(np)*int64(d)/(int64(n)*int64(k))), d/k)
	if lmax < 1 {
		return fail(fmt.Errorf("ss-topk: %w", checks.Invalidf("n_p = %d is below n beta = %.4g (FLAME Theorem 5 needs floor(n_p/(n beta)) >= 1)", np, float64(n)*beta)))
	}
	l = lmax
	if p.nu > 0 {
		if p.nu > 1/beta {
			return fail(fmt.Errorf("ss-topk: %w", checks.Invalidf("nu = %v is outside [1, 1/beta] = [1, %.6g] (FLAME Proposition 2)", p.nu, 1/beta)))
		}
		lmin, _, err := amplify.FLAMEIndexSlots(p.nu, beta)
		if err != nil {
			return fail(fmt.Errorf("ss-topk: %w", err))
		}
		if lmin > lmax {
			return fail(fmt.Errorf("ss-topk: %w", checks.Invalidf(
				"nu = %v needs l >= %d slots per top index (FLAME Algorithm 4 line 1) but n_p = %d, n = %d, beta = %.4g allow at most l = %d (FLAME Theorem 5, and l k <= d): the strongest nu allowed is %.4g",
				p.nu, lmin, np, n, beta, lmax, flameIndexNu(lmax, beta))))
		}
		l = lmin
	}
	return k, np, l, flameIndexNu(l, beta), nil
}

// IndexPrivacy returns the nu-index privacy (FLAME Definition 3) and the
// number of slots l of a round with shape s.
func (p SSTopk) IndexPrivacy(s Shape) (nu float64, l int, err error) {
	_, _, l, nu, err = p.Plan(s)
	return nu, l, err
}

// Check implements Protocol: k <= d, n_p >= participants, nu in
// [1, 1/beta] and achievable, every budget equal to eps_l.
func (p SSTopk) Check(s Shape, budgets []Budget) error {
	if _, _, _, _, err := p.Plan(s); err != nil {
		return err
	}
	return p.checkUniform(s, budgets)
}

// Mode implements Protocol.
func (SSTopk) Mode() ShuffleMode { return PerCoordinate }

// flameTopK partially orders idx so that idx[:k] are the k indexes of largest
// key (ties broken by the smaller index), by quickselect (expected O(len)).
func flameTopK(idx []int32, key []float64, k int) {
	before := func(a, b int32) bool { return key[a] > key[b] || (key[a] == key[b] && a < b) }
	lo, hi := 0, len(idx)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		// median of three to hi
		if before(idx[mid], idx[lo]) {
			idx[mid], idx[lo] = idx[lo], idx[mid]
		}
		if before(idx[hi], idx[lo]) {
			idx[hi], idx[lo] = idx[lo], idx[hi]
		}
		if before(idx[mid], idx[hi]) {
			idx[mid], idx[hi] = idx[hi], idx[mid]
		}
		pv := idx[hi]
		st := lo
		for i := lo; i < hi; i++ {
			if before(idx[i], pv) {
				idx[i], idx[st] = idx[st], idx[i]
				st++
			}
		}
		idx[st], idx[hi] = idx[hi], idx[st]
		switch {
		case st == k || st == k-1:
			return
		case st < k:
			lo = st + 1
		default:
			hi = st - 1
		}
	}
}

// Encode implements Protocol (FLAME Algorithm 4): the top-k coordinates
// randomized with eps_l/k, k(l-1) uniformly chosen others carrying blanket
// draws, all l k in a uniformly random order.
func (p SSTopk) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return fmt.Errorf("ss-topk: %w", err)
	}
	if err := p.checkBudget(b); err != nil {
		return fmt.Errorf("ss-topk: %w", err)
	}
	k, _, l, _, err := p.Plan(s)
	if err != nil {
		return err
	}
	c, err := p.codec(p.eps / float64(k))
	if err != nil {
		return err
	}
	d := s.Dim
	sc := p.pool.Get().(*flameScratch)
	defer p.pool.Put(sc)
	sc.idx = sc.idx[:0]
	sc.key = sc.key[:0]
	for j, x := range update {
		sc.idx = append(sc.idx, int32(j))
		sc.key = append(sc.key, math.Min(math.Abs(x), p.clip))
	}
	flameTopK(sc.idx, sc.key, k)
	idx := sc.idx
	extra := k * (l - 1)
	for i := 0; i < extra; i++ { // partial Fisher-Yates over the non-top rest
		j := k + i + r.IntN(d-k-i)
		idx[k+i], idx[j] = idx[j], idx[k+i]
	}
	out.Reset()
	for i, j := range idx[:k+extra] {
		out.Coords = append(out.Coords, j)
		if i < k {
			out.Values = append(out.Values, c.randomize(r, p.toUnit(update[j])))
		} else {
			out.Values = append(out.Values, c.blanket(r))
		}
	}
	r.Shuffle(len(out.Coords), func(a, b int) { // Algorithm 4 lines 7-9
		out.Coords[a], out.Coords[b] = out.Coords[b], out.Coords[a]
		out.Values[a], out.Values[b] = out.Values[b], out.Values[a]
	})
	return nil
}

// Pad implements Protocol: FLAME Algorithm 3, as for SS-Double.
func (p SSTopk) Pad(r *rand.Rand, s Shape, counts []int64, emit func(int, float64)) error {
	k, np, _, _, err := p.Plan(s)
	if err != nil {
		return err
	}
	c, err := p.codec(p.eps / float64(k))
	if err != nil {
		return err
	}
	return flamePad("ss-topk", r, c, np, counts, emit)
}

// Estimate implements Protocol: z_j = 2C (Sum_j/b - Count_j/2)/((1-gamma) n),
// unbiased for the mean top-k sparsified clipped update (see SSTopk).
func (p SSTopk) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	k, _, _, _, err := p.Plan(s)
	if err != nil {
		return err
	}
	c, err := p.codec(p.eps / float64(k))
	if err != nil {
		return err
	}
	m := float64(s.Participants)
	return p.estimate(s, agg, dst, c, func(int) float64 { return m })
}

// Account implements Protocol: FLAME Theorem 4's composition over 2k
// dimensions of the shuffle bound at n_p reports, without the subsampling
// credit (see SSTopk); Bound also states the nu-index privacy against the
// shuffler.
func (p SSTopk) Account(s Shape, budgets []Budget) (Privacy, error) {
	k, np, l, nu, err := p.Plan(s)
	if err != nil {
		return Privacy{}, err
	}
	d, n := s.Dim, s.Participants
	index := fmt.Sprintf("index privacy nu=%.4g with l=%d", nu, l)
	if p.nu > 0 { // also state the strongest nu Theorem 5 allows here
		strongest := p
		strongest.nu = 0
		if _, _, ls, nus, err := strongest.Plan(s); err == nil && ls != l {
			index += fmt.Sprintf(" (strongest allowed nu=%.4g with l=%d)", nus, ls)
		}
	}
	eps0 := p.eps / float64(k)
	priv, err := p.account(s, budgets, flameRelease{
		coordEps: eps0, dims: min(2*k, d), reporters: np, fallback: p.topkFallback(k, d),
		theorem: fmt.Sprintf("FLAME Theorem 4 over 2k=%d dimensions without subsampling credit, k=%d, n_p=%d; %s", 2*k, k, np, index),
		res: func(deltaC float64) (amplify.ProtocolResult, error) {
			return amplify.SSTopk(p.eps, d, k, n, np, deltaC, p.amplifier())
		},
	})
	if err != nil {
		return priv, err
	}
	if l*k < d {
		// The k·l reported coordinates always contain the k largest and
		// never some others, so the reported index set itself reveals
		// top-k membership (infinite privacy loss: with d = 5, k = 2,
		// l = 2 one input yields the set {0,1,2,3} with probability 1/3 and
		// its neighbour never does). FLAME protects the indexes only by
		// nu-index privacy (Definition 3), not by eps-LDP: the report is
		// eps_l-LDP for its VALUES given the indexes, and the local
		// statement says so instead of claiming eps_l. The central figure
		// is unaffected: the analyzer sees every dimension padded to n_p
		// and shuffled (no index set).
		inf := math.Inf(1)
		priv.LocalEpsilon = Stats{Min: inf, Median: inf, Max: inf}
		priv.LocalCoordEpsilon = Stats{Min: inf, Median: inf, Max: inf}
		priv.Bound += fmt.Sprintf("; local: values eps_l-LDP given the indexes, but the reported index set (l k = %d < d = %d) has only nu-index privacy, so the report is not eps-LDP", l*k, d)
	}
	return priv, nil
}
