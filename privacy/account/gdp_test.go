package account

import (
	"fmt"
	"github.com/shufflefl/shufflefl/privacy/pld"
	"math"
	"testing"
)

// naiveGDPDelta is the Dong–Roth–Su formula evaluated literally, the slow
// reference for GDPToDelta where it is numerically safe.
func naiveGDPDelta(mu, eps float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
}

func TestGDPToDelta(t *testing.T) {
	for _, mu := range []float64{0.1, 0.5, 1, 2, 5} {
		for _, eps := range []float64{0, 0.1, 1, 3, 8} {
			got, err := GDPToDelta(mu, eps)
			if err != nil {
				t.Fatal(err)
			}
			want := naiveGDPDelta(mu, eps)
			if want > 1e-12 && !approx(got, want, 1e-9) {
				t.Errorf("mu=%v eps=%v: %v, literal formula %v", mu, eps, got, want)
			}
			if got < 0 || math.IsNaN(got) {
				t.Errorf("mu=%v eps=%v: delta %v", mu, eps, got)
			}
		}
	}
	// Far tail: finite, positive, tiny, no NaN.
	d, err := GDPToDelta(0.05, 50)
	if err != nil || math.IsNaN(d) || d < 0 || d > 1e-200 {
		t.Errorf("far tail: %v, %v", d, err)
	}
	_, err = GDPToDelta(0, 1)
	wantInvalid(t, err, "mu must be > 0")
	_, err = GDPToDelta(1, -1)
	wantInvalid(t, err, "epsilon must be >= 0")
}

func TestGDPRoundTrip(t *testing.T) {
	for _, mu := range []float64{0.05, 0.3, 1, 2.5, 10} {
		for _, delta := range []float64{1e-10, 1e-6, 1e-3, 0.1} {
			eps, err := GDPToEpsilon(mu, delta)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := GDPToDelta(mu, eps)
			if d > delta {
				t.Fatalf("mu=%v delta=%v: eps %v gives delta %v > target", mu, delta, eps, d)
			}
			if eps > 0 && !approx(d, delta, 1e-6) {
				t.Errorf("mu=%v delta=%v: eps %v gives delta %v", mu, delta, eps, d)
			}
			if eps == 0 {
				continue
			}
			m, err := GDPMu(eps, delta)
			if err != nil {
				t.Fatal(err)
			}
			if !approx(m, mu, 1e-6) {
				t.Errorf("GDPMu(%v, %v) = %v, want %v", eps, delta, m, mu)
			}
			if d, _ := GDPToDelta(m, eps); d > delta {
				t.Errorf("GDPMu is on the wrong side: delta %v > %v", d, delta)
			}
		}
	}
	// Large delta: epsilon 0.
	eps, err := GDPToEpsilon(0.1, 0.5)
	if err != nil || eps != 0 {
		t.Errorf("eps %v, %v; want 0", eps, err)
	}
	_, err = GDPToEpsilon(1, 0)
	wantInvalid(t, err, "delta must be in (0, 1)")
	_, err = GDPMu(math.NaN(), 1e-5)
	wantInvalid(t, err, "epsilon must be a finite number")
}

func TestComposeGDP(t *testing.T) {
	m, err := ComposeGDP(0.3, 0.4)
	if err != nil || !approx(m, 0.5, 1e-15) {
		t.Fatalf("got %v, %v", m, err)
	}
	// k-fold composition of the Gaussian: mu sqrt(k) (Dong, Roth and Su).
	mus := make([]float64, 100)
	for i := range mus {
		mus[i] = 0.1
	}
	if m, _ := ComposeGDP(mus...); !approx(m, 1, 1e-12) {
		t.Errorf("100 x 0.1 gives %v, want 1", m)
	}
	_, err = ComposeGDP()
	wantInvalid(t, err, "must not be empty")
	_, err = ComposeGDP(1, -1)
	wantInvalid(t, err, "mu[1] must be >= 0")
	if g, err := GaussianMu(2, 4); err != nil || g != 0.5 {
		t.Errorf("GaussianMu(2, 4) = %v, %v", g, err)
	}
}

func ExampleGDPToEpsilon() {
	// Composing 100 Gaussian mechanisms with sigma = 10 gives 1-GDP.
	mus := make([]float64, 100)
	for i := range mus {
		mus[i], _ = GaussianMu(1, 10)
	}
	mu, _ := ComposeGDP(mus...)
	eps, _ := GDPToEpsilon(mu, 1e-5)
	fmt.Printf("mu = %.3f, (%.3f, 1e-5)-DP\n", mu, eps)
	// Output: mu = 1.000, (4.377, 1e-5)-DP
}

// TestGDPCompose: k-fold composition of mu-GDP is sqrt(k) mu-GDP, checked
// against the PLD of k composed Gaussian mechanisms.
func TestGDPCompose(t *testing.T) {
	for _, tc := range []struct {
		mu float64
		k  int
	}{{0.1, 1}, {0.1, 100}, {0.5, 4}, {1, 10}} {
		got := GDPCompose(tc.mu, tc.k)
		if want := tc.mu * math.Sqrt(float64(tc.k)); got != want {
			t.Errorf("GDPCompose(%v, %d) = %v, want %v", tc.mu, tc.k, got, want)
		}
		// Independently: the PLD of k Gaussian mechanisms (sensitivity 1,
		// sigma = 1/mu) composed by FFT. Its delta is a pessimistic upper
		// bound on the exact one, so it must lie at or just above the
		// composed GDP curve.
		g, err := pld.Gaussian(1/tc.mu, 1, pld.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := g.SelfCompose(tc.k)
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0.1, 0.5, 1} {
			dp := c.Delta(eps)
			dg, err := GDPToDelta(got, eps)
			if err != nil {
				t.Fatal(err)
			}
			if dp < dg*(1-1e-9) || dp > dg*1.01+1e-12 {
				t.Errorf("mu %v x %d at eps %v: PLD delta %g, composed GDP %g", tc.mu, tc.k, eps, dp, dg)
			}
		}
	}
}
