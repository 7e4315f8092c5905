package account

import (
	"fmt"
	"math"
	"testing"
)

func TestSubsample(t *testing.T) {
	tests := []struct {
		name               string
		eps, delta, q      float64
		wantEps, wantDelta float64
	}{
		// log(1 + 0.01 (e - 1)) = log(1.0171828...) = 0.0170368632... (Python math.log1p).
		{"eps1 q0.01", 1, 1e-5, 0.01, 0.01703686323617655, 1e-7},
		{"q1 identity", 2.5, 1e-6, 1, 2.5, 1e-6},
		{"pure", 0.5, 0, 0.1, math.Log(1 + 0.1*(math.Exp(0.5)-1)), 0},
		{"eps0", 0, 0.01, 0.5, 0, 0.005},
		// FLAME Theorem 2 setting: beta = k/d = 157/7850 = 0.02.
		{"flame beta", 0.5, 1e-8, 0.02, math.Log(1 + 0.02*(math.Exp(0.5)-1)), 2e-10},
		// large eps: log(1 + q(e^800 - 1)) = 800 + log(q) + tiny.
		{"huge eps", 800, 0, 0.5, 800 + math.Log(0.5), 0},
	}
	for _, tc := range tests {
		for name, f := range map[string]func(float64, float64, float64) (float64, float64, error){
			"wor": SubsampleWOR, "poisson": SubsamplePoisson,
		} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				e, d, err := f(tc.eps, tc.delta, tc.q)
				if err != nil {
					t.Fatal(err)
				}
				if !approx(e, tc.wantEps, 1e-8) || !approx(d, tc.wantDelta, 1e-12) {
					t.Fatalf("got (%v, %v), want (%v, %v)", e, d, tc.wantEps, tc.wantDelta)
				}
				if e > tc.eps {
					t.Fatalf("subsampled epsilon %v exceeds base %v", e, tc.eps)
				}
			})
		}
	}
}

func TestSubsampleInverse(t *testing.T) {
	for _, q := range []float64{1e-4, 0.02, 0.5, 1} {
		for _, target := range []float64{1e-3, 0.1, 1, 10, 750} {
			base, err := SubsampleWOREpsilonInverse(target, q)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := SubsampleWOR(base, 0, q)
			if err != nil {
				t.Fatal(err)
			}
			if !approx(got, target, 1e-9) {
				t.Errorf("q=%v target=%v: round trip gives %v", q, target, got)
			}
		}
	}
}

func TestSubsampleInvalid(t *testing.T) {
	tests := []struct {
		eps, delta, q float64
		want          string
	}{
		{-1, 0, 0.5, "epsilon must be >= 0"},
		{math.NaN(), 0, 0.5, "epsilon must be a finite number"},
		{math.Inf(1), 0, 0.5, "epsilon must be a finite number"},
		{1, 1, 0.5, "delta must be in [0, 1)"},
		{1, -1e-9, 0.5, "delta must be in [0, 1)"},
		{1, 0, 0, "q must be in (0, 1]"},
		{1, 0, 1.5, "q must be in (0, 1]"},
		{1, 0, math.NaN(), "q must be a finite number"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.eps, tc.delta, tc.q), func(t *testing.T) {
			_, _, err := SubsampleWOR(tc.eps, tc.delta, tc.q)
			wantInvalid(t, err, tc.want)
			_, _, err = SubsamplePoisson(tc.eps, tc.delta, tc.q)
			wantInvalid(t, err, tc.want)
		})
	}
}

func ExampleSubsampleWOR() {
	// FLAME Lemma 4: 1% of the records, each release (1, 1e-5)-DP.
	eps, delta, _ := SubsampleWOR(1, 1e-5, 0.01)
	fmt.Printf("(%.5f, %.0e)\n", eps, delta)
	// Output: (0.01704, 1e-07)
}
