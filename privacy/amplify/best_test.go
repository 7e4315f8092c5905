package amplify

import (
	"strings"
	"testing"
)

func TestBestUniform(t *testing.T) {
	tests := []struct {
		eps0  float64
		n     int
		delta float64
		r     Randomizer
		want  string
	}{
		{4, 100000, 1e-6, Randomizer{Mech: Generic}, "clones-numerical"},
		// FLAME's per-dimension shuffle: the generic clones bound beats the
		// Laplace-specific blanket bounds.
		{0.01, 1000, 5e-6 / 7851, Randomizer{Mech: Laplace}, "clones-numerical"},
		{0.5, 1000, 1e-6, Randomizer{Mech: KRR, K: 2}, "clones-numerical"},
	}
	for _, tc := range tests {
		b, err := BestUniform(tc.eps0, tc.n, tc.delta, tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if b.Name != tc.want || b.Approximation {
			t.Errorf("%+v: best = %+v, want %s", tc, b, tc.want)
		}
		rows, _ := CompareUniform(tc.eps0, tc.n, tc.delta, tc.r, true)
		for _, r := range rows {
			if r.Err == "" && r.Epsilon < b.Epsilon && !isLegacy(r.Name) {
				t.Errorf("row %s (%v) tighter than best %s (%v)", r.Name, r.Epsilon, b.Name, b.Epsilon)
			}
			if isLegacy(r.Name) && !strings.Contains(r.Note, "FLAWED") {
				t.Errorf("legacy row not labelled: %+v", r)
			}
		}
	}
}

func TestCompareListsInapplicable(t *testing.T) {
	rows, err := CompareUniform(6, 1000, 1e-6, Randomizer{Mech: Laplace}, false)
	if err != nil {
		t.Fatal(err)
	}
	var errs int
	for _, r := range rows {
		if r.Err != "" {
			errs++
			if r.Epsilon != 0 {
				t.Errorf("inapplicable row %s carries epsilon %v", r.Name, r.Epsilon)
			}
		}
	}
	if errs == 0 {
		t.Error("expected the closed forms and Erlingsson to be inapplicable at eps0 = 6, n = 1000")
	}
}
