package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// This file holds the FLAME framework (Liu et al., "FLAME: Differentially
// Private Federated Learning in the Shuffle Model", AAAI 2021, Algorithm 2)
// shared by SS-Simple (below), SS-Double and SS-Topk (flame_sparse.go):
//
//   - encoding: clip every coordinate to [-C, C], map it to [0, 1] by
//     (x+C)/(2C), randomize it with R_{gamma,b} (Algorithm 1) or the Laplace
//     mechanism on [0, 1];
//   - shuffling: per-coordinate permutation, padded to n_p values per
//     coordinate with blanket draws for the sparse protocols (Algorithm 3);
//   - analyzing: de-bias the per-coordinate sums (Eq. 1, generalised to
//     padding and sampling), map back z = C(2 zbar - 1);
//   - accounting: the FLAME theorems, computed by package amplify.
//
// Reading of the paper's parameters (documented once, used everywhere):
//
//   - Budget.Epsilon is eps_l, the local budget of a user's whole update in
//     one round. FLAME assumes one public eps_l for all users: the analyzer's
//     de-biasing constant gamma and the shuffler's blanket depend on it. The
//     protocols therefore take eps_l from Params.Epsilon (the engine's
//     --epsilon) and Check rejects any participant whose budget differs
//     (personalized budgets belong to APES).
//   - The MNIST evaluation has d = 7,850, n = 1,000, eps_l = 78.5,
//     eps_ld = 0.01 (SS-Simple) and eps_lk = 0.5 (SS-Double, SS-Topk), so
//     k = 157 = d/50 (beta = 1/50) — the default k. "n/n_p = 3" means
//     n_p = 333 dummies-plus-reports per dimension, a third of the users:
//     Theorem 5 then gives l = floor(333/(1000/50)) = 16 and
//     nu = 50/16 = 3.125, exactly the paper's "nu = 3.125 with l = 16", which
//     confirms beta = 1/50 (with beta = 1/10, l = 3 and nu = 3.33).
//   - delta_c (one round): the option delta-c when set (the paper's 5e-6),
//     else the round's share account.RoundDelta of the run's target
//     Params.Delta, else 0.01/n^1.1 (5.01e-6 for n = 1,000).

// Option names shared by the FLAME protocols (Params.Extra).
const (
	flameOptRandomizer = "randomizer" // 0 = R_{gamma,b}, 1 = Laplace on [0, 1]
	flameOptLevels     = "levels"     // b of R_{gamma,b}
	flameOptK          = "k"          // coordinates per user (SS-Double, SS-Topk)
	flameOptNp         = "np"         // padding size n_p per dimension
	flameOptNu         = "nu"         // requested nu-index privacy (SS-Topk)
	flameOptDeltaC     = "delta-c"    // explicit per-round delta_c
)

// flameDefaultLevels is the default b of R_{gamma,b}. When the per-coordinate
// budget is small (FLAME's eps_ld = 0.01 and eps_lk = 0.5), the report is
// mostly blanket and the variance of one de-biased report is about
// (b+1)^2(b+2)/(12 b eps^2), smallest at the smallest b R_{gamma,b} allows;
// b = 2 also gives the tightest blanket bound (it grows with e^eps + b).
const flameDefaultLevels = 2

// flameDefaultBetaInv is d/k of FLAME's evaluation (k = 157 of d = 7,850).
const flameDefaultBetaInv = 50

// flamePadFailure is the largest probability SS-Double may leave for some
// dimension to receive more than n_p real reports (Algorithm 3 then cannot
// pad); it is added to the round's central delta.
const flamePadFailure = 1e-9

// flameBase holds the settings common to the FLAME protocols.
type flameBase struct {
	name   string
	clip   float64 // C
	eps    float64 // eps_l, public
	delta  float64 // target delta of the whole run (0: 0.01/n^1.1 per round)
	rounds int     // planned rounds (the run's delta is shared among them)
	// deltaRound is the option delta-c: an explicit per-round delta_c.
	deltaRound float64
	laplace    bool // Laplace randomizer instead of R_{gamma,b}
	levels     int  // b
	secure     bool // floating-point-safe Laplace (Params.Secure)
}

// newFlameBase validates the options every FLAME protocol takes.
func newFlameBase(name string, p Params) (flameBase, error) {
	f := flameBase{name: name, clip: p.Clip, eps: p.Epsilon, delta: p.Delta, rounds: max(p.Rounds, 1), levels: flameDefaultLevels, secure: p.Secure}
	if err := checks.Positive("clip", p.Clip); err != nil {
		return f, fmt.Errorf("%s (FLAME Algorithm 2 clips to [-C, C]): %w", name, err)
	}
	if err := checks.Epsilon("epsilon (FLAME's public local budget eps_l of a whole update)", p.Epsilon); err != nil {
		return f, fmt.Errorf("%s: %w", name, err)
	}
	if p.Delta != 0 {
		if err := checks.Delta("delta (target central delta of the run)", p.Delta); err != nil {
			return f, fmt.Errorf("%s: %w", name, err)
		}
	}
	if v, ok := p.Extra[flameOptDeltaC]; ok {
		if err := checks.Delta("option delta-c (FLAME's per-round delta_c)", v); err != nil {
			return f, fmt.Errorf("%s: %w", name, err)
		}
		f.deltaRound = v
	}
	if v, ok, err := flameIntOption(p, flameOptRandomizer, 0, 1); err != nil {
		return f, fmt.Errorf("%s: %w", name, err)
	} else if ok {
		f.laplace = v == 1
	}
	if v, ok, err := flameIntOption(p, flameOptLevels, 2, 1<<20); err != nil {
		return f, fmt.Errorf("%s: %w (FLAME Algorithm 1: R_{gamma,b} needs b >= 2 levels; b = 1 is binary randomized response)", name, err)
	} else if ok {
		if f.laplace {
			return f, fmt.Errorf("%s: %w", name, checks.Invalidf("option levels applies to R_{gamma,b} (randomizer=0), not to the Laplace randomizer"))
		}
		f.levels = v
	}
	return f, nil
}

// flameIntOption reads an integer option in [lo, hi]; ok is false if absent.
func flameIntOption(p Params, name string, lo, hi int) (v int, ok bool, err error) {
	x, ok := p.Extra[name]
	if !ok {
		return 0, false, nil
	}
	if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) {
		return 0, false, checks.Invalidf("option %s must be an integer, got %v", name, x)
	}
	if x < float64(lo) || x > float64(hi) {
		return 0, false, checks.Invalidf("option %s must be in [%d, %d], got %v", name, lo, hi, x)
	}
	return int(x), true, nil
}

// checkUniform validates the shape and requires every participant's budget
// to be the protocol's public eps_l.
func (f flameBase) checkUniform(s Shape, budgets []Budget) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	for i, b := range budgets {
		if err := f.checkBudget(b); err != nil {
			return fmt.Errorf("%s: participant %d: %w", f.name, i, err)
		}
	}
	return nil
}

func (f flameBase) checkBudget(b Budget) error {
	if err := checks.Epsilon("epsilon", b.Epsilon); err != nil {
		return err
	}
	if math.Abs(b.Epsilon-f.eps) > 1e-9*f.eps {
		return checks.Invalidf("budget epsilon %v differs from the protocol's eps_l = %v: FLAME assumes one public local budget for every user "+
			"(the analyzer's de-biasing and the shuffler's blanket depend on it); use apes or ldp-laplace for personalized budgets", b.Epsilon, f.eps)
	}
	return nil
}

// deltaC is the target central delta of one round with n participants: the
// option delta-c when set (FLAME's per-round delta_c, for reproducing the
// paper), else the round's share account.RoundDelta of the run's target
// Params.Delta, else FLAME's 0.01/n^1.1.
func (f flameBase) deltaC(n int) float64 {
	if f.deltaRound > 0 {
		return f.deltaRound
	}
	if f.delta > 0 {
		return account.RoundDelta(f.delta, f.rounds)
	}
	return 0.01 / math.Pow(float64(n), 1.1)
}

// codec returns the per-coordinate randomizer for budget eps per coordinate.
func (f flameBase) codec(eps float64) (flameCodec, error) {
	if f.laplace {
		// The plain Laplace mechanism in simulation, the floating-point-safe
		// one with Params.Secure (deployment).
		newLap := mechanism.NewLaplace
		if f.secure {
			newLap = mechanism.NewSecureLaplace
		}
		lap, err := newLap(eps, 1)
		if err != nil {
			return flameCodec{}, fmt.Errorf("%s: Laplace randomizer: %w", f.name, err)
		}
		return flameCodec{laplace: true, lap: lap, scale: 1, keep: 1}, nil
	}
	rr, err := mechanism.NewRandomizedRounding(eps, f.levels)
	if err != nil {
		return flameCodec{}, fmt.Errorf("%s: R_{gamma,b}: %w", f.name, err)
	}
	return flameCodec{rr: rr, scale: float64(rr.B()), keep: 1 - rr.Gamma()}, nil
}

// amplifier is the per-dimension shuffle bound of the chosen randomizer: the
// corrected privacy-blanket Bennett bound (Balle et al. 2019, as used by
// FLAME's evaluation). R_{gamma,b} with b levels has the b+1 outputs
// {0, ..., b} and gamma = (b+1)/(e^eps + b) (see mechanism.RandomizedRounding),
// which is k-ary randomized response's blanket with k = b+1.
func (f flameBase) amplifier() amplify.Amplifier {
	if f.laplace {
		return amplify.BlanketAmplifier(amplify.Randomizer{Mech: amplify.Laplace}, amplify.Bennett)
	}
	return amplify.BlanketAmplifier(amplify.Randomizer{Mech: amplify.KRR, K: f.levels + 1}, amplify.Bennett)
}

// randomizerName names the randomizer in Bound strings.
func (f flameBase) randomizerName() string {
	if f.laplace {
		return "laplace"
	}
	return fmt.Sprintf("R_{gamma,b=%d}", f.levels)
}

// toUnit clips x to [-C, C] and returns (x+C)/(2C) in [0, 1]
// (FLAME Algorithm 2, lines 8-9).
//
// The builtins min and max have math.Min's and math.Max's semantics (a NaN
// wins, -0 is below +0) and are compiled inline; math.Max and math.Min are
// calls to assembly on amd64, which cost a quarter of SS-Simple's encoding
// at 10^6 clients.
func (f flameBase) toUnit(x float64) float64 {
	u := (max(-f.clip, min(f.clip, x)) + f.clip) / (2 * f.clip)
	return max(0, min(1, u)) // guard against rounding
}

// estimate is the analyzer of FLAME (Algorithm 2 lines 18-19, Eq. 1
// generalised). Every value v of coordinate j — a real report R(x), a user's
// blanket dummy or a shuffler's dummy — satisfies
// E[v/scale - 1/2] = keep (x - 1/2) for a real report and 0 for a dummy
// (the blanket has mean scale/2), so with
// T_j = Sum_j/scale - Count_j/2 the estimate
//
//	z_j = 2C T_j / (keep m_j)
//
// is unbiased for C(2 mean - 1) = the mean clipped update when the real
// reports of coordinate j have expected total m_j mean. m(j) supplies m_j
// (Count_j for SS-Simple, beta n for SS-Double, n for SS-Topk).
func (f flameBase) estimate(s Shape, agg *Aggregate, dst []float64, c flameCodec, m func(j int) float64) error {
	if err := checkAggregate(s, agg, dst); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	for j := range dst {
		mj := m(j)
		if mj <= 0 {
			dst[j] = 0
			continue
		}
		t := agg.Sum[j]/c.scale - float64(agg.Count[j])/2
		dst[j] = 2 * f.clip * t / (c.keep * mj)
	}
	return nil
}

// flameCodec is the per-coordinate randomizer of one round.
type flameCodec struct {
	laplace bool
	lap     mechanism.Laplace
	rr      mechanism.RandomizedRounding
	scale   float64 // b for R_{gamma,b}, 1 for Laplace
	keep    float64 // 1-gamma for R_{gamma,b}, 1 for Laplace
}

// randomize perturbs u in [0, 1]: R_{gamma,b}(u) in {0, ..., b}
// (Algorithm 1, with the blanket on {0, ..., b}, see
// mechanism.RandomizedRounding) or u + Lap(1/eps).
func (c flameCodec) randomize(r *rand.Rand, u float64) float64 {
	if c.laplace {
		return c.lap.Randomize(r, u)
	}
	return float64(c.rr.Randomize(r, u))
}

// blanket draws from the blanket distribution omega_R: Unif{0, ..., b} for
// R_{gamma,b}; for the Laplace mechanism on [0, 1] the blanket (Balle et al.
// 2019, Section 5: omega(y) = inf_x mu_x(y)/gamma with gamma = e^{-eps/2})
// is Laplace(1/2, 1/eps), the output distribution of input 1/2.
func (c flameCodec) blanket(r *rand.Rand) float64 {
	if c.laplace {
		return c.lap.Randomize(r, 0.5)
	}
	return float64(c.rr.Blanket(r))
}

// flameRelease describes one round's release of a FLAME protocol for
// flameBase.account.
type flameRelease struct {
	// coordEps is the local epsilon eps0 of one reported coordinate.
	coordEps float64
	// dims is the number of dimensions one user's change can move (d for
	// SS-Simple, k for SS-Double, 2k for SS-Topk); reporters the values in
	// one dimension's shuffle (n, n_p). Each such dimension is dominated by
	// FMT's clone pair for (coordEps, reporters).
	dims, reporters int
	// fallback is the central epsilon without any amplification (the
	// release is (fallback, 0)-DP by post-processing of the reports).
	fallback float64
	// extraDelta is SS-Double's padding-failure probability.
	extraDelta float64
	// theorem names the analysis; res evaluates it at a round delta.
	theorem string
	res     func(deltaC float64) (amplify.ProtocolResult, error)
	// components, if set, replaces the round's components; it receives
	// the round's statement without client sampling (SS-Double's random
	// allocation, see SSDouble.Account).
	components func(eps, delta float64) []account.Component
}

// account turns a FLAME statement into the round's Privacy. rel.res is
// the statement evaluated at the round's delta_c (amplify.SSSimple,
// amplify.SSDouble, amplify.SSTopk) less extraDelta, the probability of
// SS-Double's padding failing, which is charged once on top so that the
// round spends at most delta_c.
//
// Validity: if the theorem does not apply (amplify returns an error) or gives
// no amplification (eps_c >= rel.fallback), the statement falls back to the
// unamplified guarantee — (eps_l, 0)-DP per user for SS-Simple and
// SS-Double, (coordEps, 0)-DP per dimension, by post-processing — and Bound
// says so.
//
// Components: rel.dims releases, each a shuffle of rel.reporters
// coordEps-LDP values, which FMT's clone pair dominates whatever the theorem
// says (so the run's PLD accountant composes those pairs even when the
// round's own figure fell back), plus extraDelta once.
//
// Client sampling: the round's (eps_c, delta_c) is amplified by the engine's
// uniform sampling of clients at the true rate s.SampleRate() (FLAME Lemma 4,
// account.SubsampleWOR; nothing when every client is sampled) and the
// result is the round's CentralEpsilon/CentralDelta. The amplification by
// shuffling itself is computed for the s.Participants clients that really
// report, so refusals can only weaken it. Components carry no sampling
// credit.
func (f flameBase) account(s Shape, budgets []Budget, rel flameRelease) (Privacy, error) {
	if len(budgets) == 0 {
		return Privacy{}, fmt.Errorf("%s: %w", f.name, checks.Invalidf("no participant budgets to account"))
	}
	if err := f.checkUniform(s, budgets); err != nil {
		return Privacy{}, err
	}
	eps := budgetEpsilons(budgets)
	coord := make([]float64, len(eps))
	for i := range eps {
		coord[i] = rel.coordEps
	}
	priv := Privacy{
		Private:           true,
		LocalEpsilon:      Summarize(eps),
		LocalCoordEpsilon: Summarize(coord),
	}
	deltaC := f.deltaC(s.Participants)
	extraDelta := rel.extraDelta
	if extraDelta > 0 {
		// SS-Double's padding-failure probability is part of the round's
		// delta, not on top of it: the theorem gets what is left.
		if extraDelta >= deltaC/2 {
			return Privacy{}, fmt.Errorf("%s: %w", f.name, checks.Invalidf(
				"the padding-failure probability %.3g (some dimension receiving more than n_p real reports) is not below half the round's delta %.3g: raise option np or the run's --delta", extraDelta, deltaC))
		}
		deltaC -= extraDelta
	}
	shuffle := func(c account.Component) account.Component {
		if rel.reporters >= 2 {
			c.Kind, c.Eps0, c.Reporters = account.KindShuffle, rel.coordEps, rel.reporters
		}
		return c
	}
	fallback := func(why string) {
		priv.CentralEpsilon, priv.CentralDelta = rel.fallback, 0
		priv.CentralCoordEpsilon, priv.CentralCoordDelta = rel.coordEps, 0
		priv.Bound = fmt.Sprintf("%s: unamplified guarantee only (%s)", f.name, why)
		priv.Components = []account.Component{{Epsilon: rel.fallback, Count: 1}}
		if rel.reporters >= 2 {
			// Each of the dims releases is (coordEps, 0)-DP and dominated
			// by the clone pair: the accountant takes the best of their
			// compositions and the round's own figure.
			priv.Components = []account.Component{shuffle(account.Component{Epsilon: rel.coordEps, Count: rel.dims})}
		}
		if extraDelta > 0 {
			// The reports are (fallback, 0)-DP whatever the padding does;
			// no padding-failure term is needed on the unamplified figure.
			extraDelta = 0
		}
	}
	r, err := rel.res(deltaC)
	switch {
	case err != nil:
		fallback(fmt.Sprintf("%s does not apply: %v", rel.theorem, err))
	case r.Epsilon >= rel.fallback:
		fallback(fmt.Sprintf("%s gives eps_c = %.4g >= %.4g, no amplification", rel.theorem, r.Epsilon, rel.fallback))
	default:
		priv.CentralEpsilon, priv.CentralDelta = r.Epsilon, math.Min(1, r.Delta+extraDelta)
		priv.CentralCoordEpsilon, priv.CentralCoordDelta = r.EpsDim, math.Min(1, r.DeltaDim+extraDelta)
		priv.Bound = fmt.Sprintf("%s (%s; blanket bennett, %s)", r.Name, rel.theorem, f.randomizerName())
		// The round is the composition of Compositions dimension-level
		// releases; extraDelta (SS-Double's padding failure) is charged once.
		priv.Components = []account.Component{shuffle(account.Component{Epsilon: r.EpsDim, Delta: r.DeltaDim, Count: int(math.Ceil(r.Compositions))})}
		if extraDelta > 0 {
			priv.Components = append(priv.Components, account.Component{Delta: extraDelta, Count: 1})
		}
	}
	if rel.components != nil {
		if cs := rel.components(priv.CentralEpsilon, priv.CentralDelta); cs != nil {
			priv.Components = cs
		}
	}
	if q := s.SampleRate(); q < 1 {
		ce, cd, err := account.SubsampleWOR(priv.CentralEpsilon, priv.CentralDelta, q)
		if err != nil {
			return Privacy{}, fmt.Errorf("%s: client sampling: %w", f.name, err)
		}
		priv.CentralEpsilon, priv.CentralDelta = ce, cd
		priv.Bound += fmt.Sprintf(" + client sampling q=%.4g", q)
	}
	return priv, nil
}

func init() {
	Register("ss-simple", "FLAME SS-Simple: every coordinate randomized with eps_l/d (R_{gamma,b} or Laplace), per-dimension shuffling, FLAME Theorem 1", newSSSimple)
	RegisterInfo("ss-simple", Info{
		Summary: "FLAME SS-Simple: every coordinate randomized with eps_l/d, per-dimension shuffling",
		Paper:   "FLAME (Liu et al., AAAI 2021), Algorithm 2 and Theorem 1",
		Options: flameOptionInfo(),
		Budgets: "one public --epsilon (user level, eps/d per coordinate)",
	})
}

// SSSimple is FLAME's SS-Simple protocol (Liu et al. 2021, Algorithm 2 with
// Randomize = R_{eps_ld} on every coordinate, Theorem 1): each user clips its
// update to [-C, C], maps it to [0, 1] and randomizes all d coordinates with
// eps_ld = eps_l/d each (basic composition, FLAME Lemma 2); the shuffler
// permutes every dimension independently; the analyzer de-biases each
// dimension with FLAME Eq. 1 and maps back, z = C(2 zbar - 1).
//
// Options (Params.Extra):
//
//	randomizer  0 = R_{gamma,b} (FLAME Algorithm 1, default), 1 = Laplace
//	            with scale d/eps_l on [0, 1] (FLAME's experiments)
//	levels      b of R_{gamma,b}, >= 2 (default 2)
//
// Params: Clip is C, Epsilon is the public eps_l (every budget must equal
// it), Delta the target delta_c (default 0.01/n^1.1).
//
// Estimator: unbiased for the mean of the clipped updates, with variance
// 4C^2 (sum_i Var(y_ij)/b^2)/((1-gamma) n)^2 per coordinate.
//
// Accounting: FLAME Theorem 1 via amplify.SSSimple with the blanket Bennett
// bound of the chosen randomizer (R_{gamma,b}: k-ary randomized response with
// k = b+1 outputs); see flameBase.account for validity and composition.
// The round's components are its d columns as blanket columns
// (account.KindBlanket): the run's PLD accountant states the smaller of
// their blanket route (R_{gamma,b}: pld.ShuffleBlanketRR; Laplace: the
// chained one-of-one allocation) and their clone pairs.
type SSSimple struct {
	flameBase
}

func newSSSimple(p Params) (Protocol, error) {
	if err := extraKeys(p, flameOptRandomizer, flameOptLevels, flameOptDeltaC); err != nil {
		return nil, err
	}
	f, err := newFlameBase("ss-simple", p)
	if err != nil {
		return nil, err
	}
	return SSSimple{f}, nil
}

// Name implements Protocol.
func (SSSimple) Name() string { return "ss-simple" }

// Check implements Protocol: a valid shape and every budget equal to eps_l.
func (p SSSimple) Check(s Shape, budgets []Budget) error { return p.checkUniform(s, budgets) }

// Mode implements Protocol: FLAME shuffles every dimension independently.
func (SSSimple) Mode() ShuffleMode { return PerCoordinate }

// Encode implements Protocol (FLAME Algorithm 2 lines 8-10): a dense report
// of d randomized coordinates in {0, ..., b} (or [0, 1] + Laplace noise).
func (p SSSimple) Encode(r *rand.Rand, s Shape, update []float64, b Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return fmt.Errorf("ss-simple: %w", err)
	}
	if err := p.checkBudget(b); err != nil {
		return fmt.Errorf("ss-simple: %w", err)
	}
	c, err := p.codec(p.eps / float64(s.Dim))
	if err != nil {
		return err
	}
	out.Reset()
	out.Coords = nil
	for _, x := range update {
		out.Values = append(out.Values, c.randomize(r, p.toUnit(x)))
	}
	return nil
}

// Pad implements Protocol: SS-Simple has no padding (every dimension holds
// exactly the n reports).
func (SSSimple) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: FLAME Eq. 1 per dimension,
// zbar_j = ((Sum_j/b - n gamma/2)/(1-gamma))/n, then z_j = C(2 zbar_j - 1),
// written as z_j = 2C (Sum_j/b - n/2)/((1-gamma) n) with n = Count_j.
func (p SSSimple) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	c, err := p.codec(p.eps / float64(s.Dim))
	if err != nil {
		return err
	}
	return p.estimate(s, agg, dst, c, func(j int) float64 { return float64(agg.Count[j]) })
}

// Account implements Protocol: FLAME Theorem 1 (amplify.SSSimple), the
// dimension-level (eps_cd, delta_cd) and the user-level (eps_c, delta_c);
// its components are the columns as blanket components (the accountant
// composes their blanket route and their clone pairs and takes the
// smaller; clone pairs only with the floating-point-safe Laplace).
func (p SSSimple) Account(s Shape, budgets []Budget) (Privacy, error) {
	d, n := s.Dim, s.Participants
	// Each dimension shuffles the n reports of one eps_l/d-LDP randomizer
	// (the same for every user): FMT's clone pair dominates it, and the PLD
	// accountant composes that pair exactly.
	priv, err := p.account(s, budgets, flameRelease{
		coordEps: p.eps / float64(d), dims: d, reporters: n, fallback: p.eps,
		theorem: "FLAME Theorem 1",
		res: func(deltaC float64) (amplify.ProtocolResult, error) {
			return amplify.SSSimple(p.eps, d, n, deltaC, p.amplifier())
		},
	})
	if err != nil || (p.laplace && p.secure) {
		// The floating-point-safe Laplace is eps0-LDP but not the Laplace
		// density the blanket route needs: clone pairs only.
		return priv, err
	}
	// Every column is also dominated by the blanket route
	// (account.KindBlanket: for R_{gamma,b} the pair of
	// pld.ShuffleBlanketRR, proof in privacy/pld/blanket.go; for Laplace
	// the chained one-of-one allocation): the clone components become
	// blanket components, of which the PLD accountant takes the smaller of
	// the blanket and the clone routes. Epsilon and Delta are unchanged.
	levels := p.levels
	if p.laplace {
		levels = 0
	}
	for i, c := range priv.Components {
		if c.Kind == account.KindShuffle {
			c.Kind, c.Levels = account.KindBlanket, levels
			priv.Components[i] = c
		}
	}
	return priv, nil
}
