package fl

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

func TestNewModel(t *testing.T) {
	tests := []struct {
		name              string
		features, classes int
		dim               int
		wantErr           string
	}{
		{name: "logreg", features: 784, classes: 10, dim: 7850},
		{name: "mlp", features: 784, classes: 10, dim: 101770},
		{name: "logreg", features: 2, classes: 2, dim: 6},
		{name: "cnn", features: 784, classes: 10, dim: 1199882},
		{name: "cnn", features: 784, classes: 62, dim: 1206590},
		{name: "cnn", features: 36, classes: 2, dim: 288 + 32 + 18432 + 64 + 64*128 + 128 + 128*2 + 2},
		{name: "cnn", features: 783, classes: 10, wantErr: "not a square"},
		{name: "cnn", features: 25, classes: 10, wantErr: "side at least 6"},
		{name: "cnn", features: 1, classes: 10, wantErr: "side at least 6"},
		{name: "convnet", features: 784, classes: 10, wantErr: "cnn, logreg, mlp"},
		{name: "", features: 784, classes: 10, wantErr: "unknown model"},
		{name: "logreg", features: 0, classes: 10, wantErr: "features"},
		{name: "mlp", features: 784, classes: 1, wantErr: "classes"},
		{name: "mlp", features: 784, classes: 257, wantErr: "classes"},
	}
	for _, tc := range tests {
		m, err := NewModel(tc.name, tc.features, tc.classes)
		if tc.wantErr != "" {
			if err == nil || !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewModel(%q, %d, %d) error = %v, want one wrapping ErrInvalid mentioning %q", tc.name, tc.features, tc.classes, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewModel(%q, %d, %d): %v", tc.name, tc.features, tc.classes, err)
			continue
		}
		if m.Dim() != tc.dim || m.Name() != tc.name || m.Features() != tc.features || m.Classes() != tc.classes {
			t.Errorf("NewModel(%q, %d, %d) = %s, Dim %d, want Dim %d", tc.name, tc.features, tc.classes, m.Name(), m.Dim(), tc.dim)
		}
	}
}

func TestInit(t *testing.T) {
	lr := mustModel(t, LogReg, 20, 4)
	w := randomParams(rand.New(rand.NewPCG(1, 1)), lr.Dim(), 1)
	lr.Init(rand.New(rand.NewPCG(1, 2)), w)
	for i, v := range w {
		if v != 0 {
			t.Fatalf("logreg Init: w[%d] = %v, want 0", i, v)
		}
	}

	m := mustModel(t, MLP, 20, 4).(*dense)
	w1 := make([]float64, m.dim)
	w2 := make([]float64, m.dim)
	m.Init(rand.New(rand.NewPCG(3, 4)), w1)
	m.Init(rand.New(rand.NewPCG(3, 4)), w2)
	a1 := math.Sqrt(6.0 / 20)
	var sq float64
	for i := m.w1; i < m.b1; i++ {
		if math.Abs(w1[i]) > a1 {
			t.Fatalf("mlp Init: W1 entry %v outside ±%v", w1[i], a1)
		}
		sq += w1[i] * w1[i]
	}
	// Var of U(−a, a) is a²/3 = 2/fan_in (He).
	if v := sq / float64(m.b1-m.w1); math.Abs(v-2.0/20) > 0.02 {
		t.Errorf("mlp Init: W1 variance %v, want about %v", v, 2.0/20)
	}
	for _, i := range []int{m.b1, m.b1 + MLPHidden - 1, m.b2, m.dim - 1} {
		if w1[i] != 0 {
			t.Errorf("mlp Init: bias w[%d] = %v, want 0", i, w1[i])
		}
	}
	for i := range w1 {
		if w1[i] != w2[i] {
			t.Fatal("mlp Init is not deterministic given the generator")
		}
	}
}

// TestGradientFiniteDifferences checks the float64 reference gradient of both
// models, and of the FedProx objective, against central differences at
// several random points.
func TestGradientFiniteDifferences(t *testing.T) {
	const features, classes = 9, 4
	ex := synth(11, 12, features, classes)
	tests := []struct {
		model string
		seed  uint64
		scale float64
		mu    float64
	}{
		{LogReg, 1, 0.5, 0},
		{LogReg, 2, 3, 0},
		{LogReg, 3, 0.1, 0.7},
		{MLP, 4, 0.3, 0},
		{MLP, 5, 1, 0},
		{MLP, 6, 0.3, 2},
	}
	for _, tc := range tests {
		m := mustModel(t, tc.model, features, classes)
		r := rand.New(rand.NewPCG(tc.seed, 0))
		w := randomParams(r, m.Dim(), tc.scale)
		wg := randomParams(r, m.Dim(), tc.scale) // FedProx anchor
		idx := []int{0, 3, 4, 7, 11}
		// J(w) = L(w) + μ/2‖w − wg‖², ∇J = ∇L + μ(w − wg).
		obj := func(w []float64) float64 {
			var s float64
			for i := range w {
				s += (w[i] - wg[i]) * (w[i] - wg[i])
			}
			return m.Loss(w, ex, idx) + tc.mu/2*s
		}
		grad := make([]float64, m.Dim())
		loss := m.Gradient(grad, w, ex, idx)
		if l := m.Loss(w, ex, idx); l != loss {
			t.Errorf("%s seed %d: Gradient returned loss %v, Loss %v", tc.model, tc.seed, loss, l)
		}
		for i := range grad {
			grad[i] += tc.mu * (w[i] - wg[i])
		}
		const h = 1e-5
		var worst float64
		for i := range w {
			wi := w[i]
			w[i] = wi + h
			fp := obj(w)
			w[i] = wi - h
			fm := obj(w)
			w[i] = wi
			fd := (fp - fm) / (2 * h)
			if e := math.Abs(fd-grad[i]) / (1e-6 + math.Abs(grad[i])); e > worst {
				worst = e
			}
			if math.Abs(fd-grad[i]) > 1e-7+1e-5*math.Abs(grad[i]) {
				t.Errorf("%s seed %d mu %v: ∂J/∂w[%d] = %v, finite difference %v", tc.model, tc.seed, tc.mu, i, grad[i], fd)
				break
			}
		}
		t.Logf("%s seed %d mu %v: worst relative error %.2g", tc.model, tc.seed, tc.mu, worst)
	}
}

// TestFastGradientMatchesReference checks the float32 kernels (through
// FedSGD on a full shard) against the float64 reference gradient.
func TestFastGradientMatchesReference(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		for _, name := range denseModels {
			for _, shape := range [][2]int{{9, 4}, {70, 10}, {784, 10}, {40, 10}, {8, 10}, {33, 17}, {17, 2}, {40, 140}} {
				features, classes := shape[0], shape[1]
				ex := synth(5, 40, features, classes)
				m := mustModel(t, name, features, classes)
				r := rand.New(rand.NewPCG(9, uint64(features)))
				w := randomParams(r, m.Dim(), 0.1)
				idx := []int{1, 2, 3, 5, 8, 13, 21, 34}
				want := make([]float64, m.Dim())
				wantLoss := m.Gradient(want, w, ex, idx)
				got := make([]float64, m.Dim())
				st, err := NewTrainer(m).LocalUpdate(got, r, w, ex, idx, LocalConfig{Mode: FedSGD, Batch: len(idx)})
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(st.Loss-wantLoss) > 1e-5*(1+wantLoss) || st.Steps != 1 {
					t.Errorf("%s %v: FedSGD stats %+v, want loss %v", name, shape, st, wantLoss)
				}
				if e := maxAbsDiff(got, want) / (1e-3 + maxAbs(want)); e > 1e-5 {
					t.Errorf("%s %v: float32 gradient differs from reference by %.3g (relative to max)", name, shape, e)
				}
			}
		}
	})
}

func maxAbs(x []float64) float64 {
	var m float64
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

func maxAbsDiff(x, y []float64) float64 {
	var m float64
	for i := range x {
		m = max(m, math.Abs(x[i]-y[i]))
	}
	return m
}

func TestLayersTile(t *testing.T) {
	for _, name := range denseModels {
		m, err := NewModel(name, 784, 10)
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		for _, l := range m.Layers() {
			n := 1
			for _, s := range l.Shape {
				n *= s
			}
			if l.Offset != off || l.Len != n {
				t.Fatalf("%s: layer %s at %d (len %d, shape %v), want offset %d", name, l.Name, l.Offset, l.Len, l.Shape, off)
			}
			off += l.Len
		}
		if off != m.Dim() {
			t.Fatalf("%s: layers cover %d of %d parameters", name, off, m.Dim())
		}
	}
}
