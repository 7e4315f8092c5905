package account

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// ComposeBasic returns the privacy of the k-fold adaptive composition of an
// (eps, delta)-DP mechanism by the basic composition theorem: (k eps, k delta)
// (Dwork and Roth 2014, Theorem 3.16; FLAME Lemma 2 states the pure case).
//
// Inputs: eps >= 0, delta in [0, 1), k >= 1. It is an error if k delta >= 1,
// since such a statement guarantees nothing.
func ComposeBasic(eps, delta float64, k int) (float64, float64, error) {
	if err := checks.EpsilonOrZero("epsilon", eps); err != nil {
		return 0, 0, fmt.Errorf("basic composition: %w", err)
	}
	if err := checks.DeltaOrZero("delta", delta); err != nil {
		return 0, 0, fmt.Errorf("basic composition: %w", err)
	}
	if err := checks.IntAtLeast("k", k, 1); err != nil {
		return 0, 0, fmt.Errorf("basic composition: %w", err)
	}
	d := float64(k) * delta
	if d >= 1 {
		return 0, 0, fmt.Errorf("basic composition: %w", checks.Invalidf("k*delta = %v must be < 1", d))
	}
	return float64(k) * eps, d, nil
}

// ComposeAdvanced returns the privacy of the k-fold adaptive composition of an
// (eps, delta)-DP mechanism by the advanced composition theorem:
//
//	eps' = sqrt(2 k ln(1/deltaPrime)) eps + k eps (e^eps - 1),
//	delta' = k delta + deltaPrime
//
// (Dwork, Rothblum and Vadhan 2010; Dwork and Roth 2014, Theorem 3.20;
// FLAME Lemma 3 and APES Lemma 2 state exactly this formula). The result is
// the theorem's value even where basic composition is tighter (small k or
// large eps); use ComposeBest for the smaller of the two.
//
// Inputs: eps >= 0, delta in [0, 1), k >= 1, deltaPrime in (0, 1); it is an
// error if k delta + deltaPrime >= 1.
func ComposeAdvanced(eps, delta float64, k int, deltaPrime float64) (float64, float64, error) {
	if err := checks.EpsilonOrZero("epsilon", eps); err != nil {
		return 0, 0, fmt.Errorf("advanced composition: %w", err)
	}
	if err := checks.DeltaOrZero("delta", delta); err != nil {
		return 0, 0, fmt.Errorf("advanced composition: %w", err)
	}
	if err := checks.IntAtLeast("k", k, 1); err != nil {
		return 0, 0, fmt.Errorf("advanced composition: %w", err)
	}
	if err := checks.Delta("delta'", deltaPrime); err != nil {
		return 0, 0, fmt.Errorf("advanced composition: %w", err)
	}
	kf := float64(k)
	d := kf*delta + deltaPrime
	if d >= 1 {
		return 0, 0, fmt.Errorf("advanced composition: %w", checks.Invalidf("k*delta + delta' = %v must be < 1", d))
	}
	e := math.Sqrt(2*kf*math.Log(1/deltaPrime))*eps + kf*eps*math.Expm1(eps)
	if math.IsInf(e, 0) {
		return 0, 0, fmt.Errorf("advanced composition: %w", checks.Invalidf("epsilon = %v is too large: the composed epsilon overflows", eps))
	}
	return e, d, nil
}

// ComposeBest returns the smaller-epsilon statement of ComposeBasic and
// ComposeAdvanced for the k-fold composition of an (eps, delta)-DP mechanism
// (basic alone where advanced composition does not apply or overflows).
// Both are valid, so the minimum is valid; which one won is reported by
// advanced. The delta of the basic statement (k delta) is no larger than the
// advanced one (k delta + deltaPrime), so when basic wins on epsilon it is
// returned with its own delta.
func ComposeBest(eps, delta float64, k int, deltaPrime float64) (e, d float64, advanced bool, err error) {
	eb, db, err := ComposeBasic(eps, delta, k)
	if err != nil {
		return 0, 0, false, err
	}
	ea, da, err := ComposeAdvanced(eps, delta, k, deltaPrime)
	if err != nil {
		// Advanced composition can fail where basic composition holds (its
		// epsilon overflows for a large eps, or k delta + delta' >= 1):
		// basic composition is still a valid statement.
		return eb, db, false, nil
	}
	if ea < eb {
		return ea, da, true, nil
	}
	return eb, db, false, nil
}

// Budget is one (epsilon, delta) privacy statement: a client's local budget
// (protocol.Budget is this type), a ledger total, or an input of the
// heterogeneous composition functions.
type Budget struct {
	Epsilon float64 `json:"epsilon" yaml:"epsilon"`
	Delta   float64 `json:"delta" yaml:"delta"`
}

func validateBudgets(what string, bs []Budget) error {
	if len(bs) == 0 {
		return fmt.Errorf("%s: %w", what, checks.Invalidf("the list of budgets must not be empty"))
	}
	for i, b := range bs {
		if err := checks.EpsilonOrZero(fmt.Sprintf("budgets[%d].epsilon", i), b.Epsilon); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := checks.DeltaOrZero(fmt.Sprintf("budgets[%d].delta", i), b.Delta); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// ComposeBasicHetero returns (sum eps_i, sum delta_i), the basic composition
// of mechanisms with individual budgets (eps_i, delta_i) (Dwork and Roth 2014,
// Theorem 3.16). It is an error if the list is empty or sum delta_i >= 1.
func ComposeBasicHetero(bs []Budget) (float64, float64, error) {
	if err := validateBudgets("basic composition", bs); err != nil {
		return 0, 0, err
	}
	var e, d float64
	for _, b := range bs {
		e += b.Epsilon
		d += b.Delta
	}
	if d >= 1 {
		return 0, 0, fmt.Errorf("basic composition: %w", checks.Invalidf("sum of deltas = %v must be < 1", d))
	}
	return e, d, nil
}

// ComposeAdvancedHetero returns the advanced composition of mechanisms with
// individual budgets (eps_i, delta_i):
//
//	eps' = sqrt(2 ln(1/deltaPrime) sum eps_i^2) + sum eps_i (e^eps_i - 1),
//	delta' = sum delta_i + deltaPrime.
//
// This is the heterogeneous form of the Dwork–Rothblum–Vadhan argument
// (Azuma's inequality on privacy losses bounded by eps_i with means at most
// eps_i (e^eps_i - 1); Kairouz, Oh and Viswanath 2015, Section 3.3, give the
// same shape). With all eps_i equal it reduces to ComposeAdvanced.
func ComposeAdvancedHetero(bs []Budget, deltaPrime float64) (float64, float64, error) {
	if err := validateBudgets("advanced composition", bs); err != nil {
		return 0, 0, err
	}
	if err := checks.Delta("delta'", deltaPrime); err != nil {
		return 0, 0, fmt.Errorf("advanced composition: %w", err)
	}
	var sq, mean, d float64
	for _, b := range bs {
		sq += b.Epsilon * b.Epsilon
		mean += b.Epsilon * math.Expm1(b.Epsilon)
		d += b.Delta
	}
	d += deltaPrime
	if d >= 1 {
		return 0, 0, fmt.Errorf("advanced composition: %w", checks.Invalidf("sum of deltas + delta' = %v must be < 1", d))
	}
	e := math.Sqrt(2*math.Log(1/deltaPrime)*sq) + mean
	if math.IsInf(e, 0) || math.IsNaN(e) {
		return 0, 0, fmt.Errorf("advanced composition: %w", checks.Invalidf("the composed epsilon overflows; an epsilon_i is too large"))
	}
	return e, d, nil
}

// ComposeDPrivacy returns the level of the independent composition of
// eps_i-d-private mechanisms on the same secret: sum eps_i
// (group-privacy paper, Galli et al., Theorem 1: K_1, K_2 with levels eps_1,
// eps_2 compose to eps_1 + eps_2 under the same metric d, i.e. the pair of
// outputs satisfies P[.|x] <= e^{(eps_1+eps_2) d(x,x')} P[.|x']). With
// different secrets x_1, x_2 the theorem gives the weighted form
// eps_1 d(x_1,x_1') + eps_2 d(x_2,x_2'), which DPrivacyLoss evaluates.
func ComposeDPrivacy(eps ...float64) (float64, error) {
	if len(eps) == 0 {
		return 0, fmt.Errorf("d-privacy composition: %w", checks.Invalidf("the list of levels must not be empty"))
	}
	var s float64
	for i, e := range eps {
		if err := checks.EpsilonOrZero(fmt.Sprintf("epsilon[%d]", i), e); err != nil {
			return 0, fmt.Errorf("d-privacy composition: %w", err)
		}
		s += e
	}
	return s, nil
}

// DPrivacyLoss returns sum_i eps_i d_i, the privacy-loss bound of Galli et
// al., Theorem 1 (Eq. 18) for independent eps_i-d-private mechanisms applied to
// secrets whose neighbours lie at distances d_i = d(x_i, x_i'): the
// probability of any joint output changes by at most a factor e^{sum eps_i d_i}.
func DPrivacyLoss(eps, dist []float64) (float64, error) {
	if len(eps) == 0 || len(eps) != len(dist) {
		return 0, fmt.Errorf("d-privacy loss: %w", checks.Invalidf("need as many distances as levels, got %d levels and %d distances (at least one)", len(eps), len(dist)))
	}
	var s float64
	for i := range eps {
		if err := checks.EpsilonOrZero(fmt.Sprintf("epsilon[%d]", i), eps[i]); err != nil {
			return 0, fmt.Errorf("d-privacy loss: %w", err)
		}
		if err := checks.NonNegative(fmt.Sprintf("distance[%d]", i), dist[i]); err != nil {
			return 0, fmt.Errorf("d-privacy loss: %w", err)
		}
		s += eps[i] * dist[i]
	}
	if math.IsInf(s, 0) {
		return 0, fmt.Errorf("d-privacy loss: %w", checks.Invalidf("the loss overflows"))
	}
	return s, nil
}

// ComposeParallel returns (max eps_i, max delta_i), the guarantee of
// mechanisms run on disjoint subsets of the data (APES Lemma 1, after Yu et
// al. 2019; McSherry 2009). Use it only when each record (each client) enters
// at most one of the mechanisms.
func ComposeParallel(bs []Budget) (float64, float64, error) {
	if err := validateBudgets("parallel composition", bs); err != nil {
		return 0, 0, err
	}
	var e, d float64
	for _, b := range bs {
		e, d = math.Max(e, b.Epsilon), math.Max(d, b.Delta)
	}
	return e, d, nil
}

// DPrivacyLeakage returns dim/nu, the per-participation privacy leakage of the
// sanitizer of Galli et al. (Section 4.1, SanitizeUpdate): a client adds
// d-private Laplace noise in R^dim with epsilon = dim/(nu ||delta||), where
// ||delta|| is the norm of its update, so that points within the update's
// neighbourhood are (dim/nu)-indistinguishable. Compose participations with
// ComposeDPrivacy (Section 5: dim = 2, nu = 5 gives 0.4 per round).
func DPrivacyLeakage(dim int, nu float64) (float64, error) {
	if err := checks.IntAtLeast("dimension", dim, 1); err != nil {
		return 0, fmt.Errorf("d-privacy leakage: %w", err)
	}
	if err := checks.Positive("noise multiplier nu", nu); err != nil {
		return 0, fmt.Errorf("d-privacy leakage: %w", err)
	}
	return float64(dim) / nu, nil
}
