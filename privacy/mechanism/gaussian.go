package mechanism

import (
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// Gaussian is the Gaussian mechanism: it adds independent N(0, Sigma²) noise
// to every coordinate. NewGaussian calibrates Sigma with the analytic Gaussian
// mechanism of Balle and Wang (ICML 2018, Theorem 8 / Algorithm 1), which is
// exact for every epsilon > 0: x + N(0, σ²I) is (ε, δ)-DP for inputs whose L2
// distance is at most Δ2 if and only if
//
//	Φ(Δ2/(2σ) - εσ/Δ2) - e^ε·Φ(-Δ2/(2σ) - εσ/Δ2) <= δ.
//
// The classic σ = Δ2·sqrt(2 ln(1.25/δ))/ε is only proved for ε < 1 and is
// never used here (see ClassicGaussianSigma, kept for comparison).
//
// Floating-point safety: as for Laplace, Secure snaps each output to a
// power-of-two grid g in (σ·2^-12, σ·2^-11] that depends on σ alone, and the
// noise is drawn with normZig, a ziggurat on full 64-bit words (53-bit
// positions, absolute resolution below 2^-51, float64 tables and wedge
// test, Marsaglia's tail from full-precision uniforms) rather than the
// 32-bit, float32-table ziggurat of rand.NormFloat64. Snapping after adding
// is post-processing, so the guarantee is (ε + η, δ + 1e-30) with η of the
// same order as for Laplace (below 1e-8 for |x| <= 1000σ); the tail is
// truncated only beyond |z| = 40.9, far inside the 1e-30. Deployment must
// use the secure variant.
type Gaussian struct {
	Sigma  float64
	Secure bool // snap outputs to the power-of-two grid; full-precision ziggurat noise
}

// NewGaussian returns the plain (simulation) Gaussian mechanism with σ from
// the analytic calibration. epsilon and l2Sensitivity must be positive and
// finite and delta in (0, 1).
func NewGaussian(epsilon, delta, l2Sensitivity float64) (Gaussian, error) {
	sigma, err := AnalyticGaussianSigma(epsilon, delta, l2Sensitivity)
	if err != nil {
		return Gaussian{}, err
	}
	return Gaussian{Sigma: sigma}, nil
}

// NewSecureGaussian is NewGaussian with Secure set, for deployment.
func NewSecureGaussian(epsilon, delta, l2Sensitivity float64) (Gaussian, error) {
	m, err := NewGaussian(epsilon, delta, l2Sensitivity)
	m.Secure = err == nil
	return m, err
}

// Sample returns one noise draw (snapped to the grid if Secure).
func (m Gaussian) Sample(r *rand.Rand) float64 {
	if m.Secure {
		return snapScalar(m.Sigma*normZig(r), m.Sigma)
	}
	return m.Sigma * r.NormFloat64()
}

// Randomize returns x plus noise (snapped to the grid if Secure).
func (m Gaussian) Randomize(r *rand.Rand, x float64) float64 {
	if m.Secure {
		return snapScalar(x+m.Sigma*normZig(r), m.Sigma)
	}
	return x + m.Sigma*r.NormFloat64()
}

// Perturb adds noise to every entry of x in place, without allocating.
func (m Gaussian) Perturb(r *rand.Rand, x []float64) {
	s := m.Sigma
	if !m.Secure {
		for i := range x {
			x[i] += s * r.NormFloat64()
		}
		return
	}
	g := gridFor(s)
	inv := 1 / g
	for i := range x {
		x[i] = snap(x[i]+s*normZig(r), g, inv)
	}
}

// AnalyticGaussianSigma returns the smallest σ (to a relative 1e-12, rounded
// up) for which the Gaussian mechanism with L2 sensitivity l2Sensitivity is
// (epsilon, delta)-DP, by bisection on the exact privacy profile above
// (Balle and Wang 2018), which is decreasing in σ.
func AnalyticGaussianSigma(epsilon, delta, l2Sensitivity float64) (float64, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return 0, err
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, err
	}
	if err := checks.Positive("l2Sensitivity", l2Sensitivity); err != nil {
		return 0, err
	}
	// Work with σ/Δ2 and scale at the end. Bracket [lo, hi] with
	// δ(lo) > delta >= δ(hi), starting from the classic formula.
	hi := math.Sqrt(2*math.Log(1.25/delta)) / epsilon
	if hi <= 0 || math.IsInf(hi, 0) || math.IsNaN(hi) {
		hi = 1
	}
	for GaussianDelta(epsilon, hi, 1) > delta {
		hi *= 2
		if hi > 1e300 {
			return 0, checks.Invalidf("no σ gives (%v, %v)-DP", epsilon, delta)
		}
	}
	lo := hi
	for GaussianDelta(epsilon, lo, 1) <= delta {
		lo /= 2
		if lo < 1e-300 {
			return 0, checks.Invalidf("σ underflows for (%v, %v)-DP", epsilon, delta)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		mid := 0.5 * (lo + hi)
		if GaussianDelta(epsilon, mid, 1) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	sigma := hi * l2Sensitivity
	if err := checkScale("gaussian sigma", sigma); err != nil {
		return 0, err
	}
	return sigma, nil
}

// GaussianDelta returns the exact δ(ε) of the Gaussian mechanism with noise
// σ and L2 sensitivity Δ2 (Balle and Wang 2018, Theorem 8):
//
//	δ = Φ(Δ2/(2σ) - εσ/Δ2) - e^ε·Φ(-Δ2/(2σ) - εσ/Δ2),
//
// computed with the second term in log space so that large ε does not
// overflow.
func GaussianDelta(epsilon, sigma, l2Sensitivity float64) float64 {
	a := l2Sensitivity/(2*sigma) - epsilon*sigma/l2Sensitivity
	b := l2Sensitivity/(2*sigma) + epsilon*sigma/l2Sensitivity
	d := normCDF(a) - math.Exp(epsilon+logNormCDF(-b))
	if d < 0 {
		return 0
	}
	return d
}

// ClassicGaussianSigma is Δ2·sqrt(2 ln(1.25/δ))/ε (Dwork and Roth 2014,
// Theorem A.1), proved only for ε < 1. It is here for comparison in tests and
// documentation; calibrate with NewGaussian instead.
func ClassicGaussianSigma(epsilon, delta, l2Sensitivity float64) float64 {
	return l2Sensitivity * math.Sqrt(2*math.Log(1.25/delta)) / epsilon
}

// normCDF is the standard normal CDF Φ.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// logNormCDF is log Φ(x), accurate in the far left tail where Φ underflows.
func logNormCDF(x float64) float64 {
	if x > -30 {
		return math.Log(normCDF(x))
	}
	// Φ(x) = φ(x)/|x| · (1 - 1/x² + 3/x⁴ - 15/x⁶ + 105/x⁸ - ...), x -> -inf.
	x2 := x * x
	s := 1 - 1/x2 + 3/(x2*x2) - 15/(x2*x2*x2) + 105/(x2*x2*x2*x2)
	return -0.5*x2 - 0.5*math.Log(2*math.Pi) - math.Log(-x) + math.Log(s)
}
