package audit

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// TestInvertCNNClassifierInput: on the CNN, the analytic attack on fc1
// recovers the classifier's input — the 9,216 pooled convolution features
// of the example — exactly. Checked independently: the features it returns
// are non-negative (ReLU, then max pooling), the fc1 gradient is exactly
// their outer product with the bias gradient, and pushing them through fc1
// and its ReLU gives the fc2 input that the attack on fc2 recovers from the
// same update.
func TestInvertCNNClassifierInput(t *testing.T) {
	split, err := data.Load("fashion-mnist-sample", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := fl.NewModel(fl.CNN, split.Train.Features, split.Train.Classes)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, m.Dim())
	m.Init(rng.Stream(7), w)
	ex := fl.Examples{X: split.Train.X, Y: split.Train.Y, Features: split.Train.Features}
	grad := make([]float64, m.Dim())
	m.Gradient(grad, w, ex, []int{3})

	fcs := FCLayers(m)
	if len(fcs) != 2 || fcs[0].In() != 9216 || fcs[0].Out() != 128 || fcs[1].In() != 128 {
		t.Fatalf("CNN classifier layers %+v", fcs)
	}
	feat, err := InvertFC(grad, fcs[0])
	if err != nil {
		t.Fatal(err)
	}
	gW := grad[fcs[0].Weight.Offset : fcs[0].Weight.Offset+fcs[0].Weight.Len]
	gb := grad[fcs[0].Bias.Offset : fcs[0].Bias.Offset+fcs[0].Bias.Len]
	var scale, nonzero float64
	for _, v := range gW {
		scale = math.Max(scale, math.Abs(v))
	}
	for k, x := range feat {
		if x < -1e-12 {
			t.Fatalf("feature %d = %v: pooled ReLU features are >= 0", k, x)
		}
		if x > 0 {
			nonzero++
		}
		for c := range gb {
			if d := math.Abs(gW[k*128+c] - x*gb[c]); d > 1e-9*scale {
				t.Fatalf("gW[%d][%d] = %v, x·g = %v: not the rank-one gradient of the recovered input", k, c, gW[k*128+c], x*gb[c])
			}
		}
	}
	if nonzero < 100 {
		t.Fatalf("only %v non-zero features recovered", nonzero)
	}
	// Forward the recovered features through fc1 + ReLU with the model's
	// own weights and compare with what the attack on fc2 recovers.
	W1 := w[fcs[0].Weight.Offset : fcs[0].Weight.Offset+fcs[0].Weight.Len]
	b1 := w[fcs[0].Bias.Offset : fcs[0].Bias.Offset+fcs[0].Bias.Len]
	h := make([]float64, 128)
	copy(h, b1)
	for k, x := range feat {
		for j := range h {
			h[j] += x * W1[k*128+j]
		}
	}
	h2, err := InvertFC(grad, fcs[1])
	if err != nil {
		t.Fatal(err)
	}
	for j := range h {
		want := math.Max(h[j], 0)
		if math.Abs(h2[j]-want) > 1e-6*(1+math.Abs(want)) {
			t.Fatalf("hidden unit %d: fc2 attack recovers %v, the recovered features give %v", j, h2[j], want)
		}
	}
}
