package amplify

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// clonePLDEpsilon returns the PLD epsilon at delta of times compositions
// of FMT's clone pair for n reports at eps0, as the run accountant composes
// a per-coordinate shuffle.
func clonePLDEpsilon(t *testing.T, eps0 float64, n, times int, delta float64) float64 {
	t.Helper()
	one, err := pld.ShuffleClones(eps0, n, pld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := one.SelfCompose(times)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestVerdictTable prints, with -v, the table of docs/ACCOUNTING.md
// ("Every stated figure against a lower bound"): for each per-coordinate
// FLAME protocol and setting, the figures the library states (the theorem's
// own composition and the PLD of the clone pairs that the run accountant
// composes) against the count statistic's lower bound on the true epsilon
// (FLAMECountLowerBound), and the verdict. A rigorous statement below the
// lower bound fails the test.
//
//	go test -run TestVerdictTable -v ./amplify
func TestVerdictTable(t *testing.T) {
	lap := Randomizer{Mech: Laplace}
	bennett := BlanketAmplifier(lap, Bennett)
	const flameDelta = 5.011872336272725e-06
	clonePLD := func(eps0 float64, n, times int, delta float64) float64 {
		return clonePLDEpsilon(t, eps0, n, times, delta)
	}
	type row struct {
		protocol, setting, statement string
		stated                       float64
		rigorous                     bool
		lb                           float64
	}
	var rows []row
	add := func(protocol, setting, statement string, stated float64, rigorous bool, lb float64) {
		rows = append(rows, row{protocol, setting, statement, stated, rigorous, lb})
	}
	count := func(eps0 float64, mine, others int, delta float64) float64 {
		lb, _, err := FLAMECountLowerBound(lap, eps0, mine, others, delta)
		if err != nil {
			t.Fatal(err)
		}
		return lb
	}

	// SS-Simple at FLAME's setting.
	{
		set := "d = 7850, n = 1000, eps_l = 78.5, delta 5.01e-6"
		r, err := SSSimple(78.5, 7850, 1000, flameDelta, bennett)
		if err != nil {
			t.Fatal(err)
		}
		lb := count(0.01, 7850, 7850*999, flameDelta)
		add("ss-simple", set, "FLAME Theorem 1 (blanket Bennett)", r.Epsilon, true, lb)
		add("ss-simple", set, "PLD of 7850 clone pairs (run accountant)", clonePLD(0.01, 1000, 7850, flameDelta), true, lb)
	}
	// SS-Double: FLAME's setting, the run setting with k = 1, and the
	// smallest counterexample.
	for _, c := range []struct {
		set         string
		epsL        float64
		d, k, n, np int
		delta       float64
	}{
		{"FLAME: d = 7850, k = 157, n = 1000, n_p = 333, eps_l = 78.5, delta 5.01e-6", 78.5, 7850, 157, 1000, 333, flameDelta},
		{"d = 7850, k = 1, n = 1000, n_p = 333, eps_l = 1, delta 1e-6", 1, 7850, 1, 1000, 333, 1e-6},
		{"d = 10^4, k = 1, n = n_p = 2, eps_l = 2, delta 1e-6", 2, 10000, 1, 2, 2, 1e-6},
	} {
		lb := count(c.epsL/float64(c.k), c.k, c.d*c.np-c.k, c.delta)
		fl, err := SSDoubleFLAME(c.epsL, c.d, c.k, c.n, c.np, c.delta, bennett, true)
		if err != nil {
			t.Fatal(err)
		}
		add("ss-double", c.set, "FLAME Theorems 3-4 (`--flame-theorem`)", fl.Epsilon, false, lb)
		s, err := SSDouble(c.epsL, c.d, c.k, c.n, c.np, c.delta, bennett)
		if err != nil {
			t.Fatal(err)
		}
		add("ss-double", c.set, "sound: k shuffles, advanced composition", math.Min(s.Epsilon, c.epsL), true, lb)
		add("ss-double", c.set, "sound: PLD of k clone pairs (run accountant)", math.Min(clonePLD(c.epsL/float64(c.k), c.np, c.k, c.delta), c.epsL), true, lb)
	}
	// SS-Topk at FLAME's setting (n_p = n, Laplace).
	{
		set := "d = 7850, k = 157, n = n_p = 1000, eps_l = 78.5, delta 5.01e-6"
		lb := count(0.5, 157, 7850*1000-157, flameDelta)
		r, err := SSTopk(78.5, 7850, 157, 1000, 1000, flameDelta, bennett)
		if err != nil {
			t.Fatal(err)
		}
		add("ss-topk", set, "FLAME Theorem 4 over 2k (no credit)", r.Epsilon, true, lb)
		add("ss-topk", set, "PLD of 2k clone pairs (run accountant)", clonePLD(0.5, 1000, 314, flameDelta), true, lb)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n| protocol | setting | statement | stated epsilon | count-statistic lower bound | verdict |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		verdict := "holds (above the lower bound)"
		switch {
		case r.stated < r.lb && r.rigorous:
			t.Errorf("%s, %s, %s: rigorous statement %.4g below the count lower bound %.4g", r.protocol, r.setting, r.statement, r.stated, r.lb)
			verdict = "**WRONG**"
		case r.stated < r.lb:
			verdict = fmt.Sprintf("**refuted** (%.0fx below)", r.lb/r.stated)
		case !r.rigorous:
			verdict = "not refuted, but not an upper bound (no proof)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.4g | %.4g | %s |\n", r.protocol, r.setting, r.statement, r.stated, r.lb, verdict)
	}
	t.Log(b.String())
}
