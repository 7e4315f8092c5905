package mechanism

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
)

// Bad parameters are rejected at construction with an error that wraps
// checks.ErrInvalid and names the field; out-of-domain inputs get an error
// (vector APIs) or a panic (scalar hot-path APIs) that says which clipping
// the caller forgot. No constructor that succeeds can produce NaN or Inf.
func TestConstructorErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name, field string
		err         error
	}{
		{"laplace eps=0", "epsilon", err2(NewLaplace(0, 1))},
		{"laplace eps<0", "epsilon", err2(NewLaplace(-1, 1))},
		{"laplace eps=NaN", "epsilon", err2(NewLaplace(nan, 1))},
		{"laplace eps=Inf", "epsilon", err2(NewLaplace(inf, 1))},
		{"laplace sens=0", "sensitivity", err2(NewLaplace(1, 0))},
		{"laplace sens=NaN", "sensitivity", err2(NewLaplace(1, nan))},
		{"laplace scale underflow", "scale", err2(NewLaplace(1e300, 1e-300))},
		{"secure laplace eps=0", "epsilon", err2(NewSecureLaplace(0, 1))},
		{"gaussian delta=0", "delta", err2(NewGaussian(1, 0, 1))},
		{"gaussian delta=1", "delta", err2(NewGaussian(1, 1, 1))},
		{"gaussian delta=NaN", "delta", err2(NewGaussian(1, nan, 1))},
		{"gaussian eps=Inf", "epsilon", err2(NewGaussian(inf, 1e-5, 1))},
		{"gaussian sens<0", "l2Sensitivity", err2(NewGaussian(1, 1e-5, -1))},
		{"clip-laplace bound<sens/2", "bound", err2(NewClipLaplace(1, 2, 0.5))},
		{"clip-laplace bound=NaN", "bound", err2(NewClipLaplace(1, 2, nan))},
		{"clip-laplace eps=0", "epsilon", err2(NewClipLaplace(0, 2, 1))},
		{"calibrator empty", "epsilons", err2(NewClipLaplaceCalibrator(nil, 2, 1))},
		{"calibrator eps<=0", "epsilons[1]", err2(NewClipLaplaceCalibrator([]float64{1, 0}, 2, 1))},
		{"rounding b=1", "b", err2(NewRandomizedRounding(1, 1))},
		{"rounding eps=NaN", "epsilon", err2(NewRandomizedRounding(nan, 4))},
		{"rounding eps tiny", "epsilon", err2(NewRandomizedRounding(1e-20, 4))},
		{"rounding gamma=0", "gamma", err2(NewRandomizedRoundingGamma(0, 4))},
		{"rounding gamma=1", "gamma", err2(NewRandomizedRoundingGamma(1, 4))},
		{"grr k=1", "k", err2(NewGRR(1, 1))},
		{"grr eps=0", "epsilon", err2(NewGRR(0, 3))},
		{"grr eps tiny", "epsilon", err2(NewGRR(1e-320, 3))},
		{"rr eps=Inf", "epsilon", err2(NewBinaryRR(inf))},
		{"rr eps tiny", "epsilon", err2(NewBinaryRR(1e-320))},
		{"duchi eps tiny", "epsilon", err2(NewDuchi(1e-320))},
		{"piecewise eps tiny", "epsilon", err2(NewPiecewise(1e-320))},
		{"harmony d=0", "d", err2(NewHarmony(1, 0))},
		{"euclidean sens=0", "l2Sensitivity", err2(NewEuclideanLaplace(1, 0))},
		{"euclidean nu=0", "nu", err2(NewEuclideanLaplaceMultiplier(0, 3, 1))},
		{"personalized empty", "epsilons", err2(PersonalizedFrequency(0, nil))},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !errors.Is(c.err, checks.ErrInvalid) {
			t.Errorf("%s: error %q does not wrap checks.ErrInvalid", c.name, c.err)
		}
		if !strings.Contains(c.err.Error(), c.field) && !strings.Contains(c.err.Error(), "epsilon") {
			t.Errorf("%s: error %q does not name %s", c.name, c.err, c.field)
		}
	}
}

func err2[T any](_ T, err error) error { return err }

func TestDomainErrorsNameTheClipping(t *testing.T) {
	r := rng.NewSeeded(1)
	clap := must(NewClipLaplace(1, 2, 1))
	x := []float64{0.5, 1.5, -0.2}
	before := append([]float64(nil), x...)
	err := clap.Perturb(r, x)
	if err == nil || !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), "clip") || !strings.Contains(err.Error(), "[1]") {
		t.Errorf("clip-laplace out of range: %v", err)
	}
	for i := range x {
		if x[i] != before[i] {
			t.Fatal("Perturb modified x before rejecting it")
		}
	}
	if err := clap.Perturb(r, []float64{math.NaN()}); err == nil {
		t.Error("clip-laplace accepted NaN")
	}
	if err := must(NewDuchi(1)).Perturb(r, []float64{2}); err == nil || !strings.Contains(err.Error(), "clip") {
		t.Errorf("duchi out of range: %v", err)
	}
	if err := must(NewPiecewise(1)).Perturb(r, []float64{-1.01}); err == nil {
		t.Error("piecewise accepted -1.01")
	}
	if _, _, err := must(NewHarmony(1, 3)).Randomize(r, []float64{0, 0}); err == nil {
		t.Error("harmony accepted a vector of the wrong length")
	}
	out := make([]int, 1)
	if err := must(NewRandomizedRounding(1, 4)).RandomizeAll(r, []float64{1.2}, out); err == nil || !strings.Contains(err.Error(), "(x+C)/(2C)") {
		t.Errorf("rounding out of range: %v", err)
	}
	if err := must(NewGRR(1, 3)).EstimateCounts([]int{1, 2}, 3, 3, make([]float64, 3)); err == nil {
		t.Error("GRR accepted counts of the wrong length")
	}
	for name, f := range map[string]func(){
		"clip-laplace": func() { clap.Sample(r, 1.0000001) },
		"rounding":     func() { must(NewRandomizedRounding(1, 4)).Randomize(r, -0.1) },
		"rounding NaN": func() { must(NewRandomizedRounding(1, 4)).Randomize(r, math.NaN()) },
		"grr":          func() { must(NewGRR(1, 3)).Randomize(r, 3) },
		"binary rr":    func() { must(NewBinaryRR(1)).Randomize(r, 2) },
		"duchi":        func() { must(NewDuchi(1)).Randomize(r, math.Inf(1)) },
		"piecewise":    func() { must(NewPiecewise(1)).Randomize(r, 1.5) },
		"debias":       func() { must(NewRandomizedRounding(1, 4)).Debias(0, 5, 4) },
	} {
		func() {
			defer func() {
				p := recover()
				if p == nil {
					t.Errorf("%s: no panic on an out-of-domain input", name)
					return
				}
				if e, ok := p.(error); !ok || !errors.Is(e, checks.ErrInvalid) {
					t.Errorf("%s: panic value %v does not wrap checks.ErrInvalid", name, p)
				}
			}()
			f()
		}()
	}
}

// Extreme but valid parameters give finite outputs.
func TestExtremeParametersStayFinite(t *testing.T) {
	r := rng.NewSeeded(2)
	for _, eps := range []float64{1e-12, 1e-6, 50, 500} {
		vals := []float64{
			must(NewLaplace(eps, 1)).Randomize(r, 0.3),
			must(NewSecureLaplace(eps, 1)).Randomize(r, 0.3),
			must(NewClipLaplace(eps, 2, 1)).Sample(r, 1),
			must(NewClipLaplace(eps, 2, 1)).Mean(0.999),
			must(NewDuchi(eps)).Randomize(r, 0.1),
			must(NewPiecewise(math.Min(eps, 300))).Randomize(r, 0.1),
			must(NewBinaryRR(eps)).EstimateCount(3, 10),
		}
		if eps < 100 {
			g := must(NewGaussian(eps, 1e-6, 1))
			vals = append(vals, g.Randomize(r, 0), must(NewSecureGaussian(eps, 1e-6, 1)).Randomize(r, 0))
		}
		for i, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("ε=%v: value %d is %v", eps, i, v)
			}
		}
	}
}
