package amplify

import (
	"math"
	"testing"
	"time"
)

// directSkellam is Sk(w) = Poisson(w/2) - Poisson(w/2) by direct
// convolution of the two Poisson pmfs (each from its recurrence over
// 0..n), on -n..n: an independent reference for small w.
func directSkellam(w float64, n int) []float64 {
	lam := w / 2
	p := make([]float64, n+1)
	p[0] = math.Exp(-lam)
	for k := 1; k <= n; k++ {
		p[k] = p[k-1] * lam / float64(k)
	}
	out := make([]float64, 2*n+1) // out[n+k] = P(N = k)
	for i, a := range p {
		for j, b := range p {
			out[n+i-j] += a * b
		}
	}
	return out
}

// TestSkellamTailsBracket: the rigorous tail brackets contain the direct
// tails and are tight.
func TestSkellamTailsBracket(t *testing.T) {
	for _, w := range []float64{0.5, 7, 60, 400} {
		n := int(w + 40*math.Sqrt(w) + 60)
		pmf := directSkellam(w, n)
		k := int(12*math.Sqrt(w) + 64)
		tl := newSkellamTails(w, k)
		for s := -k; s <= k+3; s++ {
			direct := 0.0
			for j := max(s, -n); j <= n; j++ {
				direct += pmf[n+j]
			}
			lo, hi := tl.tail(s)
			if lo > direct*(1+1e-12)+1e-300 || hi < direct*(1-1e-12) || hi-lo > 1e-7*math.Max(direct, 1e-280)+1e-300 && direct > 1e-200 && s < k/2 {
				t.Fatalf("w %v, s %d: bracket [%g, %g], direct %g", w, s, lo, hi, direct)
			}
		}
	}
}

// TestSkellamShiftLowerBound against the same test computed from the
// direct pmf, and for large variances against the Gaussian shift's exact
// epsilon (the Skellam tends to the Gaussian; the bound must not exceed
// the Gaussian's by more than the discreteness allows).
func TestSkellamShiftLowerBound(t *testing.T) {
	for _, tc := range []struct {
		w     float64
		shift int64
		slack float64
	}{{30, 10, 0}, {200, 30, 1e-9}, {5, 6, 0}} {
		got, err := SkellamShiftLowerBound(tc.w, tc.shift, tc.slack, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		n := int(tc.w + 40*math.Sqrt(tc.w) + 60 + float64(tc.shift))
		pmf := directSkellam(tc.w, n)
		tail := func(s int) float64 {
			v := 0.0
			for j := max(s, -n); j <= n; j++ {
				v += pmf[n+j]
			}
			return v
		}
		want := 0.0
		for s := -n; s <= n; s++ {
			num, den := tail(s-int(tc.shift))-tc.slack-1e-6, tail(s)+tc.slack
			if num > 0 && den > 0 {
				want = math.Max(want, math.Log(num/den))
			}
		}
		t.Logf("w %v, shift %d: %.9f, direct %.9f", tc.w, tc.shift, got, want)
		if got > want+1e-9 || got < want*(1-1e-8)-1e-9 {
			t.Errorf("w %v, shift %d: %v, direct %v", tc.w, tc.shift, got, want)
		}
	}
	// The split-mix default sizes (t = 30 rounds of mu = 5.6e7,
	// shift 30 x 4095): cheap enough for a run's summary.
	start := time.Now()
	e, err := SkellamShiftLowerBound(30*5.6e7, 30*4095, 1e-290, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	// Against the Gaussian shift of the same variance: mu = D/sigma, the
	// Gaussian's epsilon at delta 1e-6 (by bisection on its closed form).
	mu := 30 * 4095 / math.Sqrt(30*5.6e7)
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	gd := func(eps float64) float64 { return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2) }
	lo, hi := 0.0, 50.0
	for range 200 {
		m := (lo + hi) / 2
		if gd(m) > 1e-6 {
			lo = m
		} else {
			hi = m
		}
	}
	t.Logf("w %.3g, shift %d: %.6f in %v; the Gaussian shift's exact epsilon %.6f", 30*5.6e7, 30*4095, e, time.Since(start), lo)
	if !(e > 0.95*lo && e < 1.01*lo) {
		t.Errorf("large variance: %v, Gaussian %v", e, lo)
	}
}

func TestSkellamShiftBadInput(t *testing.T) {
	for _, c := range []struct {
		w            float64
		shift        int64
		slack, delta float64
	}{
		{0, 1, 0, 1e-6}, {math.NaN(), 1, 0, 1e-6}, {10, 0, 0, 1e-6}, {10, 1, -1, 1e-6}, {10, 1, 0, 0}, {10, 1, 0, math.NaN()},
		{1e20, 1, 0, 1e-6}, {10, 1 << 40, 0, 1e-6},
	} {
		if _, err := SkellamShiftLowerBound(c.w, c.shift, c.slack, c.delta); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestSkellamSubsampled: the sum and maximum tests against the same tests
// computed here from the direct pmf (the mixture over the sampled rounds
// summed by hand), and q = 1 at least the plain shift's bound.
func TestSkellamSubsampled(t *testing.T) {
	for _, tc := range []struct {
		v     float64
		t     int
		q     float64
		shift int64
	}{{20, 3, 0.3, 8}, {50, 2, 0.8, 12}, {10, 4, 1, 5}} {
		got, err := SkellamSubsampledLowerBound(tc.v, tc.t, tc.q, tc.shift, 0, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		n := int(float64(tc.t)*tc.v + 40*math.Sqrt(float64(tc.t)*tc.v) + 60 + float64(int64(tc.t)*tc.shift))
		tailOf := func(pmf []float64) func(int) float64 {
			return func(s int) float64 {
				v := 0.0
				for j := max(s, -n); j <= n; j++ {
					v += pmf[n+j]
				}
				return v
			}
		}
		sum := tailOf(directSkellam(float64(tc.t)*tc.v, n))
		one := tailOf(directSkellam(tc.v, n))
		binom := func(j int) float64 {
			c := 1.0
			for i := 0; i < j; i++ {
				c = c * float64(tc.t-i) / float64(i+1)
			}
			return c * math.Pow(tc.q, float64(j)) * math.Pow(1-tc.q, float64(tc.t-j))
		}
		want := 0.0
		for s := -n / 2; s <= n/2; s++ {
			p1 := 0.0
			for j := 0; j <= tc.t; j++ {
				p1 += binom(j) * sum(s-j*int(tc.shift))
			}
			if num, den := p1-1e-6, sum(s); num > 0 && den > 0 {
				want = math.Max(want, math.Log(num/den))
			}
			m1 := 1 - math.Pow(1-tc.q*one(s-int(tc.shift))-(1-tc.q)*one(s), float64(tc.t))
			m0 := 1 - math.Pow(1-one(s), float64(tc.t))
			if num, den := m1-1e-6, m0; num > 0 && den > 0 {
				want = math.Max(want, math.Log(num/den))
			}
		}
		t.Logf("%+v: %.9f, direct %.9f", tc, got, want)
		if got > want+1e-7 || got < want*(1-1e-6)-1e-7 {
			t.Errorf("%+v: %v, direct %v", tc, got, want)
		}
		if tc.q == 1 {
			plain, err := SkellamShiftLowerBound(float64(tc.t)*tc.v, int64(tc.t)*tc.shift, 0, 1e-6)
			if err != nil || got < plain {
				t.Errorf("q = 1: %v below the shift's %v (%v)", got, plain, err)
			}
		}
	}
	for _, bad := range []struct {
		t int
		q float64
	}{{0, 0.5}, {2, 0}, {2, 1.5}, {2, math.NaN()}} {
		if _, err := SkellamSubsampledLowerBound(10, bad.t, bad.q, 3, 0, 1e-6); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
