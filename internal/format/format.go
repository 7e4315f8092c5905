// Package format writes the figures the project prints (epsilons, deltas,
// and other numbers) as strings: significant digits rounded to the safe
// side of a bound (Sig, EpsUp, DeltaUp), and %g without exponents for large
// numbers (Figure). It sits at the bottom of the layers so that every
// driver and research package prints a figure the same way.
package format

import (
	"math"
	"strconv"
	"strings"
)

// Sig formats v with prec significant digits, rounded up (up) or down so
// that the printed number is never on the optimistic side of v: an epsilon or
// delta upper bound is printed rounded up, a "largest admissible" value rounded
// down. Differences below 1e-12 relative (floating-point noise, far below the
// accuracy of any bound here) are ignored, so 10 x 1e-6 prints as 1e-05.
func Sig(v float64, prec int, up bool) string {
	s := formatSig(v, prec, up)
	return plain(s)
}

func formatSig(v float64, prec int, up bool) string {
	s := strconv.FormatFloat(v, 'g', prec, 64)
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
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
func EpsUp(v float64) string { return Sig(v, 6, true) }

// DeltaUp formats a delta upper bound: 4 significant digits, rounded up.
func DeltaUp(v float64) string { return Sig(v, 4, true) }

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
