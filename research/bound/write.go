package bound

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Help is the help of `shufflefl bound`: its subcommands and common flags.
const Help = `shufflefl bound: privacy amplification by shuffling, subsampling and composition

Usage:
  shufflefl bound SUBCOMMAND [flags]

Uniform local epsilon (eps0 per report, n reports):
  erlingsson    Erlingsson et al. 2019 closed form
  blanket       Balle et al. 2019 privacy blanket (numerical Bennett/Hoeffding; closed form for R_{gamma,b})
  clones        Feldman-McMillan-Talwar 2022 (numerical, exact; or closed form)
  best          the tightest valid rigorous bound, named (uniform, or personalized with --eps-file/--eps-dist)

Personalized local epsilons (--eps-file FILE or --eps-dist NAME --n N --seed S):
  unis          APES Eq. (2) baseline (FMT at max eps_i)
  eon           APES Echo of Neighbors (Theorem 4 closed form, or numerical with exact clone counts)
  eapes         E-APES mu-GDP (an APPROXIMATION, labelled as such)

Protocols and tools:
  flame-simple  FLAME Theorem 1 (SS-Simple)
  flame-double  SS-Double with dummy padding (sound; --flame-theorem: FLAME Theorems 3-4, not an upper bound)
  flame-topk    FLAME Theorem 5 / Proposition 2 (nu-index privacy of SS-Topk)
  sapes         S-APES Proposition 1 (user level after b-of-d sparsification)
  subsample     amplification by subsampling (without replacement or Poisson)
  compose       composition over rounds (basic, advanced, rdp, pld, best)
  sgm           the Poisson-subsampled Gaussian mechanism (DP-SGD, DP-FedAvg) over T steps (rdp or pld)
  skellam       the Poisson-subsampled Skellam mechanism (split-mix's noisy sum) over T steps (pld, rdp or best)

Common flags: --json (one JSON object), --compare (every applicable bound side by side),
--target-epsilon (the inverse question), --rounds R with --composition basic|advanced|rdp|pld|best
(compose the per-round guarantee; default best, which names the winner).
Every numeric flag is checked before any computation: NaN, infinities and
out-of-range values are rejected (exit status 2, one line on stderr).
Run 'shufflefl bound SUBCOMMAND --help' for all flags and examples.

Examples:
  shufflefl bound clones --eps0 4 --n 100000 --delta 1e-6
  shufflefl bound best --compare --eps0 1 --n 10000 --delta 1e-8
  shufflefl bound flame-double --eps-l 78.5 --n 1000 --k 157 --np 333
`

// Examples are the examples of each command (the flags after its name), as
// 'shufflefl bound NAME --help' shows them; the command's tests run each.
var Examples = map[string][]string{
	"erlingsson":   {"--eps0 0.5 --n 10000 --delta 1e-6"},
	"blanket":      {"--eps0 1 --n 100000 --delta 1e-6", "--eps0 1 --n 100000 --mech rgb --domain 2 --form closed"},
	"clones":       {"--eps0 4 --n 100000 --delta 1e-6", "--eps0 2 --n 10000 --rounds 10 --composition pld"},
	"best":         {"--compare --eps0 1 --n 10000 --delta 1e-8", "--eps-dist uniform2 --n 10000 --delta 1e-8"},
	"unis":         {"--eps-dist uniform2 --n 10000 --delta 1e-8"},
	"eon":          {"--eps-dist uniform2 --n 10000 --delta 1e-8", "--eps-dist gauss1 --n 10000 --delta 1e-8 --form closed"},
	"eapes":        {"--eps-dist eapes-uniform1 --n 1000 --delta 1e-5"},
	"flame-simple": {"--eps-l 78.5 --d 7850 --n 1000 --delta 5e-6", "--eps-l 1517 --d 7850 --n 2000 --delta 5e-8 --mech rgb --domain 2", "--eps-l 78.5 --d 7850 --n 1000 --delta 5e-6 --composition pld --rounds 10"},
	"flame-double": {"--eps-l 78.5 --d 7850 --k 157 --n 1000 --np 333 --delta 5e-6"},
	"flame-topk":   {"--n 1000 --np 333 --k 157 --d 7850"},
	"sapes":        {"--eps-c 0.01 --delta-c 1e-8 --b 1570"},
	"subsample":    {"--eps0 1 --q 0.01", "--eps0 1 --delta0 1e-6 --q 0.1 --method poisson"},
	"compose":      {"--eps0 0.5 --rounds 100 --delta-prime 1e-6"},
	"sgm":          {"--q 0.01 --sigma 1.1 --steps 1000 --delta 1e-5"},
}

// SetInputs records in r.Inputs the value of every flag of fs (which
// Register bound), leaving out a deprecated flag that was not given.
func (r *Result) SetInputs(fs *flag.FlagSet, given map[string]bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, "DEPRECATED") && !given[f.Name] {
			return
		}
		if g, ok := f.Value.(flag.Getter); ok {
			r.Inputs[f.Name] = g.Get()
		}
	})
}

// WriteText writes the result as `shufflefl bound` prints it: the bound
// with its warnings and figures, or the comparison table and the best
// rigorous row.
func (r *Result) WriteText(w io.Writer) error {
	for _, t := range r.Text {
		fmt.Fprintln(w, t)
	}
	if r.Compare != nil {
		return r.writeCompare(w)
	}
	b := r.Bound
	if r.NoEpsDelta {
		fmt.Fprintf(w, "%s: no (epsilon, delta) statement\n", b.Name)
	} else {
		label := "epsilon"
		if r.Inverse {
			label = "central epsilon at that value"
		}
		fmt.Fprintf(w, "%s: %s = %s, delta = %s\n", b.Name, label, EpsUp(b.Epsilon), DeltaUp(b.Delta))
	}
	switch {
	case IsLegacy(b):
		fmt.Fprintln(w, "WARNING: NOT RIGOROUS: computed with the flawed legacy Bennett code, which understates delta; not a privacy guarantee")
	case b.Approximation:
		fmt.Fprintln(w, "WARNING: this is an APPROXIMATION, not a proven upper bound (see the note)")
	}
	if b.Assumption != "" {
		fmt.Fprintf(w, "NOTE: this bound holds only under %s\n", b.Assumption)
	}
	if b.Note != "" {
		fmt.Fprintf(w, "  (%s)\n", b.Note)
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s = %v\n", k, r.Extra[k])
	}
	for _, t := range r.After {
		fmt.Fprintln(w, t)
	}
	return nil
}

// writeCompare writes the comparison table and the best rigorous row.
func (r *Result) writeCompare(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BOUND\tEPSILON\tDELTA\tNOTE")
	for _, c := range r.Compare {
		if c.Err != "" {
			fmt.Fprintf(tw, "%s\t-\t-\tnot applicable: %s\n", c.Name, c.Err)
			continue
		}
		note := c.Note
		switch {
		case IsLegacy(c.Bound):
			note = "NOT RIGOROUS (flawed legacy code, understates delta): " + note
		case c.Approximation:
			note = "APPROXIMATION (not an upper bound): " + note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, EpsUp(c.Epsilon), DeltaUp(c.Delta), note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "best (rigorous): %s epsilon = %s delta = %s", r.Bound.Name, EpsUp(r.Bound.Epsilon), DeltaUp(r.Bound.Delta))
	if r.Bound.Assumption != "" {
		fmt.Fprintf(w, " (only under %s)", r.Bound.Assumption)
	}
	fmt.Fprintln(w)
	return nil
}

// WriteJSON writes the result as one indented JSON object. "rigorous" is
// true only for a proven upper bound (not an approximation, not the legacy
// code), "assumption" names the extra modelling assumption a bound needs,
// if any; epsilon and delta are omitted when the result is not an
// (epsilon, delta) statement, and any non-finite number is written as
// null.
func (r *Result) WriteJSON(w io.Writer) error {
	obj := map[string]any{
		"bound":         r.Bound.Name,
		"approximation": r.Bound.Approximation,
		"rigorous":      Rigorous(r.Bound),
		"inputs":        r.Inputs,
	}
	if !r.NoEpsDelta {
		obj["epsilon"] = r.Bound.Epsilon
		obj["delta"] = r.Bound.Delta
	}
	if r.Bound.Note != "" {
		obj["note"] = r.Bound.Note
	}
	if r.Bound.Assumption != "" {
		obj["assumption"] = r.Bound.Assumption
	}
	for k, v := range r.Extra {
		obj[k] = v
	}
	if r.Compare != nil {
		rows := make([]map[string]any, 0, len(r.Compare))
		for _, c := range r.Compare {
			m := map[string]any{"bound": c.Name, "approximation": c.Approximation, "rigorous": Rigorous(c.Bound)}
			if c.Err != "" {
				m["error"] = c.Err
				m["epsilon"] = nil
			} else {
				m["epsilon"] = c.Epsilon
				m["delta"] = c.Delta
				m["note"] = c.Note
				if c.Assumption != "" {
					m["assumption"] = c.Assumption
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
