package fl

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// refSGD is a float64 reference of full-batch FedAvg/FedProx local training.
func refSGD(m Model, wg []float64, ex Examples, idx []int, steps int, lr, mu float64) []float64 {
	w := append([]float64(nil), wg...)
	g := make([]float64, len(w))
	for range steps {
		m.Gradient(g, w, ex, idx)
		for i := range w {
			w[i] -= lr * (g[i] + mu*(w[i]-wg[i]))
		}
	}
	for i := range w {
		w[i] -= wg[i]
	}
	return w
}

// TestFedAvgMatchesReference runs full-batch local SGD, with and without the
// proximal term, and compares the delta with the float64 reference.
func TestFedAvgMatchesReference(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		tests := []struct {
			model     string
			steps     int
			lr, mu    float64
			wantSteps int
		}{
			{LogReg, 1, 0.5, 0, 1},
			{LogReg, 4, 0.5, 0, 4},
			{LogReg, 4, 0.5, 1, 4},
			{MLP, 1, 0.1, 0, 1},
			{MLP, 3, 0.1, 0, 3},
			{MLP, 3, 0.1, 2, 3},
		}
		ex := synth(3, 30, 50, 5)
		idx := []int{2, 4, 6, 8, 10, 12, 14}
		for _, tc := range tests {
			m := mustModel(t, tc.model, 50, 5)
			r := rand.New(rand.NewPCG(1, 2))
			wg := randomParams(r, m.Dim(), 0.2)
			want := refSGD(m, wg, ex, idx, tc.steps, tc.lr, tc.mu)
			got := make([]float64, m.Dim())
			cfg := LocalConfig{Steps: tc.steps, Batch: len(idx), LR: tc.lr, Mu: tc.mu}
			st, err := NewTrainer(m).LocalUpdate(got, r, wg, ex, idx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if st.Steps != tc.wantSteps {
				t.Errorf("%s %+v: %d steps, want %d", tc.model, cfg, st.Steps, tc.wantSteps)
			}
			if e := maxAbsDiff(got, want) / maxAbs(want); e > 1e-4 {
				t.Errorf("%s %+v: delta differs from float64 reference by %.3g (relative to max)", tc.model, cfg, e)
			}
		}
		// The proximal term must matter: with a large μ the delta shrinks.
		m := mustModel(t, LogReg, 50, 5)
		wg := make([]float64, m.Dim())
		d0 := make([]float64, m.Dim())
		d1 := make([]float64, m.Dim())
		tr := NewTrainer(m)
		if _, err := tr.LocalUpdate(d0, rand.New(rand.NewPCG(1, 1)), wg, ex, idx, LocalConfig{Steps: 5, Batch: 7, LR: 0.5}); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.LocalUpdate(d1, rand.New(rand.NewPCG(1, 1)), wg, ex, idx, LocalConfig{Steps: 5, Batch: 7, LR: 0.5, Mu: 1}); err != nil {
			t.Fatal(err)
		}
		if norm(d1) >= norm(d0) {
			t.Errorf("FedProx μ=1 delta norm %v is not below FedAvg's %v", norm(d1), norm(d0))
		}
	})
}

func norm(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

// TestFedSGDSubset checks that with a shard larger than the batch, FedSGD
// returns the gradient of one Batch-subset, and that different generators
// pick different subsets.
func TestFedSGDSubset(t *testing.T) {
	ex := synth(4, 10, 12, 3)
	m := mustModel(t, LogReg, 12, 3)
	wg := randomParams(rand.New(rand.NewPCG(2, 2)), m.Dim(), 0.3)
	idx := []int{1, 4, 6, 9}
	// Gradients of all six 2-subsets.
	var subsets [][]float64
	for a := range idx {
		for b := a + 1; b < len(idx); b++ {
			g := make([]float64, m.Dim())
			m.Gradient(g, wg, ex, []int{idx[a], idx[b]})
			subsets = append(subsets, g)
		}
	}
	tr := NewTrainer(m)
	seen := map[int]bool{}
	for seed := range uint64(30) {
		got := make([]float64, m.Dim())
		if _, err := tr.LocalUpdate(got, rand.New(rand.NewPCG(seed, 0)), wg, ex, idx, LocalConfig{Mode: FedSGD, Batch: 2}); err != nil {
			t.Fatal(err)
		}
		match := -1
		for s, g := range subsets {
			if maxAbsDiff(got, g) < 1e-6 {
				match = s
			}
		}
		if match < 0 {
			t.Fatalf("seed %d: FedSGD gradient is not the gradient of any 2-subset of the shard", seed)
		}
		seen[match] = true
	}
	if len(seen) < 4 {
		t.Errorf("30 seeds picked only %d of 6 subsets", len(seen))
	}
}

// TestEpochsAndSteps checks that Epochs = e is Steps = e·⌈n/B⌉, with the last
// minibatch of each epoch smaller.
func TestEpochsAndSteps(t *testing.T) {
	ex := synth(6, 40, 30, 4)
	m := mustModel(t, MLP, 30, 4)
	wg := make([]float64, m.Dim())
	m.Init(rand.New(rand.NewPCG(1, 1)), wg)
	idx := seq(10)
	tr := NewTrainer(m)
	a := make([]float64, m.Dim())
	b := make([]float64, m.Dim())
	sa, err := tr.LocalUpdate(a, rand.New(rand.NewPCG(5, 5)), wg, ex, idx, LocalConfig{Epochs: 2, Batch: 4, LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := tr.LocalUpdate(b, rand.New(rand.NewPCG(5, 5)), wg, ex, idx, LocalConfig{Steps: 6, Batch: 4, LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if sa.Steps != 6 || sa != sb {
		t.Errorf("epochs=2 stats %+v, steps=6 stats %+v, want equal with 6 steps", sa, sb)
	}
	if !equalBits(a, b) {
		t.Error("2 epochs of 10 examples at batch 4 differ from 6 steps")
	}
}

func equalBits(x, y []float64) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return false
		}
	}
	return true
}

func TestDeterminism(t *testing.T) {
	ex := synth(7, 50, 40, 5)
	for _, name := range denseModels {
		m := mustModel(t, name, 40, 5)
		wg := make([]float64, m.Dim())
		m.Init(rand.New(rand.NewPCG(1, 1)), wg)
		cfg := LocalConfig{Epochs: 2, Batch: 3, LR: 0.1, Mu: 0.01}
		run := func(tr *Trainer, seed uint64, idx []int) []float64 {
			d := make([]float64, m.Dim())
			if _, err := tr.LocalUpdate(d, rand.New(rand.NewPCG(seed, 1)), wg, ex, idx, cfg); err != nil {
				t.Fatal(err)
			}
			return d
		}
		tr := NewTrainer(m)
		a := run(tr, 1, seq(20))
		run(tr, 2, seq(45)) // another client in between: no state may leak
		b := run(tr, 1, seq(20))
		c := run(NewTrainer(m), 1, seq(20))
		d := run(tr, 3, seq(20))
		if !equalBits(a, b) || !equalBits(a, c) {
			t.Errorf("%s: same generator seed gives different updates", name)
		}
		if equalBits(a, d) {
			t.Errorf("%s: different seeds give identical updates (minibatch order unused?)", name)
		}
	}
}

// TestLossDecreases runs a few FedAvg rounds on a synthetic problem and checks
// that the test loss falls and the accuracy becomes high.
func TestLossDecreases(t *testing.T) {
	const features, classes = 64, 4
	train := synth(8, 400, features, classes)
	// The same seed draws the same class prototypes and the same first 400
	// examples, so rows 400..599 are fresh examples of the same problem.
	test := synth(8, 600, features, classes)
	test = Examples{X: test.X[400*features:], Y: test.Y[400:], Features: features}
	for _, tc := range []struct {
		model string
		lr    float64
	}{{LogReg, 0.5}, {MLP, 0.1}} {
		m := mustModel(t, tc.model, features, classes)
		w := make([]float64, m.Dim())
		m.Init(rand.New(rand.NewPCG(1, 1)), w)
		_, loss0, err := Evaluate(m, w, test, 2)
		if err != nil {
			t.Fatal(err)
		}
		tr := NewTrainer(m)
		delta := make([]float64, m.Dim())
		sum := make([]float64, m.Dim())
		const clients = 20
		for round := range 5 {
			clear(sum)
			for c := range clients {
				idx := seq(20)
				for i := range idx {
					idx[i] += 20 * c
				}
				r := rand.New(rand.NewPCG(uint64(round), uint64(c)))
				if _, err := tr.LocalUpdate(delta, r, w, train, idx, LocalConfig{Epochs: 1, Batch: 5, LR: tc.lr}); err != nil {
					t.Fatal(err)
				}
				for i := range sum {
					sum[i] += delta[i] / clients
				}
			}
			for i := range w {
				w[i] += sum[i]
			}
		}
		acc, loss, err := Evaluate(m, w, test, 2)
		if err != nil {
			t.Fatal(err)
		}
		if loss > loss0/3 || acc < 0.9 {
			t.Errorf("%s: after 5 rounds loss %v (from %v), accuracy %v; want loss < 1/3 of start and accuracy ≥ 0.9", tc.model, loss, loss0, acc)
		}
	}
}

func TestEvaluateWorkersInvariant(t *testing.T) {
	ex := synth(9, 1000, 100, 10) // 8 chunks, the last one partial
	for _, name := range denseModels {
		m := mustModel(t, name, 100, 10)
		w := randomParams(rand.New(rand.NewPCG(4, 4)), m.Dim(), 0.1)
		acc1, loss1, err := Evaluate(m, w, ex, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, workers := range []int{2, 3, 4, 64} {
			acc, loss, err := Evaluate(m, w, ex, workers)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(acc) != math.Float64bits(acc1) || math.Float64bits(loss) != math.Float64bits(loss1) {
				t.Errorf("%s: %d workers give (%v, %v), 1 worker (%v, %v)", name, workers, acc, loss, acc1, loss1)
			}
		}
		// Against the float64 reference.
		if want := m.Loss(w, ex, seq(ex.Len())); math.Abs(loss1-want) > 1e-5*want {
			t.Errorf("%s: Evaluate loss %v, reference %v", name, loss1, want)
		}
		if acc1 < 0 || acc1 > 1 {
			t.Errorf("%s: accuracy %v", name, acc1)
		}
	}
	// Accuracy counts arg max hits: a model that always predicts class 3.
	m := mustModel(t, LogReg, 100, 10).(*dense)
	w := make([]float64, m.dim)
	w[m.b1+3] = 1
	var want int
	for _, y := range ex.Y {
		if y == 3 {
			want++
		}
	}
	acc, _, err := Evaluate(m, w, ex, 3)
	if err != nil || acc != float64(want)/float64(ex.Len()) {
		t.Errorf("constant classifier: accuracy %v (err %v), want %v", acc, err, float64(want)/float64(ex.Len()))
	}
}

func TestLocalUpdateErrors(t *testing.T) {
	ex := synth(10, 20, 8, 3)
	m := mustModel(t, MLP, 8, 3)
	good := LocalConfig{Epochs: 1, Batch: 4, LR: 0.1}
	wg := make([]float64, m.Dim())
	m.Init(rand.New(rand.NewPCG(1, 1)), wg)
	with := func(i int, v float64) []float64 {
		w := append([]float64(nil), wg...)
		w[i] = v
		return w
	}
	badLabel := Examples{X: ex.X, Y: append([]uint8(nil), ex.Y...), Features: ex.Features}
	badLabel.Y[5] = 3
	tests := []struct {
		name     string
		cfg      LocalConfig
		dst, wg  []float64
		ex       Examples
		idx      []int
		wantErr  error
		contains string
	}{
		{name: "batch 0", cfg: LocalConfig{Epochs: 1, LR: 0.1}, contains: "batch"},
		{name: "lr 0", cfg: LocalConfig{Epochs: 1, Batch: 4}, contains: "lr"},
		{name: "lr NaN", cfg: LocalConfig{Epochs: 1, Batch: 4, LR: math.NaN()}, contains: "lr"},
		{name: "mu negative", cfg: LocalConfig{Epochs: 1, Batch: 4, LR: 0.1, Mu: -1}, contains: "mu"},
		{name: "mu Inf", cfg: LocalConfig{Epochs: 1, Batch: 4, LR: 0.1, Mu: math.Inf(1)}, contains: "mu"},
		{name: "no epochs or steps", cfg: LocalConfig{Batch: 4, LR: 0.1}, contains: "exactly one"},
		{name: "epochs and steps", cfg: LocalConfig{Epochs: 1, Steps: 3, Batch: 4, LR: 0.1}, contains: "exactly one"},
		{name: "negative steps", cfg: LocalConfig{Steps: -1, Batch: 4, LR: 0.1}, contains: "steps"},
		{name: "too many epochs", cfg: LocalConfig{Epochs: MaxEpochs + 1, Batch: 4, LR: 0.1}, contains: "epochs"},
		{name: "bad mode", cfg: LocalConfig{Mode: 7, Epochs: 1, Batch: 4, LR: 0.1}, contains: "mode"},
		{name: "dst length", dst: make([]float64, 5), contains: "update buffer"},
		{name: "global length", wg: make([]float64, 5), contains: "global model has dimension"},
		{name: "global NaN", wg: with(17, math.NaN()), contains: "parameter 17"},
		{name: "global Inf", wg: with(0, math.Inf(-1)), contains: "parameter 0"},
		{name: "global beyond float32", wg: with(m.Dim()-1, 1e300), contains: "finite"},
		{name: "features", ex: synth(1, 20, 9, 3), contains: "features"},
		{name: "ragged", ex: Examples{X: ex.X[:20*8-1], Y: ex.Y, Features: 8}, contains: "feature values"},
		{name: "empty shard", idx: []int{}, contains: "no examples"},
		{name: "index too large", idx: []int{0, 20}, contains: "idx[1] = 20"},
		{name: "negative index", idx: []int{-1}, contains: "idx[0] = -1"},
		{name: "label", ex: badLabel, idx: []int{4, 5}, contains: "label of example 5"},
		{name: "diverges", cfg: LocalConfig{Epochs: 50, Batch: 1, LR: 1e30}, wantErr: ErrDiverged},
	}
	tr := NewTrainer(m)
	for _, tc := range tests {
		cfg, dst, w, e, idx := tc.cfg, tc.dst, tc.wg, tc.ex, tc.idx
		if cfg == (LocalConfig{}) {
			cfg = good
		}
		if dst == nil {
			dst = make([]float64, m.Dim())
		}
		if w == nil {
			w = wg
		}
		if e.X == nil {
			e = ex
		}
		if idx == nil {
			idx = seq(10)
		}
		want := tc.wantErr
		if want == nil {
			want = checks.ErrInvalid
		}
		_, err := tr.LocalUpdate(dst, rand.New(rand.NewPCG(1, 1)), w, e, idx, cfg)
		if !errors.Is(err, want) || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: error %v, want one wrapping %v and containing %q", tc.name, err, want, tc.contains)
		}
	}
	// The trainer still works after errors.
	if _, err := tr.LocalUpdate(make([]float64, m.Dim()), rand.New(rand.NewPCG(1, 1)), wg, ex, seq(10), good); err != nil {
		t.Errorf("after errors: %v", err)
	}
}

func TestEvaluateErrors(t *testing.T) {
	ex := synth(10, 20, 8, 3)
	m := mustModel(t, LogReg, 8, 3)
	w := make([]float64, m.Dim())
	nan := make([]float64, m.Dim())
	nan[3] = math.NaN()
	badLabel := Examples{X: ex.X, Y: append([]uint8(nil), ex.Y...), Features: 8}
	badLabel.Y[2] = 9
	tests := []struct {
		name     string
		w        []float64
		ex       Examples
		workers  int
		contains string
	}{
		{"workers", w, ex, 0, "workers"},
		{"dimension", w[:5], ex, 1, "dimension"},
		{"NaN", nan, ex, 1, "parameter 3"},
		{"features", w, synth(1, 5, 7, 3), 1, "features"},
		{"empty", w, Examples{Features: 8}, 1, "no examples"},
		{"label", w, badLabel, 1, "label of example 2"},
	}
	for _, tc := range tests {
		_, _, err := Evaluate(m, tc.w, tc.ex, tc.workers)
		if !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: error %v, want ErrInvalid containing %q", tc.name, err, tc.contains)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, mode := range []Mode{FedAvg, FedSGD} {
		got, err := ParseMode(mode.String())
		if err != nil || got != mode {
			t.Errorf("ParseMode(%q) = %v, %v", mode.String(), got, err)
		}
	}
	if _, err := ParseMode("fedprox"); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("ParseMode(fedprox) error %v, want ErrInvalid", err)
	}
}

func TestLocalUpdateDoesNotAllocate(t *testing.T) {
	ex := synth(12, 100, 60, 10)
	for _, name := range denseModels {
		m := mustModel(t, name, 60, 10)
		wg := make([]float64, m.Dim())
		m.Init(rand.New(rand.NewPCG(1, 1)), wg)
		tr := NewTrainer(m)
		dst := make([]float64, m.Dim())
		r := rand.New(rand.NewPCG(1, 1))
		idx := seq(50)
		cfg := LocalConfig{Epochs: 1, Batch: 10, LR: 0.1, Mu: 0.1}
		if _, err := tr.LocalUpdate(dst, r, wg, ex, idx, cfg); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := tr.LocalUpdate(dst, r, wg, ex, idx, cfg); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: LocalUpdate allocates %v times per call", name, allocs)
		}
	}
}

// TestLargeBatch checks minibatches larger than the kernel's chunk size.
func TestLargeBatch(t *testing.T) {
	ex := synth(13, 700, 20, 4)
	idx := seq(650)
	for _, name := range denseModels {
		m := mustModel(t, name, 20, 4)
		r := rand.New(rand.NewPCG(1, 3))
		wg := randomParams(r, m.Dim(), 0.2)
		tr := NewTrainer(m)

		want := make([]float64, m.Dim())
		m.Gradient(want, wg, ex, idx)
		got := make([]float64, m.Dim())
		if _, err := tr.LocalUpdate(got, r, wg, ex, idx, LocalConfig{Mode: FedSGD, Batch: 1000}); err != nil {
			t.Fatal(err)
		}
		if e := maxAbsDiff(got, want) / maxAbs(want); e > 1e-4 {
			t.Errorf("%s: FedSGD on %d examples differs from reference by %.3g", name, len(idx), e)
		}

		want = refSGD(m, wg, ex, idx, 3, 0.3, 0.5)
		if _, err := tr.LocalUpdate(got, r, wg, ex, idx, LocalConfig{Steps: 3, Batch: len(idx), LR: 0.3, Mu: 0.5}); err != nil {
			t.Fatal(err)
		}
		if e := maxAbsDiff(got, want) / maxAbs(want); e > 1e-4 {
			t.Errorf("%s: full-batch FedProx on %d examples differs from reference by %.3g", name, len(idx), e)
		}
	}
}
