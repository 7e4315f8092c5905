package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"shufflefl/amplify"
)

// boundOutput collects what a subcommand reports.
type boundOutput struct {
	result amplify.Bound
	rows   []amplify.Candidate
	extra  map[string]any
	inputs map[string]any
	text   []string
	// after is printed below the result (text output only), e.g. the
	// count-statistic lower bound that checks it.
	after   []string
	inverse bool
	// noEpsDelta is set when the result is not an (epsilon, delta)
	// statement (nu-index privacy): neither is printed.
	noEpsDelta bool
}

// isLegacy reports whether b was computed with the flawed legacy Bennett
// code (--legacy-flame-typo): such a number is not a privacy guarantee.
func isLegacy(b amplify.Bound) bool { return strings.Contains(b.Name, "legacy") }

// markLegacy labels every legacy result and row as not rigorous
// (Approximation = true), so that it is never presented, selected or
// serialized as a proven bound.
func markLegacy(out *boundOutput) {
	if isLegacy(out.result) {
		out.result.Approximation = true
	}
	for i := range out.rows {
		if isLegacy(out.rows[i].Bound) {
			out.rows[i].Approximation = true
		}
	}
}

// fmtSig formats v with prec significant digits, rounded up (up) or down so
// that the printed number is never on the optimistic side of v: an epsilon or
// delta upper bound is printed rounded up, a "largest admissible" value rounded
// down. Differences below 1e-12 relative (floating-point noise, far below the
// accuracy of any bound here) are ignored, so 10 x 1e-6 prints as 1e-05.
func fmtSig(v float64, prec int, up bool) string {
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

func epsUp(v float64) string   { return fmtSig(v, 6, true) }
func deltaUp(v float64) string { return fmtSig(v, 4, true) }

// jsonSafe returns v with every non-finite float64 (in maps and slices, at
// any depth) replaced by nil, so that encoding/json writes null instead of
// failing with "unsupported value".
func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		if !isFinite(x) {
			return nil
		}
		return x
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonSafe(e)
		}
		return m
	case []map[string]any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = jsonSafe(e)
		}
		return s
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = jsonSafe(e)
		}
		return s
	}
	return v
}

// printBound writes the result as text or as one JSON object.
func printBound(w io.Writer, o *boundOpts, out *boundOutput) error {
	if o.jsonOut {
		return printBoundJSON(w, out)
	}
	for _, t := range out.text {
		fmt.Fprintln(w, t)
	}
	if out.rows != nil {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BOUND\tEPSILON\tDELTA\tNOTE")
		for _, r := range out.rows {
			if r.Err != "" {
				fmt.Fprintf(tw, "%s\t-\t-\tnot applicable: %s\n", r.Name, r.Err)
				continue
			}
			note := r.Note
			switch {
			case isLegacy(r.Bound):
				note = "NOT RIGOROUS (flawed legacy code, understates delta): " + note
			case r.Approximation:
				note = "APPROXIMATION (not an upper bound): " + note
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, epsUp(r.Epsilon), deltaUp(r.Delta), note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "best (rigorous): %s epsilon = %s delta = %s", out.result.Name, epsUp(out.result.Epsilon), deltaUp(out.result.Delta))
		if out.result.Assumption != "" {
			fmt.Fprintf(w, " (only under %s)", out.result.Assumption)
		}
		fmt.Fprintln(w)
		return nil
	}
	r := out.result
	if out.noEpsDelta {
		fmt.Fprintf(w, "%s: no (epsilon, delta) statement\n", r.Name)
	} else {
		label := "epsilon"
		if out.inverse {
			label = "central epsilon at that value"
		}
		fmt.Fprintf(w, "%s: %s = %s, delta = %s\n", r.Name, label, epsUp(r.Epsilon), deltaUp(r.Delta))
	}
	switch {
	case isLegacy(r):
		fmt.Fprintln(w, "WARNING: NOT RIGOROUS: computed with the flawed legacy Bennett code, which understates delta; not a privacy guarantee")
	case r.Approximation:
		fmt.Fprintln(w, "WARNING: this is an APPROXIMATION, not a proven upper bound (see the note)")
	}
	if r.Assumption != "" {
		fmt.Fprintf(w, "NOTE: this bound holds only under %s\n", r.Assumption)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "  (%s)\n", r.Note)
	}
	keys := make([]string, 0, len(out.extra))
	for k := range out.extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s = %v\n", k, out.extra[k])
	}
	for _, t := range out.after {
		fmt.Fprintln(w, t)
	}
	return nil
}

// printBoundJSON writes one JSON object. "rigorous" is true only for a proven
// upper bound (not an approximation, not the legacy code), "assumption" names
// the extra modelling assumption a bound needs, if any; epsilon and delta
// are omitted when the result is not an (epsilon, delta) statement, and any
// non-finite number is written as null.
func printBoundJSON(w io.Writer, out *boundOutput) error {
	obj := map[string]any{
		"bound":         out.result.Name,
		"approximation": out.result.Approximation,
		"rigorous":      !out.result.Approximation && !isLegacy(out.result),
		"inputs":        out.inputs,
	}
	if !out.noEpsDelta {
		obj["epsilon"] = out.result.Epsilon
		obj["delta"] = out.result.Delta
	}
	if out.result.Note != "" {
		obj["note"] = out.result.Note
	}
	if out.result.Assumption != "" {
		obj["assumption"] = out.result.Assumption
	}
	for k, v := range out.extra {
		obj[k] = v
	}
	if out.rows != nil {
		rows := make([]map[string]any, 0, len(out.rows))
		for _, r := range out.rows {
			m := map[string]any{"bound": r.Name, "approximation": r.Approximation,
				"rigorous": !r.Approximation && !isLegacy(r.Bound)}
			if r.Err != "" {
				m["error"] = r.Err
				m["epsilon"] = nil
			} else {
				m["epsilon"] = r.Epsilon
				m["delta"] = r.Delta
				m["note"] = r.Note
				if r.Assumption != "" {
					m["assumption"] = r.Assumption
				}
			}
			rows = append(rows, m)
		}
		obj["compare"] = rows
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonSafe(obj))
}
