package mechanism

import (
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// ClipLaplace is the Clip-Laplace mechanism CLap(x, λ, A) of APES
// (Liu et al., AAAI 2023, Definition 4): the output has density
//
//	p(z | x) = exp(-|z - x|/λ) / (2λ·S(x))   on [-A, A], 0 elsewhere,
//	S(x) = 1 - ½·exp((-A + x)/λ) - ½·exp((-A - x)/λ).
//
// (The text of Definition 4 prints the first exponent twice; the second one
// is (-A - x)/λ, as the normalisation requires.)
//
// Guarantee (APES Theorem 1): with λ = Δf/ε, inputs x in [-Δf/2, Δf/2] and
// A >= Δf/2, every pair of inputs is ε-indistinguishable, i.e. the mechanism
// is ε-LDP on that input interval. In APES, Δf = 2C and A = C, so the input
// interval and the output range are both [-C, C]. The theorem needs the
// input interval to be the whole [-Δf/2, Δf/2]: truncating a Laplace whose
// sensitivity is smaller than the input range is not ε-DP, because the
// normaliser S(x) changes with x (Holohan et al. 2018); TestClipLaplace-
// SmallSensitivityIsNotPrivate shows a loss of up to 1.8ε. That is why the
// constructor takes the sensitivity and fixes the input interval from it.
//
// Sampling is exact, by one of two rejection samplers chosen from r = 2A/λ
// alone (clapUniformMax): for r <= 1.5 (APES and S-APES clients with
// per-dimension ε <= 1.5) a uniform proposal on [-A, A] accepted with
// probability e^{-|y-x|/λ}, tested against a recycled exponential in
// Perturb and a squeezed uniform in Sample; for larger r the Laplace
// proposal with a recycled exponential. The exponentials come from the
// ziggurat rand.ExpFloat64 in the plain variant and from the full-precision
// ziggurat expZig in the secure one. With Secure set, outputs are snapped to
// a power-of-two grid in (m·2^-12, m·2^-11], m = min(λ, A), and clamped to
// [-A, A]; both are post-processing, and the bias this adds to Mean is
// below the grid step. The uniform proposals lie on a fixed grid of odd
// multiples of A·2^-53 that does not depend on x, so even before snapping
// the set of reachable outputs is the same for every input; each snapping
// cell holds at least 2^40 of those points, and the acceptance
// probabilities are right to a relative 2^-40 (clapUniformVec), so every
// cell's probability is within a relative 2^-38 of the exact one and the
// excess loss of the secure variant is below 2^-36 (for r > 1.5 the
// Laplace-proposal sampler has the bounds of the secure Laplace).
type ClipLaplace struct {
	Lambda float64 // λ = Δf/ε
	Bound  float64 // A: outputs lie in [-A, A]
	// InputBound is Δf/2: inputs must lie in [-InputBound, InputBound].
	// Zero means Bound (the APES setting Δf = 2A).
	InputBound float64
	Secure     bool // snap outputs to the power-of-two grid
}

// NewClipLaplace returns CLap with λ = sensitivity/epsilon, output range
// [-bound, bound] and input range [-sensitivity/2, sensitivity/2]. It
// requires bound >= sensitivity/2 (APES Definition 4: A >= Δf/2).
// For APES pass sensitivity = 2C and bound = C; for the S-APES perturbation
// CLap(·, dΔf/ε, C) pass epsilon/d.
func NewClipLaplace(epsilon, sensitivity, bound float64) (ClipLaplace, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return ClipLaplace{}, err
	}
	if err := checks.Positive("sensitivity", sensitivity); err != nil {
		return ClipLaplace{}, err
	}
	if err := checks.Positive("bound", bound); err != nil {
		return ClipLaplace{}, err
	}
	if bound < sensitivity/2 {
		return ClipLaplace{}, checks.Invalidf("bound A = %v must be >= sensitivity/2 = %v (APES Definition 4)", bound, sensitivity/2)
	}
	lam := sensitivity / epsilon
	if err := checkScale("clip-laplace lambda", lam); err != nil {
		return ClipLaplace{}, err
	}
	return ClipLaplace{Lambda: lam, Bound: bound, InputBound: sensitivity / 2}, nil
}

func (m ClipLaplace) inputBound() float64 {
	if m.InputBound == 0 {
		return m.Bound
	}
	return m.InputBound
}

// Sample returns one draw of CLap(x, λ, A). It panics if x is outside
// [-InputBound, InputBound] (the caller forgot to clip) or NaN.
func (m ClipLaplace) Sample(r *rand.Rand, x float64) float64 {
	if c := m.inputBound(); !(x >= -c && x <= c) {
		panic(checks.Invalidf("clip-laplace input %v is outside [%v, %v]: clip the gradient to the clip bound first", x, -c, c))
	}
	lam, A := m.Lambda, m.Bound
	var z float64
	if clapUniform(lam, A) {
		z = clapUniformOne(r, x, 1/lam, A)
	} else {
		z = clapReject(r, clapExp(r, m.Secure), x, lam, 1/lam, A)
	}
	if m.Secure {
		g := clapGrid(lam, A)
		return snapClamp(z, g, gridInv(g), A)
	}
	return z
}

// Pad returns one dummy value CLap(0, λ, A): the padding of S-APES
// (Algorithm 2) for the coordinates outside the post-top-b set.
func (m ClipLaplace) Pad(r *rand.Rand) float64 { return m.Sample(r, 0) }

// Perturb replaces every x[i] by a draw of CLap(x[i], λ, A), in place and
// without allocating. If any entry is outside [-InputBound, InputBound] or
// NaN it returns an error naming the first one and leaves x unchanged.
func (m ClipLaplace) Perturb(r *rand.Rand, x []float64) error {
	c := m.inputBound()
	if err := checks.InRange("clip-laplace input", x, -c, c, "clip the update to the clip bound C first"); err != nil {
		return err
	}
	lam, A := m.Lambda, m.Bound
	inv := 1 / lam
	if !m.Secure {
		if clapUniform(lam, A) {
			clapUniformVec(r, x, inv, A, false, 0, 0)
			return nil
		}
		for i, v := range x {
			x[i] = clapReject(r, r.ExpFloat64(), v, lam, inv, A)
		}
		return nil
	}
	g := clapGrid(lam, A)
	ginv := gridInv(g)
	if clapUniform(lam, A) {
		clapUniformVec(r, x, inv, A, true, g, ginv)
		return nil
	}
	for i, v := range x {
		e, _ := expZig(r)
		x[i] = snapClamp(clapReject(r, e, v, lam, inv, A), g, ginv, A)
	}
	return nil
}

// clapUniformMax is the largest r = 2A/λ for which Clip-Laplace samples
// by rejection from the uniform proposal on [-A, A]; above it the Laplace
// proposal is used. The choice depends on λ and A only (never on x), and
// both samplers are exact. The acceptance rate of the uniform proposal is
// the mean of e^{-|y-x|/λ} over y, at least (1-e^-r)/r (at x = ±A):
// 0.86 at r = 1/2, 0.63 at r = 1, 0.43 at r = 2. That of the Laplace
// proposal is S(x) >= (1-e^-r)/2: 0.20, 0.32, 0.43, and 1 - e^{-r/2} at
// x = 0. The uniform proposal is cheaper per proposal (one word, no
// exponential unless rejected); measured per sample (docs/PERFORMANCE.md, "Local randomizers")
// it is 7x faster at r = 0.5, 1.4x-2.4x at r = 1, about even at r = 1.5
// to 2 and slower above, hence the crossover at 1.5.
const clapUniformMax = 1.5

// clapUniform reports whether CLap(., λ, A) uses the uniform proposal.
// In APES (A = Δf/2, λ = Δf/ε) r is the per-dimension ε, so every APES
// and S-APES client with ε <= 1.5 does.
func clapUniform(lam, A float64) bool { return 2*A <= clapUniformMax*lam }

// clapExp returns an Exp(1) variate: rand.ExpFloat64 in the plain variant,
// the full-precision expZig in the secure one.
func clapExp(r *rand.Rand, secure bool) float64 {
	if secure {
		e, _ := expZig(r)
		return e
	}
	return r.ExpFloat64()
}

// clapPropose maps a random word to a uniform proposal on [-A, A]: A times
// an odd multiple of 2^-53 in (-1, 1), from the top 54 bits of w. The grid
// is symmetric and fixed (it does not depend on x), the product stays in
// [-A, A] without clamping, and every snapping cell of the secure variant
// (width >= min(λ, A)·2^-12) holds at least 2^40 grid points. It reads bits
// 11-63 of w only.
func clapPropose(w uint64, A float64) float64 {
	return A * (float64(int64(w>>10|1)-1<<53) * 0x1p-53)
}

// clapUniformVec replaces every x[i] by a draw of CLap(x[i], λ, A), inv =
// 1/λ, by rejection from the uniform proposal y on [-A, A], accepted with
// probability e^{-t}, t = |y - x|/λ: the accepted y has density
// proportional to e^{-|y-x|/λ} on [-A, A], which is Definition 4.
//
// The accept test is E > t for an exponential E ~ Exp(1), P(E > t) = e^-t.
// On acceptance, E - t is again Exp(1) and independent of everything drawn
// so far (memorylessness: P(E - t > s | E > t) = e^-s), so it is carried to
// the next proposal, also across coordinates; a fresh E is drawn only after
// a rejection. So a draw costs one word per proposal plus one exponential
// per rejection (rejection rate at most 1 - (1-e^-r)/r, about r/2 at
// x = ±A and r/4 at x = 0 for small r). Everything stays deterministic
// given the generator.
//
// Accuracy: in the secure variant E comes from expZig (exact up to float64
// rounding), and the recycled E - t accumulates one rounding per accepted
// coordinate, an absolute error below 2^-40 for 10^4 coordinates between
// rejections, against acceptance probabilities above e^-1.5. In the plain
// variant E comes from rand.ExpFloat64, whose survival function is right
// to a relative 2^-24·(1+E) or so (32-bit positions, float32 tables), which
// carries over to the acceptance probabilities and so to the density: fine
// for simulation, and the reason the secure variant does not use it.
//
// In the secure variant each output is also snapped to the grid g (ginv =
// 1/g) and clamped, as in Sample.
func clapUniformVec(r *rand.Rand, x []float64, inv, A float64, secure bool, g, ginv float64) {
	e := clapExp(r, secure)
	for i, v := range x {
		for {
			y := clapPropose(r.Uint64(), A)
			t := math.Abs(y-v) * inv
			if t < e {
				e -= t
				if secure {
					y = snapClamp(y, g, ginv, A)
				}
				x[i] = y
				break
			}
			e = clapExp(r, secure)
		}
	}
}

// clapUniformOne is one draw of the uniform-proposal sampler, for Sample,
// where no exponential can be carried between calls: it accepts y when a
// uniform u in [0, 1) is below e^{-t}. The squeeze 1 - t <= e^{-t} <= 1 - t
// + t²/2 decides most proposals without math.Exp, and it is first tried on
// the 10 bits of the proposal's word that y leaves unused (bits 0-9, y uses
// 11-63), which fix u to an interval [k, k + 2^-10): only when that interval
// straddles 1 - t, or u may lie in the band of width t²/2, is u completed
// with 53 more bits from a second word (probability about 2^-10 + t²/2).
// So a proposal costs one word, like in Perturb. With acceptance
// probabilities above e^-1.5, u's absolute resolution 2^-53 gives them to a
// relative 2^-50, so this needs no uniformFull even in the secure variant.
func clapUniformOne(r *rand.Rand, x, inv, A float64) float64 {
	for {
		w := r.Uint64()
		y := clapPropose(w, A)
		t := math.Abs(y-x) * inv
		lo := 1 - t // lo <= e^-t
		k := float64(w&0x3ff) * 0x1p-10
		if k+0x1p-10 <= lo {
			return y // u < k + 2^-10 <= lo
		}
		hi := lo + 0.5*t*t // e^-t <= hi
		if k >= hi {
			continue // u >= k >= hi
		}
		u := k + float64(int64(r.Uint64()>>11))*0x1p-63
		if u < lo || (u < hi && u < math.Exp(-t)) {
			return y
		}
	}
}

// clapReject samples the Laplace(x, λ) proposal as a uniform side and an
// offset λ·E, E ~ Exp(1), and rejects offsets beyond the bound on that side.
// A rejected E exceeds that side's length L (in units of λ), and by
// memorylessness E - L is again Exp(1) and independent of the past, so it is
// reused for the next proposal: one exponential per draw, plus one random
// bit per proposal (expected 1/S(x) <= 2/(1-e^-r) proposals, at most 2.6
// when r = 2A/λ > clapUniformMax). The caller supplies e (clapExp).
func clapReject(r *rand.Rand, e, x, lam, inv, A float64) float64 {
	a := (x + A) * inv // length of the left side; inv = 1/λ
	b := (A - x) * inv // length of the right side
	for {
		sides := r.Uint64()
		for range 64 {
			// Branch-free side choice: sgn = -1 (left, length a) or +1
			// (right, length b); only the accept test branches.
			bit := float64(sides & 1)
			l := a + bit*(b-a)
			if e < l {
				return clamp(x+(2*bit-1)*lam*e, A)
			}
			e -= l
			sides >>= 1
		}
	}
}

// clapGrid is the snapping grid of the secure variant: it follows
// min(λ, A), so that a huge λ (S-APES) does not make the grid coarser than
// the output range.
func clapGrid(lam, A float64) float64 {
	if lam < A {
		return gridFor(lam)
	}
	return gridFor(A)
}

func snapClamp(z, g, inv, A float64) float64 {
	return clamp(snap(z, g, inv), A)
}

// Mean returns E[CLap(x, λ, A)], APES Eq. (1):
//
//	E = ((A + λ)(e1 - e2) + 2x) / (2 - e1 - e2),  e1 = e^{(-A-x)/λ}, e2 = e^{(-A+x)/λ}.
//
// Written literally it cancels catastrophically when λ >> A (both e1, e2 -> 1;
// S-APES has λ/A = 2d/ε in the thousands), so it is evaluated in the
// equivalent form λ·N/D with a = A/λ, t = x/λ,
//
//	N = t - (1+a)e^-a·sinh t,   D = 1 - e^-a·cosh t,
//
// with D from expm1 and, for a < 1/2, N = g(a)·sinh t - (sinh t - t),
// g(a) = 1 - (1+a)e^-a, both by series. TestClipLaplaceMeanMatchesEq1 checks
// the two forms agree where the literal one is accurate, and the empirical
// mean of samples.
func (m ClipLaplace) Mean(x float64) float64 { return clapMean(x, m.Lambda, m.Bound) }

func clapMean(x, lam, A float64) float64 {
	a, t := A/lam, x/lam
	n, d, _, _ := clapND(a, t)
	return lam * n / d
}

// clapMeanSlope returns Mean(x) and d Mean/dx. The slope is positive inside
// (-A, A) and exactly 0 at x = ±A when the input range is the output range
// (at t = a, D' = -D and N + N' = 0, so N'D - ND' = D(N' + N) = 0).
func clapMeanSlope(x, lam, A float64) (mean, slope float64) {
	a, t := A/lam, x/lam
	n, d, dn, dd := clapND(a, t)
	return lam * n / d, (dn*d - n*dd) / (d * d)
}

// clapND returns N(t), D(t) and their t-derivatives for a = A/λ, t = x/λ.
func clapND(a, t float64) (n, d, dn, dd float64) {
	ep, em := math.Expm1(t-a), math.Expm1(-t-a)
	d = -0.5 * (ep + em)
	dd = -0.5 * (ep - em) // -e^-a·sinh t
	if a < 0.5 {
		g := gOfA(a)
		sh := math.Sinh(t)
		s2 := math.Sinh(0.5 * t)
		n = g*sh - sinhMinusX(t)
		dn = g*math.Cosh(t) - 2*s2*s2 // g·cosh t - (cosh t - 1)
		return
	}
	c := 0.5 * (1 + a)
	e1, e2 := math.Exp(t-a), math.Exp(-t-a)
	n = t - c*(e1-e2)
	dn = 1 - c*(e1+e2)
	return
}

// gOfA is 1 - (1+a)e^-a = Σ_{k>=2} (-1)^k (k-1) a^k / k!, for 0 <= a < 1/2.
func gOfA(a float64) float64 {
	s, term := 0.0, a // term = a^k/k!
	for k := 2; k < 40; k++ {
		term *= a / float64(k)
		c := float64(k-1) * term
		if k%2 == 1 {
			c = -c
		}
		s += c
		if term < 1e-18*s {
			break
		}
	}
	return s
}

// sinhMinusX is sinh t - t by its series, for |t| < 1/2.
func sinhMinusX(t float64) float64 {
	t2 := t * t
	s, term := 0.0, t
	for k := 3; k < 40; k += 2 {
		term *= t2 / float64((k-1)*k)
		s += term
		if math.Abs(term) <= 1e-18*math.Abs(s) {
			break
		}
	}
	return s
}

// Variance returns Var[CLap(x, λ, A)] in closed form, from the moments
// ∫ u^k e^-u du (lower incomplete gamma functions) of the two one-sided
// exponentials around x.
func (m ClipLaplace) Variance(x float64) float64 {
	mean, second := clapMoments(x, m.Lambda, m.Bound)
	v := second - mean*mean
	if v < 0 {
		return 0
	}
	return v
}

// clapMoments returns E[z] and E[z²] by direct integration of the two
// exponential pieces (an independent route to APES Eq. (1)).
func clapMoments(x, lam, A float64) (mean, second float64) {
	t, a := x/lam, A/lam
	l, r := t+a, a-t // lengths of the left and right pieces, in units of λ
	g0l, g1l, g2l := lowerGamma012(l)
	g0r, g1r, g2r := lowerGamma012(r)
	den := g0l + g0r
	m1 := (t*den + g1r - g1l) / den
	m2 := (t*t*den + 2*t*(g1r-g1l) + g2l + g2r) / den
	return lam * m1, lam * lam * m2
}

// lowerGamma012 returns ∫_0^s u^k e^-u du for k = 0, 1, 2.
func lowerGamma012(s float64) (g0, g1, g2 float64) {
	if s < 2 {
		// γ(k+1, s) = s^{k+1} Σ_m (-s)^m / (m! (k+1+m))
		var s0, s1, s2 float64
		term := 1.0 // (-s)^m/m!
		for m := 0; m < 80; m++ {
			fm := float64(m)
			s0 += term / (fm + 1)
			s1 += term / (fm + 2)
			s2 += term / (fm + 3)
			term *= -s / (fm + 1)
			if math.Abs(term) < 1e-18 {
				break
			}
		}
		return s * s0, s * s * s1, s * s * s * s2
	}
	e := math.Exp(-s)
	g0 = -math.Expm1(-s)
	g1 = 1 - e*(1+s)
	g2 = 2 - e*(2+2*s+s*s)
	return
}
