package onnx_test

import (
	"math"
	"slices"
	"testing"

	"github.com/advancedclimatesystems/gonnx"
	onnxpb "github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"
	"gorgonia.org/tensor"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/learning/onnx"
)

// probTol is the largest difference allowed between a class probability of
// the ONNX graph (float32 throughout) and of shufflefl's evaluation
// (float32 logits, float64 softmax).
const probTol = 1e-5

// sample returns the embedded Fashion-MNIST sample: 2,000 training and 500
// test images.
func sample(t *testing.T) data.Split {
	t.Helper()
	s, err := data.Load("fashion-mnist-sample", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// trained returns model spec trained for a few SGD steps on the training
// images, so that its weights are those of a real (if short) run.
func trained(t *testing.T, spec string, train *data.Dataset, steps int) (fl.Model, []float64) {
	t.Helper()
	m, err := fl.NewModel(spec, train.Features, train.Classes)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, m.Dim())
	m.Init(rng.Stream(7, rng.LabelInit), w)
	ex := fl.Examples{X: train.X, Y: train.Y, Features: train.Features}
	idx := make([]int, train.Len())
	for i := range idx {
		idx[i] = i
	}
	delta := make([]float64, m.Dim())
	cfg := fl.LocalConfig{Steps: steps, Batch: 32, LR: 0.05}
	if _, err := fl.NewTrainer(m).LocalUpdate(delta, rng.Stream(7, rng.LabelTraining, 0, 0), w, ex, idx, cfg); err != nil {
		t.Fatal(err)
	}
	for i, d := range delta {
		w[i] += d
	}
	return m, w
}

// reference returns shufflefl's own class probabilities and predictions of
// the first n test examples, from fl.Evaluate on each example alone with
// each class as its label: the loss is −log p(class) and the accuracy is 1
// exactly when the class is the prediction.
func reference(t *testing.T, m fl.Model, w []float64, test *data.Dataset, n int) ([][]float64, []int) {
	t.Helper()
	probs := make([][]float64, n)
	pred := make([]int, n)
	for i := range n {
		probs[i] = make([]float64, m.Classes())
		pred[i] = -1
		for c := range m.Classes() {
			ex := fl.Examples{X: test.Row(i), Y: []uint8{uint8(c)}, Features: test.Features}
			acc, loss, err := fl.Evaluate(m, w, ex, 1)
			if err != nil {
				t.Fatal(err)
			}
			probs[i][c] = math.Exp(-loss)
			if acc == 1 {
				pred[i] = c
			}
		}
	}
	return probs, pred
}

// run runs an encoded model with gonnx on the given input tensor and
// returns its output.
func run(t *testing.T, b []byte, in tensor.Tensor) tensor.Tensor {
	t.Helper()
	mp, err := gonnx.ModelProtoFromBytes(b)
	if err != nil {
		t.Fatalf("gonnx cannot parse the model: %v", err)
	}
	return runProto(t, mp, in)
}

func runProto(t *testing.T, mp *onnxpb.ModelProto, in tensor.Tensor) tensor.Tensor {
	t.Helper()
	model, err := gonnx.NewModel(mp)
	if err != nil {
		t.Fatalf("gonnx cannot load the model: %v", err)
	}
	name := mp.Graph.Input[0].Name
	out, err := model.Run(gonnx.Tensors{name: in})
	if err != nil {
		t.Fatalf("gonnx: %v", err)
	}
	return out[mp.Graph.Output[0].Name]
}

// compare checks the ONNX probabilities got ([n, classes], row-major)
// against shufflefl's.
func compare(t *testing.T, got []float32, probs [][]float64, pred []int) {
	t.Helper()
	classes := len(probs[0])
	if len(got) != len(probs)*classes {
		t.Fatalf("ONNX output has %d values, want %d×%d", len(got), len(probs), classes)
	}
	var worst float64
	for i, p := range probs {
		row := got[i*classes : (i+1)*classes]
		arg := 0
		for c, v := range row {
			if v > row[arg] {
				arg = c
			}
			worst = max(worst, math.Abs(float64(v)-p[c]))
		}
		if arg != pred[i] {
			t.Errorf("example %d: ONNX predicts %d, shufflefl %d (ONNX %v, shufflefl %v)", i, arg, pred[i], row, p)
		}
	}
	if worst > probTol {
		t.Errorf("largest probability difference %.3g > %g", worst, probTol)
	}
	t.Logf("%d examples: same predictions, largest probability difference %.2g", len(probs), worst)
}

func TestGonnxDenseModels(t *testing.T) {
	s := sample(t)
	const n = 500 // the whole test sample
	for _, spec := range []string{fl.LogReg, fl.MLP, "mlp:64,32", "dense=48,tanh,dense=24,relu,dense=10,softmax"} {
		t.Run(spec, func(t *testing.T) {
			m, w := trained(t, spec, s.Train, 60)
			b, err := onnx.Encode(m, w, nil)
			if err != nil {
				t.Fatal(err)
			}
			probs, pred := reference(t, m, w, s.Test, n)
			in := tensor.New(tensor.WithShape(n, s.Test.Features), tensor.WithBacking(slices.Clone(s.Test.X[:n*s.Test.Features])))
			compare(t, run(t, b, in).Data().([]float32), probs, pred)
		})
	}
}

// TestGonnxCNN runs the cnn's graph in gonnx, which has no MaxPool (v1.1.0
// implements operator set 13 without it): the graph is cut at its MaxPool
// node, gonnx runs the part before it (Reshape, Conv, Relu, Conv, Relu) and
// the part after it (Transpose, Flatten, Gemm, Relu, Gemm, Softmax), and the
// test pools in between, 2×2 with stride 2 as the node's attributes say.
// The python test checks the whole graph with onnx.checker.
func TestGonnxCNN(t *testing.T) {
	s := sample(t)
	const n = 24
	m, w := trained(t, fl.CNN, s.Train, 8)
	b, err := onnx.Encode(m, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	mp, err := gonnx.ModelProtoFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	nodes := mp.Graph.Node
	at := slices.IndexFunc(nodes, func(n *onnxpb.NodeProto) bool { return n.OpType == "MaxPool" })
	if at < 0 {
		t.Fatal("the cnn's graph has no MaxPool node")
	}
	pool := nodes[at]
	for _, a := range pool.Attribute {
		if (a.Name == "kernel_shape" || a.Name == "strides") && !slices.Equal(a.Ints, []int64{2, 2}) {
			t.Fatalf("MaxPool %s = %v, want [2 2]", a.Name, a.Ints)
		}
	}
	side := int(math.Sqrt(float64(s.Test.Features)))
	c, h := fl.CNNConv2, side-4 // the second convolution's output [n, 64, side−4, side−4]

	before := proto.Clone(mp).(*onnxpb.ModelProto)
	before.Graph.Node = nodes[:at]
	before.Graph.Output = []*onnxpb.ValueInfoProto{valueInfo(pool.Input[0], n, c, h, h)}
	in := tensor.New(tensor.WithShape(n, s.Test.Features), tensor.WithBacking(slices.Clone(s.Test.X[:n*s.Test.Features])))
	conv := runProto(t, before, in).Data().([]float32)

	p := h / 2
	pooled := make([]float32, n*c*p*p)
	for i := range n * c {
		img, o := conv[i*h*h:(i+1)*h*h], pooled[i*p*p:(i+1)*p*p]
		for r := range p {
			for q := range p {
				o[r*p+q] = max(img[2*r*h+2*q], img[2*r*h+2*q+1], img[(2*r+1)*h+2*q], img[(2*r+1)*h+2*q+1])
			}
		}
	}
	after := proto.Clone(mp).(*onnxpb.ModelProto)
	after.Graph.Node = nodes[at+1:]
	after.Graph.Input = []*onnxpb.ValueInfoProto{valueInfo(pool.Output[0], n, c, p, p)}
	got := runProto(t, after, tensor.New(tensor.WithShape(n, c, p, p), tensor.WithBacking(pooled))).Data().([]float32)

	probs, pred := reference(t, m, w, s.Test, n)
	compare(t, got, probs, pred)
}

// valueInfo is a float tensor's ValueInfoProto of the given shape.
func valueInfo(name string, dims ...int) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
	}
	return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnxpb.TensorProto_FLOAT), Shape: shape},
	}}}
}
