package amplify

import (
	"math"
	"testing"
)

func TestClonesPublishedExample(t *testing.T) {
	var tv struct {
		N           int
		Eps0, Delta float64
		Lo          float64 `json:"numerical_low"`
		Hi          float64 `json:"numerical_high"`
		Exact       float64 `json:"numerical_exact"`
		Closed      float64 `json:"closed_form"`
		Theorem     float64
	}
	loadJSON(t, "clones.json", &tv)
	lo, hi, exact, closed := tv.Lo, tv.Hi, tv.Exact, tv.Closed
	e, err := ClonesNumerical(tv.Eps0, tv.N, tv.Delta)
	if err != nil {
		t.Fatal(err)
	}
	if e < lo || e > hi || !near(e, exact, 1e-4) {
		t.Errorf("ClonesNumerical = %.6f, want in [%v, %v] and about %v", e, lo, hi, exact)
	}
	c, err := ClonesClosedForm(tv.Eps0, tv.N, tv.Delta)
	if err != nil || !near(c, closed, 5e-5) {
		t.Errorf("ClonesClosedForm = %.6f, %v; want %v", c, err, closed)
	}
	th, err := ClonesTheorem(tv.Eps0, tv.N, tv.Delta)
	if err != nil || !near(th, tv.Theorem, 5e-5) {
		t.Errorf("ClonesTheorem = %.6f, %v; want %v", th, err, tv.Theorem)
	}
}

func TestClonesValidity(t *testing.T) {
	tests := []struct {
		name  string
		f     func() (float64, error)
		wants string
	}{
		{"closed outside region", func() (float64, error) { return ClonesClosedForm(7, 100000, 1e-6) }, "eps0 <= log(n/(16 log(4/delta)))"},
		{"theorem outside region", func() (float64, error) { return ClonesTheorem(1, 100, 1e-6) }, "eps0 <= log(n/(16 log(4/delta)))"},
		{"n < 2", func() (float64, error) { return ClonesNumerical(1, 1, 1e-6) }, "n must be >= 2"},
		{"delta 0", func() (float64, error) { return ClonesNumerical(1, 100, 0) }, "delta must be in (0, 1)"},
		{"delta 1", func() (float64, error) { return ClonesTheorem(1, 100000, 1) }, "delta must be in (0, 1)"},
		{"eps0 0", func() (float64, error) { return ClonesNumerical(0, 100, 1e-6) }, "eps0 must be > 0"},
		{"eps0 NaN", func() (float64, error) { return ClonesNumerical(math.NaN(), 100, 1e-6) }, "eps0 must be a finite number"},
		{"eps0 Inf", func() (float64, error) { return ClonesClosedForm(math.Inf(1), 100, 1e-6) }, "eps0 must be a finite number"},
		{"delta eps negative", func() (float64, error) { return ClonesDelta(-1, 1, 100) }, "eps must be >= 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.f()
			if v != 0 {
				t.Errorf("got value %v alongside an error", v)
			}
			wantInvalid(t, err, tc.wants)
		})
	}
}

// clonesDeltaReference computes delta(eps) of the clones reduction by the
// definition: every clone count c (binomial weight by log-gamma) and every
// count a of the first type, both directions of the divergence.
func clonesDeltaReference(n int, eps0, eps float64) float64 {
	p := math.Exp(-eps0)
	alpha := math.Exp(eps0) / (1 + math.Exp(eps0))
	d1, d2 := 0.0, 0.0
	for c := 0; c <= n-1; c++ {
		w := binomPMF(n-1, c, p)
		if w == 0 {
			continue
		}
		P := make([]float64, c+2)
		Q := make([]float64, c+2)
		for a := 0; a <= c+1; a++ {
			bm1, b0 := binomPMF(c, a-1, 0.5), binomPMF(c, a, 0.5)
			P[a] = alpha*bm1 + (1-alpha)*b0
			Q[a] = (1-alpha)*bm1 + alpha*b0
		}
		d1 += w * hockey(P, Q, eps)
		d2 += w * hockey(Q, P, eps)
	}
	return math.Max(d1, d2)
}

func TestClonesDeltaAgainstReference(t *testing.T) {
	cases := []struct {
		n         int
		eps0, eps float64
	}{
		{50, 1, 0.3}, {50, 3, 1}, {300, 2, 0.4}, {300, 0.5, 0.1}, {1000, 4, 0.8}, {1000, 1, 0.12},
	}
	for _, tc := range cases {
		ref := clonesDeltaReference(tc.n, tc.eps0, tc.eps)
		got, err := ClonesDelta(tc.eps, tc.eps0, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		// got is an upper bound, and tight.
		if got < ref*(1-1e-9) || got > ref*(1+1e-6)+1e-15 {
			t.Errorf("n=%d eps0=%v eps=%v: ClonesDelta = %.12g, reference %.12g", tc.n, tc.eps0, tc.eps, got, ref)
		}
	}
}

func TestClonesBoundsExactBinaryRR(t *testing.T) {
	// Shuffled binary randomized response is one eps0-LDP mechanism: its
	// exact delta can never exceed the clones bound.
	for _, n := range []int{20, 200, 2000} {
		for _, eps0 := range []float64{0.5, 1, 2, 4} {
			for _, f := range []float64{0.05, 0.2, 0.5, 0.9} {
				eps := f * eps0
				exact := shuffledBinaryRRDelta(n, eps0, eps)
				b, err := ClonesDelta(eps, eps0, n)
				if err != nil {
					t.Fatal(err)
				}
				if b < exact*(1-1e-9) {
					t.Errorf("n=%d eps0=%v eps=%v: clones delta %.6g < exact binary-RR delta %.6g", n, eps0, eps, b, exact)
				}
			}
		}
	}
}

func TestCloneHockeyNonIncreasingInC(t *testing.T) {
	// ClonesDelta stops summing once h(c) is negligible, relying on h being
	// non-increasing in the clone count; check it on a grid.
	for _, eps1 := range []float64{0.05, 0.5, 2, 6} {
		for _, f := range []float64{0.01, 0.1, 0.5, 0.9} {
			eps := f * eps1
			prev := math.Inf(1)
			for c := 0; c <= 3000; c++ {
				h := cloneHockey(c, eps, eps1, 1e-30)
				if h > prev*(1+1e-9)+1e-25 { // below 1e-25 the tail bound dominates
					t.Fatalf("eps1=%v eps=%v: h(%d) = %g > h(%d) = %g", eps1, eps, c, h, c-1, prev)
				}
				prev = h
			}
		}
	}
}

func TestClonesNumericalIsSmallestValid(t *testing.T) {
	for _, tc := range []struct {
		eps0  float64
		n     int
		delta float64
	}{{1, 1000, 1e-6}, {4, 100000, 1e-6}, {0.3, 5000, 1e-8}, {8, 20000, 1e-5}} {
		e, err := ClonesNumerical(tc.eps0, tc.n, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if e > tc.eps0 {
			t.Errorf("%+v: eps %v exceeds eps0", tc, e)
		}
		d, _ := ClonesDelta(e, tc.eps0, tc.n)
		if d > tc.delta {
			t.Errorf("%+v: delta(eps=%v) = %g > target", tc, e, d)
		}
		if e < tc.eps0 {
			d2, _ := ClonesDelta(e*(1-1e-4), tc.eps0, tc.n)
			if d2 <= tc.delta {
				t.Errorf("%+v: eps %v is not the smallest (delta at 0.9999 eps = %g)", tc, e, d2)
			}
		}
		// The closed forms, where valid, are never tighter than the exact bound.
		if c, err := ClonesTheorem(tc.eps0, tc.n, tc.delta); err == nil && c < e {
			t.Errorf("%+v: closed form %v below numerical %v", tc, c, e)
		}
	}
}

func TestClonesMonotoneInN(t *testing.T) {
	prev := math.Inf(1)
	for _, n := range []int{100, 1000, 10000, 100000} {
		e, err := ClonesNumerical(2, n, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if e > prev {
			t.Errorf("n=%d: eps %v larger than for fewer users (%v)", n, e, prev)
		}
		prev = e
	}
}
