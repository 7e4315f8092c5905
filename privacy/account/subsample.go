package account

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// validateSubsample checks the common inputs of the subsampling lemmas.
func validateSubsample(eps, delta, q float64) error {
	if err := checks.EpsilonOrZero("epsilon", eps); err != nil {
		return err
	}
	if err := checks.DeltaOrZero("delta", delta); err != nil {
		return err
	}
	if err := checks.Finite("q", q); err != nil {
		return err
	}
	if q <= 0 || q > 1 {
		return checks.Invalidf("sampling rate q must be in (0, 1], got %v", q)
	}
	return nil
}

// amplifiedEpsilon returns log(1 + q (e^eps - 1)), computed without
// cancellation for small q*eps.
func amplifiedEpsilon(eps, q float64) float64 {
	if eps > 700 {
		// e^eps overflows; log(1 + q(e^eps-1)) = eps + log(q + (1-q) e^-eps).
		return eps + math.Log(q+(1-q)*math.Exp(-eps))
	}
	return math.Log1p(q * math.Expm1(eps))
}

// SubsampleWOR returns the privacy of a mechanism run on a subset of m = q n
// records drawn uniformly without replacement from a data set of n records.
//
// If the mechanism is (eps, delta)-DP with respect to the substitution
// (replace-one) relation on data sets of size m, the subsampled mechanism is
//
//	(log(1 + q (e^eps - 1)), q delta)-DP
//
// with respect to the substitution relation on data sets of size n
// (Balle, Barthe and Gaboardi 2018, Theorem 9; FLAME Lemma 4 with q = m/n).
// Inputs: eps >= 0, delta in [0, 1), q in (0, 1]. The returned epsilon never
// exceeds eps, and q = 1 returns (eps, delta) unchanged.
func SubsampleWOR(eps, delta, q float64) (float64, float64, error) {
	if err := validateSubsample(eps, delta, q); err != nil {
		return 0, 0, fmt.Errorf("subsampling without replacement: %w", err)
	}
	if q == 1 {
		return eps, delta, nil
	}
	return amplifiedEpsilon(eps, q), q * delta, nil
}

// SubsamplePoisson returns the privacy of a mechanism run on a Poisson
// subsample: every record is included independently with probability q.
//
// If the mechanism is (eps, delta)-DP with respect to the add/remove-one
// relation, the subsampled mechanism is
//
//	(log(1 + q (e^eps - 1)), q delta)-DP
//
// with respect to add/remove-one (Balle, Barthe and Gaboardi 2018, Theorem 8;
// the same formula as SubsampleWOR, but for the other neighbouring relation —
// do not mix the two). Inputs: eps >= 0, delta in [0, 1), q in (0, 1].
func SubsamplePoisson(eps, delta, q float64) (float64, float64, error) {
	if err := validateSubsample(eps, delta, q); err != nil {
		return 0, 0, fmt.Errorf("Poisson subsampling: %w", err)
	}
	if q == 1 {
		return eps, delta, nil
	}
	return amplifiedEpsilon(eps, q), q * delta, nil
}

// SubsampleWOREpsilonInverse returns the largest base epsilon whose
// subsampled epsilon log(1 + q (e^eps - 1)) does not exceed target, i.e.
// log(1 + (e^target - 1)/q). It is the inverse of the epsilon part of
// SubsampleWOR and SubsamplePoisson (Balle, Barthe and Gaboardi 2018), used to
// give each sampled participant the largest local budget for a target.
func SubsampleWOREpsilonInverse(target, q float64) (float64, error) {
	if err := validateSubsample(target, 0, q); err != nil {
		return 0, fmt.Errorf("inverse subsampling: %w", err)
	}
	if target > 700 {
		return target - math.Log(q) + math.Log1p(-(1-q)*math.Exp(-target)), nil
	}
	return math.Log1p(math.Expm1(target) / q), nil
}
