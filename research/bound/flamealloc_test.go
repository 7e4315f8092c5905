package bound

import (
	"math"
	"strings"
	"testing"
)

// TestFlameDoubleAllocationRoute checks `bound flame-double` against issue
// 26: by default (--composition best) the random-allocation route is
// stated when it is the smallest (one FLAME round: <= 0.25, it was 15.7 by
// default and 1.764 by --composition pld), every figure at or above the
// count statistic's lower bound, for Laplace and R_{gamma,b}, k | d and k
// not dividing d, one round and ten.
func TestFlameDoubleAllocationRoute(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(p *Params)
		given  []string
		max    float64
		lbOnly bool // R_{gamma,b}: FLAMECountLowerBound is not valid with padding
	}{
		{"FLAME default", func(p *Params) { p.Delta = 5e-6 }, []string{"delta"}, 0.25, false},
		{"FLAME alloc", func(p *Params) { p.Delta, p.Composition = 5e-6, "alloc" }, []string{"delta", "composition"}, 0.25, false},
		{"k not dividing d", func(p *Params) { p.Delta, p.D = 5e-6, 7851 }, []string{"delta", "d"}, 0.25, false},
		{"ten rounds", func(p *Params) { p.Delta, p.Rounds = 5e-7, 10 }, []string{"delta", "rounds"}, 0.75, false},
		{"rgb", func(p *Params) { p.Delta, p.Mech, p.Domain = 5e-6, "rgb", 2 }, []string{"delta", "mech", "domain"}, 0.25, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := Defaults("flame-double")
			tc.set(&p)
			p.Given = map[string]bool{}
			for _, g := range tc.given {
				p.Given[g] = true
			}
			r, err := Compute("flame-double", &p)
			if err != nil {
				t.Fatal(err)
			}
			if r.Bound.Name != "ss-double-allocation" || r.Extra["composition"] != "pld-random-allocation" {
				t.Errorf("route %q (%v), want the random allocation", r.Bound.Name, r.Extra["composition"])
			}
			lb, _ := r.Extra["count_lower_bound"].(float64)
			t.Logf("epsilon %.5g at delta %.3g, count lower bound %.4g", r.Bound.Epsilon, r.Bound.Delta, lb)
			if !(r.Bound.Epsilon <= tc.max) {
				t.Errorf("epsilon %.5g above the target %v", r.Bound.Epsilon, tc.max)
			}
			if !tc.lbOnly && !(r.Bound.Epsilon >= lb && lb > 0) {
				t.Errorf("epsilon %.5g below the count lower bound %.4g", r.Bound.Epsilon, lb)
			}
		})
	}
}

// TestFlameTopkCentral checks `bound flame-topk --eps-l --delta` (issue 26
// item 6): FLAME's setting with n_p = n = 1000 composes the 2k clone pairs
// by PLD (<= 1.5; FLAME Theorem 4's route gives 11.59), above the count
// lower bound; without --eps-l and --delta only nu-index privacy is stated.
func TestFlameTopkCentral(t *testing.T) {
	p, _ := Defaults("flame-topk")
	p.Delta, p.NP, p.N = 5.011872336272725e-06, 1000, 1000
	p.Given = map[string]bool{"delta": true, "np": true, "n": true}
	r, err := Compute("flame-topk", &p)
	if err != nil {
		t.Fatal(err)
	}
	lb := r.Extra["count_lower_bound"].(float64)
	if r.Bound.Name != "ss-topk-pld" || !(r.Bound.Epsilon <= 1.5) || !(r.Bound.Epsilon >= lb) || r.NoEpsDelta {
		t.Errorf("%s: epsilon %.5g (theorem %v), want the clone pairs' PLD in [%.4g, 1.5]", r.Bound.Name, r.Bound.Epsilon, r.Extra["theorem_epsilon"], lb)
	}
	q, _ := Defaults("flame-topk")
	q.Given = map[string]bool{}
	r, err = Compute("flame-topk", &q)
	if err != nil || !r.NoEpsDelta {
		t.Errorf("without --eps-l/--delta: %+v, %v; want nu-index privacy only", r, err)
	}
}

func TestFlameAllocBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		set       func(p *Params)
		given     []string
		want      string
	}{
		{"alloc krr", "flame-double", func(p *Params) { p.Composition, p.Mech, p.Domain = "alloc", "krr", 4 }, []string{"composition", "mech", "domain"}, "--mech laplace or rgb"},
		{"alloc theorem", "flame-double", func(p *Params) { p.Composition, p.FLAMETheorem = "alloc", true }, []string{"composition", "flame-theorem"}, "theorem routes"},
		{"alloc np too small", "flame-double", func(p *Params) { p.Composition, p.NP = "alloc", 21 }, []string{"composition", "np"}, "too small"},
		{"alloc delta prime", "flame-double", func(p *Params) { p.Composition, p.DeltaPrime = "alloc", 1e-9 }, []string{"composition", "delta-prime"}, "--delta-prime"},
		{"alloc bad composition", "flame-double", func(p *Params) { p.Composition = "allocation" }, []string{"composition"}, "--composition"},
		{"topk np < n", "flame-topk", func(p *Params) { p.Delta = 1e-6 }, []string{"delta"}, "--np >= --n"},
		{"topk beta", "flame-topk", func(p *Params) { p.Delta, p.Beta, p.NP = 1e-6, 0.1, 1000 }, []string{"delta", "beta", "np"}, "not --beta"},
		{"topk eps NaN", "flame-topk", func(p *Params) { p.EpsL, p.NP = math.NaN(), 1000 }, []string{"eps-l", "np"}, "eps-l"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := Defaults(tc.cmd)
			tc.set(&p)
			p.Given = map[string]bool{}
			for _, g := range tc.given {
				p.Given[g] = true
			}
			_, err := Compute(tc.cmd, &p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
