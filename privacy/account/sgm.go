package account

import (
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub returns log(e^a - e^b) for a >= b (-Inf if they are equal).
func logSub(a, b float64) float64 {
	if math.IsInf(b, -1) {
		return a
	}
	if b >= a {
		return math.Inf(-1)
	}
	return a + math.Log(-math.Expm1(b-a))
}

// logErfc returns log(erfc(x)) without underflow for large x, using the
// asymptotic series erfc(x) = e^{-x^2}/(x sqrt(pi)) (1 - 1/(2x^2) +
// 3/(4x^4) - 15/(8x^6) + 105/(16x^8)) where math.Erfc would underflow; at
// x >= 25 the first omitted term is below 1e-13 relative.
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	y := 1 / (2 * x * x)
	s := 1 - y*(1-3*y*(1-5*y*(1-7*y)))
	return -x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log(s)
}

// maxSeriesTerms bounds the series of the fractional-order computation. Close
// to the split point z0 the binomial series converges only polynomially, so
// an order whose series has not converged by then is evaluated by quadrature
// (logAQuad) instead.
const maxSeriesTerms = 100

// logExpm1 returns log(e^x - 1) for x > 0.
func logExpm1(x float64) float64 {
	if x > 30 {
		return x + math.Log1p(-math.Exp(-x))
	}
	return math.Log(math.Expm1(x))
}

// log1pExp returns log(1 + e^x).
func log1pExp(x float64) float64 {
	if x > 30 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// logA returns log A_alpha for the Poisson-subsampled Gaussian mechanism with
// 0 < q < 1, where
//
//	A_alpha = E_{z~N(0,sigma^2)}[((1-q) + q e^{(2z-1)/(2sigma^2)})^alpha]
//
// (Mironov, Talwar and Zhang 2019, Section 3; the RDP at order alpha is
// log(A_alpha)/(alpha-1)).
//
// For integer alpha it evaluates their exact binomial expansion (Section 3.2),
// written as A_alpha - 1 = sum_{k>=2} C(alpha,k) (1-q)^{alpha-k} q^k
// (e^{(k^2-k)/(2sigma^2)} - 1), a sum of positive terms, so that small RDP
// values do not suffer cancellation. For fractional alpha it evaluates their
// Section 3.3 series (logASeries) and, where that series converges too
// slowly, the integral itself by the trapezoid rule (logAQuad).
func logA(q, sigma, alpha float64) float64 {
	if alpha == math.Floor(alpha) {
		s2 := 2 * sigma * sigma
		lq, l1q := math.Log(q), math.Log1p(-q)
		n := int(alpha)
		lm1 := math.Inf(-1)   // log(A - 1)
		lc := math.Log(alpha) // log C(alpha, 1), updated incrementally
		for k := 2; k <= n; k++ {
			kf := float64(k)
			lc += math.Log((alpha - kf + 1) / kf)
			lm1 = logAdd(lm1, lc+kf*lq+(alpha-kf)*l1q+logExpm1((kf*kf-kf)/s2))
		}
		return log1pExp(lm1)
	}
	if seriesWorthTrying(q, sigma, alpha) {
		if la, ok := logASeries(q, sigma, alpha); ok {
			return la
		}
	}
	return logAQuad(q, sigma, alpha)
}

// seriesWorthTrying predicts whether logASeries converges within
// maxSeriesTerms. Past k = max(alpha, z0) its terms behave like
// |C(alpha,k)| e^{-z0^2/(2 sigma^2)} / (k - z0), i.e. they decay like
// k^{-(alpha+2)} from a level e^{-z0^2/(2 sigma^2)}, and the series stops
// 36 nats below its sum (which is at least 1). The prediction only chooses
// between two accurate methods; a wrong guess costs time, not accuracy.
func seriesWorthTrying(q, sigma, alpha float64) bool {
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	need := 36 - z0*z0/(2*sigma*sigma)
	if need <= 0 {
		return true
	}
	return math.Max(alpha, z0)+math.Exp(need/(alpha+2)) < maxSeriesTerms
}

// logASeries evaluates log A_alpha for fractional alpha by the series of
// Mironov, Talwar and Zhang 2019, Section 3.3: with
// z0 = sigma^2 log(1/q - 1) + 1/2 the integral splits at z0 into
//
//	A0 = sum_k C(alpha,k) q^k (1-q)^{alpha-k} e^{(k^2-k)/(2sigma^2)} erfc((k-z0)/(sqrt2 sigma))/2,
//	A1 = sum_k C(alpha,k) q^{alpha-k} (1-q)^k e^{((alpha-k)^2-(alpha-k))/(2sigma^2)} erfc((z0-(alpha-k))/(sqrt2 sigma))/2,
//
// with generalized binomial coefficients (negative signs for k > alpha are
// kept, so the sum is exact, not an upper bound). Terms are summed in log
// space until, past k > alpha + 1, both terms decrease and lie 36 nats below
// the running sum. ok is false if that does not happen within maxSeriesTerms.
func logASeries(q, sigma, alpha float64) (la float64, ok bool) {
	s2 := 2 * sigma * sigma
	lq, l1q := math.Log(q), math.Log1p(-q)
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	sq := math.Sqrt2 * sigma
	a0, a1 := math.Inf(-1), math.Inf(-1) // sums of positive terms
	n0, n1 := math.Inf(-1), math.Inf(-1) // sums of negative terms
	last0, last1 := math.Inf(1), math.Inf(1)
	lc, sign := 0.0, 1 // log|C(alpha, k)| and its sign, updated incrementally
	for k := 0; k < maxSeriesTerms; k++ {
		kf := float64(k)
		if k > 0 {
			// C(alpha, k) = C(alpha, k-1) (alpha - k + 1) / k.
			r := alpha - kf + 1
			if r < 0 {
				sign = -sign
			}
			lc += math.Log(math.Abs(r)) - math.Log(kf)
		}
		j := alpha - kf
		s0 := lc + kf*lq + j*l1q + (kf*kf-kf)/s2 + logErfc((kf-z0)/sq) - math.Ln2
		s1 := lc + j*lq + kf*l1q + (j*j-j)/s2 + logErfc((z0-j)/sq) - math.Ln2
		if sign > 0 {
			a0, a1 = logAdd(a0, s0), logAdd(a1, s1)
		} else {
			n0, n1 = logAdd(n0, s0), logAdd(n1, s1)
		}
		if kf > alpha+1 && s0 < last0 && s1 < last1 && math.Max(s0, s1) < logAdd(a0, a1)-36 {
			return logAdd(logSub(a0, n0), logSub(a1, n1)), true
		}
		last0, last1 = s0, s1
	}
	return 0, false
}

// maxQuadPoints bounds the trapezoid grid of logAQuad; beyond it the order
// gets RDP +Inf (no bound at that order, always safe).
const maxQuadPoints = 1 << 20

// logAQuad evaluates log A_alpha by the trapezoid rule on the real line.
// The integrand mu0(z) ((1-q) + q e^{(2z-1)/(2sigma^2)})^alpha is analytic in
// the strip |Im z| < pi sigma^2 (where the base first reaches the negative
// real axis), and the trapezoid rule with step h on such a function has
// relative error at most about 2 e^{y^2/(2sigma^2)} / (e^{2 pi y / h} - 1) for
// any y inside the strip. With h = min(sigma/4, 0.3 sigma^2) and
// y = min(0.9 pi sigma^2, 3 sigma) that is below e^{-50}. The range
// [-12 sigma - 1, alpha + 12 sigma + 1] holds both peaks of the integrand
// (near 0 and near alpha); outside it the integrand is at least 70 nats below
// its value at the peaks. To avoid cancellation when A is close to 1, the
// rule is applied to A - 1 = E[(...)^alpha - 1] unless A is large.
func logAQuad(q, sigma, alpha float64) float64 {
	s2 := sigma * sigma
	h := math.Min(sigma/4, 0.3*s2)
	lo, hi := -12*sigma-1, alpha+12*sigma+1
	n := int(math.Ceil((hi - lo) / h))
	if n > maxQuadPoints {
		return math.Inf(1)
	}
	lq := math.Log(q)
	lnorm := -0.5*math.Log(2*math.Pi*s2) + math.Log(h)
	// logBase returns log((1-q) + q e^w) without overflow or cancellation.
	logBase := func(w float64) float64 {
		if w < 0 {
			return math.Log1p(q * math.Expm1(w))
		}
		return w + lq + math.Log1p((1-q)/q*math.Exp(-w))
	}
	// Pass 1: the largest log-integrand, so that pass 2 can sum in linear
	// space without overflow.
	g := func(z float64) float64 { return -z*z/(2*s2) + alpha*logBase((2*z-1)/(2*s2)) }
	gmax := math.Inf(-1)
	for i := 0; i <= n; i += 8 {
		gmax = math.Max(gmax, g(lo+float64(i)*h))
	}
	if gmax+lnorm > 1 {
		// A is large: no cancellation to fear; sum e^{g - gmax}.
		var s float64
		for i := 0; i <= n; i++ {
			s += math.Exp(g(lo+float64(i)*h) - gmax)
		}
		return gmax + lnorm + math.Log(s)
	}
	// A is moderate: sum mu0(z) expm1(alpha log base) = A - 1 directly.
	var am1 float64
	for i := 0; i <= n; i++ {
		z := lo + float64(i)*h
		lb := alpha * logBase((2*z-1)/(2*s2))
		if lb < 700 {
			am1 += math.Exp(-z*z/(2*s2)+lnorm) * math.Expm1(lb)
		} else { // base^alpha is huge: no cancellation, avoid Inf * 0
			am1 += math.Exp(-z*z/(2*s2)+lb+lnorm) - math.Exp(-z*z/(2*s2)+lnorm)
		}
	}
	return math.Log1p(am1)
}

// sampledGaussianRDP returns the RDP of one step of the Poisson-subsampled
// Gaussian mechanism at order alpha (validated input).
func sampledGaussianRDP(q, sigma, alpha float64) float64 {
	if q == 1 {
		return alpha / (2 * sigma * sigma)
	}
	la := logA(q, sigma, alpha)
	if math.IsInf(la, 1) || math.IsNaN(la) {
		return math.Inf(1)
	}
	return math.Max(la, 0) / (alpha - 1)
}

func validateSGM(q, sigma float64) error {
	if err := checks.Finite("q", q); err != nil {
		return err
	}
	if q <= 0 || q > 1 {
		return checks.Invalidf("sampling rate q must be in (0, 1], got %v", q)
	}
	return checks.Positive("noise multiplier sigma", sigma)
}

// SampledGaussianRDP returns, at each order, the Rényi DP of one step of the
// Poisson-subsampled Gaussian mechanism: each record is included with
// probability q, the sum of the included records' contributions (L2 norm at
// most 1) receives N(0, sigma^2 I) noise. Neighbouring data sets differ by
// adding or removing one record. The value is log(A_alpha)/(alpha-1) with
// A_alpha computed exactly for integer orders and by the convergent series of
// Mironov, Talwar and Zhang 2019 (Section 3.3) for fractional ones, with a
// trapezoid-rule quadrature where that series converges too slowly; see logA. q = 1 gives the plain Gaussian alpha/(2 sigma^2).
func SampledGaussianRDP(q, sigma float64, orders []float64) ([]float64, error) {
	if err := validateSGM(q, sigma); err != nil {
		return nil, fmt.Errorf("sampled Gaussian RDP: %w", err)
	}
	out := make([]float64, len(orders))
	if err := validateRDP(orders, out); err != nil {
		return nil, fmt.Errorf("sampled Gaussian RDP: %w", err)
	}
	for i, a := range orders {
		out[i] = sampledGaussianRDP(q, sigma, a)
	}
	return out, nil
}

// curveCache remembers the per-step RDP curve at DefaultRDPOrders for recent
// (q, sigma) pairs, so that a per-round call with the same parameters costs
// one pass over the orders.
var curveCache = struct {
	sync.Mutex
	m map[[2]float64][]float64
}{m: map[[2]float64][]float64{}}

const curveCacheSize = 256

func defaultCurve(q, sigma float64) []float64 {
	key := [2]float64{q, sigma}
	curveCache.Lock()
	c, ok := curveCache.m[key]
	curveCache.Unlock()
	if ok {
		return c
	}
	c = make([]float64, len(defaultOrders))
	for i, a := range defaultOrders {
		c[i] = sampledGaussianRDP(q, sigma, a)
	}
	curveCache.Lock()
	if len(curveCache.m) >= curveCacheSize {
		clear(curveCache.m)
	}
	curveCache.m[key] = c
	curveCache.Unlock()
	return c
}

// SampledGaussianEpsilon returns the epsilon of steps compositions of the
// Poisson-subsampled Gaussian mechanism (sampling rate q, noise multiplier
// sigma, add/remove-one neighbours) at the given delta — the DP-SGD /
// DP-FedAvg accountant of Abadi et al. 2016 and McMahan et al. 2018 in its RDP
// form: per-step RDP by Mironov, Talwar and Zhang 2019, composed additively
// over steps, converted at every order of DefaultRDPOrders by the improved
// conversion (RDPToEpsilon), minimum taken. The result is an upper bound on
// the true epsilon. For DP-FedAvg, q is the client sampling rate, sigma the
// noise multiplier (noise std / clipping norm) and steps the number of rounds.
func SampledGaussianEpsilon(q, sigma float64, steps int, delta float64) (eps float64, err error) {
	if err := validateSGM(q, sigma); err != nil {
		return 0, fmt.Errorf("sampled Gaussian epsilon: %w", err)
	}
	if err := checks.IntAtLeast("steps", steps, 1); err != nil {
		return 0, fmt.Errorf("sampled Gaussian epsilon: %w", err)
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("sampled Gaussian epsilon: %w", err)
	}
	e, _, _ := rdpToEpsilon(defaultOrders, defaultCurve(q, sigma), float64(steps), delta)
	if math.IsInf(e, 1) {
		return 0, fmt.Errorf("sampled Gaussian epsilon: %w", checks.Invalidf(
			"no finite epsilon at any order for q = %v, sigma = %v, steps = %d (noise far too small)", q, sigma, steps))
	}
	return e, nil
}

// Calibration search range for CalibrateNoiseMultiplier.
const (
	minSigma = 1e-3
	maxSigma = 1e5
)

// CalibrateNoiseMultiplier returns the smallest noise multiplier sigma for
// which SampledGaussianEpsilon(q, sigma, steps, delta) <= targetEps, found by
// bisection to a relative width of 1e-6. The guaranteed side is kept: the
// returned sigma always satisfies the target (it is the upper end of the final
// bracket, at most 1e-6 relative above the exact threshold). Epsilon is
// non-increasing in sigma because every per-order RDP is. The search covers
// sigma in [1e-3, 1e5]: if even sigma = 1e-3 meets the target, 1e-3 is
// returned; if sigma = 1e5 does not, an error says the target is unreachable.
func CalibrateNoiseMultiplier(targetEps, delta, q float64, steps int) (float64, error) {
	if err := checks.Epsilon("target epsilon", targetEps); err != nil {
		return 0, fmt.Errorf("calibrate noise multiplier: %w", err)
	}
	if err := validateSGM(q, 1); err != nil {
		return 0, fmt.Errorf("calibrate noise multiplier: %w", err)
	}
	if err := checks.IntAtLeast("steps", steps, 1); err != nil {
		return 0, fmt.Errorf("calibrate noise multiplier: %w", err)
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("calibrate noise multiplier: %w", err)
	}
	eps := func(s float64) float64 {
		curve := make([]float64, len(defaultOrders))
		for i, a := range defaultOrders {
			curve[i] = sampledGaussianRDP(q, s, a)
		}
		e, _, _ := rdpToEpsilon(defaultOrders, curve, float64(steps), delta)
		return e
	}
	ok := func(s float64) bool { return eps(s) <= targetEps }
	// Bracket [lo, hi] with ok(hi) and !ok(lo), starting from sigma = 1.
	lo, hi := 1.0, 1.0
	if ok(hi) {
		for ok(lo) {
			if lo <= minSigma {
				return minSigma, nil
			}
			hi, lo = lo, math.Max(lo/2, minSigma)
		}
	} else {
		for !ok(hi) {
			if hi >= maxSigma {
				return 0, fmt.Errorf("calibrate noise multiplier: %w", checks.Invalidf(
					"target epsilon %v is not reached even with sigma = %v (delta = %v, q = %v, steps = %d)", targetEps, maxSigma, delta, q, steps))
			}
			lo, hi = hi, math.Min(hi*2, maxSigma)
		}
	}
	for hi-lo > 1e-6*hi {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
