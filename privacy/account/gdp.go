package account

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// logPhi returns log Phi(x) for the standard normal CDF, accurate in the far
// left tail (Phi(x) = erfc(-x/sqrt2)/2).
func logPhi(x float64) float64 {
	return logErfc(-x/math.Sqrt2) - math.Ln2
}

// gdpDelta is GDPToDelta on validated input.
func gdpDelta(mu, eps float64) float64 {
	la := logPhi(-eps/mu + mu/2)
	lc := eps + logPhi(-eps/mu-mu/2)
	if lc >= la {
		return 0
	}
	return math.Exp(la) * -math.Expm1(lc-la)
}

// GDPToDelta returns the smallest delta such that a mu-GDP mechanism is
// (eps, delta)-DP:
//
//	delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
//
// (Dong, Roth and Su 2022, "Gaussian differential privacy", Corollary 2.13;
// E-APES uses it to report its mu-GDP bound). The curve is exact for the
// Gaussian trade-off function, so the value is tight. Computed in log space:
// no cancellation to negative values, no overflow of e^eps. Inputs: mu > 0,
// eps >= 0.
func GDPToDelta(mu, eps float64) (float64, error) {
	if err := checks.Positive("mu", mu); err != nil {
		return 0, fmt.Errorf("GDP to delta: %w", err)
	}
	if err := checks.EpsilonOrZero("epsilon", eps); err != nil {
		return 0, fmt.Errorf("GDP to delta: %w", err)
	}
	return gdpDelta(mu, eps), nil
}

// GDPToEpsilon returns the smallest eps >= 0 such that a mu-GDP mechanism is
// (eps, delta)-DP, by inverting GDPToDelta (which is decreasing in eps) with
// bisection to a relative width of 1e-12. The guaranteed side is kept: the
// returned eps satisfies GDPToDelta(mu, eps) <= delta. It is 0 when
// delta >= 2 Phi(mu/2) - 1 (the curve's value at eps = 0).
func GDPToEpsilon(mu, delta float64) (float64, error) {
	if err := checks.Positive("mu", mu); err != nil {
		return 0, fmt.Errorf("GDP to epsilon: %w", err)
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("GDP to epsilon: %w", err)
	}
	if gdpDelta(mu, 0) <= delta {
		return 0, nil
	}
	lo, hi := 0.0, math.Max(1, mu*mu)
	for gdpDelta(mu, hi) > delta {
		lo, hi = hi, 2*hi
		if hi > 1e300 {
			return 0, fmt.Errorf("GDP to epsilon: %w", checks.Invalidf("no finite epsilon reaches delta = %v for mu = %v", delta, mu))
		}
	}
	for hi-lo > 1e-12*hi {
		mid := lo + (hi-lo)/2
		if gdpDelta(mu, mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// GDPMu returns the largest mu such that mu-GDP implies (eps, delta)-DP,
// i.e. the largest mu with GDPToDelta(mu, eps) <= delta (delta is increasing
// in mu), by bisection to a relative width of 1e-12 keeping the guaranteed
// side. Use it to turn a target (eps, delta) into a GDP budget, e.g. for
// E-APES's mu = 2/sqrt(sum p_i). Inputs: eps >= 0, delta in (0, 1).
func GDPMu(eps, delta float64) (float64, error) {
	if err := checks.EpsilonOrZero("epsilon", eps); err != nil {
		return 0, fmt.Errorf("GDP mu: %w", err)
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("GDP mu: %w", err)
	}
	lo, hi := 0.0, 1.0
	for gdpDelta(hi, eps) <= delta {
		lo, hi = hi, 2*hi
		if hi > 1e150 {
			return 0, fmt.Errorf("GDP mu: %w", checks.Invalidf("every mu up to 1e150 satisfies (%v, %v)-DP", eps, delta))
		}
	}
	for hi-lo > 1e-12*hi {
		mid := lo + (hi-lo)/2
		if gdpDelta(mid, eps) <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return 0, fmt.Errorf("GDP mu: %w", checks.Invalidf("no mu > 0 satisfies (%v, %v)-DP", eps, delta))
	}
	return lo, nil
}

// ComposeGDP returns sqrt(mu_1^2 + ... + mu_k^2), the GDP parameter of the
// composition of mu_i-GDP mechanisms (Dong, Roth and Su 2022, Corollary
// 3.3). It is exact, not a bound.
func ComposeGDP(mus ...float64) (float64, error) {
	if len(mus) == 0 {
		return 0, fmt.Errorf("GDP composition: %w", checks.Invalidf("the list of mu values must not be empty"))
	}
	var s float64
	for i, m := range mus {
		if err := checks.NonNegative(fmt.Sprintf("mu[%d]", i), m); err != nil {
			return 0, fmt.Errorf("GDP composition: %w", err)
		}
		s = math.Hypot(s, m)
	}
	if math.IsInf(s, 0) {
		return 0, fmt.Errorf("GDP composition: %w", checks.Invalidf("the composed mu overflows"))
	}
	return s, nil
}

// GaussianMu returns sensitivity/sigma, the GDP parameter of the Gaussian
// mechanism that adds N(0, sigma^2) noise to a query of L2 sensitivity
// sensitivity (Dong, Roth and Su 2022, Theorem 2.7).
func GaussianMu(sensitivity, sigma float64) (float64, error) {
	if err := checks.Positive("sensitivity", sensitivity); err != nil {
		return 0, fmt.Errorf("Gaussian mu: %w", err)
	}
	if err := checks.Positive("sigma", sigma); err != nil {
		return 0, fmt.Errorf("Gaussian mu: %w", err)
	}
	return sensitivity / sigma, nil
}

// GDPCompose returns the mu of the k-fold composition of a mu-GDP mechanism,
// mu sqrt(k) (Dong, Roth and Su 2022, Corollary 3.3: Gaussian trade-off
// functions compose exactly). E-APES's statement over rounds uses it.
func GDPCompose(mu float64, k int) float64 { return mu * math.Sqrt(float64(k)) }
