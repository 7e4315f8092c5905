package account

import (
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// KindSampledSkellam is the Component kind of one Poisson-subsampled
// (rate Q) release of an integer vector sum of Dim coordinates with L2
// sensitivity L2 plus independent symmetric Skellam noise of variance
// Variance on every coordinate (split-mix's ideal mechanism; add/remove).
//
// Dominating pair. pld.SkellamUnitGDP(Variance, SkellamTailTV/Dim)
// certifies an ideal noise Sk', within total variation Tail of the
// Skellam per coordinate, whose integer shifts v are (Mu ||v||_2)-GDP;
// with ||v||_2 <= L2 the unsampled mechanism on Sk' is a post-processing
// of the Gaussian pair N(0,1) vs N(Mu L2, 1) (a Blackwell map, built from
// the sum of the other clients and the client's own rounding coins too,
// which are the same in both neighbouring datasets). Applying the same
// map to the mixture (1-Q) N(0,1) + Q N(Mu L2, 1) gives the subsampled
// mechanism, so the pair of pld.SampledGaussian(Q, 1/(Mu L2)) dominates
// it in both directions, round after round (adaptive composition of
// post-processings). The real release is within Dim·Tail <= SkellamTailTV
// of the ideal one per application: a Statement carrying the component
// must include SkellamTailTV·Count in its TV (validated), which the
// accountant's PLD method charges (1 + e^eps) times, as RDP does
// (RDPToEpsilonTV).
//
// Epsilon and Delta must, as for every kind, be a valid (epsilon,
// delta) statement of the real release (TV included).
const KindSampledSkellam = "sampled-skellam"

// SkellamTailTV is the total variation, per application and over all
// coordinates, between the Skellam noise and the ideal noise of
// KindSampledSkellam (each coordinate gets SkellamTailTV/Dim).
const SkellamTailTV = 0x1p-100

// skellamGDPs memoises pld.SkellamUnitGDP, a deterministic function of
// its arguments (a calibration evaluates the same variances repeatedly).
var skellamGDPs = struct {
	mu sync.Mutex
	m  map[[2]float64]pld.SkellamGDP
}{m: map[[2]float64]pld.SkellamGDP{}}

// skellamPairKey identifies a dominating pair of KindSampledSkellam:
// pld.SampledGaussian(q, sigma, o) is a deterministic function of it.
type skellamPairKey struct {
	q, sigma float64
	o        pld.Options
}

// skellamPairs memoises the last pairs built (a run composes the same pair
// every round, on the same grids), oldest first. A PLD is
// immutable, so one value serves every caller.
var skellamPairs skellamPairMemo

// skellamPairMemo is the type of skellamPairs.
type skellamPairMemo struct {
	mu   sync.Mutex
	keys []skellamPairKey
	vals []*pld.PLD
}

// get returns pld.SampledGaussian(q, sigma, o), from the memo when it
// holds it.
func (m *skellamPairMemo) get(q, sigma float64, o pld.Options) (*pld.PLD, error) {
	k := skellamPairKey{q, sigma, o}
	m.mu.Lock()
	for i, ki := range m.keys {
		if ki == k {
			p := m.vals[i]
			m.mu.Unlock()
			return p, nil
		}
	}
	m.mu.Unlock()
	p, err := pld.SampledGaussian(q, sigma, o)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.keys) >= 8 {
		m.keys, m.vals = m.keys[1:], m.vals[1:]
	}
	m.keys, m.vals = append(m.keys, k), append(m.vals, p)
	return p, nil
}

// SkellamGDPFor returns pld.SkellamUnitGDP(variance, SkellamTailTV/dim),
// memoised.
func SkellamGDPFor(variance float64, dim int) (pld.SkellamGDP, error) {
	if dim < 1 {
		return pld.SkellamGDP{}, checks.Invalidf("sampled Skellam: dimension %d is not >= 1", dim)
	}
	k := [2]float64{variance, float64(dim)}
	skellamGDPs.mu.Lock()
	g, ok := skellamGDPs.m[k]
	skellamGDPs.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := pld.SkellamUnitGDP(variance, SkellamTailTV/float64(dim))
	if err != nil {
		return pld.SkellamGDP{}, err
	}
	skellamGDPs.mu.Lock()
	if len(skellamGDPs.m) > 256 {
		clear(skellamGDPs.m)
	}
	skellamGDPs.m[k] = g
	skellamGDPs.mu.Unlock()
	return g, nil
}

// SampledSkellamSigma returns the noise multiplier of the sampled
// Gaussian pair that dominates KindSampledSkellam at variance, L2
// sensitivity l2 and dimension dim: 1/(Mu·l2).
func SampledSkellamSigma(variance, l2 float64, dim int) (float64, error) {
	if !(l2 > 0) || math.IsInf(l2, 0) {
		return 0, checks.Invalidf("sampled Skellam: the L2 sensitivity must be positive and finite, got %v", l2)
	}
	g, err := SkellamGDPFor(variance, dim)
	if err != nil {
		return 0, err
	}
	return 1 / (g.Mu * l2), nil
}

func validateSkellam(c Component) string {
	if !(c.Q > 0 && c.Q <= 1) || !(c.Variance >= 1e-3 && c.Variance <= 1e15) || !(c.L2 > 0) || math.IsInf(c.L2, 0) || c.Dim < 1 {
		return fmt.Sprintf("sampled-Skellam component needs q in (0, 1], variance in [1e-3, 1e15], L2 > 0 finite and dim >= 1, got %v, %v, %v and %d", c.Q, c.Variance, c.L2, c.Dim)
	}
	return ""
}

func init() {
	registerKind(KindSampledSkellam, componentKind{
		lossBound: func(c Component) float64 {
			s, err := SampledSkellamSigma(c.Variance, c.L2, c.Dim)
			if err != nil {
				return c.Epsilon
			}
			return 1/(s*s) + 10/s
		},
		pair: func(c Component, o pld.Options) (*pld.PLD, error) {
			s, err := SampledSkellamSigma(c.Variance, c.L2, c.Dim)
			if err != nil {
				return nil, err
			}
			return skellamPairs.get(c.Q, s, o)
		},
		validate: validateSkellam,
		minTV:    func(c Component) float64 { return SkellamTailTV },
	})
}

// SampledSkellamPLDEpsilon is the epsilon at delta of rounds applications
// of KindSampledSkellam (rate q, variance, L2 sensitivity l2, dim
// coordinates) whose real releases are within tvPerRound of the ideal
// ones (SkellamTailTV included by the caller), by the run accountant's
// PLD method: PLDEpsilon of the component applied rounds times, converted
// with the hybrid TV term (pldEpsilonTV). The calibration of split-mix
// uses it, so that the run's accountant reproduces the figure.
func SampledSkellamPLDEpsilon(q, variance, l2 float64, dim, rounds int, delta, tvPerRound float64) (float64, error) {
	c := Component{Kind: KindSampledSkellam, Q: q, Variance: variance, L2: l2, Dim: dim, Count: rounds}
	if why := validateSkellam(c); why != "" {
		return 0, checks.Invalidf("%s", why)
	}
	if rounds < 1 {
		return 0, checks.Invalidf("sampled Skellam: %d rounds", rounds)
	}
	if tvPerRound < SkellamTailTV {
		return 0, checks.Invalidf("sampled Skellam: the TV term %v per round must include SkellamTailTV = %v", tvPerRound, SkellamTailTV)
	}
	return pldEpsilonTV([]Component{c}, delta, float64(rounds)*tvPerRound)
}

// pldEpsilonTV is PLDEpsilon for a composition whose real mechanism is
// within total variation tv (summed over the releases: a hybrid argument)
// of the composition of the components' pairs: if the ideal composition
// is (eps, delta')-DP the real one is (eps, delta' + (1 + e^eps) tv)-DP
// (see RDPToEpsilonTV). It returns an epsilon with delta(eps) + (1 +
// e^eps) tv <= delta by the PLD's own rigorous delta, found by raising a
// guess as RDPToEpsilonTV does; tv = 0 is PLDEpsilon.
func pldEpsilonTV(cs []Component, delta, tv float64) (float64, error) {
	if tv == 0 || len(cs) == 0 {
		return PLDEpsilon(cs, delta)
	}
	if !(tv > 0) || math.IsInf(tv, 0) {
		return math.Inf(1), checks.Invalidf("PLD with a TV term: %v is not >= 0", tv)
	}
	// A run asks the same question twice per round (the pre-release check
	// PastTarget, then Spent once the round is recorded): memoise the
	// last answers. %v prints float64s exactly (shortest round trip).
	key := fmt.Sprintf("%v|%v|%v", cs, delta, tv)
	pldTVMemo.mu.Lock()
	for i, k := range pldTVMemo.keys {
		if k == key {
			e := pldTVMemo.vals[i]
			pldTVMemo.mu.Unlock()
			return e, nil
		}
	}
	pldTVMemo.mu.Unlock()
	e, err := pldEpsilonTVCompute(cs, delta, tv)
	if err != nil {
		return e, err
	}
	pldTVMemo.mu.Lock()
	if len(pldTVMemo.keys) >= 8 {
		pldTVMemo.keys, pldTVMemo.vals = pldTVMemo.keys[1:], pldTVMemo.vals[1:]
	}
	pldTVMemo.keys, pldTVMemo.vals = append(pldTVMemo.keys, key), append(pldTVMemo.vals, e)
	pldTVMemo.mu.Unlock()
	return e, nil
}

// pldTVMemo holds pldEpsilonTV's last answers (a deterministic function
// of its arguments), oldest first.
var pldTVMemo struct {
	mu   sync.Mutex
	keys []string
	vals []float64
}

// pldEpsilonTVCompute is pldEpsilonTV without the memo.
func pldEpsilonTVCompute(cs []Component, delta, tv float64) (float64, error) {
	acc, err := pldCompose(cs)
	if err != nil {
		return math.Inf(1), err
	}
	e0, err := acc.Epsilon(delta)
	if err != nil {
		return math.Inf(1), err
	}
	guess := e0 + 1e-3
	for range 60 {
		dp := delta - (1+math.Exp(guess))*tv
		if !(dp > 0) {
			return math.Inf(1), nil
		}
		e, err := acc.Epsilon(dp)
		if err != nil {
			return math.Inf(1), err
		}
		if e <= guess {
			return e, nil
		}
		guess = e + 1e-3
	}
	return math.Inf(1), nil
}

// SampledSkellamPLDDelta is the delta at eps of SampledSkellamPLDEpsilon's
// composition: the PLD's rigorous delta of the dominating pairs plus
// (1 + e^eps) rounds·tvPerRound.
func SampledSkellamPLDDelta(q, variance, l2 float64, dim, rounds int, eps, tvPerRound float64) (float64, error) {
	c := Component{Kind: KindSampledSkellam, Q: q, Variance: variance, L2: l2, Dim: dim, Count: rounds}
	if why := validateSkellam(c); why != "" {
		return 0, checks.Invalidf("%s", why)
	}
	if rounds < 1 {
		return 0, checks.Invalidf("sampled Skellam: %d rounds", rounds)
	}
	if tvPerRound < SkellamTailTV || math.IsInf(tvPerRound, 0) {
		return 0, checks.Invalidf("sampled Skellam: the TV term %v per round must include SkellamTailTV = %v", tvPerRound, SkellamTailTV)
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return 0, checks.Invalidf("sampled Skellam: epsilon %v is not finite and >= 0", eps)
	}
	acc, err := pldCompose([]Component{c})
	if err != nil {
		return 0, err
	}
	return math.Min(1, acc.Delta(eps)+(1+math.Exp(eps))*float64(rounds)*tvPerRound), nil
}
