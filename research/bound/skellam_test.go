package bound_test

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/research/bound"
)

// TestSkellamBound: at split-mix's frontier settings `bound skellam`
// takes the PLD route by default (below RDP's figure), its delta at the
// PLD epsilon is the target, and bad inputs are refused.
func TestSkellamBound(t *testing.T) {
	p, _ := bound.Defaults("skellam")
	p.Q, p.Variance, p.L2, p.L1, p.D, p.Steps, p.TV, p.Delta = 0.1, 4.84e7, 4184.6, 370757, 7850, 30, 6.98e-13, 1e-6
	p.Given["delta"] = true
	r, err := bound.Compute("skellam", &p)
	if err != nil {
		t.Fatal(err)
	}
	rdp, _ := r.Extra["rdp_epsilon"].(float64)
	if r.Bound.Name != "skellam-pld" || !(r.Bound.Epsilon <= 2 && r.Bound.Epsilon < rdp) {
		t.Errorf("bound %+v (rdp %v)", r.Bound, rdp)
	}
	q, _ := bound.Defaults("skellam")
	q.Q, q.Variance, q.L2, q.L1, q.D, q.Steps, q.TV, q.Epsilon = 0.1, 4.84e7, 4184.6, 370757, 7850, 30, 6.98e-13, r.Bound.Epsilon
	q.Given["epsilon"] = true
	q.Accountant = "pld"
	r2, err := bound.Compute("skellam", &q)
	if err != nil || r2.Bound.Delta > 1e-6 {
		t.Errorf("delta at the PLD epsilon: %+v (%v)", r2.Bound, err)
	}
	for name, mod := range map[string]func(*bound.Params){
		"variance": func(o *bound.Params) { o.Variance = math.NaN() },
		"l2":       func(o *bound.Params) { o.L2 = -1 },
		"q":        func(o *bound.Params) { o.Q = 2 },
		"tv":       func(o *bound.Params) { o.TV = 0.5 },
		"huge":     func(o *bound.Params) { o.Variance = 1e20 },
	} {
		b, _ := bound.Defaults("skellam")
		b.Q, b.Variance, b.L2, b.D, b.Steps, b.Delta = 0.1, 1e4, 10, 10, 3, 1e-6
		b.Given["delta"] = true
		mod(&b)
		if _, err := bound.Compute("skellam", &b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
