package amplify

import (
	"fmt"
	"math"
	"reflect"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// Amplifier is a uniform shuffle bound: the central epsilon of shuffling n
// eps0-LDP reports at the given delta.
type Amplifier func(eps0 float64, n int, delta float64) (float64, error)

// BlanketAmplifier returns the numerical privacy-blanket bound for r and v as
// an Amplifier (no amplification yields eps0). With v = BennettLegacyFLAME
// the amplifier is recognised by SSSimple and SSDouble, whose results are
// then marked Approximation (the legacy code understates delta).
func BlanketAmplifier(r Randomizer, v BlanketVariant) Amplifier {
	if v == BennettLegacyFLAME {
		return legacyAmplifier{r}.eps
	}
	return func(eps0 float64, n int, delta float64) (float64, error) {
		e, _, err := BlanketEpsilon(r, v, eps0, n, delta)
		return e, err
	}
}

// legacyAmplifier is the BennettLegacyFLAME blanket bound. Its method value
// has one code pointer for every receiver, which is how IsLegacyAmplifier
// recognises it.
type legacyAmplifier struct{ r Randomizer }

func (l legacyAmplifier) eps(eps0 float64, n int, delta float64) (float64, error) {
	e, _, err := BlanketEpsilon(l.r, BennettLegacyFLAME, eps0, n, delta)
	return e, err
}

var legacyAmplifierPC = reflect.ValueOf(legacyAmplifier{}.eps).Pointer()

// IsLegacyAmplifier reports whether amp is the flawed BennettLegacyFLAME
// amplifier returned by BlanketAmplifier (results computed with it are not
// upper bounds). An Amplifier that wraps it in another function is not
// recognised; such callers must mark their results themselves.
func IsLegacyAmplifier(amp Amplifier) bool {
	return amp != nil && reflect.ValueOf(amp).Pointer() == legacyAmplifierPC
}

// legacyNote is appended to the Note of protocol results computed with the
// legacy amplifier.
const legacyNote = "computed with the FLAWED legacy pre-July-2020 Bennett code, which understates delta: not an upper bound"

// markLegacy flags a protocol result computed with the legacy amplifier.
func markLegacy(b *Bound, amp Amplifier) {
	if IsLegacyAmplifier(amp) {
		b.Approximation = true
		b.Note += "; " + legacyNote
	}
}

// ClonesAmplifier is the numerical clones bound (ClonesNumerical) as an
// Amplifier; it holds for every eps0-LDP randomizer.
func ClonesAmplifier() Amplifier { return ClonesNumerical }

// ProtocolResult is the central guarantee of a FLAME protocol together with
// the intermediate quantities of its theorem.
type ProtocolResult struct {
	Bound
	// EpsLocal is the per-dimension local epsilon (eps_ld or eps_lk).
	EpsLocal float64 `json:"eps_local"`
	// EpsShuffle, DeltaShuffle: the amplified guarantee of one dimension's
	// shuffle (eps_cd for SS-Simple, eps_ck for SS-Double).
	EpsShuffle   float64 `json:"eps_shuffle"`
	DeltaShuffle float64 `json:"delta_shuffle"`
	// EpsDim, DeltaDim: one dimension after subsampling (eps_cd, delta_cd).
	EpsDim   float64 `json:"eps_dim"`
	DeltaDim float64 `json:"delta_dim"`
	// Compositions is the number of composed dimension-level guarantees
	// (d for SS-Simple, k for SS-Double, 2k for SS-Topk; 2 beta d for
	// FLAME's own SS-Double theorem).
	Compositions float64 `json:"compositions"`
	// Reporters is the number of values in one dimension's shuffle (n for
	// SS-Simple, n_p for SS-Double and SS-Topk): with EpsLocal it names the
	// clone pair of Feldman, McMillan and Talwar that dominates one
	// dimension's release, which a PLD accountant may compose Compositions
	// times instead of the (EpsDim, DeltaDim) figures. 0 when no such pair
	// is claimed (FLAME's SS-Double theorem, whose per-dimension figure
	// includes the subsampling credit).
	Reporters int `json:"reporters,omitempty"`
}

// composeFLAME returns min(t eps, eps sqrt(2 t log(1/deltaDim)) + t eps (e^eps - 1)),
// the composition of FLAME Theorems 1 and 4 (t need not be an integer for
// Theorem 4, where t = 2 beta d).
//
// When the advanced form overflows (e^eps beyond float64, e.g. eps_l = 1000
// spread over few dimensions) or is otherwise not a finite number, the
// finite basic composition is returned instead of failing.
func composeFLAME(eps, deltaDim, t float64) float64 {
	basic := t * eps
	adv := eps*math.Sqrt(2*t*math.Log(1/deltaDim)) + t*eps*math.Expm1(eps)
	if math.IsNaN(adv) || math.IsInf(adv, 0) || !(adv < basic) {
		return basic
	}
	return adv
}

// SSSimple returns the central guarantee of FLAME's SS-Simple protocol
// (Theorem 1): each of d dimensions is randomized with eps_ld = epsL/d and
// shuffled among n reports; the per-dimension shuffle gives
// (eps_cd, delta_cd) with delta_cd = deltaC/(d+1), and
//
//	eps_c = d eps_cd ∧ (eps_cd sqrt(2 d log(1/delta_cd)) + d eps_cd (e^eps_cd - 1)),
//	delta_c = delta_cd (d + 1).
func SSSimple(epsL float64, d, n int, deltaC float64, amp Amplifier) (ProtocolResult, error) {
	if err := checks.Epsilon("eps_l", epsL); err != nil {
		return ProtocolResult{}, fmt.Errorf("SS-Simple (FLAME Theorem 1): %w", err)
	}
	if err := checks.IntAtLeast("d", d, 1); err != nil {
		return ProtocolResult{}, fmt.Errorf("SS-Simple (FLAME Theorem 1): %w", err)
	}
	if err := checks.Delta("delta_c", deltaC); err != nil {
		return ProtocolResult{}, fmt.Errorf("SS-Simple (FLAME Theorem 1): %w", err)
	}
	epsLd := epsL / float64(d)
	deltaCd := deltaC / float64(d+1)
	ecd, err := amp(epsLd, n, deltaCd)
	if err != nil {
		return ProtocolResult{}, fmt.Errorf("SS-Simple (FLAME Theorem 1): %w", err)
	}
	ec := composeFLAME(ecd, deltaCd, float64(d))
	res := ProtocolResult{
		Bound:    Bound{Name: "flame-ss-simple", Epsilon: ec, Delta: deltaCd * float64(d+1), Note: "FLAME Theorem 1"},
		EpsLocal: epsLd, EpsShuffle: ecd, DeltaShuffle: deltaCd, EpsDim: ecd, DeltaDim: deltaCd,
		Compositions: float64(d), Reporters: n,
	}
	markLegacy(&res.Bound, amp)
	return res, nil
}

// SSDouble returns a proven central guarantee of FLAME's SS-Double protocol
// (Algorithm 3): each user samples k of d dimensions uniformly (the set is
// independent of the data) and randomizes each with eps_lk = epsL/k; the
// shuffler pads every dimension to np values with dummies drawn from the
// randomizer's blanket and permutes every dimension on its own.
//
// The argument (substitution relation; user 1 holds x or x'). Condition on
// every user's sampled set and on the other users' inputs. Dimensions
// outside user 1's set S (|S| = k) then have the same distribution under x
// and x'. In a dimension j in S the analyzer sees np values: user 1's
// eps_lk-LDP report and np - 1 others, each another user's report or a dummy.
// A dummy is the blanket, the report of a fixed input (Laplace: input 1/2;
// R_{gamma,b}: Unif{0..b}, which dominates e^-eps_lk times every report), so
// Feldman, McMillan and Talwar's clone reduction applies and one dimension
// is dominated by their clone pair for (eps_lk, np); amp(eps_lk, np, .) is
// any valid bound for it. The k dimensions are independent given the sets,
// so the conditional release is dominated by the k-fold composition; and by
// joint convexity of the hockey-stick divergence the mixture over the sets
// (which the analyzer does not see) is dominated by the same composition.
// With delta_cd = deltaC/(k+1),
//
//	eps_c = k eps_cd ∧ (eps_cd sqrt(2 k log(1/delta_cd)) + k eps_cd (e^eps_cd - 1)),
//	delta_c = delta_cd (k + 1),    eps_cd = amp(eps_lk, np, delta_cd),
//
// and a PLD accountant may instead compose the clone pair k times exactly.
// No sampling credit is taken: see SSDoubleFLAME for why FLAME's is wrong.
// The random choice of k of d (a random allocation, Feldman and Shenfeld
// 2025) does amplify further, but no bound for it is implemented here.
//
// Padding must succeed (np >= the real reports of every dimension); the
// caller charges the failure probability to delta (protocol.SSDouble).
func SSDouble(epsL float64, d, k, n, np int, deltaC float64, amp Amplifier) (ProtocolResult, error) {
	res, err := sparseFLAME("SS-Double", epsL, d, k, n, np, deltaC, amp, k)
	if err != nil {
		return res, err
	}
	res.Name = "ss-double-sound"
	res.Note = fmt.Sprintf("k = %d per-dimension shuffles of n_p = %d values composed, no subsampling credit (joint convexity over the sampled set); FLAME Theorems 3-4 count the sampling twice", k, np)
	markLegacy(&res.Bound, amp)
	return res, nil
}

// SSTopk returns the central guarantee of FLAME's SS-Topk protocol
// (Algorithm 4 with the padding of Algorithm 3, np >= n): FLAME Theorem 4's
// composition over 2k dimension-level releases without subsampling credit.
//
// Why 2k, and why it holds although the reported indexes depend on the
// data: the shuffler pads every dimension to np values with blanket draws,
// and a user's k(l-1) non-top slots carry blanket draws too. So in every
// dimension j the analyzer sees np values of which user 1 contributes
// exactly one "slot's worth": its report R(x_j) if j is in its top-k, and
// otherwise a blanket draw (its own dummy slot or the shuffler's padding,
// which fills the place user 1 left empty). The release is a function of
// per-dimension multisets whose only user-1-dependent element is that value,
// so changing x to x' changes the distribution only in the dimensions of
// Top_k(x) ∪ Top_k(x'), at most 2k of them, and in each the two candidate
// values (a report or the blanket) are eps_lk-LDP related, with the np - 1
// other values reports or blanket draws: the clone reduction applies per
// dimension as in SSDouble, and the at most 2k affected dimensions compose.
// With delta_cd = deltaC/(2k+1) the statement is Theorem 4's with t = 2k.
func SSTopk(epsL float64, d, k, n, np int, deltaC float64, amp Amplifier) (ProtocolResult, error) {
	res, err := sparseFLAME("SS-Topk", epsL, d, k, n, np, deltaC, amp, 2*k)
	if err != nil {
		return res, err
	}
	res.Name = "flame-ss-topk"
	res.Note = fmt.Sprintf("FLAME Theorem 4 over 2k = %d dimensions without subsampling credit (at most 2k dimensions change, every dimension padded to n_p = %d)", 2*k, np)
	markLegacy(&res.Bound, amp)
	return res, nil
}

// sparseFLAME validates the sparse protocols' parameters and composes t
// per-dimension shuffles of np values of eps_lk = epsL/k reports.
func sparseFLAME(name string, epsL float64, d, k, n, np int, deltaC float64, amp Amplifier, t int) (ProtocolResult, error) {
	wrap := func(err error) (ProtocolResult, error) {
		return ProtocolResult{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkSparse(epsL, d, k, n, np, deltaC); err != nil {
		return wrap(err)
	}
	epsLk := epsL / float64(k)
	tf := float64(t)
	deltaCd := deltaC / (tf + 1)
	ecd, err := amp(epsLk, np, deltaCd)
	if err != nil {
		return wrap(err)
	}
	return ProtocolResult{
		Bound:    Bound{Epsilon: composeFLAME(ecd, deltaCd, tf), Delta: deltaCd * (tf + 1)},
		EpsLocal: epsLk, EpsShuffle: ecd, DeltaShuffle: deltaCd, EpsDim: ecd, DeltaDim: deltaCd,
		Compositions: tf, Reporters: np,
	}, nil
}

// checkSparse validates SS-Double's and SS-Topk's parameters.
func checkSparse(epsL float64, d, k, n, np int, deltaC float64) error {
	if err := checks.Epsilon("eps_l", epsL); err != nil {
		return err
	}
	if err := checks.IntAtLeast("d", d, 1); err != nil {
		return err
	}
	if err := checks.IntInRange("k", k, 1, d); err != nil {
		return err
	}
	if err := checks.IntAtLeast("n", n, 2); err != nil {
		return err
	}
	if err := checks.Delta("delta_c", deltaC); err != nil {
		return err
	}
	beta := float64(k) / float64(d)
	if ns := beta * float64(n); float64(np) < ns {
		return checks.Invalidf("padding size np = %d must be >= the expected sampled reports per dimension beta n = %.6g", np, ns)
	}
	return checks.IntAtLeast("np", np, 2)
}

// notRigorousFLAME is the Note suffix of SSDoubleFLAME's figures.
const notRigorousFLAME = "NOT RIGOROUS: FLAME Theorems 3-4 take the subsampling credit on each of 2 beta d dimension-level releases, counting the k-of-d sampling twice; the count statistic refutes it (amplify.FLAMECountLowerBound)"

// SSDoubleFLAME returns FLAME's published SS-Double figure (Theorems 3 and
// 4), which is NOT an upper bound and is always marked Approximation: each
// user samples k of d dimensions (beta = k/d) and randomizes each with
// eps_lk = epsL/k; the shuffler pads every dimension to np reports. With
// delta_cd = deltaC/(2 beta d + 1), one dimension's shuffle is
// (eps_ck, delta_cd/beta) [Theorem 3 / Eq. 5, any Amplifier in place of
// Lemma 1], subsampling (Lemma 4, account.SubsampleWOR) gives
// eps_cd = log(1 + beta (e^eps_ck - 1)) [Eq. 6], and Theorem 4 composes
//
//	eps_c = 2 beta d eps_cd ∧ (eps_cd sqrt(4 beta d log(1/delta_cd)) + 2 beta d eps_cd (e^eps_cd - 1)),
//	delta_c = delta_cd (2 beta d + 1).
//
// The flaw: the credit log(1 + beta(e^eps - 1)) is the amplification of a
// release in which the user takes part with probability beta, and it is
// taken on every one of the d dimensions — but then all d dimensions must be
// composed, not 2 beta d; composing only the 2k dimensions a user can touch
// is already the sampling's whole benefit. A count of the released values
// above a threshold refutes it: `bound flame-double --eps-l 2 --d 10000
// --k 1 --n 2 --np 2 --delta 1e-6 --flame-theorem` gives 0.00128, and the
// count statistic alone forces eps >= 0.030 (TestSSDoubleFLAMERefuted).
//
// With subsample = false the subsampling credit is not taken
// (eps_cd = eps_ck at delta_cd over 2 beta d = 2k releases), FLAME's
// "without the amplification from subsampling" figure; that one is an upper
// bound (it composes more releases than SSDouble) and is not marked.
func SSDoubleFLAME(epsL float64, d, k, n, np int, deltaC float64, amp Amplifier, subsample bool) (ProtocolResult, error) {
	wrap := func(err error) (ProtocolResult, error) {
		return ProtocolResult{}, fmt.Errorf("SS-Double (FLAME Theorems 3-4): %w", err)
	}
	if !subsample {
		res, err := sparseFLAME("SS-Double (FLAME Theorem 4)", epsL, d, k, n, np, deltaC, amp, 2*k)
		if err != nil {
			return res, err
		}
		res.Name = "flame-ss-double-no-subsampling"
		res.Note = "FLAME Theorem 4 without the subsampling credit of Theorem 3"
		markLegacy(&res.Bound, amp)
		return res, nil
	}
	if err := checkSparse(epsL, d, k, n, np, deltaC); err != nil {
		return wrap(err)
	}
	beta := float64(k) / float64(d)
	t := 2 * beta * float64(d)
	epsLk := epsL / float64(k)
	deltaCd := deltaC / (t + 1)
	res := ProtocolResult{EpsLocal: epsLk, DeltaDim: deltaCd, Compositions: t}
	deltaCk := deltaCd / beta
	if deltaCk >= 1 {
		return wrap(checks.Invalidf("Theorem 3 needs delta_cd < beta, got delta_cd = %v, beta = %v", deltaCd, beta))
	}
	eck, err := amp(epsLk, np, deltaCk)
	if err != nil {
		return wrap(err)
	}
	ecd, dcd, err := account.SubsampleWOR(eck, deltaCk, beta)
	if err != nil {
		return wrap(err)
	}
	res.EpsShuffle, res.DeltaShuffle, res.EpsDim, res.DeltaDim = eck, deltaCk, ecd, dcd
	res.Bound = Bound{
		Name:          "flame-ss-double-theorem",
		Epsilon:       composeFLAME(res.EpsDim, deltaCd, t),
		Delta:         deltaCd * (t + 1),
		Approximation: true,
		Note:          "FLAME Theorems 3-4; " + notRigorousFLAME,
	}
	markLegacy(&res.Bound, amp)
	return res, nil
}
