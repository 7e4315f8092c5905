package audit

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
)

func sampleSplit(t testing.TB) data.Split {
	t.Helper()
	s, err := data.Load("fashion-mnist-sample", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// oneStep returns the model delta of one SGD step (lr 0.1) on example i.
func oneStep(t testing.TB, m fl.Model, w []float64, ds *data.Dataset, i int) []float64 {
	g := make([]float64, m.Dim())
	ex := fl.Examples{X: ds.X, Y: ds.Y, Features: ds.Features}
	m.Gradient(g, w, ex, []int{i})
	for j := range g {
		g[j] *= -0.1
	}
	return g
}

func TestInvertFCExact(t *testing.T) {
	split := sampleSplit(t)
	for _, name := range []string{fl.LogReg, fl.MLP} {
		t.Run(name, func(t *testing.T) {
			m, err := fl.NewModel(name, split.Train.Features, split.Train.Classes)
			if err != nil {
				t.Fatal(err)
			}
			w := make([]float64, m.Dim())
			m.Init(rng.Stream(1), w)
			for i := 0; i < 5; i++ {
				u := oneStep(t, m, w, split.Train, i)
				l, err := InputLayer(m)
				if err != nil {
					t.Fatal(err)
				}
				x, err := InvertFC(u, l)
				if err != nil {
					t.Fatal(err)
				}
				q := Measure(split.Train.Row(i), x, split.Train.Rows, split.Train.Cols)
				if q.MSE > 1e-12 || q.SSIM < 0.999999 {
					t.Fatalf("example %d: analytic inversion not exact: %+v", i, q)
				}
				y, _ := RecoverLabel(u, m)
				if y != int(split.Train.Y[i]) {
					t.Fatalf("example %d: label %d recovered as %d", i, split.Train.Y[i], y)
				}
			}
		})
	}
}

func TestOptimizeReconstructs(t *testing.T) {
	split := sampleSplit(t)
	m, _ := fl.NewModel(fl.LogReg, split.Train.Features, split.Train.Classes)
	w := make([]float64, m.Dim())
	u := oneStep(t, m, w, split.Train, 3)
	y, _ := RecoverLabel(u, m)
	x, err := Optimize(rand.New(rand.NewPCG(1, 2)), m, w, u, y, DLGConfig{Steps: 200})
	if err != nil {
		t.Fatal(err)
	}
	q := Measure(split.Train.Row(3), x, 28, 28)
	t.Logf("DLG on logreg: %+v", q)
	if q.SSIM < 0.9 {
		t.Fatalf("DLG failed on a noiseless logreg update: %+v", q)
	}
}

func TestMeasure(t *testing.T) {
	truth := make([]float32, 28*28)
	for i := range truth {
		truth[i] = float32(i%28) / 28
	}
	same := make([]float64, len(truth))
	for i, v := range truth {
		same[i] = float64(v)
	}
	if q := Measure(truth, same, 28, 28); q.MSE != 0 || q.PSNR != 999 || q.SSIM < 0.999999 {
		t.Fatalf("identical images: %+v", q)
	}
	flat := make([]float64, len(truth))
	if q := Measure(truth, flat, 28, 28); q.SSIM > 0.1 || q.MSE < 0.2 {
		t.Fatalf("black image: %+v", q)
	}
}

func TestInputLayerRejects(t *testing.T) {
	m, _ := fl.NewModel(fl.LogReg, 784, 10)
	bad := FCLayer{Weight: fl.Layer{Name: "fc1.weight", Shape: []int{9216, 128}}, Bias: fl.Layer{Name: "fc1.bias", Shape: []int{128}}}
	if _, err := InvertFC(make([]float64, m.Dim()), bad); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("layer larger than the update: %v", err)
	}
	if _, err := InvertFC(make([]float64, m.Dim()), FCLayers(m)[0]); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("zero update: %v", err)
	}
}
