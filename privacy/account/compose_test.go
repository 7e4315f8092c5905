package account

import (
	"fmt"
	"math"
	"testing"
)

func TestComposeBasic(t *testing.T) {
	e, d, err := ComposeBasic(0.1, 1e-6, 10)
	if err != nil || !approx(e, 1, 1e-12) || !approx(d, 1e-5, 1e-12) {
		t.Fatalf("got (%v, %v, %v)", e, d, err)
	}
	_, _, err = ComposeBasic(0.1, 0.2, 5)
	wantInvalid(t, err, "k*delta = 1 must be < 1")
	_, _, err = ComposeBasic(0.1, 0, 0)
	wantInvalid(t, err, "k must be >= 1")
	_, _, err = ComposeBasic(-0.1, 0, 1)
	wantInvalid(t, err, "epsilon must be >= 0")
}

func TestComposeAdvanced(t *testing.T) {
	tests := []struct {
		name         string
		eps, delta   float64
		k            int
		deltaPrime   float64
		wantE, wantD float64
		rel          float64
	}{
		// APES Table 3 user-level figures (Lemma 2 over d = 7850 dimensions,
		// delta' = 1e-8) from the authors' dimension-level epsilons 0.05749
		// (EoN) and 0.06967 (UniS): the paper prints 57.6 and 76.9.
		{"apes eon", 0.05749, 1e-8, 7850, 1e-8, 57.6, 7850e-8 + 1e-8, 1e-3},
		{"apes unis", 0.06967, 1e-8, 7850, 1e-8, 76.9, 7850e-8 + 1e-8, 1e-3},
		// By hand: sqrt(2*100*ln(1e5))*0.01 + 100*0.01*(e^0.01-1).
		{"hand", 0.01, 0, 100, 1e-5, math.Sqrt(200*math.Log(1e5))*0.01 + math.Expm1(0.01), 1e-5, 1e-12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, d, err := ComposeAdvanced(tc.eps, tc.delta, tc.k, tc.deltaPrime)
			if err != nil {
				t.Fatal(err)
			}
			if !approx(e, tc.wantE, tc.rel) || !approx(d, tc.wantD, 1e-9) {
				t.Fatalf("got (%v, %v), want (%v, %v)", e, d, tc.wantE, tc.wantD)
			}
			// Homogeneous heterogeneous composition must agree.
			bs := make([]Budget, tc.k)
			for i := range bs {
				bs[i] = Budget{tc.eps, tc.delta}
			}
			eh, dh, err := ComposeAdvancedHetero(bs, tc.deltaPrime)
			if err != nil || !approx(eh, e, 1e-9) || !approx(dh, d, 1e-9) {
				t.Fatalf("hetero gives (%v, %v, %v), homogeneous (%v, %v)", eh, dh, err, e, d)
			}
		})
	}
	bad := []struct {
		eps, delta float64
		k          int
		dp         float64
		want       string
	}{
		{1, 0, 10, 0, "delta' must be in (0, 1)"},
		{1, 0.1, 10, 0.01, "k*delta + delta' = 1.01 must be < 1"},
		{1, 0, 0, 0.01, "k must be >= 1"},
		{math.NaN(), 0, 1, 0.01, "epsilon must be a finite number"},
		{800, 0, 1, 0.01, "overflows"},
	}
	for _, tc := range bad {
		_, _, err := ComposeAdvanced(tc.eps, tc.delta, tc.k, tc.dp)
		wantInvalid(t, err, tc.want)
	}
}

func TestComposeBest(t *testing.T) {
	// k = 2 with eps = 1: basic 2 beats advanced.
	e, d, adv, err := ComposeBest(1, 1e-6, 2, 1e-6)
	if err != nil || adv || e != 2 || d != 2e-6 {
		t.Fatalf("got (%v, %v, %v, %v)", e, d, adv, err)
	}
	// k = 10000 with eps = 0.01: advanced wins.
	e, _, adv, err = ComposeBest(0.01, 0, 10000, 1e-6)
	if err != nil || !adv || e >= 100 {
		t.Fatalf("got (%v, %v, %v)", e, adv, err)
	}
}

func TestComposeHetero(t *testing.T) {
	bs := []Budget{{0.1, 1e-6}, {0.2, 0}, {0.3, 2e-6}}
	e, d, err := ComposeBasicHetero(bs)
	if err != nil || !approx(e, 0.6, 1e-12) || !approx(d, 3e-6, 1e-12) {
		t.Fatalf("basic: (%v, %v, %v)", e, d, err)
	}
	e, d, err = ComposeAdvancedHetero(bs, 1e-5)
	want := math.Sqrt(2*math.Log(1e5)*(0.01+0.04+0.09)) + 0.1*math.Expm1(0.1) + 0.2*math.Expm1(0.2) + 0.3*math.Expm1(0.3)
	if err != nil || !approx(e, want, 1e-12) || !approx(d, 3e-6+1e-5, 1e-12) {
		t.Fatalf("advanced: (%v, %v, %v), want eps %v", e, d, err, want)
	}
	_, _, err = ComposeBasicHetero(nil)
	wantInvalid(t, err, "must not be empty")
	_, _, err = ComposeBasicHetero([]Budget{{0.1, 0}, {-1, 0}})
	wantInvalid(t, err, "budgets[1].epsilon must be >= 0")
	_, _, err = ComposeBasicHetero([]Budget{{0.1, 0.6}, {0.1, 0.6}})
	wantInvalid(t, err, "sum of deltas = 1.2 must be < 1")
}

func TestDPrivacy(t *testing.T) {
	// Galli et al. Section 5: each participation leaks n/nu = 2/5 = 0.4;
	// six participations compose to 2.4, the maximum the paper reports.
	per, err := DPrivacyLeakage(2, 5)
	if err != nil || per != 0.4 {
		t.Fatalf("leakage %v, %v", per, err)
	}
	e, err := ComposeDPrivacy(per, per, per, per, per, per)
	if err != nil || !approx(e, 2.4, 1e-12) {
		t.Fatalf("got %v, %v", e, err)
	}
	l, err := DPrivacyLoss([]float64{1, 2}, []float64{0.5, 0.25})
	if err != nil || l != 1 {
		t.Fatalf("loss %v, %v", l, err)
	}
	_, err = ComposeDPrivacy()
	wantInvalid(t, err, "must not be empty")
	_, err = DPrivacyLeakage(0, 5)
	wantInvalid(t, err, "dimension must be >= 1")
	_, err = DPrivacyLeakage(11, 0)
	wantInvalid(t, err, "noise multiplier nu must be > 0")
	_, err = DPrivacyLoss([]float64{1}, []float64{-1})
	wantInvalid(t, err, "distance[0] must be >= 0")
	_, err = DPrivacyLoss([]float64{1}, nil)
	wantInvalid(t, err, "need as many distances")
}

func ExampleComposeAdvanced() {
	// APES Lemma 2 over d = 7850 dimensions of a (0.05749, 1e-8)-DP release.
	eps, delta, _ := ComposeAdvanced(0.05749, 1e-8, 7850, 1e-8)
	fmt.Printf("(%.1f, %.2e)\n", eps, delta)
	// Output: (57.6, 7.85e-05)
}

func TestComposeParallel(t *testing.T) {
	e, d, err := ComposeParallel([]Budget{{0.1, 1e-6}, {0.5, 0}, {0.2, 1e-5}})
	if err != nil || e != 0.5 || d != 1e-5 {
		t.Fatalf("got (%v, %v, %v)", e, d, err)
	}
	_, _, err = ComposeParallel(nil)
	wantInvalid(t, err, "must not be empty")
}

// TestComposeBestFallsBackToBasic: advanced composition overflows for a
// large epsilon (e^1000) where basic composition is finite; ComposeBest
// must return the basic statement, not fail (flame-double --eps-l 1000
// --rounds 10 used to).
func TestComposeBestFallsBackToBasic(t *testing.T) {
	e, d, adv, err := ComposeBest(1000, 1e-9, 10, 1e-6)
	if err != nil || adv || e != 10000 || d != 1e-8 {
		t.Fatalf("got (%v, %v, advanced=%v, %v), want basic (10000, 1e-8)", e, d, adv, err)
	}
	if _, _, _, err := ComposeBest(1, 0.2, 10, 1e-6); err == nil {
		t.Fatal("k delta >= 1 accepted")
	}
}
