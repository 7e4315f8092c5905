package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

func init() {
	Register("dp-central", "DP-FedAvg: L2 clipping, Gaussian noise added by a trusted analyzer, RDP accountant for Poisson-sampled rounds", newCentral)
	RegisterInfo("dp-central", Info{
		Summary: "central DP: L2 clipping, Gaussian noise added by a trusted analyzer, RDP accounting",
		Paper:   "DP-FL (DP-FedAvg, McMahan et al. 2018)",
		Budgets: "none: --target-epsilon (with --delta) calibrates the analyzer's noise over the planned rounds",
	})
}

// PoissonSampler is implemented by protocols whose accounting assumes that
// each client takes part in a round independently with probability q
// (Poisson sampling). The engine samples that way for them.
type PoissonSampler interface {
	PoissonSampling() bool
}

// CentralDP is DP-FedAvg (McMahan et al. 2018): each client clips its update
// to L2 norm C; a trusted analyzer adds N(0, (sigma·C)^2) to every coordinate
// of the sum and divides by the expected number of participants qN (the fixed
// denominator of McMahan et al., so the estimator is unbiased and the
// sensitivity does not depend on who took part). sigma is the smallest noise
// multiplier for which the RDP accountant of the Poisson-subsampled Gaussian
// (Mironov, Talwar and Zhang 2019) gives the target (epsilon, delta) after the
// planned number of rounds, under add/remove-one-client neighbouring.
//
// Clients get no local guarantee: the analyzer sees their clipped updates.
type CentralDP struct {
	clip, eps, delta, q float64
	rounds              int
	sigma               float64
	secure              bool
}

// checkCentralParams validates the parameters every protocol calibrated to
// a target central epsilon shares (dp-central, split-mix): the clip, the
// target (named epsName), delta, rounds and the sampling rate.
func checkCentralParams(p Params, epsName string) error {
	if err := checks.Positive("clip", p.Clip); err != nil {
		return err
	}
	if err := checks.Epsilon(epsName, p.Epsilon); err != nil {
		return err
	}
	if err := checks.Delta("delta", p.Delta); err != nil {
		return err
	}
	if err := checks.IntAtLeast("rounds", p.Rounds, 1); err != nil {
		return err
	}
	if p.SampleRate <= 0 || p.SampleRate > 1 || math.IsNaN(p.SampleRate) {
		return checks.Invalidf("sample rate must be in (0, 1], got %v", p.SampleRate)
	}
	return nil
}

func newCentral(p Params) (Protocol, error) {
	if err := extraKeys(p); err != nil {
		return nil, err
	}
	if err := checkCentralParams(p, "epsilon"); err != nil {
		return nil, err
	}
	sigma, err := account.CalibrateNoiseMultiplier(p.Epsilon, p.Delta, p.SampleRate, p.Rounds)
	if err != nil {
		return nil, fmt.Errorf("dp-central: calibrating the noise multiplier for epsilon=%v delta=%v q=%v rounds=%d: %w",
			p.Epsilon, p.Delta, p.SampleRate, p.Rounds, err)
	}
	// The analyzer's noise std is sigma·C. The Gaussian samplers of package
	// mechanism need a normal, moderate scale: the secure sampler snaps to a
	// power-of-two grid derived from the scale's exponent bits, and for a
	// subnormal scale (e.g. C = 1e-310) that grid is garbage and every noisy
	// coordinate snaps to zero (the estimate is silently all zeros); the plain
	// sampler would draw noise with fewer significant bits than it needs. The
	// constructors of package mechanism enforce [2^-900, 2^900]
	// (mechanism.checkScale); the same range is required here.
	if std := sigma * p.Clip; !(std >= centralMinStd && std <= centralMaxStd) {
		return nil, checks.Invalidf("the noise std sigma·C = %v·%v = %v is outside [2^-900, 2^900], the range the Gaussian samplers can represent (their snapping grid is derived from the scale); rescale the updates so that the clip C is of moderate size",
			sigma, p.Clip, std)
	}
	return CentralDP{clip: p.Clip, eps: p.Epsilon, delta: p.Delta, q: p.SampleRate, rounds: p.Rounds, sigma: sigma, secure: p.Secure}, nil
}

// centralMinStd and centralMaxStd bound the analyzer's noise std sigma·C, as
// mechanism's constructors bound every noise scale.
const (
	centralMinStd = 0x1p-900
	centralMaxStd = 0x1p900
)

// Name implements Protocol.
func (CentralDP) Name() string { return "dp-central" }

// NoiseMultiplier is the calibrated sigma (noise std is sigma·C).
func (m CentralDP) NoiseMultiplier() float64 { return m.sigma }

// PoissonSampling implements PoissonSampler.
func (CentralDP) PoissonSampling() bool { return true }

// Check implements Protocol: the round must match the sample rate the noise
// was calibrated for.
func (m CentralDP) Check(s Shape, _ []Budget) error {
	return checkCalibrated("dp-central", s, m.q, m.rounds)
}

// checkCalibrated checks a round against what a target-calibrated
// protocol's noise was calibrated for: a valid shape, the same sampling rate
// and a round within the planned ones.
func checkCalibrated(name string, s Shape, rate float64, rounds int) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if q := s.SampleRate(); math.Abs(q-rate) > 1e-12 {
		return checks.Invalidf("%s was calibrated for sample rate %v but the round has %v", name, rate, q)
	}
	if s.Round > rounds {
		return checks.Invalidf("round %d exceeds the %d rounds the noise was calibrated for", s.Round, rounds)
	}
	return nil
}

// Mode implements Protocol.
func (CentralDP) Mode() ShuffleMode { return NoShuffle }

// Encode implements Protocol: L2 clipping only.
func (m CentralDP) Encode(_ *rand.Rand, s Shape, update []float64, _ Budget, out *Report) error {
	if err := checkUpdate(s, update); err != nil {
		return err
	}
	clipL2(update, m.clip)
	out.Reset()
	out.Coords = nil
	out.Values = append(out.Values, update...)
	return nil
}

// Pad implements Protocol.
func (CentralDP) Pad(*rand.Rand, Shape, []int64, func(int, float64)) error { return nil }

// Estimate implements Protocol: (sum + N(0, (sigma C)^2 I)) / (q N).
func (m CentralDP) Estimate(r *rand.Rand, s Shape, agg *Aggregate, dst []float64) error {
	if err := checkAggregate(s, agg, dst); err != nil {
		return err
	}
	copy(dst, agg.Sum)
	g := mechanism.Gaussian{Sigma: m.sigma * m.clip, Secure: m.secure}
	g.Perturb(r, dst)
	den := m.q * float64(s.Population)
	for j := range dst {
		dst[j] /= den
	}
	return nil
}

// Account implements Protocol: the round's (epsilon, delta) at the round's
// share of the run's delta (account.RoundDelta) by the RDP accountant of one Poisson-subsampled Gaussian step,
// and the step's RDP curve, which the run's accountant adds up over the
// rounds that happened.
func (m CentralDP) Account(s Shape, _ []Budget) (Privacy, error) {
	share := account.RoundDelta(m.delta, m.rounds)
	one, err := account.SampledGaussianEpsilon(m.q, m.sigma, 1, share)
	if err != nil {
		return Privacy{}, fmt.Errorf("dp-central: %w", err)
	}
	curve, err := account.SampledGaussianRDP(m.q, m.sigma, account.DefaultRDPOrders())
	if err != nil {
		return Privacy{}, fmt.Errorf("dp-central: %w", err)
	}
	return centralPrivacy(one, share, curve, fmt.Sprintf("rdp sampled gaussian (sigma=%.4g, q=%.4g)", m.sigma, m.q)), nil
}

// centralPrivacy is the round statement of a protocol whose noise protects
// only the released sum (dp-central, split-mix): no local guarantee, the
// central (eps, delta) at the round's delta share, for the update and for
// any coordinate, and the round's RDP curve for the run's accountant.
func centralPrivacy(eps, delta float64, curve []float64, bound string) Privacy {
	inf := math.Inf(1)
	return Privacy{
		Private:             true,
		LocalEpsilon:        Stats{inf, inf, inf},
		LocalCoordEpsilon:   Stats{inf, inf, inf},
		CentralEpsilon:      eps,
		CentralDelta:        delta,
		CentralCoordEpsilon: eps,
		CentralCoordDelta:   delta,
		RDP:                 curve,
		Bound:               bound,
	}
}
