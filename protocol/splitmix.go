package protocol

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// Options of split-mix (Params.Extra).
const (
	smOptSlots    = "slots"
	smOptCollude  = "collude"
	smOptShares   = "shares"
	smOptBits     = "bits"
	smOptScale    = "scale"
	smOptFast     = "fast"
	smOptSigma    = "sigma-bits"
	smOptVoidBits = "void-bits"
	smOptRotate   = "rotate"
)

// MultiValued is implemented by per-coordinate protocols whose reports
// carry several values for the same coordinate (split-mix's shares); the
// shuffler accepts up to ValuesPerCoordinate values of a coordinate from
// one sender (one otherwise), and the aggregate sums them.
type MultiValued interface {
	ValuesPerCoordinate() int
}

// Defaults of split-mix.
const (
	smDefaultBits     = 32
	smDefaultScale    = 4096
	smDefaultSigma    = 40
	smDefaultVoidBits = 40
	// smMinHonest is the smallest number of honest parties the
	// split-and-mix theorem covers (account.SplitMixSecurityBits).
	smMinHonest = 19
	// smExact is 2^53: every partial sum of the shares of a coordinate must
	// stay below it for the float64 aggregate to be exact.
	smExact = 1 << 53
	// smNormSlack covers the rounding of clipL2 (a clipped norm may exceed
	// C by a few ulps).
	smNormSlack = 1 + 1e-9
	// smRotateStream is the PCG stream of the public per-round rotation
	// signs (the round number is the PCG seed).
	smRotateStream = 0x5eed5a17
)

func init() {
	Register("split-mix", "distributed Skellam noise, split-and-mix shares through the shuffler: central-DP accuracy with an untrusted analyzer", newSplitMix)
	RegisterInfo("split-mix", Info{
		Summary: "central-DP accuracy without a trusted analyzer: L2 clip, scaled randomized rounding, distributed Skellam noise, IKOS split-and-mix shares mod q through the shuffler, padded to a fixed number of slots",
		Paper:   "Skellam mechanism (Agarwal, Kairouz, Liu, NeurIPS 2021, Thm 3.5), Poisson subsampling for symmetric noise (account.PoissonSubsampledShiftRDP); split-and-mix (Ishai et al. FOCS 2006; Balle, Bell, Gascon, Nissim 2019/CCS 2020); docs/SPLITMIX.md",
		Budgets: "none: --target-epsilon (with --delta) calibrates the central Skellam noise over the planned rounds, as for dp-central",
		Options: []OptionSpec{
			{Name: smOptSlots, Default: "the smallest K with P[Bin(N, q) > K] <= 2^-void-bits",
				Meaning: "K, the number of reporter slots per round: the shuffler pads the round to K reporters with dummies that carry a noise share and a zero update; a round with more than K reporters is void",
				Range:   "integer >= collude + 19"},
			{Name: smOptCollude, Default: "0",
				Meaning: "t, the number of clients that may collude with the analyzer (their noise shares are not counted: each slot adds variance mu/(K - t))",
				Range:   "integer in [0, K - 19]"},
			{Name: smOptShares, Default: "the smallest m meeting sigma-bits by the split-and-mix theorem",
				Meaning: "m, the number of additive shares mod q of every coordinate",
				Range:   "integer >= 4"},
			{Name: smOptBits, Default: fmt.Sprint(smDefaultBits),
				Meaning: "log2 q, the modulus of the shares",
				Range:   "integer in [8, 48], with K·m·q < 2^53"},
			{Name: smOptScale, Default: fmt.Sprint(smDefaultScale),
				Meaning: "gamma·C, the integer scale of a clipped update's L2 norm (gamma = scale/C)",
				Range:   "[1, 2^30]"},
			{Name: smOptFast, Default: "0",
				Meaning: "1 = fast path: a client (and a dummy) reports its noisy vector mod q once per coordinate instead of m shares; the released sum is bit-identical; simulation only",
				Range:   "0 or 1"},
			{Name: smOptSigma, Default: fmt.Sprint(smDefaultSigma),
				Meaning: "the round's split-and-mix security target: the shuffled shares of all d coordinates are within 2^-sigma-bits of a function of the noisy sum",
				Range:   "[8, 128]"},
			{Name: smOptVoidBits, Default: fmt.Sprint(smDefaultVoidBits),
				Meaning: "the void probability budget P[more than K reporters] <= 2^-void-bits used to size K and charged to delta",
				Range:   "[8, 128]"},
			{Name: smOptRotate, Default: "0",
				Meaning: "1 = rotate the clipped update by a public per-round randomized Hadamard transform (mechanism.Rotation, orthogonal on R^d) before rounding; the analyzer inverts it after decoding; the statement is unchanged",
				Range:   "0 or 1"},
		},
	})
}

// SplitMix is protocol split-mix: central-DP accuracy with an untrusted
// analyzer, from distributed discrete noise and the split-and-mix protocol
// of Ishai, Kushilevitz, Ostrovsky and Sahai (FOCS 2006) through the
// shuffler.
//
// Client (Encode): clip the update to L2 norm C (as dp-central), scale by
// gamma = scale/C and round every coordinate to an integer by unbiased
// randomized rounding, add a Skellam noise share of variance mu/(K - t) per
// coordinate, reduce mod q and split every coordinate into m uniformly
// random additive shares mod q, each a separate message labelled only by
// its coordinate (per-coordinate shuffling). The fast path (option fast=1)
// reports the noisy vector mod q once per coordinate instead: the sum mod q
// is the same integer, so the analyzer's output is bit-identical.
//
// Shuffler (Pad): the round is padded to K reporter slots: K - n dummy
// reporters, each a Skellam noise share of the same variance and a zero
// update, split the same way. The analyzer sees K·m shares per coordinate
// whatever the number n of reporters, and the central noise is the sum of K
// shares. If n > K (probability at most 2^-void-bits under Poisson
// sampling) the shuffler adds nothing and the analyzer voids the round.
//
// Analyzer (Estimate): sum each coordinate's shares mod q, map to the
// signed range (-q/2, q/2], divide by gamma and by the expected number of
// reporters qN (dp-central's fixed denominator).
//
// Statement (Account): the ideal mechanism releases the Poisson-sampled sum
// of the rounded updates plus Skellam noise of variance at least mu on
// every coordinate (the K - t honest slots); its Rényi DP is the Skellam
// bound of Agarwal, Kairouz and Liu (2021) at the worst-case sensitivities
// of a rounded update, L2 <= gamma C + sqrt(d) and L1 <= sqrt(d) gamma C +
// d (rounding moves every coordinate by less than 1; no failure
// probability), Poisson-subsampled by the binomial expansion, which bounds
// both the add and the remove direction for symmetric noise
// (account.PoissonSubsampledShiftRDP; add/remove-one).
// The real view (the shuffled shares, or a void round) is within total
// variation distance TV = P[n > K] + d·2^-s of a function of the ideal
// release, s the split-and-mix security of K - t honest parties
// (account.SplitMixSecurityBits); the run's accountant converts with
// account.RDPToEpsilonTV, charging (1 + e^eps)·(sum of TV) to delta.
//
// PLD route: the round also carries an account.KindSampledSkellam
// component, whose pair (a sampled Gaussian of noise multiplier
// 1/(Mu·L2), Mu the certified unit-shift GDP parameter of the Skellam
// noise, pld.SkellamUnitGDP) dominates an ideal mechanism within
// account.SkellamTailTV of this one; the round's TV includes that term,
// and the accountant's PLD method charges (1 + e^eps)·(sum of TV) the same
// way. The noise is calibrated to the tighter of the two routes
// (calibrate), each the figure the run's accountant computes.
//
// Trust: an honest shuffler (it permutes, pads with honest dummies and does
// not collude with the analyzer); an analyzer that may collude with up to t
// clients, whose noise shares then do not count. Colluding clients are
// honest-but-curious for accuracy (a malicious client can corrupt the sum,
// not learn more).
type SplitMix struct {
	clip, eps, delta, rate float64
	rounds, dim, pop       int
	slots, collude, shares int
	bits                   int
	mod                    int64
	scale, gamma           float64
	fast, rotate           bool
	sigmaBits, voidBits    float64
	variance, slotVar      float64                 // mu (honest total) and mu/(K - t)
	exact                  *mechanism.SkellamExact // Params.Secure: the integer-only sampler
	l1, l2                 float64
	pldRoute               bool // the calibration's figure is the PLD route's
	curve                  []float64
}

func intOption(p Params, name string, def, lo, hi int) (int, error) {
	v, ok := p.Extra[name]
	if !ok {
		return def, nil
	}
	if v != math.Floor(v) || v < float64(lo) || v > float64(hi) {
		return 0, checks.Invalidf("option %s must be an integer in [%d, %d], got %v", name, lo, hi, v)
	}
	return int(v), nil
}

func floatOption(p Params, name string, def, lo, hi float64) (float64, error) {
	v, ok := p.Extra[name]
	if !ok {
		return def, nil
	}
	if !(v >= lo && v <= hi) {
		return 0, checks.Invalidf("option %s must be in [%v, %v], got %v", name, lo, hi, v)
	}
	return v, nil
}

func newSplitMix(p Params) (Protocol, error) {
	if err := extraKeys(p, smOptSlots, smOptCollude, smOptShares, smOptBits, smOptScale, smOptFast, smOptSigma, smOptVoidBits, smOptRotate); err != nil {
		return nil, err
	}
	if err := checkCentralParams(p, "target epsilon"); err != nil {
		return nil, err
	}
	sm := SplitMix{clip: p.Clip, eps: p.Epsilon, delta: p.Delta, rate: p.SampleRate, rounds: p.Rounds, pop: p.Population}
	for _, l := range p.Layers {
		sm.dim += l
	}
	if sm.dim < 1 {
		return nil, checks.Invalidf("split-mix needs the model dimension (Params.Layers) to choose its number of shares")
	}
	var err error
	if sm.sigmaBits, err = floatOption(p, smOptSigma, smDefaultSigma, 8, 128); err != nil {
		return nil, err
	}
	if sm.voidBits, err = floatOption(p, smOptVoidBits, smDefaultVoidBits, 8, 128); err != nil {
		return nil, err
	}
	if sm.bits, err = intOption(p, smOptBits, smDefaultBits, 8, 48); err != nil {
		return nil, err
	}
	sm.mod = int64(1) << sm.bits
	if sm.scale, err = floatOption(p, smOptScale, smDefaultScale, 1, 1<<30); err != nil {
		return nil, err
	}
	sm.gamma = sm.scale / sm.clip
	fast, err := intOption(p, smOptFast, 0, 0, 1)
	if err != nil {
		return nil, err
	}
	sm.fast = fast == 1
	rotate, err := intOption(p, smOptRotate, 0, 0, 1)
	if err != nil {
		return nil, err
	}
	sm.rotate = rotate == 1
	if sm.collude, err = intOption(p, smOptCollude, 0, 0, 1<<30); err != nil {
		return nil, err
	}
	voidBudget := math.Exp2(-sm.voidBits)
	if _, ok := p.Extra[smOptSlots]; ok {
		if sm.slots, err = intOption(p, smOptSlots, 0, 1, 1<<24); err != nil {
			return nil, err
		}
	} else {
		if sm.pop < 1 {
			return nil, checks.Invalidf("split-mix: set option slots (the population is unknown, so the padding cannot be sized)")
		}
		sm.slots = smallestSlots(sm.pop, sm.rate, voidBudget)
	}
	if sm.slots-sm.collude < smMinHonest {
		return nil, checks.Invalidf("split-mix: %d slots with %d colluding clients leave %d honest parties; the split-and-mix theorem needs at least %d", sm.slots, sm.collude, sm.slots-sm.collude, smMinHonest)
	}
	if sm.pop > 0 {
		if b := account.BinomialUpperTail(sm.pop, sm.rate, sm.slots); b > voidBudget {
			return nil, checks.Invalidf("split-mix: P[more than %d of %d clients sampled at rate %v] = %.3g exceeds 2^-%v: raise slots", sm.slots, sm.pop, sm.rate, b, sm.voidBits)
		}
	}
	honest := sm.slots - sm.collude
	q := float64(sm.mod)
	// Per-coordinate security: d coordinates at 2^-s each stay within
	// 2^-sigmaBits in all.
	needBits := sm.sigmaBits + math.Log2(float64(sm.dim))
	if _, ok := p.Extra[smOptShares]; ok {
		if sm.shares, err = intOption(p, smOptShares, 0, 4, 1<<16); err != nil {
			return nil, err
		}
		if got := account.SplitMixSecurityBits(honest, sm.shares, q); got < needBits {
			return nil, checks.Invalidf("split-mix: %d shares give %.1f bits of split-and-mix security per coordinate with %d honest parties and q = 2^%d; %d coordinates at 2^-%v in all need %.1f", sm.shares, got, honest, sm.bits, sm.dim, sm.sigmaBits, needBits)
		}
	} else if sm.shares, err = account.SplitMixMessages(honest, q, needBits); err != nil {
		return nil, fmt.Errorf("split-mix: %w", err)
	}
	if float64(sm.slots)*float64(sm.shares)*q >= smExact {
		return nil, checks.Invalidf("split-mix: K·m·q = %d·%d·2^%d reaches 2^53, where the float64 sums of the shares stop being exact: lower bits", sm.slots, sm.shares, sm.bits)
	}
	d := float64(sm.dim)
	sm.l2 = sm.scale*smNormSlack + math.Sqrt(d)
	sm.l1 = math.Sqrt(d)*sm.scale*smNormSlack + d
	if err := sm.calibrate(); err != nil {
		return nil, err
	}
	if p.Secure {
		if sm.exact, err = exactShare(sm.slotVar); err != nil {
			return nil, err
		}
	}
	return sm, nil
}

// exactShare returns the integer-only Skellam sampler of a slot's noise
// share for Params.Secure. Its variance is the float64 just above
// slotVar, taken exactly as a rational: slotVar is the rounded quotient
// mu/(K - t), so the K - t honest shares add up to at least mu, the
// variance the accountant assumes.
func exactShare(slotVar float64) (*mechanism.SkellamExact, error) {
	num, den, err := mechanism.DyadicRational(math.Nextafter(slotVar, math.Inf(1)))
	if err != nil {
		return nil, fmt.Errorf("split-mix: the exact noise share of variance %v: %w", slotVar, err)
	}
	s, err := mechanism.NewSkellamExact(num, den)
	if err != nil {
		return nil, fmt.Errorf("split-mix: the exact noise share of variance %v: %w", slotVar, err)
	}
	return s, nil
}

// skellam draws one slot's noise share: the integer-only exact sampler
// with Params.Secure, the floating-point Skellam otherwise.
func (sm SplitMix) skellam(r *rand.Rand) int64 {
	if sm.exact != nil {
		return sm.exact.Sample(r)
	}
	return mechanism.Skellam(r, sm.slotVar)
}

// smallestSlots returns the smallest K with P[Bin(n, q) > K] <= budget.
func smallestSlots(n int, q, budget float64) int {
	k := int(math.Ceil(float64(n) * q))
	for k < n && account.BinomialUpperTail(n, q, k) > budget {
		k++
	}
	return k
}

// tvBudget is the per-round total variation term the calibration assumes;
// Check makes sure the real one (Account) is never larger. It includes the
// Skellam tail term of the PLD route (account.SkellamTailTV, 2^-100),
// which the RDP route does not need and carries anyway (one TV per
// statement).
func (sm SplitMix) tvBudget() float64 {
	return math.Exp2(-sm.sigmaBits) + math.Exp2(-sm.voidBits) + account.SkellamTailTV
}

// honestVar is the Skellam variance the PLD route credits at calibrated
// variance v: the K - t honest float64 shares v/(K - t) add up to v up to
// a few ulps, and 1e-12 less covers them.
func honestVar(v float64) float64 { return v * (1 - 1e-12) }

// pldEpsilon is the epsilon of the planned rounds at variance v by the run
// accountant's PLD method (account.SampledSkellamPLDEpsilon).
func (sm SplitMix) pldEpsilon(v float64) (float64, error) {
	return account.SampledSkellamPLDEpsilon(sm.rate, honestVar(v), sm.l2, sm.dim, sm.rounds, sm.delta, sm.tvBudget())
}

// runEpsilon is the epsilon of the planned rounds at variance v, by the
// run accountant's RDP method (account.RDPToEpsilonTV).
func (sm SplitMix) runEpsilon(v float64) (float64, []float64, error) {
	orders := account.DefaultRDPOrders()
	curve, err := account.SampledSkellamRDP(sm.rate, v, sm.l1, sm.l2, orders)
	if err != nil {
		return 0, nil, err
	}
	total := make([]float64, len(curve))
	for i, c := range curve {
		total[i] = float64(sm.rounds) * c
	}
	e, _, err := account.RDPToEpsilonTV(orders, total, sm.delta, float64(sm.rounds)*sm.tvBudget())
	return e, curve, err
}

// calibrate sets the smallest variance mu (to a relative 1e-4) whose
// planned rounds spend at most the target epsilon, by the tighter of the
// run accountant's RDP method (runEpsilon) and its PLD method
// (pldEpsilon); either figure is rigorous, and the accountant, which
// takes the smaller of its methods, reproduces it.
func (sm *SplitMix) calibrate() error {
	// Noise multiplier z: mu = (z·L2)^2.
	lo, hi := 1e-3, 1e4
	eHi, _, err := sm.runEpsilon(sq(hi * sm.l2))
	if err != nil {
		return fmt.Errorf("split-mix: calibrating the noise: %w", err)
	}
	if eHi > sm.eps {
		return checks.Invalidf("split-mix: target epsilon %v is not reachable over %d rounds at delta %v (noise multiplier %v still spends %v)", sm.eps, sm.rounds, sm.delta, hi, eHi)
	}
	for hi/lo > 1+1e-4 {
		mid := math.Sqrt(lo * hi)
		e, _, err := sm.runEpsilon(sq(mid * sm.l2))
		if err != nil {
			return fmt.Errorf("split-mix: calibrating the noise: %w", err)
		}
		if e <= sm.eps {
			hi = mid
		} else {
			lo = mid
		}
	}
	// The PLD route below the RDP figure, kept if it is smaller (each
	// evaluation is the run accountant's own computation).
	key := smCalKey{sm.eps, sm.delta, sm.rate, sm.rounds, sm.dim, sm.l2, sm.tvBudget(), hi}
	z, ok := smCalMemo.get(key)
	if !ok {
		z, ok = sm.calibratePLD(hi)
		smCalMemo.put(key, z, ok)
	}
	if ok && z < hi {
		hi = z
		sm.pldRoute = true
	}
	sm.variance = sq(hi * sm.l2)
	sm.slotVar = sm.variance / float64(sm.slots-sm.collude)
	_, sm.curve, err = sm.runEpsilon(sm.variance)
	return err
}

// smCalKey is what calibratePLD's result depends on (the RDP figure
// included, which depends on the rest and on l1).
type smCalKey struct {
	eps, delta, rate float64
	rounds, dim      int
	l2, tv, zRDP     float64
}

// smCalMemo memoises calibratePLD, a deterministic function of smCalKey
// that costs a handful of PLD compositions: a run, and the tests,
// construct the same split-mix several times.
var smCalMemo = smCalMemoType{m: map[smCalKey]smCal{}}

// smCalMemoType is the type of smCalMemo.
type smCalMemoType struct {
	mu sync.Mutex
	m  map[smCalKey]smCal
}

// get returns the memoised result for k.
func (c *smCalMemoType) get(k smCalKey) (float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	if !ok {
		return 0, false
	}
	return r.z, r.ok
}

// put records a result (the memo is cleared when it holds 64).
func (c *smCalMemoType) put(k smCalKey, z float64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 64 {
		clear(c.m)
	}
	c.m[k] = smCal{z, ok}
}

// smCal is one memoised calibratePLD result.
type smCal struct {
	z  float64
	ok bool
}

// calibratePLD returns the smallest noise multiplier (to a relative
// 1e-4) at or below zRDP whose planned rounds spend at most the target by
// the PLD route, and false if zRDP itself does not. The returned value was
// evaluated (e <= target); the search interpolates log epsilon linearly in
// log z (the curve is smooth and nearly straight there), probing just
// above and below each estimate of the root, with bisection as the
// fallback, so that it takes a handful of evaluations instead of a
// dozen.
func (sm SplitMix) calibratePLD(zRDP float64) (float64, bool) {
	f := func(z float64) (float64, bool) {
		e, err := sm.pldEpsilon(sq(z * sm.l2))
		if err != nil || math.IsNaN(e) || math.IsInf(e, 0) {
			return math.Inf(1), false
		}
		return math.Log(e / sm.eps), true
	}
	hi := zRDP
	fhi, ok := f(hi)
	if !ok || fhi > 0 {
		return 0, false
	}
	lo := 0.9 * zRDP
	flo, _ := f(lo)
	for i := 0; flo <= 0 && i < 20; i++ {
		hi, fhi = lo, flo
		lo *= 0.8
		flo, _ = f(lo)
	}
	if flo <= 0 {
		return hi, true
	}
	const tol = 1e-4
	for i := 0; hi/lo > 1+tol && i < 40; i++ {
		z := math.Sqrt(lo * hi)
		if !math.IsInf(flo, 0) && fhi < flo {
			t := flo / (flo - fhi)
			z = math.Exp(math.Log(lo) + t*(math.Log(hi)-math.Log(lo)))
		}
		for _, zz := range []float64{z * (1 + 0.4*tol), z * (1 - 0.4*tol)} {
			if !(zz > lo && zz < hi) {
				zz = math.Sqrt(lo * hi)
			}
			fz, _ := f(zz)
			if fz <= 0 {
				hi, fhi = zz, fz
			} else {
				lo, flo = zz, fz
			}
			if hi/lo <= 1+tol {
				break
			}
		}
	}
	return hi, true
}

func sq(x float64) float64 { return x * x }

// Name implements Protocol.
func (SplitMix) Name() string { return "split-mix" }

// PoissonSampling implements PoissonSampler: the statement subsamples by
// Poisson sampling.
func (SplitMix) PoissonSampling() bool { return true }

// Variance is the calibrated central noise variance mu per coordinate (in
// the scaled integer domain), carried by the K - t honest slots.
func (sm SplitMix) Variance() float64 { return sm.variance }

// NoiseMultiplier is sqrt(mu)/L2, comparable with dp-central's sigma.
func (sm SplitMix) NoiseMultiplier() float64 { return math.Sqrt(sm.variance) / sm.l2 }

// Shares is m, the number of shares of every coordinate.
func (sm SplitMix) Shares() int { return sm.shares }

// Slots is K, the number of reporter slots of a round.
func (sm SplitMix) Slots() int { return sm.slots }

// Modulus is q.
func (sm SplitMix) Modulus() int64 { return sm.mod }

// Fast says the protocol runs its fast path (option fast=1): one value
// per coordinate instead of m shares, for simulation only.
func (sm SplitMix) Fast() bool { return sm.fast }

// Gamma is the scale factor gamma = scale/C.
func (sm SplitMix) Gamma() float64 { return sm.gamma }

// Sensitivities returns the L1 and L2 sensitivities of a scaled, rounded,
// clipped update.
func (sm SplitMix) Sensitivities() (l1, l2 float64) { return sm.l1, sm.l2 }

// ValuesPerCoordinate implements MultiValued: m shares (1 on the fast
// path).
func (sm SplitMix) ValuesPerCoordinate() int { return sm.perSlot() }

// perSlot is the number of values a reporter sends per coordinate.
func (sm SplitMix) perSlot() int {
	if sm.fast {
		return 1
	}
	return sm.shares
}

// Check implements Protocol.
func (sm SplitMix) Check(s Shape, _ []Budget) error {
	if err := checkCalibrated("split-mix", s, sm.rate, sm.rounds); err != nil {
		return err
	}
	if s.Dim != sm.dim {
		return checks.Invalidf("split-mix was built for dimension %d, the round has %d", sm.dim, s.Dim)
	}
	if b := account.BinomialUpperTail(s.Population, sm.rate, sm.slots); b > math.Exp2(-sm.voidBits) {
		return checks.Invalidf("split-mix: P[more than %d of %d clients sampled at rate %v] = %.3g exceeds 2^-%v: raise slots", sm.slots, s.Population, sm.rate, b, sm.voidBits)
	}
	return nil
}

// Mode implements Protocol: every coordinate's shares are shuffled apart.
func (SplitMix) Mode() ShuffleMode { return PerCoordinate }

// modQ reduces x into [0, q).
func (sm SplitMix) modQ(x int64) int64 {
	y := x % sm.mod
	if y < 0 {
		y += sm.mod
	}
	return y
}

// noisy writes the client's noisy integers mod q: randomized rounding of
// gamma·u_j, then a Skellam share, drawn coordinate by coordinate in the
// same order on both paths.
func (sm SplitMix) noisy(r *rand.Rand, u []float64, dst []int64) {
	for j, v := range u {
		x := mechanism.RoundUnbiased(r, sm.gamma*v)
		dst[j] = sm.modQ(x + sm.skellam(r))
	}
}

// emitShares appends the m shares of y (in [0, q)) for coordinate j: m-1
// uniform values and the one that makes the sum y mod q.
func (sm SplitMix) emitShares(r *rand.Rand, j int, y int64, emit func(int, float64)) {
	sum := int64(0)
	for range sm.shares - 1 {
		s := r.Int64N(sm.mod)
		sum = (sum + s) % sm.mod
		emit(j, float64(s))
	}
	emit(j, float64(sm.modQ(y-sum)))
}

// Encode implements Protocol: clip, scale, round, add the noise share,
// reduce mod q and split (or, on the fast path, report once).
func (sm SplitMix) Encode(r *rand.Rand, s Shape, update []float64, _ Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	clipL2(update, sm.clip)
	if sm.rotate {
		rotated, err := sm.rotated(s.Round, update)
		if err != nil {
			return err
		}
		update = rotated
	}
	y := make([]int64, len(update))
	sm.noisy(r, update, y)
	out.Reset()
	if sm.fast {
		out.Coords = nil
		for _, v := range y {
			out.Values = append(out.Values, float64(v))
		}
		return nil
	}
	if out.Coords == nil {
		out.Coords = make([]int32, 0, len(y)*sm.shares)
	}
	emit := func(j int, v float64) {
		out.Coords = append(out.Coords, int32(j))
		out.Values = append(out.Values, v)
	}
	for j, v := range y {
		sm.emitShares(r, j, v, emit)
	}
	return nil
}

// Pad implements Protocol: the shuffler's dummy reporters, K - n of them,
// each a Skellam noise share and a zero update, split like a client's
// report. All dummies' noise is drawn before any share, so both paths see
// the same noise.
func (sm SplitMix) Pad(r *rand.Rand, s Shape, counts []int64, emit func(int, float64)) error {
	if len(counts) != sm.dim {
		return checks.Invalidf("split-mix: %d coordinate counts, want %d", len(counts), sm.dim)
	}
	per := int64(sm.perSlot())
	c := counts[0]
	for j, cj := range counts {
		if cj != c {
			return checks.Invalidf("split-mix: coordinate %d has %d values and coordinate 0 has %d: a reporter sent a malformed report", j, cj, c)
		}
	}
	if c%per != 0 {
		return checks.Invalidf("split-mix: %d values per coordinate is not a multiple of %d", c, per)
	}
	n := int(c / per)
	if n > sm.slots {
		return nil // void round: the analyzer sees more than K·per values
	}
	dummies := sm.slots - n
	noise := make([]int64, dummies*sm.dim)
	for i := range noise {
		noise[i] = sm.modQ(sm.skellam(r))
	}
	for i := range dummies {
		row := noise[i*sm.dim : (i+1)*sm.dim]
		for j, v := range row {
			if sm.fast {
				emit(j, float64(v))
			} else {
				sm.emitShares(r, j, v, emit)
			}
		}
	}
	return nil
}

// Decode is the analyzer's modular step: it checks the aggregate (K·per
// values per coordinate, exact integer sums) and writes every coordinate's
// sum mod q mapped to the signed range (-q/2, q/2]. void is true when the
// round had more than K reporters (nothing may be released).
func (sm SplitMix) Decode(agg *Aggregate, dst []int64) (void bool, err error) {
	if agg.Dim() != sm.dim || len(dst) != sm.dim {
		return false, checks.Invalidf("split-mix: aggregate of dimension %d and buffer of %d, want %d", agg.Dim(), len(dst), sm.dim)
	}
	want := int64(sm.slots) * int64(sm.perSlot())
	c := agg.Count[0]
	for j, cj := range agg.Count {
		if cj != c {
			return false, checks.Invalidf("split-mix: coordinate %d has %d values and coordinate 0 has %d", j, cj, c)
		}
	}
	if c > want {
		return true, nil
	}
	if c < want {
		return false, checks.Invalidf("split-mix: %d values per coordinate, want %d (K = %d slots of %d): the shuffler did not pad the round", c, want, sm.slots, sm.perSlot())
	}
	half := sm.mod / 2
	for j, v := range agg.Sum {
		if v != math.Floor(v) || v < 0 || v >= smExact {
			return false, checks.Invalidf("split-mix: coordinate %d sums to %v, not an exact non-negative integer below 2^53: malformed shares", j, v)
		}
		x := sm.modQ(int64(v))
		if x > half {
			x -= sm.mod
		}
		dst[j] = x
	}
	return false, nil
}

// Estimate implements Protocol: decode the noisy integer sum, divide by
// gamma and by the expected number of reporters qN. A void round (more
// than K reporters) releases the zero update.
func (sm SplitMix) Estimate(_ *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	if err := checkAggregate(s, agg, dst); err != nil {
		return err
	}
	sum := make([]int64, sm.dim)
	void, err := sm.Decode(agg, sum)
	if err != nil {
		return err
	}
	if void {
		clear(dst)
		return nil
	}
	den := sm.gamma * sm.rate * float64(s.Population)
	for j, v := range sum {
		dst[j] = float64(v)
	}
	if sm.rotate {
		rt, err := sm.rotation(s.Round)
		if err != nil {
			return err
		}
		rt.Invert(dst)
	}
	for j := range dst {
		dst[j] /= den
	}
	return nil
}

// Rotate reports whether the clients rotate their updates (option rotate).
func (sm SplitMix) Rotate() bool { return sm.rotate }

// rotation returns round's public rotation of R^d: its signs come from a
// PCG seeded with the round number, so every client and the analyzer
// derive the same one. It is public (the analyzer knows it); the
// statement holds for any fixed orthogonal map, the randomness only makes
// large coordinates unlikely.
func (sm SplitMix) rotation(round int) (*mechanism.Rotation, error) {
	rt, err := mechanism.NewRotation(sm.dim, rand.New(rand.NewPCG(uint64(round), smRotateStream)))
	if err != nil {
		return nil, fmt.Errorf("split-mix: %w", err)
	}
	return rt, nil
}

// rotated returns a rotated copy of the clipped update u (u is left as
// is).
func (sm SplitMix) rotated(round int, u []float64) ([]float64, error) {
	rt, err := sm.rotation(round)
	if err != nil {
		return nil, err
	}
	v := append([]float64(nil), u...)
	rt.Apply(v)
	return v, nil
}

// roundTV returns the round's total variation term and its parts: the void
// probability P[Bin(N, q) > K] and the split-and-mix term d·2^-s.
func (sm SplitMix) roundTV(pop int) (tv, void, mix float64) {
	void = account.BinomialUpperTail(pop, sm.rate, sm.slots)
	bits := account.SplitMixSecurityBits(sm.slots-sm.collude, sm.shares, float64(sm.mod))
	mix = float64(sm.dim) * math.Exp2(-bits)
	return void + mix, void, mix
}

// WrapBound returns an upper bound on the probability that some
// coordinate's noisy sum leaves the signed range (-q/2, q/2] in a round
// (wrap-around), for honest-but-curious reporters. Without rotation: at
// most K reporters contribute |x| <= gamma C + 1 per coordinate, so a wrap
// needs the total noise (Skellam of variance K·mu/(K-t)) to exceed
// R = q/2 - K(gamma C + 1) in magnitude, and the Chernoff bound of the
// Skellam distribution (E e^{theta N} = e^{V(cosh theta - 1)}) at
// theta = asinh(R/V) gives P[|N| > R] <= 2 exp(-R asinh(R/V) +
// V(sqrt(1 + (R/V)^2) - 1)), times d. With rotation the data part of a
// coordinate is sum_i s_i a_i + (rounding, < K) with the round's random
// signs s_i and sum a_i^2 <= (K gamma C)^2/p (p the Hadamard window), so
// by Hoeffding it exceeds t with probability at most
// 2 exp(-t^2 p / (2 (K gamma C)^2)); the bound is the smallest, over a grid
// of t, of d times that plus the noise tail at q/2 - K - t. The signs are
// public but independent of the updates (honest clients do not choose
// their update from them).
func (sm SplitMix) WrapBound() float64 {
	v := float64(sm.slots) * sm.slotVar
	data := float64(sm.slots) * sm.scale * smNormSlack
	half := float64(sm.mod) / 2
	best := math.Min(1, 2*float64(sm.dim)*skellamTail(half-float64(sm.slots)*(sm.scale*smNormSlack+1), v))
	if !sm.rotate {
		return best
	}
	p := float64(int(1) << (bitsLen(sm.dim) - 1))
	room := half - float64(sm.slots)
	for i := 1; i < 400; i++ {
		t := room * float64(i) / 400
		hoeffding := 2 * math.Exp(-t*t*p/(2*data*data))
		b := float64(sm.dim) * (hoeffding + 2*skellamTail(room-t, v))
		best = math.Min(best, b)
	}
	return math.Min(1, best)
}

// skellamTail returns the Chernoff bound exp(-R asinh(R/V) +
// V(sqrt(1 + (R/V)^2) - 1)) on P[N > R] for a symmetric Skellam N of
// variance V (1 if R <= 0).
func skellamTail(r, v float64) float64 {
	if r <= 0 {
		return 1
	}
	x := r / v
	return math.Exp(-r*math.Asinh(x) + v*(math.Sqrt(1+x*x)-1))
}

// Account implements Protocol.
func (sm SplitMix) Account(s Shape, _ []Budget) (Privacy, error) {
	share := account.RoundDelta(sm.delta, sm.rounds)
	tv, void, mix := sm.roundTV(s.Population)
	tv += account.SkellamTailTV
	if tv > sm.tvBudget() {
		return Privacy{}, checks.Invalidf("split-mix: the round's total variation term %.3g exceeds the calibrated %.3g (population %d)", tv, sm.tvBudget(), s.Population)
	}
	orders := account.DefaultRDPOrders()
	one, _, err := account.RDPToEpsilonTV(orders, sm.curve, share, tv)
	if err != nil {
		return Privacy{}, fmt.Errorf("split-mix: %w", err)
	}
	// The PLD route's pair (unavailable beyond pld.SkellamUnitGDP's cut,
	// at variances above about 2.5e10: the RDP route alone then) and the
	// round alone by it (the same question every round: memoised), the
	// smaller figure.
	sigma, errPLD := account.SampledSkellamSigma(honestVar(sm.variance), sm.l2, sm.dim)
	if errPLD == nil {
		if e, err := account.SampledSkellamPLDEpsilon(sm.rate, honestVar(sm.variance), sm.l2, sm.dim, 1, share, tv); err == nil && e < one {
			one = e
		}
	}
	var b strings.Builder
	route := "rdp"
	if sm.pldRoute {
		route = "pld"
	}
	if errPLD == nil {
		fmt.Fprintf(&b, "%s route; pld: Poisson-sampled skellam dominated by the sampled gaussian of noise multiplier %.6g (certified unit-shift GDP of the Skellam noise, pld.SkellamUnitGDP, TV %.3g); ", route, sigma, account.SkellamTailTV)
	} else {
		fmt.Fprintf(&b, "rdp route (pld route unavailable: %v); ", errPLD)
	}
	fmt.Fprintf(&b, "rdp Poisson-sampled skellam (Agarwal-Kairouz-Liu Thm 3.5, symmetric-noise subsampling; mu=%.4g, noise multiplier %.4g, L2 %.5g, L1 %.5g, q=%.4g)",
		sm.variance, sm.NoiseMultiplier(), sm.l2, sm.l1, sm.rate)
	fmt.Fprintf(&b, " + TV %.3g in delta (split-and-mix m=%d, q=2^%d, %d honest slots: %.3g; void P[n>%d]: %.3g)",
		tv, sm.shares, sm.bits, sm.slots-sm.collude, mix, sm.slots, void)
	wrap := fmt.Sprintf("<= %.3g", sm.WrapBound())
	if sm.WrapBound() == 0 {
		wrap = "< 1e-300"
	}
	if sm.rotate {
		fmt.Fprintf(&b, "; rotation: public randomized Hadamard, orthogonal on R^%d (windows of %d), sensitivities unchanged", sm.dim, 1<<(bitsLen(sm.dim)-1))
	}
	fmt.Fprintf(&b, "; trust: honest shuffler, analyzer colluding with <= %d clients; wrap-around %s per round", sm.collude, wrap)
	priv := centralPrivacy(one, share, sm.curve, b.String())
	priv.TV = tv
	if errPLD == nil && !math.IsInf(one, 0) {
		priv.Components = []account.Component{{
			Kind: account.KindSampledSkellam, Epsilon: one, Delta: share, Count: 1,
			Q: sm.rate, Variance: honestVar(sm.variance), L2: sm.l2, Dim: sm.dim,
		}}
	}
	return priv, nil
}

// bitsLen is the number of bits of d > 0.
func bitsLen(d int) int { return bits.Len(uint(d)) }
