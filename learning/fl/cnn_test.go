package fl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// cnnParams counts the parameters of Table 5's network with square k×k
// kernels on 28×28 images: conv(1→32), conv(32→64), 2×2 max pool, fc→128,
// fc→classes.
func cnnParams(k, classes int) int {
	s := 28 - (k - 1) - (k - 1)
	p := s / 2
	return k*k*32 + 32 + k*k*32*64 + 64 + p*p*64*128 + 128 + 128*classes + classes
}

// TestCNNParameterCount checks the paper's n0 = 1,206,590 (Section 5.3): our
// network has it with 62 classes; the "(2,2)" kernels printed in Table 5 do
// not.
func TestCNNParameterCount(t *testing.T) {
	const n0 = 1206590 // Galli et al., Section 5.3
	for _, tc := range []struct{ classes, want int }{{62, n0}, {10, 1199882}} {
		m := mustModel(t, CNN, 784, tc.classes)
		if m.Dim() != tc.want || cnnParams(3, tc.classes) != tc.want {
			t.Errorf("cnn with %d classes: Dim %d, formula %d, want %d", tc.classes, m.Dim(), cnnParams(3, tc.classes), tc.want)
		}
	}
	if got := cnnParams(2, 62); got == n0 || got != 1400990 {
		t.Errorf("2×2 kernels give %d parameters, want 1,400,990 (≠ n0)", got)
	}
	m := mustModel(t, CNN, 784, 62)
	want := []struct {
		name  string
		shape []int
	}{
		{"conv1.weight", []int{3, 3, 1, 32}}, {"conv1.bias", []int{32}},
		{"conv2.weight", []int{3, 3, 32, 64}}, {"conv2.bias", []int{64}},
		{"fc1.weight", []int{9216, 128}}, {"fc1.bias", []int{128}},
		{"fc2.weight", []int{128, 62}}, {"fc2.bias", []int{62}},
	}
	ls := m.Layers()
	if len(ls) != len(want) {
		t.Fatalf("cnn has %d layers, want %d", len(ls), len(want))
	}
	for i, l := range ls {
		if l.Name != want[i].name || len(l.Shape) != len(want[i].shape) {
			t.Fatalf("layer %d = %s %v, want %s %v", i, l.Name, l.Shape, want[i].name, want[i].shape)
		}
		for j := range l.Shape {
			if l.Shape[j] != want[i].shape[j] {
				t.Errorf("layer %s shape %v, want %v", l.Name, l.Shape, want[i].shape)
			}
		}
	}
}

func TestCNNInit(t *testing.T) {
	m := mustModel(t, CNN, 784, 10).(*cnn)
	w := make([]float64, m.Dim())
	m.Init(rand.New(rand.NewPCG(1, 2)), w)
	for _, tc := range []struct {
		lo, hi int
		bound  float64
	}{
		{m.cw1, m.cb1, math.Sqrt(6.0 / 9)},
		{m.cw2, m.cb2, math.Sqrt(6.0 / 288)},
		{m.fw1, m.fb1, math.Sqrt(6.0 / 9216)},
		{m.fw2, m.fb2, math.Sqrt(6.0 / 138)},
	} {
		var sq float64
		for _, v := range w[tc.lo:tc.hi] {
			if math.Abs(v) > tc.bound {
				t.Fatalf("weight %v outside ±%v", v, tc.bound)
			}
			sq += v * v
		}
		// Var of U(−a, a) is a²/3; the sample variance of n draws has
		// relative standard deviation about √(0.8/n) ≤ 0.3 here, so 4
		// standard deviations leave a false-reject rate below 1e-4.
		n := float64(tc.hi - tc.lo)
		if v, want := sq/n, tc.bound*tc.bound/3; math.Abs(v-want) > 4*math.Sqrt(0.8/n)*want {
			t.Errorf("weights [%d, %d): variance %v, want %v", tc.lo, tc.hi, v, want)
		}
	}
	for _, i := range []int{m.cb1, m.cb2, m.cb2 + 63, m.fb1, m.fb2, m.dim - 1} {
		if w[i] != 0 {
			t.Errorf("bias w[%d] = %v, want 0", i, w[i])
		}
	}
}

// TestCNNGradientFiniteDifferences checks the float64 reference gradient
// against central differences on random entries of every block.
func TestCNNGradientFiniteDifferences(t *testing.T) {
	for _, side := range []int{6, 9} {
		const classes = 3
		ex := synth(21, 6, side*side, classes)
		m := mustModel(t, CNN, side*side, classes).(*cnn)
		r := rand.New(rand.NewPCG(uint64(side), 1))
		w := make([]float64, m.Dim())
		m.Init(r, w)
		for i := range w { // non-zero biases, so that every path is active
			w[i] += 0.05 * (2*r.Float64() - 1)
		}
		idx := []int{0, 2, 5}
		grad := make([]float64, m.Dim())
		loss := m.Gradient(grad, w, ex, idx)
		if l := m.Loss(w, ex, idx); l != loss {
			t.Errorf("side %d: Gradient returned loss %v, Loss %v", side, loss, l)
		}
		var coords []int
		for _, l := range m.Layers() {
			for range min(l.Len, 24) {
				coords = append(coords, l.Offset+r.IntN(l.Len))
			}
		}
		const h = 1e-6
		var worst float64
		bad := 0
		for _, i := range coords {
			wi := w[i]
			w[i] = wi + h
			fp := m.Loss(w, ex, idx)
			w[i] = wi - h
			fm := m.Loss(w, ex, idx)
			w[i] = wi
			fd := (fp - fm) / (2 * h)
			worst = max(worst, math.Abs(fd-grad[i]))
			// A ReLU or a pool kink within h of w gives a wrong difference;
			// allow a few such coordinates.
			if math.Abs(fd-grad[i]) > 1e-6+1e-4*math.Abs(grad[i]) {
				bad++
				t.Logf("side %d: ∂L/∂w[%d] = %v, finite difference %v", side, i, grad[i], fd)
			}
		}
		if bad > 2 {
			t.Errorf("side %d: %d of %d coordinates disagree with finite differences", side, bad, len(coords))
		}
		t.Logf("side %d: %d coordinates, worst absolute error %.2g", side, len(coords), worst)
	}
}

// TestCNNFastMatchesReference checks the float32 kernels (FedSGD on a full
// shard) against the float64 reference, at every kernel level, on image sides
// with even and odd conv2 outputs and on 28×28.
func TestCNNFastMatchesReference(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		for _, tc := range []struct{ side, classes, n int }{{6, 2, 5}, {9, 4, 7}, {12, 10, 20}, {28, 10, 3}} {
			if tc.side == 28 && !longtest.Enabled() {
				continue
			}
			ex := synth(5, 30, tc.side*tc.side, tc.classes)
			m := mustModel(t, CNN, tc.side*tc.side, tc.classes)
			r := rand.New(rand.NewPCG(9, uint64(tc.side)))
			w := make([]float64, m.Dim())
			m.Init(r, w)
			for i := range w {
				w[i] += 0.02 * (2*r.Float64() - 1)
			}
			idx := seq(tc.n)
			want := make([]float64, m.Dim())
			wantLoss := m.Gradient(want, w, ex, idx)
			got := make([]float64, m.Dim())
			st, err := NewTrainer(m).LocalUpdate(got, r, w, ex, idx, LocalConfig{Mode: FedSGD, Batch: len(idx)})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(st.Loss-wantLoss) > 1e-5*(1+wantLoss) {
				t.Errorf("side %d: FedSGD loss %v, want %v", tc.side, st.Loss, wantLoss)
			}
			for _, l := range m.Layers() {
				g, wg := got[l.Offset:l.Offset+l.Len], want[l.Offset:l.Offset+l.Len]
				if e := maxAbsDiff(g, wg) / (1e-4 + maxAbs(wg)); e > 1e-4 {
					t.Errorf("side %d: %s: float32 gradient differs from reference by %.3g (relative to max %.3g)", tc.side, l.Name, e, maxAbs(wg))
				}
			}
			acc, loss, err := Evaluate(m, w, Examples{X: ex.X[:tc.n*tc.side*tc.side], Y: ex.Y[:tc.n], Features: ex.Features}, 1)
			if err != nil || math.Abs(loss-wantLoss) > 1e-5*(1+wantLoss) || acc < 0 || acc > 1 {
				t.Errorf("side %d: Evaluate = %v, %v, %v; want loss %v", tc.side, acc, loss, err, wantLoss)
			}
		}
	})
}

// TestCNNLocalUpdate runs FedAvg, FedProx and a minibatch larger than the
// kernel's chunk against the float64 reference.
func TestCNNLocalUpdate(t *testing.T) {
	const side, classes = 8, 3
	ex := synth(4, 150, side*side, classes)
	m := mustModel(t, CNN, side*side, classes)
	r := rand.New(rand.NewPCG(2, 2))
	wg := make([]float64, m.Dim())
	m.Init(r, wg)
	tr := NewTrainer(m)
	for _, tc := range []struct {
		n, steps int
		lr, mu   float64
	}{{6, 1, 0.1, 0}, {6, 3, 0.1, 0}, {6, 3, 0.1, 1}, {cnnChunk + 40, 2, 0.1, 0.5}} {
		idx := seq(tc.n)
		want := refSGD(m, wg, ex, idx, tc.steps, tc.lr, tc.mu)
		got := make([]float64, m.Dim())
		st, err := tr.LocalUpdate(got, r, wg, ex, idx, LocalConfig{Steps: tc.steps, Batch: tc.n, LR: tc.lr, Mu: tc.mu})
		if err != nil {
			t.Fatal(err)
		}
		if st.Steps != tc.steps {
			t.Errorf("%+v: %d steps", tc, st.Steps)
		}
		if e := maxAbsDiff(got, want) / maxAbs(want); e > 1e-3 {
			t.Errorf("%+v: delta differs from the float64 reference by %.3g (relative to max)", tc, e)
		}
	}
}

// TestCNNLearns trains on a small synthetic image problem and checks that the
// test loss falls and the accuracy becomes high.
func TestCNNLearns(t *testing.T) {
	const side, classes = 10, 4
	all := synth(8, 500, side*side, classes)
	f := side * side
	train := Examples{X: all.X[:400*f], Y: all.Y[:400], Features: f}
	test := Examples{X: all.X[400*f:], Y: all.Y[400:], Features: f}
	m := mustModel(t, CNN, f, classes)
	w := make([]float64, m.Dim())
	m.Init(rand.New(rand.NewPCG(1, 1)), w)
	_, loss0, err := Evaluate(m, w, test, 2)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrainer(m)
	delta := make([]float64, m.Dim())
	for round := range 3 {
		if _, err := tr.LocalUpdate(delta, rand.New(rand.NewPCG(uint64(round), 0)), w, train, seq(400), LocalConfig{Epochs: 1, Batch: 10, LR: 0.05}); err != nil {
			t.Fatal(err)
		}
		for i := range w {
			w[i] += delta[i]
		}
	}
	acc, loss, err := Evaluate(m, w, test, 2)
	if err != nil {
		t.Fatal(err)
	}
	if loss > loss0/3 || acc < 0.9 {
		t.Errorf("after 3 epochs: loss %v (from %v), accuracy %v; want loss < 1/3 of start and accuracy ≥ 0.9", loss, loss0, acc)
	}
}

func TestCNNEvaluateWorkersInvariant(t *testing.T) {
	const side = 8
	ex := synth(9, 300, side*side, 10) // 3 chunks, the last one partial
	m := mustModel(t, CNN, side*side, 10)
	w := make([]float64, m.Dim())
	m.Init(rand.New(rand.NewPCG(4, 4)), w)
	acc1, loss1, err := Evaluate(m, w, ex, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{2, 5} {
		acc, loss, err := Evaluate(m, w, ex, workers)
		if err != nil || math.Float64bits(acc) != math.Float64bits(acc1) || math.Float64bits(loss) != math.Float64bits(loss1) {
			t.Errorf("%d workers give (%v, %v, %v), 1 worker (%v, %v)", workers, acc, loss, err, acc1, loss1)
		}
	}
	if want := m.Loss(w, ex, seq(ex.Len())); math.Abs(loss1-want) > 1e-5*want {
		t.Errorf("Evaluate loss %v, reference %v", loss1, want)
	}
}

func TestCNNDoesNotAllocate(t *testing.T) {
	const side = 12
	ex := synth(12, 100, side*side, 10)
	m := mustModel(t, CNN, side*side, 10)
	wg := make([]float64, m.Dim())
	m.Init(rand.New(rand.NewPCG(1, 1)), wg)
	tr := NewTrainer(m)
	dst := make([]float64, m.Dim())
	r := rand.New(rand.NewPCG(1, 1))
	cfg := LocalConfig{Epochs: 1, Batch: 10, LR: 0.01, Mu: 0.1}
	idx := seq(30)
	if _, err := tr.LocalUpdate(dst, r, wg, ex, idx, cfg); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := tr.LocalUpdate(dst, r, wg, ex, idx, cfg); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("LocalUpdate allocates %v times per call", allocs)
	}
}
