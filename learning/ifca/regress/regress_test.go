package regress

import (
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
)

func TestReLUNetHasElevenParameters(t *testing.T) {
	m := ReLUNet{In: 3, Hidden: 2}
	if m.Dim() != 11 {
		t.Fatalf("Dim = %d, want the paper's 11", m.Dim())
	}
	if l := m.Layers(); l[0] != [2]int{0, 8} || l[1] != [2]int{8, 3} {
		t.Errorf("layers %v", l)
	}
}

// TestGradients compares AddGrad with central finite differences.
func TestGradients(t *testing.T) {
	r := rng.NewSeeded(1)
	for _, m := range []Model{Linear{In: 2}, ReLUNet{In: 3, Hidden: 2}, ReLUNet{In: 4, Hidden: 5}} {
		for range 20 {
			theta := make([]float64, m.Dim())
			for i := range theta {
				theta[i] = r.NormFloat64()
			}
			x := make([]float64, m.Inputs())
			for i := range x {
				x[i] = r.NormFloat64()
			}
			grad := make([]float64, m.Dim())
			f := m.AddGrad(grad, theta, x, 1)
			if f != m.Predict(theta, x) {
				t.Fatalf("AddGrad returned %v, Predict %v", f, m.Predict(theta, x))
			}
			const h = 1e-6
			for i := range theta {
				p := append([]float64(nil), theta...)
				p[i] += h
				up := m.Predict(p, x)
				p[i] -= 2 * h
				down := m.Predict(p, x)
				if fd := (up - down) / (2 * h); math.Abs(fd-grad[i]) > 1e-5*(1+math.Abs(fd)) {
					t.Errorf("%T parameter %d: gradient %v, finite difference %v", m, i, grad[i], fd)
				}
			}
		}
	}
}

func TestTrainReducesLoss(t *testing.T) {
	ds, err := SyntheticLinear(rng.NewSeeded(2), [][]float64{{5, 6}}, 1, 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, rmse := range []bool{false, true} {
		c, err := NewClient(Linear{In: 2}, ds.X[0], ds.Y[0], 0.1, 10)
		if err != nil {
			t.Fatal(err)
		}
		c.RMSE = rmse
		theta := []float64{0, 0}
		before := c.Loss(theta)
		if err := c.Train(rng.NewSeeded(3), theta, 60); err != nil {
			t.Fatal(err)
		}
		if after := c.Loss(theta); !(after < before/5) || math.Abs(theta[0]-5) > 0.5 || math.Abs(theta[1]-6) > 0.5 {
			t.Errorf("RMSE objective %v: loss %v -> %v, θ = %v", rmse, before, after, theta)
		}
	}
}

func TestStandInShape(t *testing.T) {
	ds, err := HospitalStandIn(rng.NewSeeded(4), 2947, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.X) != 2947 || len(ds.Y) != 2947 || len(ds.Group) != 2947 {
		t.Fatalf("sizes %d %d %d", len(ds.X), len(ds.Y), len(ds.Group))
	}
	counts := make([]int, len(StandInTeachers))
	for c := range ds.X {
		counts[ds.Group[c]]++
		if n := len(ds.X[c]); n < 1 || n > 4 {
			t.Fatalf("client %d has %d records", c, n)
		}
		for _, x := range ds.X[c] {
			if len(x) != 3 || x[0] <= 0 || x[0] > 1 || x[1] < 0 || x[1] >= 1 || x[2] < 0 || x[2] >= 1 {
				t.Fatalf("client %d input %v", c, x)
			}
		}
	}
	for g, n := range counts {
		if n < 850 || n > 1120 { // 2947/3 = 982, sd 26: 5 sd
			t.Errorf("group %d has %d clients", g, n)
		}
	}
}

func TestBadInput(t *testing.T) {
	x := [][]float64{{1, 2}}
	y := []float64{1}
	for name, f := range map[string]func() error{
		"nil model":  func() error { _, err := NewClient(nil, x, y, 0.1, 1); return err },
		"no data":    func() error { _, err := NewClient(Linear{In: 2}, nil, nil, 0.1, 1); return err },
		"lengths":    func() error { _, err := NewClient(Linear{In: 2}, x, []float64{1, 2}, 0.1, 1); return err },
		"input dim":  func() error { _, err := NewClient(Linear{In: 3}, x, y, 0.1, 1); return err },
		"NaN target": func() error { _, err := NewClient(Linear{In: 2}, x, []float64{math.NaN()}, 0.1, 1); return err },
		"step 0":     func() error { _, err := NewClient(Linear{In: 2}, x, y, 0, 1); return err },
		"batch 0":    func() error { _, err := NewClient(Linear{In: 2}, x, y, 0.1, 0); return err },
		"train dim": func() error {
			c, _ := NewClient(Linear{In: 2}, x, y, 0.1, 1)
			return c.Train(rng.NewSeeded(1), []float64{1}, 1)
		},
		"train epochs": func() error {
			c, _ := NewClient(Linear{In: 2}, x, y, 0.1, 1)
			return c.Train(rng.NewSeeded(1), []float64{1, 1}, 0)
		},
		"synthetic": func() error { _, err := SyntheticLinear(rng.NewSeeded(1), nil, 1, 1); return err },
		"stand-in":  func() error { _, err := HospitalStandIn(rng.NewSeeded(1), 0, 0.1); return err },
	} {
		if err := f(); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
