package bound

import (
	"strings"

	"github.com/shufflefl/shufflefl/internal/format"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// Result is what a command computed.
type Result struct {
	// Bound is the answer: the method's name, epsilon, delta, whether it
	// is an approximation, the assumption it needs, a note on how it was
	// obtained. With Compare, it is the best rigorous row.
	Bound amplify.Bound
	// Compare holds every applicable bound, sorted by epsilon (Params.Compare).
	Compare []amplify.Candidate
	// Extra holds the named figures behind the answer (per-round figures,
	// mu, compositions, count_lower_bound, max_eps0, ...).
	Extra map[string]any
	// Inputs describes inputs that are not parameters (the budgets' count,
	// min and max).
	Inputs map[string]any
	// Text are lines to print before the answer (the inverse search's).
	Text []string
	// After are lines to print below it, e.g. the count-statistic lower
	// bound that checks a FLAME statement.
	After []string
	// Inverse is set when the answer is a calibration (TargetEpsilon):
	// Bound's epsilon is then the one at the value found.
	Inverse bool
	// NoEpsDelta is set when the result is not an (epsilon, delta)
	// statement (nu-index privacy): Bound's epsilon and delta are unset.
	NoEpsDelta bool
}

// Rigorous reports whether b is a proven upper bound: neither an
// approximation nor computed by the flawed legacy code.
func Rigorous(b amplify.Bound) bool { return !b.Approximation && !IsLegacy(b) }

// IsLegacy reports whether b was computed with the flawed legacy Bennett
// code (--legacy-flame-typo): such a number is not a privacy guarantee.
func IsLegacy(b amplify.Bound) bool { return strings.Contains(b.Name, "legacy") }

// markLegacy labels every legacy result and row as not rigorous
// (Approximation = true), so that it is never presented, selected or
// serialized as a proven bound.
func markLegacy(out *Result) {
	if IsLegacy(out.Bound) {
		out.Bound.Approximation = true
	}
	for i := range out.Compare {
		if IsLegacy(out.Compare[i].Bound) {
			out.Compare[i].Approximation = true
		}
	}
}

// FormatSig formats v with prec significant digits, rounded up (up) or down,
// never on the optimistic side of v: it is format.Sig.
func FormatSig(v float64, prec int, up bool) string { return format.Sig(v, prec, up) }

// EpsUp formats an epsilon upper bound: 6 significant digits, rounded up
// (format.EpsUp).
func EpsUp(v float64) string { return format.EpsUp(v) }

// DeltaUp formats a delta upper bound: 4 significant digits, rounded up
// (format.DeltaUp).
func DeltaUp(v float64) string { return format.DeltaUp(v) }

// Figure formats v with prec significant digits (-1: as many as needed) as
// %g does, except that a large number is written out in full (23550, not
// 2.355e+04) up to 1e15; small numbers keep their exponent (1e-05). It is
// format.Figure.
func Figure(v float64, prec int) string { return format.Figure(v, prec) }
