package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	"shufflefl/bound"
)

func epsUp(v float64) string   { return bound.EpsUp(v) }
func deltaUp(v float64) string { return bound.DeltaUp(v) }
func isFinite(v float64) bool  { return !math.IsNaN(v) && !math.IsInf(v, 0) }

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
func printBound(w io.Writer, jsonOut bool, out *bound.Result) error {
	if jsonOut {
		return printBoundJSON(w, out)
	}
	for _, t := range out.Text {
		fmt.Fprintln(w, t)
	}
	if out.Compare != nil {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BOUND\tEPSILON\tDELTA\tNOTE")
		for _, r := range out.Compare {
			if r.Err != "" {
				fmt.Fprintf(tw, "%s\t-\t-\tnot applicable: %s\n", r.Name, r.Err)
				continue
			}
			note := r.Note
			switch {
			case bound.IsLegacy(r.Bound):
				note = "NOT RIGOROUS (flawed legacy code, understates delta): " + note
			case r.Approximation:
				note = "APPROXIMATION (not an upper bound): " + note
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, epsUp(r.Epsilon), deltaUp(r.Delta), note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "best (rigorous): %s epsilon = %s delta = %s", out.Bound.Name, epsUp(out.Bound.Epsilon), deltaUp(out.Bound.Delta))
		if out.Bound.Assumption != "" {
			fmt.Fprintf(w, " (only under %s)", out.Bound.Assumption)
		}
		fmt.Fprintln(w)
		return nil
	}
	r := out.Bound
	if out.NoEpsDelta {
		fmt.Fprintf(w, "%s: no (epsilon, delta) statement\n", r.Name)
	} else {
		label := "epsilon"
		if out.Inverse {
			label = "central epsilon at that value"
		}
		fmt.Fprintf(w, "%s: %s = %s, delta = %s\n", r.Name, label, epsUp(r.Epsilon), deltaUp(r.Delta))
	}
	switch {
	case bound.IsLegacy(r):
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
	keys := make([]string, 0, len(out.Extra))
	for k := range out.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s = %v\n", k, out.Extra[k])
	}
	for _, t := range out.After {
		fmt.Fprintln(w, t)
	}
	return nil
}

// printBoundJSON writes one JSON object. "rigorous" is true only for a proven
// upper bound (not an approximation, not the legacy code), "assumption" names
// the extra modelling assumption a bound needs, if any; epsilon and delta
// are omitted when the result is not an (epsilon, delta) statement, and any
// non-finite number is written as null.
func printBoundJSON(w io.Writer, out *bound.Result) error {
	obj := map[string]any{
		"bound":         out.Bound.Name,
		"approximation": out.Bound.Approximation,
		"rigorous":      !out.Bound.Approximation && !bound.IsLegacy(out.Bound),
		"inputs":        out.Inputs,
	}
	if !out.NoEpsDelta {
		obj["epsilon"] = out.Bound.Epsilon
		obj["delta"] = out.Bound.Delta
	}
	if out.Bound.Note != "" {
		obj["note"] = out.Bound.Note
	}
	if out.Bound.Assumption != "" {
		obj["assumption"] = out.Bound.Assumption
	}
	for k, v := range out.Extra {
		obj[k] = v
	}
	if out.Compare != nil {
		rows := make([]map[string]any, 0, len(out.Compare))
		for _, r := range out.Compare {
			m := map[string]any{"bound": r.Name, "approximation": r.Approximation,
				"rigorous": !r.Approximation && !bound.IsLegacy(r.Bound)}
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
