package amplify

import (
	"fmt"
	"math"
	"reflect"

	"shufflefl/account"
	"shufflefl/checks"
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
	// (d for SS-Simple, 2 beta d for SS-Double).
	Compositions float64 `json:"compositions"`
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
		Compositions: float64(d),
	}
	markLegacy(&res.Bound, amp)
	return res, nil
}

// SSDouble returns the central guarantee of FLAME's SS-Double protocol
// (Theorems 3 and 4): each user samples k of d dimensions (beta = k/d) and
// randomizes each with eps_lk = epsL/k; the shuffler pads every dimension to
// np reports. With delta_cd = deltaC/(2 beta d + 1), one dimension's shuffle
// is (eps_ck, delta_cd/beta) [Theorem 3 / Eq. 5, any Amplifier in place of
// Lemma 1], subsampling (Lemma 4, account.SubsampleWOR) gives
// eps_cd = log(1 + beta (e^eps_ck - 1)) [Eq. 6], and Theorem 4 composes
//
//	eps_c = 2 beta d eps_cd ∧ (eps_cd sqrt(4 beta d log(1/delta_cd)) + 2 beta d eps_cd (e^eps_cd - 1)),
//	delta_c = delta_cd (2 beta d + 1).
//
// With subsample = false the subsampling credit is not taken
// (eps_cd = eps_ck at delta_cd), FLAME's "without the amplification from
// subsampling" figure.
func SSDouble(epsL float64, d, k, n, np int, deltaC float64, amp Amplifier, subsample bool) (ProtocolResult, error) {
	wrap := func(err error) (ProtocolResult, error) {
		return ProtocolResult{}, fmt.Errorf("SS-Double (FLAME Theorems 3-4): %w", err)
	}
	if err := checks.Epsilon("eps_l", epsL); err != nil {
		return wrap(err)
	}
	if err := checks.IntAtLeast("d", d, 1); err != nil {
		return wrap(err)
	}
	if err := checks.IntInRange("k", k, 1, d); err != nil {
		return wrap(err)
	}
	if err := checks.IntAtLeast("n", n, 2); err != nil {
		return wrap(err)
	}
	if err := checks.Delta("delta_c", deltaC); err != nil {
		return wrap(err)
	}
	beta := float64(k) / float64(d)
	if ns := beta * float64(n); float64(np) < ns {
		return wrap(checks.Invalidf("padding size np = %d must be >= the expected sampled reports per dimension beta n = %.6g", np, ns))
	}
	if err := checks.IntAtLeast("np", np, 2); err != nil {
		return wrap(err)
	}
	t := 2 * beta * float64(d)
	epsLk := epsL / float64(k)
	deltaCd := deltaC / (t + 1)
	res := ProtocolResult{EpsLocal: epsLk, DeltaDim: deltaCd, Compositions: t}
	if subsample {
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
	} else {
		eck, err := amp(epsLk, np, deltaCd)
		if err != nil {
			return wrap(err)
		}
		res.EpsShuffle, res.DeltaShuffle, res.EpsDim = eck, deltaCd, eck
	}
	res.Bound = Bound{
		Name:    "flame-ss-double",
		Epsilon: composeFLAME(res.EpsDim, deltaCd, t),
		Delta:   deltaCd * (t + 1),
		Note:    "FLAME Theorems 3-4",
	}
	if !subsample {
		res.Name = "flame-ss-double-no-subsampling"
		res.Note = "FLAME Theorem 4 without the subsampling credit of Theorem 3"
	}
	markLegacy(&res.Bound, amp)
	return res, nil
}
