package amplify

import (
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
)

// InverseEps0 answers the inverse question for a uniform bound: the largest
// local eps0 (relative precision 1e-6, rounded down) such that
// amp(eps0, n, delta) <= target. The returned eps0 is verified: amp at it
// is at most target. maxEps0 caps the search (e.g. 20): when amp(maxEps0)
// is already at most target, maxEps0 itself is returned, and callers that
// need to know whether the cap was reached compare the result with it (the
// cap only ever makes the answer smaller, never invalid). The search relies
// on amp being a valid upper bound over the whole range, which the
// numerical bounds of this package are for eps0 up to beyond 60
// (TestInverseAgainstShuffledRR).
func InverseEps0(amp Amplifier, target float64, n int, delta, maxEps0 float64) (float64, error) {
	if err := checks.Epsilon("target epsilon", target); err != nil {
		return 0, fmt.Errorf("inverse calibration: %w", err)
	}
	if err := checks.Positive("max eps0", maxEps0); err != nil {
		return 0, fmt.Errorf("inverse calibration: %w", err)
	}
	ok := func(e0 float64) bool {
		e, err := amp(e0, n, delta)
		return err == nil && e <= target
	}
	if ok(maxEps0) {
		return maxEps0, nil
	}
	// Any eps0 <= target works trivially (shuffling never hurts), but
	// the amplifier may still reject tiny eps0; start from target.
	lo := target
	if !ok(lo) {
		lo = 0
		for x := target / 2; x > 1e-12; x /= 2 {
			if ok(x) {
				lo = x
				break
			}
		}
		if lo == 0 {
			return 0, fmt.Errorf("inverse calibration: %w", checks.Invalidf("no local epsilon reaches target %v with n = %d, delta = %v", target, n, delta))
		}
	}
	hi := maxEps0
	for i := 0; i < 200 && hi-lo > 1e-6*lo; i++ {
		m := 0.5 * (lo + hi)
		if ok(m) {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, nil
}

// PersonalBound is a rigorous personalized bound as a function of the budget
// vector (e.g. EoNNumerical).
type PersonalBound func(eps []float64, delta float64) (Bound, error)

// InverseScale answers the inverse question for a personalized budget
// vector: the largest factor s (relative precision 1e-6, rounded down) such
// that the bound of s*eps is at most target, up to maxScale (returned as
// is when already within target). Approximations are never accepted; a
// bound under an extra assumption (Bound.Assumption, e.g. EoNNumerical) is
// accepted if the caller passes one, so pass EoNWorstCase for the standard
// definition.
func InverseScale(bound PersonalBound, eps []float64, delta, target, maxScale float64) (float64, error) {
	if err := validateBudgets(eps, false); err != nil {
		return 0, fmt.Errorf("inverse scale: %w", err)
	}
	if err := checks.Epsilon("target epsilon", target); err != nil {
		return 0, fmt.Errorf("inverse scale: %w", err)
	}
	if err := checks.Positive("max scale", maxScale); err != nil {
		return 0, fmt.Errorf("inverse scale: %w", err)
	}
	scaled := make([]float64, len(eps))
	ok := func(s float64) bool {
		for i, e := range eps {
			scaled[i] = s * e
		}
		b, err := bound(scaled, delta)
		return err == nil && !b.Approximation && b.Epsilon <= target
	}
	if ok(maxScale) {
		return maxScale, nil
	}
	lo := 0.0
	for x := 1.0; x > 1e-9; x /= 2 {
		if x < maxScale && ok(x) {
			lo = x
			break
		}
	}
	if lo == 0 {
		return 0, fmt.Errorf("inverse scale: %w", checks.Invalidf("no scale factor reaches target %v", target))
	}
	hi := maxScale
	for hi-lo > 1e-6*lo {
		m := 0.5 * (lo + hi)
		if ok(m) {
			lo = m
		} else {
			hi = m
		}
	}
	return lo, nil
}
