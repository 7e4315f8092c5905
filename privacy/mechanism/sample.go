package mechanism

import (
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// This file holds the sampling primitives shared by the mechanisms: a uniform
// with full floating-point precision, a full-precision exponential ziggurat
// (with the uniform for its tail), and the power-of-two snapping used by the
// floating-point-safe samplers.

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

// gridInv returns 1/g for a snapping grid g = 2^k from gridFor, exactly and
// without a division, from the exponent bits (k is within ±1000).
func gridInv(g float64) float64 {
	e := math.Float64bits(g) >> 52 & 0x7ff
	return math.Float64frombits((2046 - e) << 52)
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
	return snap(v, g, gridInv(g))
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

// Exponential ziggurat on full 64-bit words (Marsaglia and Tsang 2000, with
// zigN = 256 layers of equal area v = (r+1)e^-r under f(x) = e^-x, r =
// zigR). Layer i (0 <= i < zigN) is the rectangle [0, zigX[i]) x [zigF[i],
// zigF[i+1]]: layer 0 is the base strip [0, r) x [0, e^-r] together with the
// tail beyond r (of area e^-r, hence the virtual width zigX[0] = r + 1);
// zigX decreases to zigX[zigN] = 0 and zigF increases to zigF[zigN] = 1.
//
// Unlike rand.ExpFloat64 (32-bit position, float32 tables and wedge test,
// so its density is right only to a relative 2^-24 or so), expZig draws
// the position with 53 bits (absolute resolution zigX[i]·2^-53 < 2^-49),
// keeps the tables and the wedge test in float64, and draws the tail as
// r + (-log U) with U from uniformFull, so that the tail is exact up to
// E = r + 693. Equal layer areas are what makes the method exact: zigF is
// built by the recurrence zigF[i+1] = zigF[i] + v/zigX[i], and the area of
// the top layer, which closes at height 1, differs from v by a relative
// 1e-13 (TestExpZigTables).
const (
	zigN = 256
	zigR = 7.69711747013104972
)

var zigX, zigF = zigTables()

func zigTables() (x, f [zigN + 1]float64) {
	v := (zigR + 1) * math.Exp(-zigR)
	x[0], f[0] = zigR+1, 0
	x[1], f[1] = zigR, math.Exp(-zigR)
	for i := 1; i < zigN-1; i++ {
		f[i+1] = f[i] + v/x[i]
		x[i+1] = -math.Log(f[i+1])
	}
	x[zigN], f[zigN] = 0, 1
	return x, f
}

// expZig returns an Exp(1) variate and the unused random bit 8 of the word
// that produced it (as bit 63 of sign), for use as an independent sign.
// One 64-bit word per draw in 98.9% of calls (bits 0-7 choose the layer,
// bits 11-63 the position); the wedge test (1.1%) costs one more word and
// one math.Exp, the tail (0.03%) a uniformFull and a math.Log.
func expZig(r *rand.Rand) (e float64, sign uint64) {
	for {
		w := r.Uint64()
		i := w & 0xff
		x := float64(int64(w>>11)) * 0x1p-53 * zigX[i]
		if x < zigX[i+1] {
			return x, w << 55 & (1 << 63)
		}
		if i == 0 {
			return zigR - math.Log(uniformFull(r, r.Uint64(), 64)), w << 55 & (1 << 63)
		}
		h := zigF[i] + float64(int64(r.Uint64()>>11))*0x1p-53*(zigF[i+1]-zigF[i])
		if h < math.Exp(-x) {
			return x, w << 55 & (1 << 63)
		}
	}
}

// signedExpZig returns S·E with E from expZig and S a uniform sign from the
// same word: the full-precision signed exponential of the secure samplers.
func signedExpZig(r *rand.Rand) float64 {
	e, sign := expZig(r)
	return math.Float64frombits(math.Float64bits(e) | sign)
}

// Normal ziggurat on full 64-bit words, built like the exponential one
// (expZig) for the half-normal f(x) = exp(-x²/2) with nzigN = 256 layers
// of equal area v = r·f(r) + ∫_r^∞ f, r = nzigR: layer 0 is the base strip
// [0, r) x [0, f(r)] with the tail beyond r (virtual width v/f(r)), and
// nzigF[i+1] = nzigF[i] + v/nzigX[i]. The top layer closes at height 1 to a
// relative 1e-12 of v (TestNormZig).
const (
	nzigN = 256
	nzigR = 3.6541528853610088
)

var nzigX, nzigF = nzigTables()

func nzigTables() (x, f [nzigN + 1]float64) {
	fr := math.Exp(-0.5 * nzigR * nzigR)
	v := nzigR*fr + math.Sqrt(math.Pi/2)*math.Erfc(nzigR/math.Sqrt2)
	x[0], f[0] = v/fr, 0
	x[1], f[1] = nzigR, fr
	for i := 1; i < nzigN-1; i++ {
		f[i+1] = f[i] + v/x[i]
		x[i+1] = math.Sqrt(-2 * math.Log(f[i+1]))
	}
	x[nzigN], f[nzigN] = 0, 1
	return x, f
}

// normZig returns a standard normal variate: the secure Gaussian's noise.
// One 64-bit word per draw in 98.8% of calls: bits 0-7 choose the layer,
// bit 8 the sign, bits 11-63 the position (absolute resolution
// nzigX[i]·2^-53 < 2^-51). The wedge test (float64 tables, one math.Exp)
// costs one more word; the tail beyond r uses Marsaglia's method with
// full-precision uniforms (uniformFull), so it is exact out to r + 37
// (where -log of the acceptance uniform, at most 693, stops sufficing), a
// truncation of probability below 2^-1000.
func normZig(r *rand.Rand) float64 {
	for {
		w := r.Uint64()
		i := w & 0xff
		sign := w << 55 & (1 << 63)
		x := float64(int64(w>>11)) * 0x1p-53 * nzigX[i]
		if x < nzigX[i+1] {
			return math.Float64frombits(math.Float64bits(x) | sign)
		}
		if i == 0 {
			for {
				a := -math.Log(uniformFull(r, r.Uint64(), 64)) / nzigR
				b := -math.Log(uniformFull(r, r.Uint64(), 64))
				if 2*b > a*a {
					return math.Float64frombits(math.Float64bits(nzigR+a) | sign)
				}
			}
		}
		h := nzigF[i] + float64(int64(r.Uint64()>>11))*0x1p-53*(nzigF[i+1]-nzigF[i])
		if h < math.Exp(-0.5*x*x) {
			return math.Float64frombits(math.Float64bits(x) | sign)
		}
	}
}
