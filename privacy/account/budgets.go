package account

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// budgetDist describes one named distribution of personalized local
// epsilons: a sampler followed by clipping to [lo, hi].
type budgetDist struct {
	source string // paper, table and row
	draw   func(r *rand.Rand) float64
	lo, hi float64
}

func uniform(a, b float64) func(*rand.Rand) float64 {
	return func(r *rand.Rand) float64 { return a + (b-a)*r.Float64() }
}

func normal(mean, sd float64) func(*rand.Rand) float64 {
	return func(r *rand.Rand) float64 { return mean + sd*r.NormFloat64() }
}

// mixture draws from a with probability pa, otherwise from b.
func mixture(pa float64, a, b func(*rand.Rand) float64) func(*rand.Rand) float64 {
	return func(r *rand.Rand) float64 {
		if r.Float64() < pa {
			return a(r)
		}
		return b(r)
	}
}

// budgetDists is the registry behind Budgets. APES Table 2 writes N(m, 1):
// variance and standard deviation coincide, so there is no ambiguity. E-APES
// Table 3 writes N(mu, sigma^2) but its caption says the second argument is
// the standard deviation; we follow the caption (N(0.5, 0.2) has sd 0.2).
var budgetDists = map[string]budgetDist{
	// APES (Liu et al., AAAI 2023), Table 2: PER-COORDINATE epsilons (APES
	// states every budget per dimension). shufflefl's budgets are user
	// level, so a user-level reading multiplies them by d (`--eps-scale d`).
	"uniform1":  {"APES Table 2 Uniform1: U(0.05, 0.5), clip [0.05, 0.5] (per coordinate in APES: scale by d for user level)", uniform(0.05, 0.5), 0.05, 0.5},
	"uniform2":  {"APES Table 2 Uniform2: U(0.05, 1), clip [0.05, 1] (per coordinate in APES: scale by d for user level)", uniform(0.05, 1), 0.05, 1},
	"gauss1":    {"APES Table 2 Gauss1: N(0.1, 1), clip [0.05, 0.5] (per coordinate in APES: scale by d for user level)", normal(0.1, 1), 0.05, 0.5},
	"gauss2":    {"APES Table 2 Gauss2: N(0.2, 1), clip [0.05, 1] (per coordinate in APES: scale by d for user level)", normal(0.2, 1), 0.05, 1},
	"mixgauss1": {"APES Table 2 MixGauss1: 90% N(0.1, 1) + 10% N(0.5, 1), clip [0.05, 0.5] (per coordinate in APES: scale by d for user level)", mixture(0.9, normal(0.1, 1), normal(0.5, 1)), 0.05, 0.5},
	"mixgauss2": {"APES Table 2 MixGauss2: 90% N(0.2, 1) + 10% N(1, 1), clip [0.05, 1] (per coordinate in APES: scale by d for user level)", mixture(0.9, normal(0.2, 1), normal(1, 1)), 0.05, 1},
	// E-APES (Chen, Cao and Ge 2023), Table 3: user-level epsilons (one
	// (eps_i, delta_i) per user's whole noisy update).
	"eapes-uniform1": {"E-APES Table 3 Uniform 1: U(0.05, 1), clip [0.05, 1] (user level)", uniform(0.05, 1), 0.05, 1},
	"eapes-uniform2": {"E-APES Table 3 Uniform 2: U(0.01, 2), clip [0.01, 2] (user level)", uniform(0.01, 2), 0.01, 2},
	"eapes-gauss1":   {"E-APES Table 3 Gauss 1: N(0.5, sd 0.2), clip [0.05, 1] (user level)", normal(0.5, 0.2), 0.05, 1},
	"eapes-gauss2":   {"E-APES Table 3 Gauss 2: N(1, sd 0.2), clip [0.01, 2] (user level)", normal(1, 0.2), 0.01, 2},
	"eapes-gauss3":   {"E-APES Table 3 Gauss 3: N(1, sd 0.5), clip [0.01, 2] (user level)", normal(1, 0.5), 0.01, 2},
}

// EAPESGroups returns the default groups of E-APES Section 4.2 (after
// Jorgensen et al., "Conservative or liberal? Personalized differential
// privacy"): 54% of users are conservative with epsilon 0.1, 37% moderate with
// epsilon 0.5 and 9% liberal with epsilon 1. The slice is a fresh copy.
func EAPESGroups() []Group { return append([]Group(nil), eapesGroups...) }

var eapesGroups = []Group{
	{Name: "conservative", Fraction: 0.54, Epsilon: 0.1},
	{Name: "moderate", Fraction: 0.37, Epsilon: 0.5},
	{Name: "liberal", Fraction: 0.09, Epsilon: 1},
}

// Group is one privacy-preference group: a fraction of the users who all hold
// the same local epsilon.
type Group struct {
	Name     string  `json:"name"`
	Fraction float64 `json:"fraction"`
	Epsilon  float64 `json:"epsilon"`
}

// groupsName is the Budgets name of the E-APES Section 4.2 groups.
const groupsName = "eapes-groups"

// BudgetDistributions returns the names accepted by Budgets, sorted:
//
//   - uniform1, uniform2, gauss1, gauss2, mixgauss1, mixgauss2: APES Table 2
//     (Liu et al., "Echo of Neighbors", AAAI 2023), each clipped to its
//     table's range ([0.05, 0.5] for the "1" rows, [0.05, 1] for the "2" rows);
//   - eapes-uniform1, eapes-uniform2, eapes-gauss1, eapes-gauss2,
//     eapes-gauss3: E-APES Table 3 (Chen, Cao and Ge 2023);
//   - eapes-groups: E-APES Section 4.2's conservative/moderate/liberal users
//     (EAPESGroups()).
func BudgetDistributions() []string {
	names := make([]string, 0, len(budgetDists)+1)
	for k := range budgetDists {
		names = append(names, k)
	}
	names = append(names, groupsName)
	sort.Strings(names)
	return names
}

// BudgetSource returns the paper, table and parameters behind a name accepted
// by Budgets.
func BudgetSource(dist string) (string, error) {
	if dist == groupsName {
		return "E-APES Section 4.2: 54% conservative (epsilon 0.1), 37% moderate (0.5), 9% liberal (1)", nil
	}
	d, ok := budgetDists[strings.ToLower(dist)]
	if !ok {
		return "", unknownDist(dist)
	}
	return d.source, nil
}

func unknownDist(dist string) error {
	return checks.Invalidf("unknown budget distribution %q; known: %s", dist, strings.Join(BudgetDistributions(), ", "))
}

// Budgets draws n personalized local epsilons from the named distribution
// (see BudgetDistributions; names are case-insensitive) using r. Each draw is
// independent and clipped to the distribution's range, as the tables
// prescribe (a value g outside [a, b] becomes max(a, g) or min(b, g)), so a
// Gaussian row puts visible mass on its clip bounds. For eapes-groups the group
// sizes are exact (see GroupBudgets). The result is reproducible for a seeded r.
// n must be in [1, MaxBudgets].
func Budgets(dist string, n int, r *rand.Rand) ([]float64, error) {
	if err := checks.IntInRange("n", n, 1, MaxBudgets); err != nil {
		return nil, fmt.Errorf("budgets: %w", err)
	}
	if r == nil {
		return nil, fmt.Errorf("budgets: %w", checks.Invalidf("random generator must not be nil"))
	}
	name := strings.ToLower(dist)
	if name == groupsName {
		return GroupBudgets(eapesGroups, n, r)
	}
	d, ok := budgetDists[name]
	if !ok {
		return nil, fmt.Errorf("budgets: %w", unknownDist(dist))
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Min(d.hi, math.Max(d.lo, d.draw(r)))
	}
	return out, nil
}

// GroupBudgets assigns n users to privacy-preference groups (E-APES Section
// 4.2, "we randomly divide the users into three groups" with fractions f_c,
// f_m, f_l): group sizes are Fraction_g n apportioned by largest remainder
// (so they sum to n and a group with fraction 0 stays empty), and the
// assignment is a uniformly random permutation drawn from r.
// Fractions must be non-negative and sum to 1 (within 1e-9); epsilons must be
// >= 0 (E-APES allows eps_i = 0); n must be in [1, MaxBudgets].
func GroupBudgets(groups []Group, n int, r *rand.Rand) ([]float64, error) {
	if err := checks.IntInRange("n", n, 1, MaxBudgets); err != nil {
		return nil, fmt.Errorf("group budgets: %w", err)
	}
	if r == nil {
		return nil, fmt.Errorf("group budgets: %w", checks.Invalidf("random generator must not be nil"))
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("group budgets: %w", checks.Invalidf("need at least one group"))
	}
	sum := 0.0
	for i, g := range groups {
		if err := checks.Probability(fmt.Sprintf("groups[%d].fraction", i), g.Fraction); err != nil {
			return nil, fmt.Errorf("group budgets: %w", err)
		}
		if err := checks.EpsilonOrZero(fmt.Sprintf("groups[%d].epsilon", i), g.Epsilon); err != nil {
			return nil, fmt.Errorf("group budgets: %w", err)
		}
		sum += g.Fraction
	}
	if math.Abs(sum-1) > 1e-9 {
		return nil, fmt.Errorf("group budgets: %w", checks.Invalidf("group fractions must sum to 1, got %v", sum))
	}
	// Largest-remainder apportionment: floor(Fraction n) users each, the
	// users left over go to the largest remainders (ties: earlier group).
	counts := make([]int, len(groups))
	rem := make([]int, len(groups))
	left := n
	for i, g := range groups {
		counts[i] = int(math.Floor(g.Fraction * float64(n)))
		left -= counts[i]
		rem[i] = i
	}
	frac := func(i int) float64 { return groups[i].Fraction*float64(n) - float64(counts[i]) }
	sort.SliceStable(rem, func(a, b int) bool { return frac(rem[a]) > frac(rem[b]) })
	for i := 0; left > 0; i = (i + 1) % len(rem) {
		if groups[rem[i]].Fraction > 0 {
			counts[rem[i]]++
			left--
		}
	}
	out := make([]float64, 0, n)
	for i, g := range groups {
		for range counts[i] {
			out = append(out, g.Epsilon)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

// MaxBudgets is the largest number of budgets Budgets and GroupBudgets draw
// and ReadBudgets reads: 10^8 (800 MB of float64). Larger requests are
// rejected before any memory is allocated.
const MaxBudgets = 100_000_000

// maxBudgetLine is the longest line ReadBudgets accepts (a CSV row).
const maxBudgetLine = 1 << 20

// ReadBudgets reads personalized local epsilons from r. The input is in one
// of two formats, decided by its first content line:
//
//   - one epsilon per line: every content line holds exactly one number
//     (a line such as "0.5 0.6" or "0.5,0.6" is an error, never split);
//   - CSV with a header: the first content line contains no number and
//     names a column "epsilon" or "eps" (case-insensitive, exactly one such
//     column); every following content line is a comma-separated row with
//     as many fields as the header, and the value is read from that column
//     (other columns are ignored). Fields may be double-quoted; a quoted
//     field may not span lines.
//
// Content lines are the lines that are not blank and do not start with '#'
// (comments, allowed anywhere); surrounding spaces, a CRLF line end and a
// UTF-8 byte-order mark at the start of the input are ignored. A first
// content line without any number that names no epsilon column is an error,
// so a data line is never silently taken for a header.
//
// Every value must be a finite number >= 0 (E-APES allows eps_i = 0). NaN,
// infinities, negative values, unparsable or missing fields, lines longer
// than 1 MiB, more than MaxBudgets values and an input without values are
// rejected with an error wrapping checks.ErrInvalid that names the line.
//
// ReadBudgets streams its input and does not allocate per line: 10^6 lines
// take well under a second.
func ReadBudgets(r io.Reader) ([]float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 256*1024), maxBudgetLine)
	out := make([]float64, 0, 4096)
	line := 0
	col, ncols := -1, 0 // CSV mode: the epsilon column and the number of fields
	colName := ""
	first := true // no content line seen yet
	var fields [][]byte
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff"))
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		bad := func(err error) ([]float64, error) {
			return nil, fmt.Errorf("read budgets: line %d: %w", line, err)
		}
		if first {
			first = false
			if !hasNumber(b) {
				var err error
				fields, err = splitCSV(b, fields[:0])
				if err != nil {
					return bad(err)
				}
				col, colName, err = epsilonColumn(fields)
				if err != nil {
					return bad(err)
				}
				ncols = len(fields)
				continue
			}
		}
		v := b
		if col >= 0 {
			var err error
			fields, err = splitCSV(b, fields[:0])
			if err != nil {
				return bad(err)
			}
			if len(fields) != ncols {
				return bad(checks.Invalidf("%d fields, but the header has %d", len(fields), ncols))
			}
			v = bytes.TrimSpace(fields[col])
			if len(v) == 0 {
				return bad(checks.Invalidf("column %q is empty", colName))
			}
		} else if n := countValues(b); n > 1 {
			return bad(checks.Invalidf("%d values on one line (%q): the file must hold one epsilon per line, or be a CSV whose first line is a header naming an 'epsilon' or 'eps' column", n, truncate(b)))
		}
		e, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return bad(checks.Invalidf("%q is not a number", truncate(v)))
		}
		if err := checks.EpsilonOrZero("epsilon", e); err != nil {
			return bad(err)
		}
		if len(out) >= MaxBudgets {
			return bad(checks.Invalidf("more than %d budgets (the limit)", MaxBudgets))
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("read budgets: line %d: %w", line+1, checks.Invalidf("line longer than %d bytes", maxBudgetLine))
		}
		return nil, fmt.Errorf("read budgets: after line %d: %w", line, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read budgets: %w", checks.Invalidf("no budgets found (empty input)"))
	}
	return out[:len(out):len(out)], nil
}

// hasNumber reports whether some comma- or space-separated token of b parses
// as a number.
func hasNumber(b []byte) bool {
	for len(b) > 0 {
		i := bytes.IndexAny(b, ", \t;")
		tok := b
		if i >= 0 {
			tok, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		tok = bytes.Trim(tok, "\" ")
		if len(tok) == 0 {
			continue
		}
		if _, err := strconv.ParseFloat(string(tok), 64); err == nil {
			return true
		}
	}
	return false
}

// countValues returns the number of comma-, semicolon- or space-separated
// non-empty tokens of b (1 for a well-formed line of the one-per-line
// format). A trailing separator, as in "0.5,", counts as a second, empty
// value, so it is rejected too.
func countValues(b []byte) int {
	sep := false
	for _, c := range b {
		if c == ',' || c == ' ' || c == '\t' || c == ';' {
			sep = true
			break
		}
	}
	if !sep {
		return 1
	}
	n := 0
	for _, f := range bytes.FieldsFunc(b, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == ';' }) {
		if len(f) > 0 {
			n++
		}
	}
	return max(n, 2)
}

// splitCSV appends the comma-separated fields of one CSV line to dst. Fields
// without quotes are returned as slices of b; a line with a double quote is
// parsed by encoding/csv (no field may span lines).
func splitCSV(b []byte, dst [][]byte) ([][]byte, error) {
	if bytes.IndexByte(b, '"') < 0 {
		for {
			i := bytes.IndexByte(b, ',')
			if i < 0 {
				return append(dst, b), nil
			}
			dst = append(dst, b[:i])
			b = b[i+1:]
		}
	}
	cr := csv.NewReader(bytes.NewReader(b))
	cr.TrimLeadingSpace = true
	rec, err := cr.Read()
	if err != nil {
		return nil, checks.Invalidf("malformed CSV: %v", err)
	}
	for _, f := range rec {
		dst = append(dst, []byte(f))
	}
	return dst, nil
}

// epsilonColumn returns the index and name of the one header field named
// "epsilon" or "eps" (case-insensitive).
func epsilonColumn(header [][]byte) (int, string, error) {
	col, name := -1, ""
	for i, f := range header {
		f = bytes.TrimSpace(f)
		if bytes.EqualFold(f, []byte("epsilon")) || bytes.EqualFold(f, []byte("eps")) {
			if col >= 0 {
				return -1, "", checks.Invalidf("header names two epsilon columns (%q and %q)", name, f)
			}
			col, name = i, string(f)
		}
	}
	if col < 0 {
		return -1, "", checks.Invalidf("%q is neither a number nor a CSV header naming an 'epsilon' or 'eps' column", truncate(bytes.Join(header, []byte(","))))
	}
	return col, name, nil
}

// truncate shortens b for an error message.
func truncate(b []byte) string {
	const max = 60
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
