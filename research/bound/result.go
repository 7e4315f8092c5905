package bound

import (
	"math"
	"strconv"
	"strings"

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

// FormatSig formats v with prec significant digits, rounded up (up) or down so
// that the printed number is never on the optimistic side of v: an epsilon or
// delta upper bound is printed rounded up, a "largest admissible" value rounded
// down. Differences below 1e-12 relative (floating-point noise, far below the
// accuracy of any bound here) are ignored, so 10 x 1e-6 prints as 1e-05.
func FormatSig(v float64, prec int, up bool) string {
	s := formatSig(v, prec, up)
	return plain(s)
}

func formatSig(v float64, prec int, up bool) string {
	s := strconv.FormatFloat(v, 'g', prec, 64)
	if !isFinite(v) || v == 0 {
		return s
	}
	tol := 1e-12 * math.Abs(v)
	ok := func(p float64) bool {
		if up {
			return p >= v-tol
		}
		return p <= v+tol
	}
	p, _ := strconv.ParseFloat(s, 64)
	for i := 0; i < 4 && !ok(p); i++ {
		unit := math.Pow(10, math.Floor(math.Log10(math.Abs(p)))-float64(prec-1))
		if up {
			p += unit
		} else {
			p -= unit
		}
		s = strconv.FormatFloat(p, 'g', prec, 64)
		p, _ = strconv.ParseFloat(s, 64)
	}
	if !ok(p) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return s
}

// EpsUp formats an epsilon upper bound: 6 significant digits, rounded up.
func EpsUp(v float64) string { return FormatSig(v, 6, true) }

// DeltaUp formats a delta upper bound: 4 significant digits, rounded up.
func DeltaUp(v float64) string { return FormatSig(v, 4, true) }

// Figure formats v with prec significant digits (-1: as many as needed) as
// %g does, except that a large number is written out in full (23550, not
// 2.355e+04) up to 1e15; small numbers keep their exponent (1e-05).
func Figure(v float64, prec int) string {
	return plain(strconv.FormatFloat(v, 'g', prec, 64))
}

// plain rewrites a 'g'-formatted number with a positive exponent below 15
// in positional notation; anything else is returned as it is.
func plain(s string) string {
	i := strings.Index(s, "e+")
	if i < 0 {
		return s
	}
	if exp, err := strconv.Atoi(s[i+2:]); err != nil || exp >= 15 {
		return s
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
