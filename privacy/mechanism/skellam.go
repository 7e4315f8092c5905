package mechanism

import (
	"math"
	"math/rand/v2"
)

// Poisson draws from the Poisson distribution with mean lambda >= 0.
//
// For lambda < 10 it inverts the distribution function by sequential search;
// for larger means it uses Hörmann's transformed rejection with squeeze
// (PTRS, "The transformed rejection method for generating Poisson random
// variables", Insurance: Mathematics and Economics 12, 1993), whose
// acceptance test is exact up to the floating-point evaluation of the
// Poisson log-probability. Both are exact samplers in real arithmetic; in
// floating point they are as faithful as the uniform draws and math.Lgamma
// (a simulation-grade sampler: a deployment that must resist floating-point
// attacks uses PoissonExact, the integer-only exact sampler, as split-mix
// does with Params.Secure).
//
// It returns 0 for lambda = 0 and panics on a negative or non-finite mean,
// which is a programming error (callers validate their parameters).
func Poisson(r *rand.Rand, lambda float64) int64 {
	if !(lambda >= 0) || math.IsInf(lambda, 0) {
		panic("mechanism: Poisson mean must be finite and >= 0")
	}
	if lambda == 0 {
		return 0
	}
	if lambda < 10 {
		return poissonInversion(r, lambda)
	}
	return poissonPTRS(r, lambda)
}

// poissonInversion is sequential-search inversion for small means.
func poissonInversion(r *rand.Rand, lambda float64) int64 {
	for {
		u := r.Float64()
		p := math.Exp(-lambda)
		f := p
		var k int64
		for u > f {
			k++
			p *= lambda / float64(k)
			f += p
			if p == 0 && u > f {
				// Rounding left u above the accumulated mass: redraw
				// (probability below 1e-15 for lambda < 10).
				break
			}
		}
		if u <= f {
			return k
		}
	}
}

// poissonPTRS is Hörmann's PTRS for lambda >= 10.
func poissonPTRS(r *rand.Rand, lambda float64) int64 {
	slam := math.Sqrt(lambda)
	loglam := math.Log(lambda)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invAlpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + lambda + 0.43)
		if us >= 0.07 && v <= vr {
			return int64(k)
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		if math.Log(v)+math.Log(invAlpha)-math.Log(a/(us*us)+b) <= -lambda+k*loglam-lg {
			return int64(k)
		}
	}
}

// Skellam draws from the symmetric Skellam distribution with variance v:
// the difference of two independent Poisson(v/2) draws. Its probability
// mass function is e^{-v} I_k(v) (I_k the modified Bessel function of the
// first kind), and independent Skellam draws add up: the sum of Skellam
// variables with variances v_1, ..., v_n is Skellam with variance
// v_1 + ... + v_n, which is what lets n clients each add a share of a
// central Skellam noise (Agarwal, Kairouz and Liu, NeurIPS 2021).
// Simulation-grade like Poisson; SkellamExact is the integer-only exact
// sampler of the same distribution.
func Skellam(r *rand.Rand, v float64) int64 {
	return Poisson(r, v/2) - Poisson(r, v/2)
}

// RoundUnbiased rounds x to floor(x) or floor(x)+1 at random, the upper
// value with probability x - floor(x), so that the expectation is x. The
// result differs from x by less than 1. x must be finite and of magnitude
// below 2^62.
func RoundUnbiased(r *rand.Rand, x float64) int64 {
	f := math.Floor(x)
	k := int64(f)
	if r.Float64() < x-f {
		k++
	}
	return k
}
