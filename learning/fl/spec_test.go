package fl

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// cnnLayersText is the cnn preset written as a layer list.
const cnnLayersText = "conv2d=32/3/1/0,relu,conv2d=64/3/1/0,relu,maxpool=2,flatten,dense=128,relu,dense=10,softmax"

func TestParseSpecGood(t *testing.T) {
	tests := []struct {
		text, canonical string
		features        int
		dim             int
	}{
		{"logreg", "logreg", 784, 7850},
		{"mlp", "mlp", 784, 101770},
		{"cnn", "cnn", 784, 1199882},
		{" mlp ", "mlp", 784, 101770},
		{"dense=10,softmax", "logreg", 784, 7850},
		{"dense=0,softmax", "logreg", 784, 7850},
		{"mlp:128", "mlp", 784, 101770},
		{"dense=128,relu,dense=10,softmax", "mlp", 784, 101770},
		{cnnLayersText, "cnn", 784, 1199882},
		{"mlp:256,128", "mlp:256,128", 784, 785*256 + 257*128 + 129*10},
		{"mlp:64", "mlp:64", 784, 785*64 + 65*10},
		{"dense=32,tanh,dense=10,softmax", "dense=32,tanh,dense=0,softmax", 20, 21*32 + 33*10},
		{"dense=32,tanh,dense=0,softmax", "dense=32,tanh,dense=0,softmax", 20, 21*32 + 33*10},
		{"dense=16,dense=10,softmax", "dense=16,dense=0,softmax", 20, 21*16 + 17*10},
	}
	for _, tc := range tests {
		s, err := ParseSpec(tc.text)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tc.text, err)
			continue
		}
		again, err := ParseSpec(s.String())
		if err != nil || again.String() != s.String() {
			t.Errorf("ParseSpec(%q) does not read back: %v, %v", s.String(), again, err)
		}
		m, err := NewModel(tc.text, tc.features, 10)
		if err != nil {
			t.Errorf("NewModel(%q): %v", tc.text, err)
			continue
		}
		if m.Dim() != tc.dim || m.Name() != tc.canonical {
			t.Errorf("NewModel(%q) = %s d=%d, want %s d=%d", tc.text, m.Name(), m.Dim(), tc.canonical, tc.dim)
		}
	}
}

func TestParseSpecYAML(t *testing.T) {
	good := `
- {type: dense, units: 256}
- {type: relu}
- type: dense
  units: 128
- {type: relu}
- {type: dense, units: 10}
- {type: softmax}
`
	s, err := ParseSpecYAML([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "dense=256,relu,dense=128,relu,dense=10,softmax" {
		t.Errorf("String() = %q", got)
	}
	m, err := NewModel(s.String(), 784, 10)
	if err != nil || m.Name() != "mlp:256,128" {
		t.Errorf("NewModel(%q) = %v, %v; want mlp:256,128", s.String(), m, err)
	}
	cnn := `
- {type: conv2d, filters: 32, kernel: 3, stride: 1, padding: 0}
- {type: relu}
- {type: conv2d, filters: 64, kernel: 3, stride: 1}
- {type: relu}
- {type: maxpool, size: 2}
- {type: flatten}
- {type: dense, units: 128}
- {type: relu}
- {type: dense, units: 10}
- {type: softmax}
`
	s, err = ParseSpecYAML([]byte(cnn))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := NewModel(s.String(), 784, 10); err != nil || m.Name() != CNN {
		t.Errorf("cnn YAML: NewModel(%q) = %v, %v", s.String(), m, err)
	}
}

// TestBadSpecs checks that every bad specification is refused with one
// line wrapping checks.ErrInvalid and naming the problem.
func TestBadSpecs(t *testing.T) {
	texts := []struct{ text, want string }{
		{"", "unknown model"},
		{"convnet", "unknown model"},
		{"mlp:", "hidden width"},
		{"mlp:0", "hidden width"},
		{"mlp:12,x", "hidden width"},
		{"mlp:-4", "hidden width"},
		{"mlp:99999999", "hidden width"},
		{"dense=10", "at least a dense layer and softmax"},
		{"dense=10,relu", "ends with softmax"},
		{"softmax,dense=10", "last layer"},
		{"dense=10,softmax,softmax", "last layer"},
		{"relu,dense=10,softmax", "activation must follow"},
		{"dense=8,relu,relu,dense=10,softmax", "activation must follow"},
		{"dense=8,relu,softmax", "logits"},
		{"dense=0,relu,dense=10,softmax", "units 0"},
		{"dense=x,softmax", "not an integer"},
		{"dense=1/2,softmax", "takes 1 arguments"},
		{"relu=3,dense=10,softmax", "takes 0 arguments"},
		{"lstm=3,dense=10,softmax", "unknown layer type"},
		{"conv2d=32/3/1,relu,flatten,dense=10,softmax", "takes 4 arguments"},
		{"conv2d=32/3/0/0,relu,flatten,dense=10,softmax", "stride 0"},
		{"conv2d=32/3/1/3,relu,flatten,dense=10,softmax", "padding 3"},
		{"conv2d=0/3/1/0,relu,flatten,dense=10,softmax", "filters 0"},
		{"dense=10,conv2d=32/3/1/0,dense=10,softmax", "convolution after"},
		{"flatten,flatten,dense=10,softmax", "flatten after"},
		{"maxpool=0,flatten,dense=10,softmax", "size 0"},
	}
	for _, tc := range texts {
		_, err := ParseSpec(tc.text)
		if err == nil || !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseSpec(%q) = %v, want one line wrapping ErrInvalid mentioning %q", tc.text, err, tc.want)
		}
	}
	yamls := []struct{ text, want string }{
		{"- {type: dense, units: 10, size: 3}\n- {type: softmax}\n", "argument not taken"},
		{"- {type: dense, unit: 10}\n- {type: softmax}\n", "not found"},
		{"- {type: dense, units: 10}\n", "at least"},
		{"type: dense\n", "cannot unmarshal"},
		{"- {type: dense, units: ten}\n- {type: softmax}\n", "cannot unmarshal"},
		{"", "EOF"},
	}
	for _, tc := range yamls {
		_, err := ParseSpecYAML([]byte(tc.text))
		if err == nil || !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseSpecYAML(%q) = %v, want one line wrapping ErrInvalid mentioning %q", tc.text, err, tc.want)
		}
	}
}

// TestSpecShapeMismatch checks that a specification that does not fit the
// data (features, classes) or the kernels is refused.
func TestSpecShapeMismatch(t *testing.T) {
	tests := []struct {
		text              string
		features, classes int
		want              string
	}{
		{"dense=5,softmax", 784, 10, "5 units but the data has 10 classes"},
		{"mlp:64,dense", 784, 10, "hidden width"},
		{"dense=64,relu,dense=62,softmax", 784, 10, "62 units but the data has 10 classes"},
		{cnnLayersText, 783, 10, "not a square"},
		{cnnLayersText, 784, 62, "10 units but the data has 62 classes"},
		{"conv2d=16/5/1/2,relu,maxpool=2,flatten,dense=10,softmax", 784, 10, "only the cnn preset"},
		{"flatten,dense=10,softmax", 784, 10, "only the cnn preset"},
		{"mlp:60000,60000", 784, 10, "too many"},
	}
	for _, tc := range tests {
		_, err := NewModel(tc.text, tc.features, tc.classes)
		if err == nil || !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewModel(%q, %d, %d) = %v, want ErrInvalid mentioning %q", tc.text, tc.features, tc.classes, err, tc.want)
		}
	}
}

// TestPresetsAsSpecs checks that a preset written as a specification is the
// model the old constructors built: same parameters (layers, Init), same
// float64 loss and gradient and same float32 training step, bit for bit.
func TestPresetsAsSpecs(t *testing.T) {
	const classes = 10
	tests := []struct {
		text     string
		features int
		old      Model
	}{
		{"dense=10,softmax", 784, newDense(LogReg, 784, 0, classes)},
		{"logreg", 30, newDense(LogReg, 30, 0, classes)},
		{"mlp:128", 784, newDense(MLP, 784, MLPHidden, classes)},
		{"dense=128,relu,dense=0,softmax", 50, newDense(MLP, 50, MLPHidden, classes)},
		{cnnLayersText, 144, must(newCNN(144, classes))},
	}
	for _, tc := range tests {
		m := mustModel(t, tc.text, tc.features, classes)
		if m.Name() != tc.old.Name() || m.Dim() != tc.old.Dim() || !slices.EqualFunc(m.Layers(), tc.old.Layers(), func(a, b Layer) bool {
			return a.Name == b.Name && a.Offset == b.Offset && a.Len == b.Len && slices.Equal(a.Shape, b.Shape)
		}) {
			t.Errorf("%s: %s d=%d %v, want %s d=%d %v", tc.text, m.Name(), m.Dim(), m.Layers(), tc.old.Name(), tc.old.Dim(), tc.old.Layers())
			continue
		}
		w1, w2 := make([]float64, m.Dim()), make([]float64, m.Dim())
		m.Init(rand.New(rand.NewPCG(3, 4)), w1)
		tc.old.Init(rand.New(rand.NewPCG(3, 4)), w2)
		if !bitsEqual(w1, w2) {
			t.Errorf("%s: Init differs", tc.text)
		}
		ex := synth(8, 16, tc.features, classes)
		idx := seq(16)
		g1, g2 := make([]float64, m.Dim()), make([]float64, m.Dim())
		l1, l2 := m.Gradient(g1, w1, ex, idx), tc.old.Gradient(g2, w2, ex, idx)
		if math.Float64bits(l1) != math.Float64bits(l2) || !bitsEqual(g1, g2) {
			t.Errorf("%s: reference loss/gradient differ (%v vs %v)", tc.text, l1, l2)
		}
		u1, u2 := make([]float64, m.Dim()), make([]float64, m.Dim())
		cfg := LocalConfig{Mode: FedAvg, Epochs: 1, Batch: 4, LR: 0.1}
		s1, err1 := NewTrainer(m).LocalUpdate(u1, rand.New(rand.NewPCG(5, 6)), w1, ex, idx, cfg)
		s2, err2 := NewTrainer(tc.old).LocalUpdate(u2, rand.New(rand.NewPCG(5, 6)), w2, ex, idx, cfg)
		if err1 != nil || err2 != nil || s1 != s2 || !bitsEqual(u1, u2) {
			t.Errorf("%s: float32 local update differs (%+v %v vs %+v %v)", tc.text, s1, err1, s2, err2)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func bitsEqual(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// TestStackGradient checks the deep dense stack: its float64 reference
// gradient against finite differences, and its float32 kernel (FedSGD on a
// shard) against the reference.
func TestStackGradient(t *testing.T) {
	const features, classes = 9, 4
	ex := synth(11, 40, features, classes)
	for _, text := range []string{"mlp:7,5", "dense=6,tanh,dense=5,relu,dense=4,softmax", "dense=6,dense=4,softmax", "mlp:16,8,4"} {
		m := mustModel(t, text, features, classes)
		if _, ok := m.(*stack); !ok {
			t.Fatalf("%s: %T, want a stack", text, m)
		}
		r := rand.New(rand.NewPCG(1, 2))
		w := make([]float64, m.Dim())
		m.Init(r, w)
		for i := range w {
			w[i] += 0.05 * (2*r.Float64() - 1) // non-zero biases
		}
		idx := []int{0, 3, 4, 7, 11, 19}
		grad := make([]float64, m.Dim())
		loss := m.Gradient(grad, w, ex, idx)
		if l := m.Loss(w, ex, idx); l != loss {
			t.Errorf("%s: Gradient's loss %v, Loss %v", text, loss, l)
		}
		const h = 1e-5
		for i := range w {
			wi := w[i]
			w[i] = wi + h
			fp := m.Loss(w, ex, idx)
			w[i] = wi - h
			fm := m.Loss(w, ex, idx)
			w[i] = wi
			if fd := (fp - fm) / (2 * h); math.Abs(fd-grad[i]) > 1e-7+1e-5*math.Abs(grad[i]) {
				t.Errorf("%s: ∂L/∂w[%d] = %v, finite difference %v", text, i, grad[i], fd)
				break
			}
		}
		got := make([]float64, m.Dim())
		st, err := NewTrainer(m).LocalUpdate(got, r, w, ex, idx, LocalConfig{Mode: FedSGD, Batch: len(idx)})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(st.Loss-loss) > 1e-5*(1+loss) {
			t.Errorf("%s: float32 loss %v, reference %v", text, st.Loss, loss)
		}
		if e := maxAbsDiff(got, grad) / (1e-3 + maxAbs(grad)); e > 1e-5 {
			t.Errorf("%s: float32 gradient differs from reference by %.3g", text, e)
		}
	}
}

// TestStackLearns trains mlp:32,16 with FedAvg on a learnable problem.
func TestStackLearns(t *testing.T) {
	const features, classes = 40, 5
	train, test := synth(1, 400, features, classes), synth(1, 200, features, classes)
	m := mustModel(t, "mlp:32,16", features, classes)
	r := rand.New(rand.NewPCG(7, 8))
	w := make([]float64, m.Dim())
	m.Init(r, w)
	tr := NewTrainer(m)
	for range 5 {
		next := make([]float64, m.Dim())
		if _, err := tr.LocalUpdate(next, r, w, train, seq(400), LocalConfig{Mode: FedAvg, Epochs: 1, Batch: 20, LR: 0.2}); err != nil {
			t.Fatal(err)
		}
		for i := range w {
			w[i] += next[i]
		}
	}
	acc, _, err := Evaluate(m, w, test, 1)
	if err != nil || acc < 0.9 {
		t.Errorf("mlp:32,16 accuracy %v (%v) after 5 epochs, want ≥ 0.9", acc, err)
	}
}
