package mechanism

import (
	"math"
	"math/bits"
	"math/rand/v2"

	"shufflefl/checks"
)

// This file holds the sampling primitives shared by the mechanisms: a uniform
// with full floating-point precision, a signed exponential built on it, and
// the power-of-two snapping used by the floating-point-safe samplers.

// uniformFull returns a uniform draw from (0, 1) in which every binade
// [2^-k, 2^-k+1) is reached with its exact probability 2^-k and carries a
// uniform 52-bit mantissa, so the relative resolution is 2^-52 everywhere
// down to 2^-1000 (rand.Float64 has absolute resolution 2^-53, so its
// logarithm is truncated at 36.7 and coarse long before that).
//
// w holds n >= 1 random bits in its top positions (the other bits are zero);
// more words are drawn only when they run out, which happens with
// probability about 2^-(n-11).
func uniformFull(r *rand.Rand, w uint64, n uint) float64 {
	exp := uint(0) // leading zero bits already consumed
	lz := uint(bits.LeadingZeros64(w))
	for lz >= n { // all n bits were zero
		exp += n
		if exp > 1000 {
			return 0x1p-1000
		}
		w, n = r.Uint64(), 64
		lz = uint(bits.LeadingZeros64(w))
	}
	var mant uint64
	if n-lz-1 >= 52 {
		mant = (w << (lz + 1)) >> 12
	} else {
		mant = r.Uint64() >> 12
	}
	exp += lz + 1 // the draw lies in [2^-exp, 2^-exp+1)
	if exp > 1000 {
		return 0x1p-1000
	}
	return math.Float64frombits(uint64(1023-exp)<<52 | mant)
}

// signedExp returns S·E where S is a uniform sign and E ~ Exp(1), from one
// 64-bit word in all but a 2^-52 fraction of calls (the sign is the top bit,
// the uniform uses the other 63). E is computed as -log(U) with U from
// uniformFull, so its tail is exact up to E = 693 rather than truncated at
// 36.7.
func signedExp(r *rand.Rand) float64 {
	w := r.Uint64()
	sign := w & (1 << 63)
	e := -math.Log(uniformFull(r, w<<1, 63))
	return math.Float64frombits(math.Float64bits(e) | sign)
}

// fastSignedExp returns S·E with E from the ziggurat (rand.ExpFloat64,
// about four times cheaper than a log) and S from one more word: accurate in
// distribution but with only 32 random bits per draw, so it serves the
// plain (simulation) samplers only.
func fastSignedExp(r *rand.Rand) float64 {
	e := r.ExpFloat64()
	return math.Float64frombits(math.Float64bits(e) | r.Uint64()&(1<<63))
}

// snapBits is how much finer than the noise scale the output grid of the
// floating-point-safe samplers is: the grid is the power of two g with
// scale·2^-snapBits < g <= scale·2^-(snapBits-1).
const snapBits = 12

// gridFor returns the snapping grid g for a noise scale (Laplace lambda or
// Gaussian sigma): the power of two in (scale·2^-12, scale·2^-11]. It
// depends on the scale only, never on the input, which is what makes
// snapping safe. The scale must be normal (constructors ensure it lies in
// [2^-900, 2^900]); if scale = 1.f·2^k then g = 2^(k+1-snapBits), built
// directly from the exponent bits.
func gridFor(scale float64) float64 {
	e := math.Float64bits(scale) >> 52 & 0x7ff // biased exponent k+1023
	return math.Float64frombits((e + 1 - snapBits) << 52)
}

// clamp returns v limited to [-a, a] (plain comparisons: math.Min and
// math.Max are not inlined on amd64).
func clamp(v, a float64) float64 {
	if v < -a {
		return -a
	}
	if v > a {
		return a
	}
	return v
}

// snap rounds v to the nearest multiple of the power of two g (ties away
// from zero); inv is 1/g, passed in so that hot loops compute it once.
// Multiplying by a power of two is exact, so the result is exactly an
// integer multiple of g.
func snap(v, g, inv float64) float64 {
	return math.Round(v*inv) * g
}

// snapScalar snaps one value to the grid of the given noise scale.
func snapScalar(v, scale float64) float64 {
	g := gridFor(scale)
	return snap(v, g, 1/g)
}

// checkScale rejects a noise scale that is zero, subnormal, huge or not
// finite (for example from epsilon = 1e-320), so that snapping grids and
// samples stay in the normal range of float64.
func checkScale(name string, s float64) error {
	if math.IsNaN(s) || s < 0x1p-900 || s > 0x1p900 {
		return checks.Invalidf("%s = %v is outside [2^-900, 2^900]: sensitivity/epsilon is too small or too large", name, s)
	}
	return nil
}
