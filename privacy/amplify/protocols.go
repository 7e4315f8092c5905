package amplify

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// FLAMEIndexNu returns the strongest nu-index privacy SS-Topk allows
// (FLAME Theorem 5): nu = max{1, 1/(floor(np/(n beta)) beta)}, together
// with the number of reported slots l = floor(np/(n beta)) (at most
// ceil(1/beta), Proposition 2). beta = k/d in (0, 1], np >= n beta.
func FLAMEIndexNu(n, np int, beta float64) (nu float64, l int, err error) {
	if err := checks.IntAtLeast("n", n, 1); err != nil {
		return 0, 0, fmt.Errorf("FLAME Theorem 5: %w", err)
	}
	if err := checks.Finite("beta", beta); err != nil || beta <= 0 || beta > 1 {
		return 0, 0, fmt.Errorf("FLAME Theorem 5: %w", checks.Invalidf("beta must be in (0, 1], got %v", beta))
	}
	l = int(math.Floor(float64(np) / (float64(n) * beta)))
	if l < 1 {
		return 0, 0, fmt.Errorf("FLAME Theorem 5: %w", checks.Invalidf("np = %d must be >= n beta = %.6g", np, float64(n)*beta))
	}
	if lmax := int(math.Ceil(1 / beta)); l > lmax {
		l = lmax
	}
	return math.Max(1, 1/(float64(l)*beta)), l, nil
}

// FLAMEIndexSlots returns the range of l (number of reported index slots
// per true top-k index) giving nu-index privacy (FLAME Definition 3,
// Algorithm 4 line 1, Proposition 2):
// l in [max{1/(nu beta), nu/(nu-1+beta)}, ceil(1/beta)], with 1 <= nu <= 1/beta.
func FLAMEIndexSlots(nu, beta float64) (lmin, lmax int, err error) {
	if err := checks.Finite("beta", beta); err != nil || beta <= 0 || beta > 1 {
		return 0, 0, fmt.Errorf("FLAME Proposition 2: %w", checks.Invalidf("beta must be in (0, 1], got %v", beta))
	}
	if err := checks.Finite("nu", nu); err != nil || nu < 1 || nu > 1/beta {
		return 0, 0, fmt.Errorf("FLAME Proposition 2: %w", checks.Invalidf("nu must be in [1, 1/beta] = [1, %.6g], got %v", 1/beta, nu))
	}
	lo := math.Max(1/(nu*beta), nu/(nu-1+beta))
	lmin = int(math.Ceil(lo - 1e-12))
	lmax = int(math.Ceil(1/beta - 1e-12))
	if lmin < 1 {
		lmin = 1
	}
	if lmin > lmax {
		return 0, 0, fmt.Errorf("FLAME Proposition 2: %w", checks.Invalidf("no l satisfies nu = %v at beta = %v", nu, beta))
	}
	return lmin, lmax, nil
}

// SAPESUserLevel returns S-APES Proposition 1: with b of d dimensions
// uploaded after post-sparsification and a dimension-level (epsC, deltaC),
//
//	eps^uc = eps^c sqrt(4 b ln(1/delta')) + 2 b eps^c (e^eps^c - 1),
//	delta^uc = delta' + 2 b delta^c.
func SAPESUserLevel(epsC, deltaC float64, b int, deltaPrime float64) (Bound, error) {
	if err := checks.Epsilon("eps^c", epsC); err != nil {
		return Bound{}, fmt.Errorf("S-APES Proposition 1: %w", err)
	}
	if err := checks.DeltaOrZero("delta^c", deltaC); err != nil {
		return Bound{}, fmt.Errorf("S-APES Proposition 1: %w", err)
	}
	if err := checks.IntAtLeast("b", b, 1); err != nil {
		return Bound{}, fmt.Errorf("S-APES Proposition 1: %w", err)
	}
	if err := checks.Delta("delta'", deltaPrime); err != nil {
		return Bound{}, fmt.Errorf("S-APES Proposition 1: %w", err)
	}
	bf := float64(b)
	e := epsC*math.Sqrt(4*bf*math.Log(1/deltaPrime)) + 2*bf*epsC*math.Expm1(epsC)
	d := deltaPrime + 2*bf*deltaC
	if d >= 1 {
		return Bound{}, fmt.Errorf("S-APES Proposition 1: %w", checks.Invalidf("delta' + 2 b delta^c = %v must be < 1", d))
	}
	return Bound{Name: "sapes-user-level", Epsilon: e, Delta: d, Note: "S-APES Proposition 1"}, nil
}

// APESUserLevel composes a dimension-level (epsC, deltaC) over d dimensions
// by advanced composition (APES Lemma 2, account.ComposeAdvanced), the
// user-level eps^uc of APES Table 3.
func APESUserLevel(epsC, deltaC float64, d int, deltaPrime float64) (Bound, error) {
	e, dd, err := account.ComposeAdvanced(epsC, deltaC, d, deltaPrime)
	if err != nil {
		return Bound{}, fmt.Errorf("APES user level: %w", err)
	}
	return Bound{Name: "apes-user-level", Epsilon: e, Delta: dd, Note: "APES Lemma 2 over d dimensions"}, nil
}
