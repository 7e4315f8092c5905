// Package checks validates the parameters of shufflefl: privacy budgets,
// probabilities, norms, dimensions and counts. The CLI, configuration files,
// the protocol code and the deployment services all call these functions, so
// a bad value produces the same message wherever it enters. Every error names
// the offending field and wraps ErrInvalid.
package checks

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalid is wrapped by every error returned from this package, so callers
// can tell a rejected parameter (a usage error) from an internal failure with
// errors.Is(err, checks.ErrInvalid).
var ErrInvalid = errors.New("invalid parameter")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Invalidf returns an error wrapping ErrInvalid with the formatted message. Use
// it for parameter errors that none of the helpers below express.
func Invalidf(format string, a ...any) error { return invalid(format, a...) }

// Finite rejects NaN and ±Inf.
func Finite(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return invalid("%s must be a finite number, got %v", name, v)
	}
	return nil
}

// Epsilon accepts a privacy parameter epsilon in (0, +Inf).
func Epsilon(name string, eps float64) error {
	if err := Finite(name, eps); err != nil {
		return err
	}
	if eps <= 0 {
		return invalid("%s must be > 0, got %v", name, eps)
	}
	return nil
}

// EpsilonOrZero accepts epsilon in [0, +Inf) (some bounds allow eps_i = 0).
func EpsilonOrZero(name string, eps float64) error {
	if err := Finite(name, eps); err != nil {
		return err
	}
	if eps < 0 {
		return invalid("%s must be >= 0, got %v", name, eps)
	}
	return nil
}

// Delta accepts delta in the open interval (0, 1).
func Delta(name string, delta float64) error {
	if err := Finite(name, delta); err != nil {
		return err
	}
	if delta <= 0 || delta >= 1 {
		return invalid("%s must be in (0, 1), got %v", name, delta)
	}
	return nil
}

// DeltaOrZero accepts delta in [0, 1) (0 means a pure-DP statement).
func DeltaOrZero(name string, delta float64) error {
	if err := Finite(name, delta); err != nil {
		return err
	}
	if delta < 0 || delta >= 1 {
		return invalid("%s must be in [0, 1), got %v", name, delta)
	}
	return nil
}

// Probability accepts p in [0, 1].
func Probability(name string, p float64) error {
	if err := Finite(name, p); err != nil {
		return err
	}
	if p < 0 || p > 1 {
		return invalid("%s must be in [0, 1], got %v", name, p)
	}
	return nil
}

// Positive accepts v in (0, +Inf).
func Positive(name string, v float64) error {
	if err := Finite(name, v); err != nil {
		return err
	}
	if v <= 0 {
		return invalid("%s must be > 0, got %v", name, v)
	}
	return nil
}

// NonNegative accepts v in [0, +Inf).
func NonNegative(name string, v float64) error {
	if err := Finite(name, v); err != nil {
		return err
	}
	if v < 0 {
		return invalid("%s must be >= 0, got %v", name, v)
	}
	return nil
}

// IntAtLeast accepts integers n >= min.
func IntAtLeast(name string, n, min int) error {
	if n < min {
		return invalid("%s must be >= %d, got %d", name, min, n)
	}
	return nil
}

// IntInRange accepts integers lo <= n <= hi.
func IntInRange(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return invalid("%s must be in [%d, %d], got %d", name, lo, hi, n)
	}
	return nil
}

// Vector checks that x has length dim (dim < 0 skips the length check) and that
// every entry is finite; the error names the first bad index.
func Vector(name string, x []float64, dim int) error {
	if dim >= 0 && len(x) != dim {
		return invalid("%s has dimension %d, want %d", name, len(x), dim)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return invalid("%s[%d] must be finite, got %v", name, i, v)
		}
	}
	return nil
}

// InRange checks lo <= v <= hi for every entry of x; hint says which clipping
// step the caller forgot (e.g. "clip the update to [-C, C] first").
func InRange(name string, x []float64, lo, hi float64, hint string) error {
	for i, v := range x {
		if math.IsNaN(v) || v < lo || v > hi {
			if hint != "" {
				return invalid("%s[%d] = %v is outside [%v, %v]: %s", name, i, v, lo, hi, hint)
			}
			return invalid("%s[%d] = %v is outside [%v, %v]", name, i, v, lo, hi)
		}
	}
	return nil
}
