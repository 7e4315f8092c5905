package account

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"shufflefl/rng"
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
	wantInvalid(t, err, "n must be >= 1")
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
		{"csv", "epsilon,weight\n0.5, 1\n0.25,0\n", []float64{0.5, 1, 0.25, 0}, ""},
		{"one row", "0.1,0.2,0.3,", []float64{0.1, 0.2, 0.3}, ""},
		{"comment crlf", "# budgets\r\n0.3\r\n", []float64{0.3}, ""},
		{"bom header", "\ufeffeps\n1\n", []float64{1}, ""},
		{"zero ok", "0\n", []float64{0}, ""},
		{"nan", "0.5\nNaN\n", nil, "line 2 field 1"},
		{"inf", "0.5\n+Inf\n", nil, "epsilon must be a finite number"},
		{"negative", "0.5\n0.2\n-0.1\n", nil, "line 3 field 1: invalid parameter: epsilon must be >= 0"},
		{"garbage", "0.5\nabc\n", nil, `line 2 field 1: invalid parameter: "abc" is not a number`},
		{"empty field", "0.5,,0.2\n", nil, "line 1 field 2: invalid parameter: empty value"},
		{"empty", "", nil, "no budgets found"},
		{"only header", "epsilon\n", nil, "no budgets found"},
		{"bad quote", "0.5\n\"1\n", nil, "line 2: invalid parameter: malformed CSV"},
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
	// read budgets: line 2 field 1: invalid parameter: epsilon must be >= 0, got -1
}
