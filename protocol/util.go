package protocol

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// checkUpdate rejects a local update of the wrong dimension or with a
// non-finite entry (a diverged local model must not be released).
func checkUpdate(s Shape, update []float64) error {
	return checks.Vector("local update", update, s.Dim)
}

// checkAggregate rejects an aggregate of the wrong dimension.
func checkAggregate(s Shape, agg *Aggregate, dst []float64) error {
	if agg.Dim() != s.Dim {
		return checks.Invalidf("aggregate has dimension %d, want %d", agg.Dim(), s.Dim)
	}
	if len(dst) != s.Dim {
		return checks.Invalidf("estimate buffer has dimension %d, want %d", len(dst), s.Dim)
	}
	return nil
}

// meanEstimate writes Sum[j]/Count[j] (0 for a coordinate nobody reported).
func meanEstimate(s Shape, agg *Aggregate, dst []float64) error {
	if err := checkAggregate(s, agg, dst); err != nil {
		return err
	}
	for j, v := range agg.Sum {
		if c := agg.Count[j]; c > 0 {
			dst[j] = v / float64(c)
		} else {
			dst[j] = 0
		}
	}
	return nil
}

// clipCoordinates clips every entry of x to [-c, c] in place.
func clipCoordinates(x []float64, c float64) {
	for i, v := range x {
		if v > c {
			x[i] = c
		} else if v < -c {
			x[i] = -c
		}
	}
}

// clipL2 scales x in place so that its L2 norm is at most c, and returns the
// norm before clipping.
//
// The norm is computed by scaling, m·sqrt(Σ (x_i/m)²) with m = max |x_i|, so
// that squaring neither overflows (|x_i| > 1.3e154 made the plain sum of
// squares +Inf and the clipped update all zeros) nor underflows (entries
// below 1e-162 made it 0, so a vector longer than a tiny c escaped
// clipping), and x is rescaled as (x_i/m)·(c/sqrt(Σ (x_i/m)²)), which stays
// finite even when the norm itself exceeds the largest float64 (the returned
// norm is then +Inf).
//
// x must be finite: callers validate updates with checkUpdate, which rejects
// NaN and ±Inf (a diverged local model is an error, not something to clip).
// As a last line of defence, a non-finite entry makes clipL2 zero the whole
// vector (releasing nothing of it, which respects any bound c >= 0) and
// return NaN.
func clipL2(x []float64, c float64) float64 {
	m := 0.0
	for _, v := range x {
		a := math.Abs(v)
		if !(a <= math.MaxFloat64) { // NaN or ±Inf
			clear(x)
			return math.NaN()
		}
		m = math.Max(m, a)
	}
	if m == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		u := v / m
		s += u * u
	}
	r := math.Sqrt(s) // in [1, sqrt(len(x))]
	norm := m * r     // may overflow to +Inf; only reported
	if norm > c {
		f := c / r
		for i, v := range x {
			x[i] = (v / m) * f
		}
	}
	return norm
}

// budgetEpsilons returns the participants' epsilons.
func budgetEpsilons(budgets []Budget) []float64 {
	out := make([]float64, len(budgets))
	for i, b := range budgets {
		out[i] = b.Epsilon
	}
	return out
}

// checkBudgets validates every participant's budget; withDelta also requires
// delta in (0, 1).
func checkBudgets(budgets []Budget, withDelta bool) error {
	for i, b := range budgets {
		if err := checks.Epsilon("epsilon", b.Epsilon); err != nil {
			return fmt.Errorf("budget of participant %d: %w", i, err)
		}
		if withDelta {
			if err := checks.Delta("delta", b.Delta); err != nil {
				return fmt.Errorf("budget of participant %d: %w", i, err)
			}
		}
	}
	return nil
}
