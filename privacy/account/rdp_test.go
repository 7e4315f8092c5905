package account

import (
	"fmt"
	"math"
	"testing"
)

// slowLogA is the reference for logA: log of
// A_alpha = E_{z~N(0,sigma^2)}[((1-q) + q e^{(2z-1)/(2 sigma^2)})^alpha]
// (Mironov, Talwar and Zhang 2019, Section 3) by the trapezoid rule in log
// space on a fine grid around the integrand's peak. The integrand is smooth and
// decays like a Gaussian, so the rule converges very fast; it is slow (tens of
// thousands of evaluations) and independent of the series in logA.
func slowLogA(q, sigma, alpha float64) float64 {
	f := func(z float64) float64 {
		lr := math.Log1p(q * math.Expm1((2*z-1)/(2*sigma*sigma)))
		if math.IsInf(lr, 1) || (2*z-1)/(2*sigma*sigma) > 700 {
			lr = math.Log(q) + (2*z-1)/(2*sigma*sigma) + math.Log1p((1-q)*math.Exp(-(2*z-1)/(2*sigma*sigma))/q)
		}
		return -z*z/(2*sigma*sigma) - math.Log(sigma*math.Sqrt(2*math.Pi)) + alpha*lr
	}
	// Locate the peak of the log-integrand (it is concave enough for a
	// coarse scan followed by ternary search).
	lo, hi := -50*sigma-5, 50*sigma+alpha+5
	best, bz := math.Inf(-1), 0.0
	for i := 0; i <= 20000; i++ {
		z := lo + (hi-lo)*float64(i)/20000
		if v := f(z); v > best {
			best, bz = v, z
		}
	}
	h := sigma / 400
	sum := math.Inf(-1)
	for z := bz - 40*sigma; z <= bz+40*sigma; z += h {
		sum = logAdd(sum, f(z))
	}
	return sum + math.Log(h)
}

func TestLogAAgainstReference(t *testing.T) {
	// The parameter grid of TensorFlow Privacy's test_compute_log_a_equals_mp
	// (tensorflow/privacy, tensorflow_privacy/privacy/analysis/
	// rdp_accountant_test.py @09270af), plus typical DP-FedAvg settings.
	tests := []struct{ q, sigma, alpha float64 }{
		{1e-7, .1, 1.01}, {1e-6, .1, 256}, {1e-5, .1, 256.1}, {1e-6, 1, 27},
		{1e-4, 1, 1.5}, {1e-3, 1, 2}, {.01, 10, 20}, {.1, 100, 20.5},
		{.99, .1, 256}, {.999, 100, 256.1},
		{0.01, 2.5, 1.5}, {0.01, 2.5, 2.5}, {0.01, 1.1, 10.9}, {0.1, 0.7, 3.3},
		{0.004, 1.1, 1.1}, {0.5, 2, 7.7}, {0.05, 0.8, 32}, {0.3, 5, 63},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.q, "_", tc.sigma, "_", tc.alpha), func(t *testing.T) {
			got := logA(tc.q, tc.sigma, tc.alpha)
			want := slowLogA(tc.q, tc.sigma, tc.alpha)
			// rtol 1e-4 as in TF Privacy, plus atol for log A ~ 0.
			if math.Abs(got-want) > 1e-4*math.Abs(want)+1e-10 {
				t.Fatalf("log A = %v, reference %v", got, want)
			}
		})
	}
}

// TestSampledGaussianRDPPublished checks published test values of
// established accountants.
func TestSampledGaussianRDPPublished(t *testing.T) {
	orders := []float64{1.5, 2.5, 5, 50, 100}
	rdp, err := SampledGaussianRDP(0.01, 2.5, orders)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rdp {
		rdp[i] *= 50
	}
	// TF Privacy test_compute_rdp_sequence (tensorflow/privacy,
	// tensorflow_privacy/privacy/analysis/rdp_accountant_test.py @09270af):
	// compute_rdp(q=0.01, noise=2.5, steps=50, orders) equals these within
	// delta=1e-5 (absolute).
	tfp := []float64{0.00065, 0.001085, 0.00218075, 0.023846, 167.416307}
	// Google dp_accounting test_compute_rdp_poisson_sampled_gaussian
	// (google/differential-privacy, python/dp_accounting/dp_accounting/rdp/
	// rdp_privacy_accountant_test.py @0b109e9), rtol=1e-4. Its fractional
	// orders 1.5 and 2.5 are larger than the exact values: that version sums
	// the absolute values of the generalized binomial coefficients, an upper
	// bound. Our exact values agree with TF Privacy's and with slowLogA and
	// lie below dp_accounting's, as a tighter valid bound must.
	dpa := []float64{6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02}
	for i, a := range orders {
		if math.Abs(rdp[i]-tfp[i]) > 1e-5 {
			t.Errorf("order %v: RDP %v, TF Privacy asserts %v", a, rdp[i], tfp[i])
		}
		if a == math.Floor(a) {
			if !approx(rdp[i], dpa[i], 1e-4) {
				t.Errorf("order %v: RDP %v, dp_accounting asserts %v", a, rdp[i], dpa[i])
			}
		} else if rdp[i] > dpa[i] {
			t.Errorf("order %v: RDP %v above dp_accounting's upper bound %v", a, rdp[i], dpa[i])
		}
	}
	// TF Privacy test_compute_rdp_scalar: compute_rdp(0.1, 2, 10, 5) = 0.07737 (places=5).
	r, err := SampledGaussianRDP(0.1, 2, []float64{5})
	if err != nil || math.Abs(10*r[0]-0.07737) > 5e-6 {
		t.Errorf("compute_rdp(0.1, 2, 10, 5): got %v, %v; want 0.07737", 10*r[0], err)
	}
	// q = 1 is the Gaussian: compute_rdp(1, 10, 1, 20) = 0.1.
	r, err = SampledGaussianRDP(1, 10, []float64{20})
	if err != nil || !approx(r[0], 0.1, 1e-12) {
		t.Errorf("q=1: got %v, %v; want 0.1", r, err)
	}
}

func TestRDPToEpsilonPublished(t *testing.T) {
	// TF Privacy test_get_privacy_spent_check_target_delta / _eps and
	// dp_accounting test_compute_epsilon_delta_pure_dp: constant RDP 1.1 at
	// orders 2..32, delta = 1e-5 gives epsilon 1.32783806176 at order 32, and
	// back.
	var orders, rdp []float64
	for a := 2; a <= 32; a++ {
		orders = append(orders, float64(a))
		rdp = append(rdp, 1.1)
	}
	eps, order, err := RDPToEpsilon(orders, rdp, 1e-5)
	if err != nil || math.Abs(eps-1.32783806176) > 5e-8 || order != 32 {
		t.Errorf("got eps %v at order %v (%v); want 1.32783806176 at 32", eps, order, err)
	}
	delta, order, err := RDPToDelta(orders, rdp, 1.32783806176)
	if err != nil || math.Abs(delta-1e-5) > 5e-8 || order != 32 {
		t.Errorf("got delta %v at order %v (%v); want 1e-5 at 32", delta, order, err)
	}
	// Same tests, second part: the Gaussian with sigma = 4.530877117 is
	// exactly (1, 1e-6)-DP; RDP over the fine grid 1.001..99.999 gives
	// epsilon 1 (places=7).
	orders = orders[:0]
	for i := 1001; i < 100000; i++ {
		orders = append(orders, 0.001*float64(i))
	}
	g, err := GaussianRDP(4.530877117, orders)
	if err != nil {
		t.Fatal(err)
	}
	eps, _, err = RDPToEpsilon(orders, g, 1e-6)
	if err != nil || math.Abs(eps-1) > 5e-8 {
		t.Errorf("Gaussian: eps %v (%v), want 1", eps, err)
	}
}

func TestRDPComposition(t *testing.T) {
	// TF Privacy test_check_composition: 40000 steps at (q=1e-4, sigma=0.4)
	// then 100 steps at (q=0.1, sigma=2), delta=1e-5: epsilon <= 8.509656
	// (the value under the older conversion, still an upper bound).
	orders := []float64{1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 64, 256}
	a, err := SampledGaussianRDP(1e-4, 0.4, orders)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SampledGaussianRDP(0.1, 2, orders)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		a[i] *= 40000
		b[i] *= 100
	}
	total, err := ComposeRDP(a, b)
	if err != nil {
		t.Fatal(err)
	}
	eps, _, err := RDPToEpsilon(orders, total, 1e-5)
	if err != nil || eps > 8.509656 || eps < 7 {
		t.Errorf("composition: eps %v (%v), want <= 8.509656 and not far below", eps, err)
	}
	// The classical conversion reproduces the old published value exactly.
	epsC, order, err := RDPToEpsilonClassic(orders, total, 1e-5)
	if err != nil || math.Abs(epsC-8.509656) > 5e-6 || order != 2.5 {
		t.Errorf("classic: eps %v at %v (%v), want 8.509656 at 2.5", epsC, order, err)
	}
	if _, err := ComposeRDP(a, b[:3]); err == nil {
		t.Error("length mismatch accepted")
	}
}

// TestSampledGaussianEpsilonReference checks the fast path (cached curve at
// DefaultRDPOrders) against an independent evaluation with the slow integral
// at every order, and that epsilon is monotone in its arguments.
func TestSampledGaussianEpsilonReference(t *testing.T) {
	cases := []struct {
		q, sigma float64
		steps    int
		delta    float64
	}{
		{256.0 / 60000, 1.1, 60 * 60000 / 256, 1e-5},
		{0.01, 1, 1000, 1e-5},
		{0.1, 2, 100, 1e-6},
	}
	for _, c := range cases {
		got, err := SampledGaussianEpsilon(c.q, c.sigma, c.steps, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		orders := []float64{1.5, 2, 3.5, 4, 6, 8, 12, 16, 24, 32, 48, 64}
		rdp := make([]float64, len(orders))
		for i, a := range orders {
			rdp[i] = float64(c.steps) * slowLogA(c.q, c.sigma, a) / (a - 1)
		}
		ref, _, _ := RDPToEpsilon(orders, rdp, c.delta)
		// The default grid is a superset-in-spirit of this coarse grid: the
		// fast value may be lower (finer grid) but not much, and never higher
		// than the coarse reference by more than numerical noise.
		if got > ref*(1+1e-6) || got < 0.9*ref {
			t.Errorf("%+v: eps %v, reference on a coarse grid %v", c, got, ref)
		}
	}
	// Monotonicity: more steps or larger q cost more, more noise less.
	e1, _ := SampledGaussianEpsilon(0.01, 1, 100, 1e-5)
	e2, _ := SampledGaussianEpsilon(0.01, 1, 200, 1e-5)
	e3, _ := SampledGaussianEpsilon(0.02, 1, 100, 1e-5)
	e4, _ := SampledGaussianEpsilon(0.01, 1.5, 100, 1e-5)
	if !(e2 > e1 && e3 > e1 && e4 < e1) {
		t.Errorf("not monotone: base %v, steps x2 %v, q x2 %v, sigma x1.5 %v", e1, e2, e3, e4)
	}
}

func TestCalibrateNoiseMultiplier(t *testing.T) {
	tests := []struct {
		target, delta, q float64
		steps            int
	}{
		{1, 1e-5, 0.01, 1000},
		{8, 1e-5, 256.0 / 60000, 14062},
		{0.5, 1e-6, 1, 1},
		{3, 1e-5, 0.1, 50},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			s, err := CalibrateNoiseMultiplier(tc.target, tc.delta, tc.q, tc.steps)
			if err != nil {
				t.Fatal(err)
			}
			// Guaranteed side: the returned sigma meets the target ...
			e, err := SampledGaussianEpsilon(tc.q, s, tc.steps, tc.delta)
			if err != nil || e > tc.target {
				t.Fatalf("sigma %v gives eps %v > target %v (%v)", s, e, tc.target, err)
			}
			// ... and is (nearly) the smallest that does.
			e, _ = SampledGaussianEpsilon(tc.q, s*(1-1e-5), tc.steps, tc.delta)
			if e <= tc.target {
				t.Fatalf("sigma %v is not minimal: %v also meets the target", s, s*(1-1e-5))
			}
		})
	}
	_, err := CalibrateNoiseMultiplier(0, 1e-5, 0.01, 10)
	wantInvalid(t, err, "target epsilon must be > 0")
	_, err = CalibrateNoiseMultiplier(1, 1e-5, 0, 10)
	wantInvalid(t, err, "q must be in (0, 1]")
	_, err = CalibrateNoiseMultiplier(1e-9, 1e-300, 1, 1000)
	wantInvalid(t, err, "not reached")
}

func TestSampledGaussianInvalid(t *testing.T) {
	bad := []struct {
		q, sigma float64
		steps    int
		delta    float64
		want     string
	}{
		{0, 1, 1, 1e-5, "q must be in (0, 1]"},
		{1.1, 1, 1, 1e-5, "q must be in (0, 1]"},
		{math.NaN(), 1, 1, 1e-5, "q must be a finite number"},
		{0.1, 0, 1, 1e-5, "sigma must be > 0"},
		{0.1, math.Inf(1), 1, 1e-5, "sigma must be a finite number"},
		{0.1, 1, 0, 1e-5, "steps must be >= 1"},
		{0.1, 1, 1, 0, "delta must be in (0, 1)"},
		{0.1, 1, 1, 1, "delta must be in (0, 1)"},
	}
	for _, tc := range bad {
		_, err := SampledGaussianEpsilon(tc.q, tc.sigma, tc.steps, tc.delta)
		wantInvalid(t, err, tc.want)
	}
	_, err := SampledGaussianRDP(0.1, 1, []float64{1})
	wantInvalid(t, err, "orders[0] must be > 1")
	_, _, err = RDPToEpsilon([]float64{2}, []float64{math.NaN()}, 1e-5)
	wantInvalid(t, err, "rdp[0] must be >= 0")
	_, _, err = RDPToEpsilon([]float64{2, 3}, []float64{1}, 1e-5)
	wantInvalid(t, err, "got 1 RDP values for 2 orders")
}

func BenchmarkSampledGaussianEpsilon(b *testing.B) {
	for _, steps := range []int{100, 10000} {
		b.Run(fmt.Sprintf("cached/steps=%d", steps), func(b *testing.B) {
			for b.Loop() {
				if _, err := SampledGaussianEpsilon(0.01, 1.1, steps, 1e-5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("uncached/steps=10000", func(b *testing.B) {
		sigma := 1.1
		for b.Loop() {
			sigma += 1e-9 // a new (q, sigma) pair every call
			if _, err := SampledGaussianEpsilon(0.01, sigma, 10000, 1e-5); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCalibrateNoiseMultiplier(b *testing.B) {
	for b.Loop() {
		if _, err := CalibrateNoiseMultiplier(1, 1e-5, 0.01, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleSampledGaussianEpsilon() {
	// DP-FedAvg: 1% of clients per round, noise multiplier 1.1, 1000 rounds.
	eps, err := SampledGaussianEpsilon(0.01, 1.1, 1000, 1e-5)
	fmt.Printf("%.3f %v\n", eps, err)
	// Output: 1.712 <nil>
}

func ExampleCalibrateNoiseMultiplier() {
	sigma, err := CalibrateNoiseMultiplier(1, 1e-5, 0.01, 1000)
	fmt.Printf("%.4f %v\n", sigma, err)
	// Output: 1.5131 <nil>
}

func TestRDPBretagnolleHuber(t *testing.T) {
	// A tiny RDP gives epsilon 0 once delta >= sqrt(1 - e^-rho), and
	// RDPToDelta never reports more than that.
	orders := []float64{2, 8, 32}
	rdp := []float64{1e-12, 1e-12, 1e-12}
	eps, _, err := RDPToEpsilon(orders, rdp, 1e-5)
	if err != nil || eps != 0 {
		t.Fatalf("eps %v (%v), want 0", eps, err)
	}
	d, _, err := RDPToDelta(orders, rdp, 0)
	if err != nil || d > math.Sqrt(-math.Expm1(-1e-12))*(1+1e-9) {
		t.Fatalf("delta %v (%v), want <= %v", d, err, math.Sqrt(1e-12))
	}
}

// TestLogAGrid compares both fractional-order methods (series and
// quadrature) with each other and with the slow reference over a grid that
// covers both regimes of seriesWorthTrying.
func TestLogAGrid(t *testing.T) {
	for _, q := range []float64{1e-3, 0.01, 0.1, 0.5, 0.9} {
		for _, sigma := range []float64{0.3, 0.7, 1.5, 4} {
			for _, alpha := range []float64{1.1, 1.7, 3.3, 10.9} {
				ref := slowLogA(q, sigma, alpha)
				tol := 1e-4*math.Abs(ref) + 1e-10
				quad := logAQuad(q, sigma, alpha)
				if math.Abs(quad-ref) > tol {
					t.Errorf("q=%v sigma=%v alpha=%v: quadrature %v, reference %v", q, sigma, alpha, quad, ref)
				}
				if s, ok := logASeries(q, sigma, alpha); ok && math.Abs(s-quad) > 1e-6*math.Abs(quad)+1e-12 {
					t.Errorf("q=%v sigma=%v alpha=%v: series %v, quadrature %v", q, sigma, alpha, s, quad)
				}
				if got := logA(q, sigma, alpha); math.Abs(got-ref) > tol {
					t.Errorf("q=%v sigma=%v alpha=%v: logA %v, reference %v", q, sigma, alpha, got, ref)
				}
			}
		}
	}
}

// TestComputeDPSGDPrivacy reproduces TF Privacy's test_compute_dp_sgd_privacy
// (tensorflow/privacy, tensorflow_privacy/privacy/analysis/
// compute_dp_sgd_privacy_test.py @2cd46db, with the order grid and step count
// of compute_dp_sgd_privacy_lib.py @0094fbb: orders 1.25..4.5, 5..63, 128,
// 256, 512; steps = ceil(epochs n / batch); q = batch / n; improved
// conversion via dp_accounting). Test0 and Test1 have integer optimal
// orders, where both accountants are exact: assertAlmostEqual (7 places).
// Test2's optimum is the fractional order 1.25, where dp_accounting sums
// |binomial coefficients| (an upper bound): ours must not exceed it.
func TestComputeDPSGDPrivacy(t *testing.T) {
	orders := []float64{1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5}
	for a := 5; a < 64; a++ {
		orders = append(orders, float64(a))
	}
	orders = append(orders, 128, 256, 512)
	tests := []struct {
		name               string
		n, batch           float64
		sigma, epochs, dlt float64
		wantEps, wantOrder float64
		exact              bool
	}{
		{"Test0", 60000, 150, 1.3, 15, 1e-5, 0.7242234026109595, 19, true},
		{"Test1", 100000, 100, 1.0, 30, 1e-7, 1.4154988495444842, 13, true},
		{"Test2", 100000000, 1024, 0.1, 10, 1e-7, 5907982.3113978775, 1.25, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.batch / tc.n
			steps := math.Ceil(tc.epochs * tc.n / tc.batch)
			rdp, err := SampledGaussianRDP(q, tc.sigma, orders)
			if err != nil {
				t.Fatal(err)
			}
			for i := range rdp {
				rdp[i] *= steps
			}
			eps, order, err := RDPToEpsilon(orders, rdp, tc.dlt)
			if err != nil {
				t.Fatal(err)
			}
			if tc.exact {
				if math.Abs(eps-tc.wantEps) > 5e-8 || order != tc.wantOrder {
					t.Errorf("eps %.10f at order %v, TF Privacy asserts %.10f at %v", eps, order, tc.wantEps, tc.wantOrder)
				}
				return
			}
			if eps > tc.wantEps || !approx(eps, tc.wantEps, 1e-9) || order != tc.wantOrder {
				t.Errorf("eps %v at order %v, TF Privacy's upper bound %v at %v", eps, order, tc.wantEps, tc.wantOrder)
			}
		})
	}
}

func TestLogAExtremes(t *testing.T) {
	// Regimes where a naive evaluation overflows or returns NaN: every
	// result must be finite, non-negative and agree with the reference.
	for _, c := range []struct{ q, sigma, alpha float64 }{
		{1e-30, 0.3, 10.9}, {1e-12, 0.2, 5.5}, {0.999, 0.3, 1.5}, {0.5, 50, 1.1}, {1e-9, 1000, 63.5},
	} {
		got := logA(c.q, c.sigma, c.alpha)
		ref := slowLogA(c.q, c.sigma, c.alpha)
		if math.IsNaN(got) || math.IsInf(got, 0) || got < -1e-15 || math.Abs(got-ref) > 1e-4*math.Abs(ref)+1e-10 {
			t.Errorf("%+v: logA %v, reference %v", c, got, ref)
		}
	}
}
