package fl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
)

// Model is a differentiable classifier whose parameters are one flat vector.
// The interface is sealed: only the models of this package (see NewModel)
// implement it, because the trainer runs their dedicated float32 kernels.
// A Model is immutable and safe for concurrent use.
type Model interface {
	// Name is the preset name ("logreg", "mlp" or "cnn") or the canonical
	// text of the model's specification (Spec.String, e.g. "mlp:256,128").
	Name() string
	// Dim is the number d of parameters.
	Dim() int
	// Features is the input dimension.
	Features() int
	// Classes is the number of output classes.
	Classes() int
	// Init writes initial parameters into w, drawing from r (logreg: zeros;
	// mlp: He-uniform W1, Glorot-uniform W2, zero biases; cnn: see
	// NewModel). It panics if len(w) != Dim().
	Init(r *rand.Rand, w []float64)
	// Loss returns the mean softmax cross-entropy of the examples idx of ex
	// at parameters w, computed in float64. It panics if the shapes do not
	// match the model or idx is empty; labels must be < Classes().
	Loss(w []float64, ex Examples, idx []int) float64
	// Gradient writes into grad the gradient of Loss(w, ex, idx) with
	// respect to w and returns the loss; float64 reference code for tests and
	// for callers that need full precision. It panics like Loss, and if
	// len(grad) != Dim().
	Gradient(grad, w []float64, ex Examples, idx []int) float64
	// Layers lists the named blocks of the flat parameter vector in order;
	// they tile [0, Dim()) without gaps. Per-layer mechanisms (the
	// group-privacy paper's per-layer sanitization) and attacks (gradient
	// inversion of a fully connected layer) use them.
	Layers() []Layer

	// newKernel returns the float32 training and evaluation kernel of the
	// model, with its own scratch buffers (one per goroutine).
	newKernel() kern
}

// kern is the float32 kernel of a model: the scratch buffers of one
// goroutine and the forward and backward passes of a minibatch.
//
// A step is split in two so that callers can update the parameters in place:
// forward reads the parameters and keeps everything the gradient needs;
// accumulate then adds a multiple of the gradient to a target vector without
// reading the parameters, so the target may be the parameters themselves.
type kern interface {
	// forward evaluates the model with parameters w on the examples batch of
	// ex and returns the sum (not the mean) of their losses and how many are
	// classified correctly. If back is set it also prepares what accumulate
	// needs; then len(batch) must not exceed chunk(). Shapes are the
	// caller's responsibility.
	forward(w []float32, ex Examples, batch []int, back bool) (loss float64, correct int)
	// accumulate adds s·Σ_b ∇ℓ_b, the sum of the per-example gradients of
	// the last forward pass (run with back set), to target.
	accumulate(target []float32, s float32)
	// chunk is the largest minibatch forward accepts with back set.
	chunk() int
}

// Model names accepted by NewModel.
const (
	LogReg = "logreg"
	MLP    = "mlp"
	CNN    = "cnn"
)

// MLPHidden is the width of the hidden layer of the "mlp" model.
const MLPHidden = 128

// Models returns the names accepted by NewModel, sorted.
func Models() []string { return []string{CNN, LogReg, MLP} }

// NewModel returns the model of a preset name or a specification (see
// ParseSpec) for inputs of the given dimension and number of classes; its
// Name is the specification's canonical text (Spec.String). An unknown
// name, a bad specification, a non-positive size, a logits layer whose
// width is not classes, or an input the model cannot take (cnn: not a
// square image of side at least CNNMinSide) is an error wrapping
// checks.ErrInvalid.
//
// The "cnn" model is the convolutional network of the group-privacy paper
// (Galli et al., Table 5; see newCNN for the architecture, the parameter
// layout and its initialisation).
func NewModel(name string, features, classes int) (Model, error) {
	if err := checks.IntAtLeast("features", features, 1); err != nil {
		return nil, err
	}
	if err := checks.IntInRange("classes", classes, 2, math.MaxUint8+1); err != nil {
		return nil, err
	}
	s, err := ParseSpec(name)
	if err != nil {
		return nil, err
	}
	return s.build(features, classes)
}

// Layer is one named block of a model's flat parameter vector: parameters
// [Offset, Offset+Len). Shape gives its tensor shape in storage order
// (row-major): a fully connected weight is [in, out] (input-major: the
// weights leaving input k are contiguous), a bias is [out].
type Layer struct {
	Name   string
	Offset int
	Len    int
	Shape  []int
}

// dense is a fully connected network with zero or one ReLU hidden layer;
// hidden == 0 is multinomial logistic regression.
type dense struct {
	name            string
	in, hidden, out int
	// Offsets of the blocks in the flat parameter vector. For logreg, w1/b1
	// are W and b, and w2/b2 are unused (equal to dim).
	w1, b1, w2, b2, dim int
}

func newDense(name string, in, hidden, out int) *dense {
	m := &dense{name: name, in: in, hidden: hidden, out: out}
	if hidden == 0 {
		m.w1, m.b1 = 0, in*out
		m.dim = m.b1 + out
		m.w2, m.b2 = m.dim, m.dim
		return m
	}
	m.w1 = 0
	m.b1 = in * hidden
	m.w2 = m.b1 + hidden
	m.b2 = m.w2 + hidden*out
	m.dim = m.b2 + out
	return m
}

func (m *dense) Name() string  { return m.name }
func (m *dense) Dim() int      { return m.dim }
func (m *dense) Features() int { return m.in }
func (m *dense) Classes() int  { return m.out }
func (m *dense) newKernel() kern {
	return newKernel(m)
}
func (m *dense) String() string {
	return fmt.Sprintf("%s(%d→%d→%d, d=%d)", m.name, m.in, m.hidden, m.out, m.dim)
}

// Layers returns fc1.weight, fc1.bias (logreg: the only layer) and, with a
// hidden layer, fc2.weight, fc2.bias.
func (m *dense) Layers() []Layer {
	if m.hidden == 0 {
		return []Layer{
			{Name: "fc1.weight", Offset: m.w1, Len: m.in * m.out, Shape: []int{m.in, m.out}},
			{Name: "fc1.bias", Offset: m.b1, Len: m.out, Shape: []int{m.out}},
		}
	}
	return []Layer{
		{Name: "fc1.weight", Offset: m.w1, Len: m.in * m.hidden, Shape: []int{m.in, m.hidden}},
		{Name: "fc1.bias", Offset: m.b1, Len: m.hidden, Shape: []int{m.hidden}},
		{Name: "fc2.weight", Offset: m.w2, Len: m.hidden * m.out, Shape: []int{m.hidden, m.out}},
		{Name: "fc2.bias", Offset: m.b2, Len: m.out, Shape: []int{m.out}},
	}
}

func (m *dense) Init(r *rand.Rand, w []float64) {
	if len(w) != m.dim {
		panic(fmt.Sprintf("fl: Init: len(w) = %d, want %d", len(w), m.dim))
	}
	clear(w)
	if m.hidden == 0 {
		return
	}
	a1 := math.Sqrt(6 / float64(m.in)) // He-uniform for the ReLU layer
	for i := m.w1; i < m.b1; i++ {
		w[i] = a1 * (2*r.Float64() - 1)
	}
	a2 := math.Sqrt(6 / float64(m.hidden+m.out)) // Glorot-uniform
	for i := m.w2; i < m.b2; i++ {
		w[i] = a2 * (2*r.Float64() - 1)
	}
}

// checkModelArgs panics unless w has dim parameters, ex has features
// features and consistent lengths, and idx is not empty: the contract of
// every model's Loss and Gradient.
func checkModelArgs(op string, dim, features int, w []float64, ex Examples, idx []int) {
	if len(w) != dim {
		panic(fmt.Sprintf("fl: %s: len(w) = %d, want %d", op, len(w), dim))
	}
	if ex.Features != features || len(ex.X) != len(ex.Y)*ex.Features {
		panic(fmt.Sprintf("fl: %s: examples of %d features (%d values, %d labels) for a model of %d features", op, ex.Features, len(ex.X), len(ex.Y), features))
	}
	if len(idx) == 0 {
		panic(fmt.Sprintf("fl: %s: no examples", op))
	}
}

// lossGrader is a model's float64 reference: the mean loss of the examples
// idx, and grad += its gradient when grad is not nil.
type lossGrader interface {
	lossGrad(grad, w []float64, ex Examples, idx []int) float64
}

// referenceLoss is every model's Loss: the arguments checked, then the
// float64 reference.
func referenceLoss(m lossGrader, dim, features int, w []float64, ex Examples, idx []int) float64 {
	checkModelArgs("Loss", dim, features, w, ex, idx)
	return m.lossGrad(nil, w, ex, idx)
}

// referenceGradient is every model's Gradient: the arguments checked (grad
// must have dim entries), grad cleared, then the float64 reference.
func referenceGradient(m lossGrader, dim, features int, grad, w []float64, ex Examples, idx []int) float64 {
	checkModelArgs("Gradient", dim, features, w, ex, idx)
	if len(grad) != dim {
		panic(fmt.Sprintf("fl: Gradient: len(grad) = %d, want %d", len(grad), dim))
	}
	clear(grad)
	return m.lossGrad(grad, w, ex, idx)
}

func (m *dense) Loss(w []float64, ex Examples, idx []int) float64 {
	return referenceLoss(m, m.dim, m.in, w, ex, idx)
}

func (m *dense) Gradient(grad, w []float64, ex Examples, idx []int) float64 {
	return referenceGradient(m, m.dim, m.in, grad, w, ex, idx)
}

// lossGrad is the float64 reference: mean loss, and grad += ∇ if grad != nil.
func (m *dense) lossGrad(grad, w []float64, ex Examples, idx []int) float64 {
	h := make([]float64, m.hidden)
	z := make([]float64, m.out)
	dh := make([]float64, m.hidden)
	inv := 1 / float64(len(idx))
	var total float64
	for _, i := range idx {
		x := ex.X[i*m.in : (i+1)*m.in]
		y := int(ex.Y[i])
		// Forward.
		var a []float64 // input of the output layer
		var wo, bo int  // offsets of the output layer's W and b
		if m.hidden == 0 {
			wo, bo = m.w1, m.b1
		} else {
			copy(h, w[m.b1:m.b1+m.hidden])
			for k, xk := range x {
				row := w[m.w1+k*m.hidden : m.w1+(k+1)*m.hidden]
				for j := range h {
					h[j] += float64(xk) * row[j]
				}
			}
			for j := range h {
				h[j] = max(h[j], 0)
			}
			a = h
			wo, bo = m.w2, m.b2
		}
		copy(z, w[bo:bo+m.out])
		if a == nil {
			for k, xk := range x {
				row := w[wo+k*m.out : wo+(k+1)*m.out]
				for c := range z {
					z[c] += float64(xk) * row[c]
				}
			}
		} else {
			for j, aj := range a {
				row := w[wo+j*m.out : wo+(j+1)*m.out]
				for c := range z {
					z[c] += aj * row[c]
				}
			}
		}
		zmax := slices.Max(z)
		var s float64
		for _, zc := range z {
			s += math.Exp(zc - zmax)
		}
		lse := zmax + math.Log(s)
		total += lse - z[y]
		if grad == nil {
			continue
		}
		// Backward: dz = (softmax(z) − onehot(y)) / n.
		for c := range z {
			z[c] = math.Exp(z[c]-lse) * inv
		}
		z[y] -= inv
		for c, dz := range z {
			grad[bo+c] += dz
		}
		if a == nil {
			for k, xk := range x {
				row := grad[wo+k*m.out : wo+(k+1)*m.out]
				for c, dz := range z {
					row[c] += float64(xk) * dz
				}
			}
			continue
		}
		for j, aj := range a {
			row := grad[wo+j*m.out : wo+(j+1)*m.out]
			wrow := w[wo+j*m.out : wo+(j+1)*m.out]
			var d float64
			for c, dz := range z {
				row[c] += aj * dz
				d += wrow[c] * dz
			}
			if aj > 0 {
				dh[j] = d
			} else {
				dh[j] = 0
			}
		}
		for j, d := range dh {
			grad[m.b1+j] += d
		}
		for k, xk := range x {
			row := grad[m.w1+k*m.hidden : m.w1+(k+1)*m.hidden]
			for j, d := range dh {
				row[j] += float64(xk) * d
			}
		}
	}
	return total * inv
}
