package mechanism

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/internal/rng"
)

// Kolmogorov–Smirnov tests of the samplers against their exact CDFs.
//
// The threshold is derived from the Dvoretzky–Kiefer–Wolfowitz inequality
// with Massart's constant, P(sup|F_n - F| > c/√n) <= 2·exp(-2c²), at an
// overall false-reject rate of ksAlpha split evenly (union bound) over the
// ksTests KS tests of this file: c = sqrt(ln(2·ksTests/ksAlpha)/2) ≈ 2.9.
// Snapped (secure) outputs move each draw by at most half a grid step g,
// which moves the CDF by at most g/2 times the largest density; that is
// added to the threshold.
const (
	ksAlpha = 1e-6
	ksTests = 128 // an upper bound on the number of KS tests below
)

func ksThreshold(n int) float64 {
	return math.Sqrt(math.Log(2*ksTests/ksAlpha)/2) / math.Sqrt(float64(n))
}

// ksStat returns sup_z |F_n(z) - F(z)| for the sample s (sorted in place).
func ksStat(s []float64, cdf func(float64) float64) float64 {
	slices.Sort(s)
	n := float64(len(s))
	d := 0.0
	for i, z := range s {
		f := cdf(z)
		d = math.Max(d, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	return d
}

func ksN() int {
	if !longtest.Enabled() {
		return 100_000
	}
	return 500_000
}

// clapCDF is the exact CDF of CLap(x, λ, A) (APES Definition 4) at z in
// [-A, A], written with expm1 so that it keeps its relative precision for
// λ >> A.
func clapCDF(x, lam, A float64) func(float64) float64 {
	left := -math.Expm1(-(x + A) / lam) // mass left of x, in units of λ
	right := -math.Expm1(-(A - x) / lam)
	total := left + right
	return func(z float64) float64 {
		switch {
		case z <= -A:
			return 0
		case z >= A:
			return 1
		case z <= x:
			// ∫_{-A}^{z} e^{-(x-y)/λ} dy / λ = e^{-(x-z)/λ}·(1 - e^{-(z+A)/λ})
			return math.Exp(-(x-z)/lam) * -math.Expm1(-(z+A)/lam) / total
		default:
			return (left - math.Expm1(-(z-x)/lam)) / total
		}
	}
}

// clapMaxDensity bounds the density of CLap(x, λ, A): 1/(λ·(mass left +
// mass right)) in the units of clapCDF.
func clapMaxDensity(x, lam, A float64) float64 {
	return 1 / (lam * (-math.Expm1(-(x+A)/lam) - math.Expm1(-(A-x)/lam)))
}

// TestClipLaplaceKS compares the empirical CDF of both Clip-Laplace samplers
// (uniform proposal for r = 2A/λ <= clapUniformMax, Laplace proposal above)
// with the exact CDF, through Sample and through Perturb (whose uniform
// sampler carries its exponential across coordinates), plain and secure, at
// x = -A, 0, A. r = 2A/λ = ε here: 2e-4 is λ >> A (the CLap(·, dΔf/ε, C)
// form), 0.5 and 1.5 use the uniform proposal, 2 and 6 the Laplace one.
func TestClipLaplaceKS(t *testing.T) {
	n := ksN()
	const c = 1.0
	for _, eps := range []float64{2e-4, 0.5, 1.5, 2, 6} {
		m := must(NewClipLaplace(eps, 2*c, c))
		wantUniform := eps <= clapUniformMax
		if clapUniform(m.Lambda, m.Bound) != wantUniform {
			t.Fatalf("eps=%v: clapUniform = %v", eps, !wantUniform)
		}
		for _, secure := range []bool{false, true} {
			m.Secure = secure
			for _, x := range []float64{-c, 0, c} {
				cdf := clapCDF(x, m.Lambda, m.Bound)
				tol := ksThreshold(n)
				if secure {
					tol += clapGrid(m.Lambda, m.Bound) / 2 * clapMaxDensity(x, m.Lambda, m.Bound)
				}
				for _, path := range []string{"Sample", "Perturb"} {
					name := fmt.Sprintf("eps=%v/secure=%v/x=%v/%s", eps, secure, x, path)
					r := rng.NewSeeded(uint64(1000*eps) + 7)
					s := make([]float64, n)
					if path == "Sample" {
						for i := range s {
							s[i] = m.Sample(r, x)
						}
					} else {
						for i := range s {
							s[i] = x
						}
						if err := m.Perturb(r, s); err != nil {
							t.Fatal(err)
						}
					}
					for _, z := range s {
						if !(z >= -c && z <= c) {
							t.Fatalf("%s: output %v outside [-A, A]", name, z)
						}
					}
					if d := ksStat(s, cdf); d > tol {
						t.Errorf("%s: KS distance %.5f > threshold %.5f", name, d, tol)
					}
				}
			}
		}
	}
}

// TestClipLaplacePerturbMixed: Perturb on a vector that alternates the
// inputs -A, 0, A (so the carried exponential crosses inputs) gives each
// input its exact distribution, with no correlation between neighbours.
func TestClipLaplacePerturbMixed(t *testing.T) {
	n := ksN()
	const c = 1.0
	xs := []float64{-c, 0, c}
	for _, eps := range []float64{0.05, 1} {
		for _, secure := range []bool{false, true} {
			m := must(NewClipLaplace(eps, 2*c, c))
			m.Secure = secure
			v := make([]float64, n*len(xs))
			for i := range v {
				v[i] = xs[i%len(xs)]
			}
			if err := m.Perturb(rng.NewSeeded(3), v); err != nil {
				t.Fatal(err)
			}
			// Lag-1 correlation over the whole vector, each entry centred
			// by its exact mean.
			var sxy, sxx float64
			for i := 1; i < len(v); i++ {
				a := v[i-1] - m.Mean(xs[(i-1)%len(xs)])
				b := v[i] - m.Mean(xs[i%len(xs)])
				sxy += a * b
				sxx += a * a
			}
			if corr := sxy / sxx; math.Abs(corr) > 6/math.Sqrt(float64(len(v))) {
				t.Errorf("eps=%v secure=%v: lag-1 correlation %v", eps, secure, corr)
			}
			for k, x := range xs {
				s := make([]float64, 0, n)
				for i := k; i < len(v); i += len(xs) {
					s = append(s, v[i])
				}
				tol := ksThreshold(n)
				if secure {
					tol += clapGrid(m.Lambda, m.Bound) / 2 * clapMaxDensity(x, m.Lambda, m.Bound)
				}
				if d := ksStat(s, clapCDF(x, m.Lambda, m.Bound)); d > tol {
					t.Errorf("eps=%v secure=%v x=%v: KS distance %.5f > %.5f", eps, secure, x, d, tol)
				}
			}
		}
	}
}

// TestClipLaplaceKSNegativeControl: the KS test has power: draws of
// CLap(x, λ, A) are rejected against the CDF of CLap(x, 1.25λ, A).
func TestClipLaplaceKSNegativeControl(t *testing.T) {
	n := ksN()
	for _, eps := range []float64{0.5, 2} {
		m := must(NewClipLaplace(eps, 2, 1))
		r := rng.NewSeeded(5)
		s := make([]float64, n)
		for i := range s {
			s[i] = m.Sample(r, 1)
		}
		if d := ksStat(s, clapCDF(1, 1.25*m.Lambda, 1)); d <= ksThreshold(n) {
			t.Errorf("eps=%v: KS distance %.5f to the wrong λ not rejected", eps, d)
		}
	}
}

// TestClipLaplaceDeterministic: equal generators give equal outputs.
func TestClipLaplaceDeterministic(t *testing.T) {
	for _, eps := range []float64{0.05, 1, 4} {
		for _, secure := range []bool{false, true} {
			m := must(NewClipLaplace(eps, 2, 1))
			m.Secure = secure
			run := func() []float64 {
				r := rng.NewSeeded(9)
				v := make([]float64, 1000)
				for i := range v {
					v[i] = float64(i%21-10) / 10
				}
				_ = m.Perturb(r, v)
				return append(v, m.Sample(r, 0.3), m.Pad(r))
			}
			if a, b := run(), run(); !slices.Equal(a, b) {
				t.Errorf("eps=%v secure=%v: outputs differ between equal generators", eps, secure)
			}
		}
	}
}

// TestExpZig: the full-precision exponential ziggurat. Its layers have
// equal areas (the top layer, closed at height 1 rather than by the
// recurrence, to a relative 1e-12), its draws follow Exp(1) (KS) including
// the tail beyond r (through the conditional tail CDF), and the sign bit
// of signedExpZig is fair and independent of E.
func TestExpZig(t *testing.T) {
	v := (zigR + 1) * math.Exp(-zigR)
	for i := 1; i < zigN; i++ {
		area := zigX[i] * (zigF[i+1] - zigF[i])
		if math.Abs(area/v-1) > 1e-12 {
			t.Errorf("layer %d area %v, want %v", i, area, v)
		}
	}
	if a := zigX[0] * zigF[1]; math.Abs(a/v-1) > 1e-15 {
		t.Errorf("base layer area %v, want %v", a, v)
	}
	n := ksN()
	r := rng.NewSeeded(11)
	s := make([]float64, n)
	var tail []float64
	pos := 0
	for i := range s {
		z := signedExpZig(r)
		if z > 0 {
			pos++
		}
		s[i] = math.Abs(z)
		if s[i] >= zigR-2 {
			tail = append(tail, s[i]-(zigR-2))
		}
	}
	if d := ksStat(s, func(z float64) float64 { return -math.Expm1(-z) }); d > ksThreshold(n) {
		t.Errorf("expZig: KS distance %.5f > %.5f", d, ksThreshold(n))
	}
	// Around and beyond r (a shifted Exp(1) by memorylessness): the tail
	// and the outermost wedges, 4000 draws (about 540 beyond r).
	for len(tail) < 4000 {
		if z, _ := expZig(r); z >= zigR-2 {
			tail = append(tail, z-(zigR-2))
		}
	}
	if d := ksStat(tail, func(z float64) float64 { return -math.Expm1(-z) }); d > ksThreshold(len(tail)) {
		t.Errorf("expZig tail (%d draws): KS distance %.5f > %.5f", len(tail), d, ksThreshold(len(tail)))
	}
	if dev := math.Abs(float64(pos)/float64(n) - 0.5); dev > 3*ksThreshold(n) {
		t.Errorf("signedExpZig: fraction positive %v", float64(pos)/float64(n))
	}
}

// TestNormZig: the full-precision normal ziggurat has equal layer areas,
// follows N(0, 1) (KS, and the conditional tail beyond r - 1 against its
// exact CDF), and has a fair sign.
func TestNormZig(t *testing.T) {
	fr := math.Exp(-0.5 * nzigR * nzigR)
	v := nzigR*fr + math.Sqrt(math.Pi/2)*math.Erfc(nzigR/math.Sqrt2)
	for i := 1; i < nzigN; i++ {
		area := nzigX[i] * (nzigF[i+1] - nzigF[i])
		if math.Abs(area/v-1) > 1e-12 {
			t.Errorf("layer %d area %v, want %v (relative %v)", i, area, v, area/v-1)
		}
	}
	n := ksN()
	r := rng.NewSeeded(13)
	s := make([]float64, n)
	var tail []float64
	const t0 = nzigR - 1
	for i := range s {
		s[i] = normZig(r)
		if math.Abs(s[i]) >= t0 {
			tail = append(tail, math.Abs(s[i]))
		}
	}
	if d := ksStat(s, normCDF); d > ksThreshold(n) {
		t.Errorf("normZig: KS distance %.5f > %.5f", d, ksThreshold(n))
	}
	// Draw on until 4000 draws beyond t0, about 130 of them beyond r
	// (Marsaglia's tail).
	for len(tail) < 4000 {
		if z := math.Abs(normZig(r)); z >= t0 {
			tail = append(tail, z)
		}
	}
	// P(|Z| <= z | |Z| >= t0) = 1 - Φ(-z)/Φ(-t0).
	st := normCDF(-t0)
	if d := ksStat(tail, func(z float64) float64 { return 1 - normCDF(-z)/st }); d > ksThreshold(len(tail)) {
		t.Errorf("normZig tail (%d draws): KS distance %.5f > %.5f", len(tail), d, ksThreshold(len(tail)))
	}
}

// TestGridInv: gridInv is the exact reciprocal of every grid gridFor makes.
func TestGridInv(t *testing.T) {
	for _, s := range []float64{0x1p-900, 1e-200, 0.3, 1, 2, 7, 1e100, 0x1p900} {
		g := gridFor(s)
		if got := gridInv(g); got != 1/g || got*g != 1 {
			t.Errorf("gridInv(%v) = %v, want %v", g, got, 1/g)
		}
	}
}
