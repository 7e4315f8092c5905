package pld

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// SkellamGDP is a certified Gaussian-DP statement for integer shifts of
// symmetric Skellam noise: see SkellamUnitGDP for the theorem and its
// proof.
type SkellamGDP struct {
	// Variance is the Skellam variance x (each coordinate Poisson(x/2) -
	// Poisson(x/2)).
	Variance float64
	// Mu is the certified unit-shift parameter: for the ideal noise Sk'
	// (below) and every integer s, T(Sk' + s, Sk') >= G_{Mu |s|}, and a
	// d-dimensional integer shift v of independent Sk' coordinates is
	// (Mu ||v||_2)-GDP.
	Mu float64
	// Tail bounds the total variation distance between the Skellam noise
	// and the ideal noise Sk' of one coordinate.
	Tail float64
	// Cut is the index B beyond which Sk' has a geometric tail.
	Cut int
}

// skellamSlack is the relative slack every interval endpoint is widened
// by after a few floating-point operations (8 units of round-off: each
// step has at most three correctly rounded operations).
const skellamSlack = 8 * 0x1p-53

// skellamPhiErr is the relative error allowed for Phi(y) = erfc(-y/sqrt2)/2
// evaluated with math.Erfc at |y| <= skellamMaxZ: Go's Erfc is the FreeBSD
// msun erfc, accurate to about an ulp, and the rounding of the argument
// -y/sqrt2 moves erfc relatively by at most 2 z^2 2^-53 <= 1.7e-13 at
// z = y/sqrt2 <= 28; 1e-12 covers both with margin.
const skellamPhiErr = 1e-12

// skellamMaxZ bounds |y| where Phi is evaluated (Phi(-38) is about 1e-316).
const skellamMaxZ = 37.0

// skellamMaxCut bounds the number of pmf points the certificate walks
// (two brackets of 16 bytes each per point: 64 MB at the cap, which a
// variance of about 2.5e10 reaches at tail 1e-34).
const skellamMaxCut = 2_000_000

// SkellamUnitGDP returns a certified unit-shift Gaussian-DP parameter of
// symmetric Skellam noise of variance x, for an ideal noise whose total
// variation distance from the Skellam is at most tail per coordinate.
//
// Theorem. Let p_k = e^{-x} I_k(x) be the Skellam pmf and, for a cut B,
// Sk' the symmetric distribution with p'_k proportional to p_k for
// |k| <= B and to p_B rho^{|k|-B} beyond, rho = e^{-asinh(B/x)}. Then
// TV(Sk, Sk') <= 2 G with G = p_B rho/(1-rho) (returned as Tail), and
// for every integer s, T(Sk' + s, Sk') >= G_{Mu |s|} (Dong, Roth and Su,
// "Gaussian differential privacy", JRSS-B 2022: tradeoff functions, G_mu
// the tradeoff of N(0,1) vs N(mu,1)), with Mu the largest certified
// increment of u(j) = Phi^{-1}(F'(j)), F' the CDF of Sk'.
//
// Proof.
//
//  1. Ratios. r_k = I_{k+1}(x)/I_k(x) satisfies r_k = 1/(2(k+1)/x + r_{k+1})
//     (the recurrence I_{v-1} - I_{v+1} = (2v/x) I_v) and is non-increasing
//     in k >= 0: the Skellam pmf is log-concave, being the convolution of
//     two log-concave sequences (the Poisson pmf and its reflection;
//     log-concavity is preserved by convolution: Hoggar 1974, see Saumard
//     and Wellner, Statistics Surveys 2014, Section 4); equivalently
//     Turán's inequality I_k^2 >= I_{k-1} I_{k+1}. With r_{k+1} <= r_k
//     the recurrence gives r_k^2 + (2(k+1)/x) r_k >= 1, i.e. r_k >=
//     e^{-asinh((k+1)/x)} (Amos's lower bound), and then r_k <=
//     1/(2(k+1)/x + e^{-asinh((k+2)/x)}). The recurrence is run backwards
//     from beyond B on these brackets in interval arithmetic (every
//     endpoint widened by skellamSlack), which contracts them to a few
//     units of round-off.
//  2. Sk' is log-concave: its ratios are r_0 >= ... >= r_{B-1} >= rho >=
//     rho ..., since r_B <= 1/(2(B+1)/x + e^{-asinh((B+2)/x)}) <=
//     e^{-asinh(B/x)} = rho <= r_{B-1} (the middle inequality is checked
//     numerically with certified bounds, and holds analytically: e^{-2A}/x
//     <= 1/sqrt(x^2 + (B+1)^2) with A = asinh((B+1)/x)). As rho >= r_k for
//     k >= B, the geometric tail G is at least the Skellam's tail beyond B,
//     and TV(Sk, Sk') <= (1/2)(2(S_{B+1} + G) + 2(G - S_{B+1})) = 2G (the
//     tails, then the renormalisation 1 + 2(G - S_{B+1})).
//  3. Threshold tests are optimal. For s >= 1 the likelihood ratio
//     p'(z-s)/p'(z) of Sk'+s against Sk' is non-decreasing in z
//     (log-concavity), so by the Neyman-Pearson lemma every optimal test
//     rejects for z >= k, randomising on a level set, and the tradeoff
//     function T(Sk'+s, Sk') is the piecewise-linear interpolation of the
//     points (alpha_k, beta_k) = (1 - F'(k-1), F'(k-1-s)). G_mu is convex,
//     so T >= G_mu everywhere as soon as beta_k >= G_mu(alpha_k) =
//     Phi(Phi^{-1}(F'(k-1)) - mu) at every k, i.e. u(k-1) - u(k-1-s) <= mu.
//     Telescoping, u(j) - u(j-s) is a sum of s unit increments, so
//     mu = s Mu suffices with Mu = sup_j u(j) - u(j-1). Negative s follow
//     by the reflection z -> -z (Sk' is symmetric).
//  4. The supremum. By symmetry u(-j-1) = -u(j), so the increment at j
//     equals the increment at -j and only j = -k, k >= 0, is needed:
//     u(-k) - u(-k-1) = U(t - a) - U(t) with t = -log S'_{k+1},
//     a = log(1 + h_k), S'_k = P[Sk' >= k] and h_k = p'_k/S'_{k+1}, where
//     U(t) = Phi^{-1}(e^{-t}) is convex and decreasing (the inverse of the
//     convex decreasing -log Phi, by the log-concavity of Phi). So the
//     increment is non-increasing in t and increasing in a: it is at most
//     its value at an upper bound of S'_{k+1} and an upper bound of h_k.
//     For k >= B (geometric part) h_k = (1-rho)/rho is constant and
//     S'_{k+1} decreases, so k = B bounds them all; the k <= B are
//     evaluated one by one with certified bounds: h_k = 1/W_k with W_k =
//     r_k (1 + W_{k+1}), W_B = rho/(1-rho), and S'_{k+1} = p'_k W_k with
//     p'_k <= (prod_{i<k} r_i)/(1 + 2 W_0). The quantile Phi^{-1} is
//     bracketed by certified evaluations of Phi (skellamPhiErr).
//
// The multi-dimensional mechanism. For v in Z^d and independent Sk'
// coordinates, Blackwell's theorem (Dong, Roth and Su, Theorem 2.10) gives
// for each coordinate a randomised map K_i with K_i(N(Mu|v_i|, 1)) =
// Sk' + v_i and K_i(N(0,1)) = Sk'; applied coordinatewise to N(w, I_d),
// w_i = Mu |v_i|, which is itself a post-processing of N(||w||_2, 1) vs
// N(0, 1) (rotate), the pair (Sk'^d + v, Sk'^d) is a post-processing of
// the Gaussian pair of mean Mu ||v||_2. Cost: O(B + x/B) operations and
// 2B quantile evaluations (B is about 12 standard deviations at tail
// 1e-34).
func SkellamUnitGDP(x, tail float64) (SkellamGDP, error) {
	if !(x >= 1e-3) || math.IsInf(x, 0) || x > 1e15 {
		return SkellamGDP{}, fmt.Errorf("Skellam GDP: %w", checks.Invalidf("the variance must be in [1e-3, 1e15], got %v", x))
	}
	if !(tail > 1e-290 && tail < 0.5) {
		return SkellamGDP{}, fmt.Errorf("Skellam GDP: %w", checks.Invalidf("the tail budget must be in (1e-290, 0.5), got %v", tail))
	}
	// Cut: about z standard deviations with Phi(-z) = tail/ (a few), then
	// raised until the certified tail fits.
	z := gaussTailZ(tail / 4)
	b := int(math.Ceil(z*math.Sqrt(x))) + 2
	for {
		if b > skellamMaxCut {
			return SkellamGDP{}, fmt.Errorf("Skellam GDP: %w", checks.Invalidf("variance %v needs a cut beyond %d points", x, skellamMaxCut))
		}
		g, ok, err := skellamCertify(x, b, tail)
		if err != nil {
			return SkellamGDP{}, err
		}
		if ok {
			return g, nil
		}
		b += b/8 + 1
	}
}

// interval is a closed interval [lo, hi] of positive reals.
type interval struct{ lo, hi float64 }

// widen returns [lo(1-e), hi(1+e)].
func widen(lo, hi float64) interval {
	return interval{lo * (1 - skellamSlack), hi * (1 + skellamSlack)}
}

// amosLower is e^{-asinh(t/x)} = x/(t + sqrt(t^2 + x^2)), a lower bound
// on r_{t-1}, rounded down.
func amosLower(t, x float64) float64 {
	return x / (t + math.Hypot(t, x)) * (1 - skellamSlack)
}

// skellamRatios returns certified brackets of r_k for k = 0..b (b+1
// values), by the backward recurrence from well beyond b (step 1 of
// SkellamUnitGDP's proof).
func skellamRatios(x float64, b int) ([]interval, error) {
	// The recurrence contracts by about r^2 = e^{-2 asinh(k/x)} per step:
	// 40/(2 asinh(b/x)) steps take the initial bracket to round-off.
	extra := int(math.Min(4e6, 40/(2*math.Asinh(float64(b+1)/x)))) + 64
	k := b + extra
	cur := interval{amosLower(float64(k+1), x), 1 / (2*float64(k+1)/x + amosLower(float64(k+2), x)) * (1 + skellamSlack)}
	out := make([]interval, b+1)
	for ; k > 0; k-- {
		if k <= b {
			out[k] = cur
		}
		// r_{k-1} = 1/(2k/x + r_k): decreasing in r_k.
		c := 2 * float64(k) / x
		next := widen(1/(c+cur.hi), 1/(c+cur.lo))
		// intersect with the direct brackets
		if l := amosLower(float64(k), x); l > next.lo {
			next.lo = l
		}
		if u := 1 / (c + amosLower(float64(k+1), x)) * (1 + skellamSlack); u < next.hi {
			next.hi = u
		}
		if !(next.lo > 0 && next.lo <= next.hi) {
			return nil, fmt.Errorf("Skellam GDP: the bracket of r_%d is empty or not positive [%v, %v] (variance %v)", k-1, next.lo, next.hi, x)
		}
		cur = next
	}
	out[0] = cur
	return out, nil
}

// skellamCertify runs the certificate at cut b; ok is false when the
// tail 2G exceeds the budget (the caller raises b).
func skellamCertify(x float64, b int, tail float64) (SkellamGDP, bool, error) {
	r, err := skellamRatios(x, b)
	if err != nil {
		return SkellamGDP{}, false, err
	}
	// rho = e^{-asinh(B/x)}: check r_B <= rho <= r_{B-1} (step 2).
	rho := x / (float64(b) + math.Hypot(float64(b), x))
	if !(r[b].hi <= rho && rho <= r[b-1].lo) {
		return SkellamGDP{}, false, fmt.Errorf("Skellam GDP: the geometric tail ratio %v is not certified in [%v, %v] at cut %d (variance %v)", rho, r[b].hi, r[b-1].lo, b, x)
	}
	// W_k brackets, k = b..0, and V_0 = sum_{i=1}^{b} p_i/p_0 (for p_0).
	w := make([]interval, b+1)
	wb := rho / (1 - rho)
	w[b] = widen(wb, wb)
	v := interval{0, 0}
	for k := b - 1; k >= 0; k-- {
		w[k] = widen(r[k].lo*(1+w[k+1].lo), r[k].hi*(1+w[k+1].hi))
		v = widen(r[k].lo*(1+v.lo), r[k].hi*(1+v.hi))
	}
	// Tail: G = p_B rho/(1-rho) with p_B <= p_0 prod r^hi, p_0 <= 1/(1 + 2 V_0).
	// Log-space sums carry an absolute slack.
	logProd := 0.0 // upper bound of sum_{i<k} log r_i
	logSlack := func(s, t float64) float64 { return s + t + 4*0x1p-53*(math.Abs(s)+math.Abs(t)) + 1e-300 }
	for k := 0; k < b; k++ {
		logProd = logSlack(logProd, math.Log(r[k].hi))
	}
	logP0 := -math.Log1p(2*v.lo) + 4*0x1p-53*math.Abs(math.Log1p(2*v.lo))
	logG := logP0 + logProd + math.Log(w[b].hi) + 1e-12
	tv := 2 * math.Exp(logG) * (1 + 1e-12)
	if !(tv <= tail) {
		return SkellamGDP{}, false, nil
	}
	// Increments (step 4), with S'_{k+1} <= (prod_{i<k} r_i) W_k / (1 + 2 W_0).
	logNorm := -math.Log1p(2*w[0].lo) + 4*0x1p-53*math.Abs(math.Log1p(2*w[0].lo))
	mu := 0.0
	logProd = 0
	start := 0.0
	for k := 0; k <= b; k++ {
		logS := logSlack(logSlack(logProd, math.Log(w[k].hi)), logNorm)
		h := 1 / w[k].lo * (1 + skellamSlack)
		d, err := gaussIncrement(logS, h, &start)
		if err != nil {
			return SkellamGDP{}, false, fmt.Errorf("Skellam GDP: variance %v, k = %d: %w", x, k, err)
		}
		mu = math.Max(mu, d)
		if k < b {
			logProd = logSlack(logProd, math.Log(r[k].hi))
		}
	}
	return SkellamGDP{Variance: x, Mu: mu, Tail: tv, Cut: b}, true, nil
}

// gaussIncrement returns an upper bound on Phi^{-1}(S (1+h)) - Phi^{-1}(S)
// for the real number S = e^{logS} (rounded up: any S at least the true
// one will do, see step 4), S (1+h) < 1; *start is a warm start for the
// quantiles (the previous increment's lower quantile), updated.
func gaussIncrement(logS, h float64, start *float64) (float64, error) {
	// s >= e^{logS} and top >= s (1+h) despite the roundings of Exp and
	// of the products (a relative unit each).
	s := math.Exp(logS) * (1 + skellamSlack)
	top := s * (1 + h) * (1 + skellamSlack)
	if !(top < 1) || !(s > 0) {
		return 0, fmt.Errorf("the increment at S = %v, h = %v is not certified (S(1+h) >= 1 or S underflows)", s, h)
	}
	hi, err := quantileUp(top, *start)
	if err != nil {
		return 0, err
	}
	lo, err := quantileDown(s, hi)
	if err != nil {
		return 0, err
	}
	*start = lo
	return (hi - lo) * (1 + skellamSlack), nil
}

// phiCertified returns Phi(y) computed with math.Erfc; the true value is
// within a relative skellamPhiErr of it.
func phiCertified(y float64) float64 { return 0.5 * math.Erfc(-y/math.Sqrt2) }

// quantileUp returns y with Phi(y) >= p (so Phi^{-1}(p) <= y); start is
// quantileGuess's warm start.
func quantileUp(p, start float64) (float64, error) {
	y := quantileGuess(p, start)
	step := 1e-13 * math.Max(1, math.Abs(y))
	for i := 0; phiCertified(y)*(1-skellamPhiErr) < p; i++ {
		if i > 200 || math.Abs(y) > skellamMaxZ {
			return 0, fmt.Errorf("no certified Gaussian quantile above %v", p)
		}
		y += step
		step *= 2
	}
	if math.Abs(y) > skellamMaxZ {
		return 0, fmt.Errorf("Gaussian quantile of %v is beyond %v", p, skellamMaxZ)
	}
	return y, nil
}

// quantileDown returns y with Phi(y) <= p (so Phi^{-1}(p) >= y); start
// as for quantileUp.
func quantileDown(p, start float64) (float64, error) {
	y := quantileGuess(p, start)
	step := 1e-13 * math.Max(1, math.Abs(y))
	for i := 0; phiCertified(y)*(1+skellamPhiErr) > p; i++ {
		if i > 200 || math.Abs(y) > skellamMaxZ {
			return 0, fmt.Errorf("no certified Gaussian quantile below %v", p)
		}
		y -= step
		step *= 2
	}
	if math.Abs(y) > skellamMaxZ {
		return 0, fmt.Errorf("Gaussian quantile of %v is beyond %v", p, skellamMaxZ)
	}
	return y, nil
}

// quantileGuess approximates Phi^{-1}(p) for p in (0, 1), from start if
// it is a negative value above -sqrt(-2 log p) (a neighbouring quantile);
// the callers
// certify and correct it. math.Erfcinv loses its relative accuracy below
// about 1e-3 (it returns -Inf below 1e-17), so small p take Newton's
// method on log Phi from -sqrt(-2 log p), which is left of the root; log
// Phi is concave and increasing, so the iterates increase to it.
func quantileGuess(p, start float64) float64 {
	if p >= 0.01 {
		return -math.Sqrt2 * math.Erfcinv(2*p)
	}
	lp := math.Log(p)
	y := -math.Sqrt(-2 * lp)
	if start < 0 && start > y {
		y = start // a nearby quantile: a warm start
	}
	for range 60 {
		ph := phiCertified(y)
		f := math.Log(ph) - lp
		// phi/Phi at y < 0, from the density and Erfc
		g := math.Exp(-y*y/2) / math.Sqrt(2*math.Pi) / ph
		step := f / g
		y -= step
		if math.Abs(step) < 1e-15*math.Abs(y) {
			break
		}
	}
	return y
}
