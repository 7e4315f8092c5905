package account

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
)

func TestBudgetsRanges(t *testing.T) {
	ranges := map[string][2]float64{
		"uniform1": {0.05, 0.5}, "uniform2": {0.05, 1}, "gauss1": {0.05, 0.5},
		"gauss2": {0.05, 1}, "mixgauss1": {0.05, 0.5}, "mixgauss2": {0.05, 1},
		"eapes-uniform1": {0.05, 1}, "eapes-uniform2": {0.01, 2}, "eapes-gauss1": {0.05, 1},
		"eapes-gauss2": {0.01, 2}, "eapes-gauss3": {0.01, 2}, "eapes-groups": {0.1, 1},
	}
	names := BudgetDistributions()
	if len(names) != len(ranges) {
		t.Fatalf("BudgetDistributions() = %v, want the %d documented names", names, len(ranges))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			rg, ok := ranges[name]
			if !ok {
				t.Fatalf("undocumented distribution %q", name)
			}
			if _, err := BudgetSource(name); err != nil {
				t.Fatal(err)
			}
			a, err := Budgets(name, 5000, rng.Stream(1, rng.LabelBudget))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Budgets(strings.ToUpper(name), 5000, rng.Stream(1, rng.LabelBudget))
			for i := range a {
				if a[i] < rg[0] || a[i] > rg[1] {
					t.Fatalf("budget[%d] = %v outside %v", i, a[i], rg)
				}
				if a[i] != b[i] {
					t.Fatalf("same seed, different budget[%d]: %v vs %v", i, a[i], b[i])
				}
			}
		})
	}
}

// TestBudgetsMoments checks each sampler against the distribution it claims.
// With n = 20000 draws the standard error of a mean of values in [0, 2] is at
// most 1/sqrt(20000) = 0.0071 and that of a fraction at most 0.0036; the
// tolerances are >= 5 standard errors (false-failure rate below 1e-6; the
// seed is fixed anyway).
func TestBudgetsMoments(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	const n = 20000
	tests := []struct {
		name       string
		mean       float64 // expected mean, NaN to skip
		atLo, atHi float64 // expected fraction clipped to each bound
		lo, hi     float64
	}{
		{"uniform1", 0.275, 0, 0, 0.05, 0.5},
		{"uniform2", 0.525, 0, 0, 0.05, 1},
		{"eapes-uniform2", 1.005, 0, 0, 0.01, 2},
		// N(0.1, 1) clipped to [0.05, 0.5]: P(X <= 0.05) = Phi(-0.05), P(X >= 0.5) = 1 - Phi(0.4).
		{"gauss1", math.NaN(), phi(-0.05), 1 - phi(0.4), 0.05, 0.5},
		{"gauss2", math.NaN(), phi(-0.15), 1 - phi(0.8), 0.05, 1},
		{"mixgauss1", math.NaN(), 0.9*phi(-0.05) + 0.1*phi(-0.45), 0.9*(1-phi(0.4)) + 0.1*(1-phi(0)), 0.05, 0.5},
		{"mixgauss2", math.NaN(), 0.9*phi(-0.15) + 0.1*phi(-0.95), 0.9*(1-phi(0.8)) + 0.1*(1-phi(0)), 0.05, 1},
		// E-APES N(0.5, sd 0.2) in [0.05, 1]: clipping at -2.25 and +2.5 sd.
		{"eapes-gauss1", 0.5, phi(-2.25), 1 - phi(2.5), 0.05, 1},
		{"eapes-gauss3", math.NaN(), phi(-1.98), 1 - phi(2), 0.01, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Budgets(tc.name, n, rng.Stream(7, rng.LabelBudget))
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			var lo, hi int
			for _, v := range b {
				sum += v
				if v == tc.lo {
					lo++
				}
				if v == tc.hi {
					hi++
				}
			}
			if !math.IsNaN(tc.mean) && math.Abs(sum/n-tc.mean) > 0.036 {
				t.Errorf("mean %v, want %v", sum/n, tc.mean)
			}
			if f := float64(lo) / n; math.Abs(f-tc.atLo) > 0.018 {
				t.Errorf("fraction at lower clip %v, want %v", f, tc.atLo)
			}
			if f := float64(hi) / n; math.Abs(f-tc.atHi) > 0.018 {
				t.Errorf("fraction at upper clip %v, want %v", f, tc.atHi)
			}
		})
	}
}

func TestGroupBudgets(t *testing.T) {
	b, err := Budgets("eapes-groups", 10000, rng.Stream(3, rng.LabelBudget))
	if err != nil {
		t.Fatal(err)
	}
	count := map[float64]int{}
	for _, v := range b {
		count[v]++
	}
	if count[0.1] != 5400 || count[0.5] != 3700 || count[1] != 900 {
		t.Fatalf("group sizes %v, want 5400/3700/900", count)
	}
	// Shuffled: the first 100 users are not all conservative.
	if c := strings.Count(fmt.Sprint(b[:100]), "0.1"); c == 100 {
		t.Fatal("assignment is not shuffled")
	}
	// Rounding never loses or adds a user.
	for _, n := range []int{1, 2, 3, 7, 11} {
		b, err := Budgets("eapes-groups", n, rng.Stream(3))
		if err != nil || len(b) != n {
			t.Fatalf("n=%d: got %d budgets, err %v", n, len(b), err)
		}
	}
	// Apportionment: sizes sum to n, zero-fraction groups stay empty.
	for _, tc := range []struct {
		fr   []float64
		n    int
		want []int
	}{
		{[]float64{0.4, 0.4, 0.2, 0}, 1, []int{1, 0, 0, 0}},
		{[]float64{0.3, 0.3, 0.4}, 5, []int{2, 1, 2}},    // tie: earlier group
		{[]float64{0.54, 0.37, 0.09}, 7, []int{4, 2, 1}}, // 3.78, 2.59, 0.63
		{[]float64{0, 1}, 3, []int{0, 3}},
	} {
		gs := make([]Group, len(tc.fr))
		for i, f := range tc.fr {
			gs[i] = Group{Name: fmt.Sprint(i), Fraction: f, Epsilon: float64(i + 1)}
		}
		b, err := GroupBudgets(gs, tc.n, rng.Stream(5))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int, len(gs))
		for _, v := range b {
			got[int(v)-1]++
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("fractions %v, n=%d: sizes %v, want %v", tc.fr, tc.n, got, tc.want)
		}
	}
	_, err = GroupBudgets([]Group{{"a", 0.5, 1}, {"b", 0.6, 1}}, 10, rng.Stream(1))
	wantInvalid(t, err, "must sum to 1")
	_, err = GroupBudgets([]Group{{"a", 1, -1}}, 10, rng.Stream(1))
	wantInvalid(t, err, "groups[0].epsilon must be >= 0")
}

func TestBudgetsInvalid(t *testing.T) {
	_, err := Budgets("zipf", 10, rng.Stream(1))
	wantInvalid(t, err, `unknown budget distribution "zipf"; known: eapes-gauss1, eapes-gauss2`)
	_, err = Budgets("uniform1", 0, rng.Stream(1))
	wantInvalid(t, err, "n must be in [1, 100000000], got 0")
	// Finding 4: a huge n is rejected before any allocation (it used to
	// panic in makeslice or allocate gigabytes).
	_, err = Budgets("uniform1", math.MaxInt, rng.Stream(1))
	wantInvalid(t, err, "n must be in [1, 100000000]")
	_, err = Budgets("eapes-groups", MaxBudgets+1, rng.Stream(1))
	wantInvalid(t, err, "n must be in [1, 100000000]")
	_, err = Budgets("uniform1", 3, nil)
	wantInvalid(t, err, "random generator must not be nil")
}

func TestReadBudgets(t *testing.T) {
	tests := []struct {
		name, in string
		want     []float64
		err      string
	}{
		{"lines", "0.5\n1\n\n2e-1\n", []float64{0.5, 1, 0.2}, ""},
		{"no final newline", "0.5\n1", []float64{0.5, 1}, ""},
		{"spaces", "  0.5 \t\n1\n", []float64{0.5, 1}, ""},
		{"csv epsilon column", "epsilon,weight\n0.5, 1\n0.25,0\n", []float64{0.5, 0.25}, ""},
		{"csv eps column second", "user,EPS\nalice,0.5\n\"bob, jr\",0.25\n", []float64{0.5, 0.25}, ""},
		{"csv quoted header", "\"id\",\"epsilon\"\n1,0.5\n2,\"0.25\"\n", []float64{0.5, 0.25}, ""},
		{"csv comments", "# made by hand\neps\n# first user\n0.5\n", []float64{0.5}, ""},
		{"comment crlf", "# budgets\r\n0.3\r\n", []float64{0.3}, ""},
		{"bom header", "\ufeffeps\n1\n", []float64{1}, ""},
		{"bom value", "\ufeff0.7\n", []float64{0.7}, ""},
		{"zero ok", "0\n", []float64{0}, ""},
		// Finding 8: more than one number on a line is an error, never
		// silently split or dropped.
		{"two numbers first line", "0.5 0.6\n0.7\n0.8\n", nil, "line 1: invalid parameter: 2 values on one line"},
		{"two numbers later", "0.5\n0.6 0.7\n", nil, "line 2: invalid parameter: 2 values on one line"},
		{"comma row", "0.1,0.2,0.3,", nil, "line 1: invalid parameter: 3 values on one line"},
		{"trailing comma", "0.1,\n", nil, "line 1: invalid parameter: 2 values on one line"},
		{"semicolons", "0.1;0.2\n", nil, "2 values on one line"},
		// A first line is a header only if it has no number and names an
		// epsilon column.
		{"header without epsilon column", "budget\n0.5\n", nil, `line 1: invalid parameter: "budget" is neither a number nor a CSV header naming an 'epsilon' or 'eps' column`},
		{"header with a number", "epsilon 2\n0.5\n", nil, "line 1: invalid parameter: 2 values on one line"},
		{"two epsilon columns", "eps,epsilon\n1,2\n", nil, "header names two epsilon columns"},
		{"csv short row", "id,eps\n1,0.5\n2\n", nil, "line 3: invalid parameter: 1 fields, but the header has 2"},
		{"csv empty value", "id,eps\n1,\n", nil, `line 2: invalid parameter: column "eps" is empty`},
		{"csv bad value", "id,eps\n1,x\n", nil, `line 2: invalid parameter: "x" is not a number`},
		{"csv negative", "eps\n-1\n", nil, "line 2: invalid parameter: epsilon must be >= 0"},
		{"header later is garbage", "0.5\nepsilon\n", nil, `line 2: invalid parameter: "epsilon" is not a number`},
		{"nan", "0.5\nNaN\n", nil, "line 2: invalid parameter: epsilon must be a finite number"},
		{"inf", "0.5\n+Inf\n", nil, "epsilon must be a finite number"},
		{"negative", "0.5\n0.2\n-0.1\n", nil, "line 3: invalid parameter: epsilon must be >= 0"},
		{"garbage", "0.5\nabc\n", nil, `line 2: invalid parameter: "abc" is not a number`},
		{"empty", "", nil, "no budgets found"},
		{"only comments", "# nothing\n\n", nil, "no budgets found"},
		{"only header", "epsilon\n", nil, "no budgets found"},
		{"bad quote", "id,eps\n1,\"0.5\n", nil, "line 2: invalid parameter: malformed CSV"},
		{"line too long", "0.5\n" + strings.Repeat("1", 2<<20) + "\n", nil, "line 2: invalid parameter: line longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadBudgets(strings.NewReader(tc.in))
			if tc.err != "" {
				wantInvalid(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReadBudgetsLarge reads 10^6 budgets and checks they all arrive, in
// order.
func TestReadBudgetsLarge(t *testing.T) {
	in := budgetLines1e6()
	got, err := ReadBudgets(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1_000_000 {
		t.Fatalf("%d budgets, want 10^6", len(got))
	}
	lines := strings.SplitN(string(in), "\n", 3)
	for i := range 2 {
		if want, _ := strconv.ParseFloat(lines[i], 64); got[i] != want {
			t.Fatalf("budget %d = %v, want %v", i, got[i], want)
		}
	}
}

func ExampleBudgets() {
	eps, err := Budgets("uniform2", 10000, rng.Stream(1, rng.LabelBudget))
	if err != nil {
		panic(err)
	}
	lo, hi := eps[0], eps[0]
	for _, e := range eps {
		lo, hi = math.Min(lo, e), math.Max(hi, e)
	}
	fmt.Printf("%d budgets in [%.2f, %.2f]\n", len(eps), lo, hi)
	// Output: 10000 budgets in [0.05, 1.00]
}

func ExampleReadBudgets() {
	eps, err := ReadBudgets(strings.NewReader("epsilon\n0.5\n1\n0.25\n"))
	fmt.Println(eps, err)
	_, err = ReadBudgets(strings.NewReader("0.5\n-1\n"))
	fmt.Println(err)
	// Output:
	// [0.5 1 0.25] <nil>
	// read budgets: line 2: invalid parameter: epsilon must be >= 0, got -1
}

// budgetLines1e6 is 10^6 budgets, one per line, as a file written by a
// script would hold them.
func budgetLines1e6() []byte {
	var b strings.Builder
	r := rng.Stream(1, rng.LabelBudget)
	for range 1_000_000 {
		b.WriteString(strconv.FormatFloat(0.05+0.95*r.Float64(), 'g', -1, 64))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// BenchmarkReadBudgets1e6 reads 10^6 budgets, one per line.
func BenchmarkReadBudgets1e6(b *testing.B) {
	in := budgetLines1e6()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		eps, err := ReadBudgets(bytes.NewReader(in))
		if err != nil || len(eps) != 1_000_000 {
			b.Fatalf("%d budgets, err %v", len(eps), err)
		}
	}
}
