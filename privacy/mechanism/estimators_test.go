package mechanism

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/internal/rng"
)

// Unbiasedness and variance of every estimator against its closed form.
// Tolerances are 6 standard errors (two-sided false-failure rate 2e-9 per
// check under the normal approximation): for a mean, 6·sqrt(σ²/n) with the
// closed-form σ²; for a variance, 6·sqrt((m4 - s⁴)/n) with the empirical
// fourth central moment m4.

// moments accumulates the first four moments about a centre c.
type moments struct{ c, n, s1, s2, s3, s4 float64 }

func (m *moments) add(x float64) {
	d := x - m.c
	d2 := d * d
	m.n++
	m.s1 += d
	m.s2 += d2
	m.s3 += d2 * d
	m.s4 += d2 * d2
}

func (m *moments) mean() float64 { return m.c + m.s1/m.n }

func (m *moments) variance() float64 {
	mu := m.s1 / m.n
	return m.s2/m.n - mu*mu
}

func (m *moments) m4() float64 {
	mu := m.s1 / m.n
	return m.s4/m.n - 4*mu*m.s3/m.n + 6*mu*mu*m.s2/m.n - 3*mu*mu*mu*mu
}

// check compares the sample mean and variance with the closed forms.
func (m *moments) check(t *testing.T, name string, wantMean, wantVar float64) {
	t.Helper()
	if tol := 6 * math.Sqrt(wantVar/m.n); math.Abs(m.mean()-wantMean) > tol {
		t.Errorf("%s: mean %.6g, want %.6g ± %.2g", name, m.mean(), wantMean, tol)
	}
	v := m.variance()
	if tol := 6 * math.Sqrt(math.Max(m.m4()-v*v, 0)/m.n); math.Abs(v-wantVar) > tol {
		t.Errorf("%s: variance %.6g, want %.6g ± %.2g", name, v, wantVar, tol)
	}
}

func draws() int {
	if !longtest.Enabled() {
		return 100_000
	}
	return 1_000_000
}

func TestLaplaceMoments(t *testing.T) {
	for _, secure := range []bool{false, true} {
		m := must(NewLaplace(0.7, 1.3))
		m.Secure = secure
		r := rng.NewSeeded(11)
		var mo moments
		for range draws() {
			mo.add(m.Sample(r))
		}
		mo.check(t, "laplace", 0, m.Variance())
	}
}

func TestGaussianMoments(t *testing.T) {
	for _, secure := range []bool{false, true} {
		m := must(NewGaussian(2, 1e-5, 1))
		m.Secure = secure
		r := rng.NewSeeded(12)
		var mo moments
		x := make([]float64, 1001) // odd length exercises the unpaired tail
		for range draws() / len(x) {
			clear(x)
			m.Perturb(r, x)
			for _, v := range x {
				mo.add(v)
			}
		}
		mo.check(t, "gaussian", 0, m.Sigma*m.Sigma)
	}
}

// Secure outputs lie on the power-of-two grid whatever the input's low bits,
// so the set of possible outputs no longer depends on the input (Mironov).
func TestSecureOutputsOnGrid(t *testing.T) {
	r := rng.NewSeeded(13)
	lap := must(NewSecureLaplace(1, 1))
	gau := must(NewSecureGaussian(1, 1e-6, 1))
	clap := must(NewClipLaplace(1, 2, 1))
	clap.Secure = true
	for _, x := range []float64{0, 1.0 / 3, 0.1 + 0x1p-40, -0.7} {
		for range 1000 {
			for _, c := range []struct {
				name string
				y, g float64
			}{
				{"laplace", lap.Randomize(r, x), gridFor(lap.Scale)},
				{"gaussian", gau.Randomize(r, x), gridFor(gau.Sigma)},
				{"clip-laplace", clap.Sample(r, x), clapGrid(clap.Lambda, clap.Bound)},
			} {
				if q := c.y / c.g; q != math.Trunc(q) && math.Abs(c.y) != 1 {
					t.Fatalf("%s output %v for input %v is not a multiple of the grid %v", c.name, c.y, x, c.g)
				}
			}
		}
	}
	if g := gridFor(3); g <= 3*0x1p-12 || g > 3*0x1p-11 {
		t.Errorf("grid for scale 3 is %v, want in (3·2^-12, 3·2^-11]", g)
	}
}

// The full-precision uniform reaches deep binades with the right
// probability: P(U < 2^-20) = 2^-20 and the Laplace tail beyond 30λ is e^-30.
func TestUniformFullTail(t *testing.T) {
	r := rng.NewSeeded(14)
	n := 1 << 24
	if !longtest.Enabled() {
		n = 1 << 20
	}
	small := 0
	for range n {
		if uniformFull(r, r.Uint64(), 64) < 0x1p-10 {
			small++
		}
	}
	want := float64(n) * 0x1p-10
	if math.Abs(float64(small)-want) > 6*math.Sqrt(want) {
		t.Errorf("P(U < 2^-10): %d of %d, want %v", small, n, want)
	}
	// A value that rand.Float64 cannot produce below 2^-53 is reachable.
	w := uint64(1) << 2 // 61 leading zeros in 64 bits
	if u := uniformFull(rng.NewSeeded(1), w, 64); u >= 0x1p-61 || u < 0x1p-62 {
		t.Errorf("uniformFull with 61 leading zeros = %v, want in [2^-62, 2^-61)", u)
	}
}

func TestAnalyticGaussianSigma(t *testing.T) {
	// Round trip: σ gives at most δ, and 1e-9 less noise gives more.
	for _, eps := range []float64{0.01, 0.5, 1, 4, 20, 100} {
		for _, delta := range []float64{1e-10, 1e-5, 0.1} {
			s := must(AnalyticGaussianSigma(eps, delta, 2))
			if d := GaussianDelta(eps, s, 2); d > delta*(1+1e-9) {
				t.Errorf("ε=%v δ=%v: σ=%v gives δ=%v", eps, delta, s, d)
			}
			if d := GaussianDelta(eps, s*(1-1e-9), 2); d <= delta {
				t.Errorf("ε=%v δ=%v: σ=%v is not minimal (δ(σ(1-1e-9)) = %v)", eps, delta, s, d)
			}
			if eps < 1 && s > ClassicGaussianSigma(eps, delta, 2) {
				t.Errorf("ε=%v δ=%v: analytic σ %v exceeds the classic one", eps, delta, s)
			}
		}
	}
	// Values from an independent implementation of Balle and Wang's
	// Algorithm 1 (sensitivity, ε, δ) -> σ.
	for _, c := range []struct{ sens, eps, delta, sigma float64 }{
		{math.Sqrt(30), 6, 0.5, 1.4659731497780966},
		{math.Sqrt(30), 6, 1e-5, 4.182602139814776},
		{10, 0.1, 1e-5, 307.49566132862844},
	} {
		if s := must(AnalyticGaussianSigma(c.eps, c.delta, c.sens)); math.Abs(s/c.sigma-1) > 1e-8 {
			t.Errorf("σ(%v, %v, %v) = %.12g, want %.12g", c.sens, c.eps, c.delta, s, c.sigma)
		}
	}
	// The classic formula outside ε < 1 is not private: at ε = 10,
	// δ = 1e-5 its σ has a true δ about twice the target.
	if d := GaussianDelta(10, ClassicGaussianSigma(10, 1e-5, 1), 1); d <= 1e-5 {
		t.Errorf("classic σ at ε=10 has δ=%v; expected a violation", d)
	}
}

// APES Eq. (1) literally, for comparison where it is accurate.
func eq1Literal(x, lam, c float64) float64 {
	e1 := math.Exp((-c - x) / lam)
	e2 := math.Exp((-c + x) / lam)
	return ((c+lam)*(e1-e2) + 2*x) / (2 - e1 - e2)
}

func TestClipLaplaceMeanMatchesEq1(t *testing.T) {
	const c = 1.0
	// Three routes to the mean: literal Eq. (1), the stable form, and direct
	// integration (clapMoments). Where Eq. (1) is accurate (λ within 1e3 of
	// C) all agree to 1e-9·C.
	for _, lam := range []float64{0.01, 0.2, 1, 3, 50, 1000} {
		for _, x := range []float64{-1, -0.7, -0.1, 0, 0.3, 0.99, 1} {
			stable := clapMean(x, lam, c)
			lit := eq1Literal(x, lam, c)
			direct, _ := clapMoments(x, lam, c)
			if math.Abs(stable-lit) > 1e-9 || math.Abs(stable-direct) > 1e-9 {
				t.Errorf("λ=%v x=%v: stable %.15g, Eq.(1) %.15g, direct %.15g", lam, x, stable, lit, direct)
			}
		}
	}
	// For λ >> C (S-APES) the literal form loses all digits, the stable form
	// follows the asymptote x(3C² - x²)/(6Cλ).
	for _, lam := range []float64{1e6, 1e9, 1e12} {
		x := 0.6
		want := x * (3*c*c - x*x) / (6 * c * lam)
		if got := clapMean(x, lam, c); math.Abs(got/want-1) > 1e-5 {
			t.Errorf("λ=%g: mean %g, asymptote %g", lam, got, want)
		}
	}
	// Empirical mean and variance of the sampler against Eq. (1) and the
	// closed-form variance.
	for _, tc := range []struct{ eps, x float64 }{{0.5, 0.8}, {2, -1}, {8, 0.2}, {1e-4, 0.5}} {
		m := must(NewClipLaplace(tc.eps, 2*c, c))
		r := rng.NewSeeded(15)
		var mo moments
		for range draws() {
			mo.add(m.Sample(r, tc.x))
		}
		mo.check(t, "clip-laplace", m.Mean(tc.x), m.Variance(tc.x))
	}
}

// The closed-form variance against numerical integration of the density.
func TestClipLaplaceVarianceQuadrature(t *testing.T) {
	const c = 1.0
	for _, lam := range []float64{0.1, 1, 20} {
		for _, x := range []float64{-1, 0, 0.4} {
			// Simpson's rule on [-c, x] and [x, c] (the density is smooth on each).
			f := func(z float64) float64 { return math.Exp(-math.Abs(z-x) / lam) }
			var z0, z1, z2 float64
			for _, seg := range [][2]float64{{-c, x}, {x, c}} {
				const n = 20000
				h := (seg[1] - seg[0]) / n
				for i := 0; i <= n; i++ {
					z := seg[0] + float64(i)*h
					w := 2.0
					if i == 0 || i == n {
						w = 1
					} else if i%2 == 1 {
						w = 4
					}
					w *= h / 3
					z0 += w * f(z)
					z1 += w * z * f(z)
					z2 += w * z * z * f(z)
				}
			}
			mean, v := z1/z0, z2/z0-(z1/z0)*(z1/z0)
			m := ClipLaplace{Lambda: lam, Bound: c}
			if math.Abs(m.Mean(x)-mean) > 1e-9 || math.Abs(m.Variance(x)-v) > 1e-9 {
				t.Errorf("λ=%v x=%v: mean %v var %v, quadrature %v %v", lam, x, m.Mean(x), m.Variance(x), mean, v)
			}
		}
	}
}

func TestClipLaplaceSlope(t *testing.T) {
	for _, lam := range []float64{0.05, 0.4, 2, 1e3, 1e7} {
		for _, x := range []float64{-0.999, -0.5, 0, 0.3, 0.999} {
			// Central difference, accurate to about 1e-6 relative here.
			h := 1e-5
			fd := (clapMean(x+h, lam, 1) - clapMean(x-h, lam, 1)) / (2 * h)
			_, got := clapMeanSlope(x, lam, 1)
			if !(got > 0) || math.Abs(got/fd-1) > 1e-5 {
				t.Errorf("λ=%v x=%v: slope %v, finite difference %v", lam, x, got, fd)
			}
		}
		if _, s := clapMeanSlope(1, lam, 1); math.Abs(s) > 1e-12 {
			t.Errorf("λ=%v: slope at x = A is %v, want 0", lam, s)
		}
	}
}

// heterogeneousEpsilons returns n distinct epsilons spread over [0.5, 8].
func heterogeneousEpsilons(n int, seed uint64) []float64 {
	r := rng.NewSeeded(seed)
	e := make([]float64, n)
	for i := range e {
		e[i] = 0.5 + 7.5*r.Float64()
	}
	return e
}

func TestCalibratorInvertsExactly(t *testing.T) {
	const c = 1.0
	for _, eps := range [][]float64{
		{1},
		{0.5, 0.5, 1, 2, 4, 4, 4},
		heterogeneousEpsilons(10_000, 1),
		{1e-4, 1e-3, 0.01}, // S-APES-like: huge λ, nearly flat F
		{20, 30},           // sharp F
	} {
		cal := must(NewClipLaplaceCalibrator(eps, 2*c, c))
		// F'(±A) = 0 (see the calibrator doc), so near the bound x is
		// determined only to about sqrt(error in F); check the residual
		// in F everywhere and x itself where the slope is not tiny.
		for i := 0; i <= 400; i++ {
			x := -c + 2*c*float64(i)/400
			f := cal.Expected(x)
			got := cal.Invert(f)
			if res := math.Abs(cal.Expected(got) - f); res > 2*calibTol*c {
				t.Fatalf("%d epsilons: F(Invert(F(%v))) - F(%v) = %v", len(eps), x, x, res)
			}
			if s := cal.Slope(x); s > 1e-3 && math.Abs(got-x) > 1e-9*c/s {
				t.Fatalf("%d epsilons: Invert(F(%v)) = %v (slope %v)", len(eps), x, got, s)
			}
		}
		if cal.Invert(cal.Expected(-c)-1) != -c || cal.Invert(cal.Expected(c)+1) != c {
			t.Error("averages outside the attainable range are not clamped")
		}
		if got := must(CalibrateClipLaplace(cal.Expected(0.25), eps, 2*c, c)); math.Abs(got-0.25) > 1e-6 {
			t.Errorf("CalibrateClipLaplace(F(0.25)) = %v", got)
		}
		if !math.IsNaN(cal.Invert(math.NaN())) {
			t.Error("Invert(NaN) is not NaN")
		}
	}
}

// APES analyzer end to end: n = 10,000 clients with heterogeneous epsilons
// and a common input x per coordinate; the calibrated average recovers x
// within 6 standard errors, sd = sqrt(Σ Var_i(x))/n / F'(x).
func TestCalibratorRecoversMean(t *testing.T) {
	const c, n = 1.0, 10_000
	eps := heterogeneousEpsilons(n, 2)
	cal := must(NewClipLaplaceCalibrator(eps, 2*c, c))
	mechs := make([]ClipLaplace, n)
	for i, e := range eps {
		mechs[i] = must(NewClipLaplace(e, 2*c, c))
	}
	r := rng.NewSeeded(3)
	for _, x := range []float64{-0.9, -0.3, 0, 0.05, 0.5, 0.97} {
		sum, v := 0.0, 0.0
		for _, m := range mechs {
			sum += m.Sample(r, x)
			v += m.Variance(x)
		}
		sd := math.Sqrt(v) / n / cal.Slope(x)
		if got := cal.Invert(sum / n); math.Abs(got-x) > 6*sd {
			t.Errorf("x=%v: calibrated %v, error %.3g > 6·sd = %.3g", x, got, got-x, 6*sd)
		}
	}
}

// With heterogeneous inputs the analyzer's F(ḡ) ≈ E[avg] is only an
// approximation (APES observes it empirically, Fig. 4). Measure the
// resulting bias in expectation for inputs spread over [-C, C].
func TestCalibratorHeterogeneousInputs(t *testing.T) {
	const c, n = 1.0, 2000
	eps := heterogeneousEpsilons(n, 4)
	cal := must(NewClipLaplaceCalibrator(eps, 2*c, c))
	r := rng.NewSeeded(5)
	for _, spread := range []float64{0.1, 0.5} {
		for _, centre := range []float64{0, 0.4} {
			sumX, sumMean := 0.0, 0.0
			for _, e := range eps {
				x := math.Max(-c, math.Min(c, centre+spread*(2*r.Float64()-1)))
				sumX += x
				sumMean += clapMean(x, 2*c/e, c)
			}
			bias := cal.Invert(sumMean/n) - sumX/n
			t.Logf("inputs %v ± %v: bias of the calibrated mean in expectation %.4g", centre, spread, bias)
			if math.Abs(bias) > 0.05*c {
				t.Errorf("inputs %v ± %v: bias %v is larger than 5%% of C", centre, spread, bias)
			}
		}
	}
}

func TestBinaryRRCountEstimator(t *testing.T) {
	const n, reps, ones = 500, 4000, 150
	for _, eps := range []float64{0.3, 2} {
		m := must(NewBinaryRR(eps))
		r := rng.NewSeeded(21)
		var mo moments
		for range reps {
			c := 0
			for i := range n {
				bit := 0
				if i < ones {
					bit = 1
				}
				c += m.Randomize(r, bit)
			}
			mo.add(m.EstimateCount(c, n))
		}
		// Survey form (c(e^ε+1) - n)/(e^ε-1) is the same estimator.
		if a, b := m.EstimateCount(123, n), (123*(math.Exp(eps)+1)-n)/math.Expm1(eps); math.Abs(a-b) > 1e-9 {
			t.Errorf("estimator %v differs from the survey's %v", a, b)
		}
		want := n * math.Exp(eps) / (math.Expm1(eps) * math.Expm1(eps))
		if math.Abs(m.CountVariance(n)-want) > 1e-9*want {
			t.Errorf("CountVariance %v, closed form %v", m.CountVariance(n), want)
		}
		mo.check(t, "binary RR count", ones, m.CountVariance(n))
	}
}

func TestGRRCountEstimatorWithPadding(t *testing.T) {
	const k, n, total, reps = 5, 400, 600, 3000
	m := must(NewGRR(1.5, k))
	truth := []int{200, 100, 60, 40, 0}
	r := rng.NewSeeded(22)
	mo := make([]moments, k)
	counts := make([]int, k)
	est := make([]float64, k)
	for range reps {
		clear(counts)
		for v, c := range truth {
			for range c {
				counts[m.Randomize(r, v)]++
			}
		}
		for range total - n {
			counts[m.Blanket(r)]++
		}
		if err := m.EstimateCounts(counts, n, total, est); err != nil {
			t.Fatal(err)
		}
		for v := range est {
			mo[v].add(est[v])
		}
	}
	for v := range truth {
		mo[v].check(t, "GRR count", float64(truth[v]), m.CountVariance(truth[v], n, total))
	}
}

// Survey Eq. (15) as printed ("v = 1 - x" in the second case) does not
// define a distribution for k > 2; the corrected "v ≠ x" does.
func TestGRREq15Typo(t *testing.T) {
	for _, k := range []int{2, 3, 10} {
		m := must(NewGRR(1, k))
		if s := m.P() + float64(k-1)*m.Q(); math.Abs(s-1) > 1e-12 {
			t.Errorf("k=%d: corrected Eq. (15) sums to %v", k, s)
		}
		literal := m.P() + m.Q() // one value x, one value 1-x
		if k > 2 && math.Abs(literal-1) < 1e-3 {
			t.Errorf("k=%d: literal Eq. (15) sums to 1", k)
		}
	}
}

// E-APES Algorithm 3: z is unbiased for the fraction of ones when the
// budgets are independent of the data, and its expectation is
// Σ x_i(1-2q_i)/(n-2B) in general (biased when ones sit with high budgets).
func TestPersonalizedFrequency(t *testing.T) {
	const n, reps = 1000, 3000
	eps := heterogeneousEpsilons(n, 7)
	mechs := make([]BinaryRR, n)
	for i, e := range eps {
		mechs[i] = must(NewBinaryRR(e))
	}
	wantVar := must(PersonalizedFrequencyVariance(eps))
	for _, corr := range []bool{false, true} {
		x := make([]int, n)
		for i := range x {
			if corr {
				if eps[i] > 6 { // ones only among the high-budget clients
					x[i] = 1
				}
			} else if i%10 < 3 {
				x[i] = 1
			}
		}
		b, exp, frac := 0.0, 0.0, 0.0
		for i, e := range eps {
			q := 1 / (1 + math.Exp(e))
			b += q
			exp += float64(x[i]) * (1 - 2*q)
			frac += float64(x[i])
		}
		exp /= n - 2*b
		frac /= n
		r := rng.NewSeeded(8)
		var mo moments
		for range reps {
			ones := 0
			for i, m := range mechs {
				ones += m.Randomize(r, x[i])
			}
			mo.add(must(PersonalizedFrequency(ones, eps)))
		}
		mo.check(t, "E-APES z", exp, wantVar)
		if corr {
			if math.Abs(exp-frac) < 0.01 {
				t.Errorf("expected a bias when data and budgets correlate: E[z]=%v, c=%v", exp, frac)
			}
		} else if math.Abs(exp-frac) > 6*math.Sqrt(wantVar) {
			t.Errorf("independent budgets: E[z]=%v far from c=%v", exp, frac)
		}
	}
}

func TestRoundingDebias(t *testing.T) {
	const b, n, total, reps = 8, 300, 500, 3000
	m := must(NewRandomizedRounding(1, b))
	r := rng.NewSeeded(31)
	xs := make([]float64, n)
	mean, v := 0.0, m.BlanketVariance()*(total-n)
	for i := range xs {
		xs[i] = float64(i) / (n - 1) * 0.77
		mean += xs[i] / n
		v += m.OutputVariance(xs[i])
	}
	v /= math.Pow(b*(1-m.Gamma())*n, 2)
	var mo moments
	for range reps {
		sum := 0
		for _, x := range xs {
			sum += m.Randomize(r, x)
		}
		for range total - n {
			sum += m.Blanket(r)
		}
		mo.add(m.Debias(float64(sum), n, total))
	}
	mo.check(t, "R_{γ,b} debias", mean, v)
	// Without dummies Debias is FLAME Eq. (1) divided by n.
	ẑ := 1234.0 / b
	if got, want := m.Debias(1234, n, n), (ẑ-n*m.Gamma()/2)/(1-m.Gamma())/n; math.Abs(got-want) > 1e-12 {
		t.Errorf("Debias without padding %v, Eq. (1)/n %v", got, want)
	}
}

func TestRoundingOutputVariance(t *testing.T) {
	m := must(NewRandomizedRounding(0.8, 5))
	r := rng.NewSeeded(32)
	for _, x := range []float64{0, 0.33, 1} {
		var mo moments
		for range draws() / 4 {
			mo.add(float64(m.Randomize(r, x)))
		}
		mo.check(t, "R_{γ,b} output", (1-m.Gamma())*5*x+m.Gamma()*2.5, m.OutputVariance(x))
	}
}

func TestMeanEstimators(t *testing.T) {
	r := rng.NewSeeded(41)
	for _, eps := range []float64{0.5, 4} {
		du := must(NewDuchi(eps))
		pm := must(NewPiecewise(eps))
		for _, x := range []float64{-1, -0.2, 0.6, 1} {
			var md, mp moments
			for range draws() / 4 {
				md.add(du.Randomize(r, x))
				mp.add(pm.Randomize(r, x))
			}
			md.check(t, "duchi", x, du.Variance(x))
			mp.check(t, "piecewise", x, pm.Variance(x))
		}
	}
	const d = 5
	h := must(NewHarmony(1, d))
	x := []float64{-1, -0.5, 0, 0.5, 1}
	mo := make([]moments, d)
	sum := make([]float64, d)
	for range draws() / 4 {
		clear(sum)
		j, v, err := h.Randomize(r, x)
		if err != nil {
			t.Fatal(err)
		}
		h.Accumulate(sum, j, v)
		for i := range sum {
			mo[i].add(sum[i])
		}
	}
	for i := range x {
		mo[i].check(t, "harmony", x[i], h.Variance(x[i]))
	}
}

// Lemma 2 of the group-privacy paper: E[r] = n/ε and per-component variance
// (n+1)/ε². The lemma is correct: E[r²] = Var + mean² = n/ε² + n²/ε².
func TestEuclideanLaplaceMoments(t *testing.T) {
	const eps = 2.0
	m := must(NewEuclideanLaplace(eps, 1))
	r := rng.NewSeeded(51)
	for _, n := range []int{1, 3, 50} {
		var rad, comp moments
		x := make([]float64, n)
		for range draws() / n {
			clear(x)
			m.Perturb(r, x)
			norm := 0.0
			for _, v := range x {
				norm += v * v
				comp.add(v)
			}
			rad.add(math.Sqrt(norm))
		}
		fn := float64(n)
		rad.check(t, "radius", fn/eps, fn/(eps*eps))
		// Components of one vector are uncorrelated (isotropy) but not
		// independent; the variance check uses only the per-vector count.
		if got, want := comp.variance(), (fn+1)/(eps*eps); math.Abs(got/want-1) > 6*math.Sqrt(8/comp.n*fn) {
			t.Errorf("n=%d: component variance %v, Lemma 2 says %v", n, got, want)
		}
		if math.Abs(comp.mean()) > 6*math.Sqrt((fn+1)/(eps*eps)/comp.n*fn) {
			t.Errorf("n=%d: component mean %v", n, comp.mean())
		}
	}
	// Large n: the radius is concentrated at n/ε.
	x := make([]float64, 101_770)
	m.Perturb(r, x)
	norm := 0.0
	for _, v := range x {
		norm += v * v
	}
	if got, want := math.Sqrt(norm), 101_770/eps; math.Abs(got/want-1) > 6/math.Sqrt(101_770) {
		t.Errorf("n=101770: radius %v, want about %v", got, want)
	}
}

func TestForEachClientDeterministic(t *testing.T) {
	const n, d = 37, 100
	run := func(workers int) [][]float64 {
		out := make([][]float64, n)
		m := must(NewLaplace(1, 1))
		ForEachClient(n, workers, func(i int) *rand.Rand { return rng.Stream(9, rng.LabelNoise, 1, uint64(i)) },
			func(i int, r *rand.Rand) {
				out[i] = make([]float64, d)
				m.Perturb(r, out[i])
			})
		return out
	}
	a, b := run(1), run(4)
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("client %d coordinate %d differs between 1 and 4 workers", i, j)
			}
		}
	}
}

func TestPerturbDoesNotAllocate(t *testing.T) {
	r := rng.NewSeeded(61)
	x := make([]float64, 1000)
	clap := must(NewClipLaplace(1, 2, 1))
	el := must(NewEuclideanLaplace(1, 1))
	el.Perturb(r, x) // warm the pool
	for name, f := range map[string]func(){
		"laplace":         func() { must(NewLaplace(1, 1)).Perturb(r, x) },
		"secure-laplace":  func() { must(NewSecureLaplace(1, 1)).Perturb(r, x) },
		"gaussian":        func() { must(NewGaussian(1, 1e-5, 1)).Perturb(r, x) },
		"secure-gaussian": func() { must(NewSecureGaussian(1, 1e-5, 1)).Perturb(r, x) },
		"clip-laplace":    func() { clear(x); _ = clap.Perturb(r, x) },
		"euclidean":       func() { el.Perturb(r, x) },
	} {
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s: %v allocations per Perturb", name, a)
		}
	}
}
