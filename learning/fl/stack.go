package fl

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// Activations of a stack layer.
const (
	actNone = iota
	actReLU
	actTanh
)

// stackLayer is one dense layer of a stack and the activation after it.
type stackLayer struct {
	in, out int
	act     int
	w, b    int // offsets of the weight [in, out] (input-major) and bias [out]
}

// stack is a dense network of any depth given by a Spec: dense layers, each
// optionally followed by a ReLU or tanh, then the logits and softmax
// cross-entropy. The dense and mlp models of one or no ReLU hidden layer
// keep their dedicated kernel; a stack runs on plain float32 loops
// (stackKernel).
type stack struct {
	name      string
	in, out   int
	layers    []stackLayer
	dim, maxW int // parameters; widest layer (inputs included)
}

func newStack(name string, s Spec, features, classes int) (*stack, error) {
	m := &stack{name: name, in: features, out: classes, maxW: features}
	in := features
	for i, l := range s[:len(s)-1] {
		switch l.Type {
		case SpecDense:
			out := l.Units
			if i == len(s)-2 {
				out = classes
			}
			if _, ok := denseParams(in, out); !ok {
				return nil, checks.Invalidf("model %s: layer %d has %d×%d weights, too many", name, i+1, in, out)
			}
			m.layers = append(m.layers, stackLayer{in: in, out: out, w: m.dim, b: m.dim + in*out})
			m.dim += (in + 1) * out
			if m.dim > math.MaxInt32 {
				return nil, checks.Invalidf("model %s: more than %d parameters", name, math.MaxInt32)
			}
			m.maxW = max(m.maxW, out)
			in = out
		case SpecReLU:
			m.layers[len(m.layers)-1].act = actReLU
		case SpecTanh:
			m.layers[len(m.layers)-1].act = actTanh
		}
	}
	return m, nil
}

func (m *stack) Name() string    { return m.name }
func (m *stack) Dim() int        { return m.dim }
func (m *stack) Features() int   { return m.in }
func (m *stack) Classes() int    { return m.out }
func (m *stack) newKernel() kern { return &stackKernel{m: m} }
func (m *stack) String() string {
	return fmt.Sprintf("%s(%d→%d classes, d=%d)", m.name, m.in, m.out, m.dim)
}

// Layers returns fc1.weight [in, out], fc1.bias [out], fc2.weight, … for
// the dense layers in order, like the mlp.
func (m *stack) Layers() []Layer {
	var ls []Layer
	for i, l := range m.layers {
		ls = append(ls,
			Layer{Name: fmt.Sprintf("fc%d.weight", i+1), Offset: l.w, Len: l.in * l.out, Shape: []int{l.in, l.out}},
			Layer{Name: fmt.Sprintf("fc%d.bias", i+1), Offset: l.b, Len: l.out, Shape: []int{l.out}})
	}
	return ls
}

// Init draws the weights of a layer followed by a ReLU He-uniform,
// U(±√(6/in)), the others (tanh, logits) Glorot-uniform, U(±√(6/(in+out))),
// as the mlp does, layer by layer in order; biases are zero.
func (m *stack) Init(r *rand.Rand, w []float64) {
	if len(w) != m.dim {
		panic(fmt.Sprintf("fl: Init: len(w) = %d, want %d", len(w), m.dim))
	}
	clear(w)
	for _, l := range m.layers {
		a := math.Sqrt(6 / float64(l.in+l.out))
		if l.act == actReLU {
			a = math.Sqrt(6 / float64(l.in))
		}
		for i := l.w; i < l.b; i++ {
			w[i] = a * (2*r.Float64() - 1)
		}
	}
}

func (m *stack) Loss(w []float64, ex Examples, idx []int) float64 {
	return referenceLoss(m, m.dim, m.in, w, ex, idx)
}

func (m *stack) Gradient(grad, w []float64, ex Examples, idx []int) float64 {
	return referenceGradient(m, m.dim, m.in, grad, w, ex, idx)
}

func activate(act int, z float64) float64 {
	switch act {
	case actReLU:
		return max(z, 0)
	case actTanh:
		return math.Tanh(z)
	}
	return z
}

// activateDeriv is the derivative of the activation at the point whose
// activation is a.
func activateDeriv(act int, a float64) float64 {
	switch act {
	case actReLU:
		if a > 0 {
			return 1
		}
		return 0
	case actTanh:
		return 1 - a*a
	}
	return 1
}

// lossGrad is the float64 reference: mean loss, and grad += ∇ if grad != nil.
func (m *stack) lossGrad(grad, w []float64, ex Examples, idx []int) float64 {
	acts := make([][]float64, len(m.layers)+1)
	acts[0] = make([]float64, m.in)
	for i, l := range m.layers {
		acts[i+1] = make([]float64, l.out)
	}
	delta := make([]float64, m.maxW)
	prev := make([]float64, m.maxW)
	inv := 1 / float64(len(idx))
	var total float64
	for _, e := range idx {
		for f := range m.in {
			acts[0][f] = float64(ex.X[e*m.in+f])
		}
		for i, l := range m.layers {
			a, z := acts[i], acts[i+1]
			for c := range l.out {
				z[c] = w[l.b+c]
			}
			for k := range l.in {
				if a[k] == 0 {
					continue
				}
				row := w[l.w+k*l.out : l.w+(k+1)*l.out]
				for c := range l.out {
					z[c] += a[k] * row[c]
				}
			}
			for c := range z {
				z[c] = activate(l.act, z[c])
			}
		}
		z := acts[len(m.layers)]
		y := int(ex.Y[e])
		mx := z[0]
		for _, v := range z {
			mx = max(mx, v)
		}
		var sum float64
		for _, v := range z {
			sum += math.Exp(v - mx)
		}
		lse := mx + math.Log(sum)
		total += lse - z[y]
		if grad == nil {
			continue
		}
		d := delta[:m.out]
		for c, v := range z {
			d[c] = math.Exp(v-lse) * inv
		}
		d[y] -= inv
		for i := len(m.layers) - 1; i >= 0; i-- {
			l := m.layers[i]
			a := acts[i]
			for c := range l.out {
				grad[l.b+c] += d[c]
			}
			p := prev[:l.in]
			for k := range l.in {
				row := w[l.w+k*l.out : l.w+(k+1)*l.out]
				g := grad[l.w+k*l.out : l.w+(k+1)*l.out]
				var s float64
				for c := range l.out {
					g[c] += a[k] * d[c]
					s += row[c] * d[c]
				}
				if i > 0 {
					s *= activateDeriv(m.layers[i-1].act, a[k])
				}
				p[k] = s
			}
			delta, prev = prev, delta
			d = delta[:l.in]
		}
	}
	return total * inv
}

// stackKernel is the float32 kernel of a stack: per example, every layer's
// activations (forward) and deltas (back), so that accumulate reads no
// parameter.
type stackKernel struct {
	m    *stack
	n    int
	acts [][]float32 // acts[i]: n × (inputs of layer i); acts[len]: logits/deltas
	dels [][]float32 // dels[i]: n × (outputs of layer i), ∂ℓ/∂pre-activation
}

func (k *stackKernel) chunk() int { return maxChunk }

func (k *stackKernel) reserve(n int) {
	if k.acts != nil && len(k.acts[0]) >= n*k.m.in {
		return
	}
	m := k.m
	k.acts = make([][]float32, len(m.layers)+1)
	k.dels = make([][]float32, len(m.layers))
	k.acts[0] = make([]float32, n*m.in)
	for i, l := range m.layers {
		k.acts[i+1] = make([]float32, n*l.out)
		k.dels[i] = make([]float32, n*l.out)
	}
}

func (k *stackKernel) forward(w []float32, ex Examples, batch []int, back bool) (loss float64, correct int) {
	m := k.m
	k.reserve(len(batch))
	k.n = len(batch)
	last := len(m.layers) - 1
	for b, e := range batch {
		copy(k.acts[0][b*m.in:(b+1)*m.in], ex.X[e*m.in:(e+1)*m.in])
		for i, l := range m.layers {
			a := k.acts[i][b*l.in : (b+1)*l.in]
			z := k.acts[i+1][b*l.out : (b+1)*l.out]
			copy(z, w[l.b:l.b+l.out])
			for kk, v := range a {
				if v == 0 {
					continue
				}
				row := w[l.w+kk*l.out : l.w+(kk+1)*l.out]
				for c := range z {
					z[c] += v * row[c]
				}
			}
			switch l.act {
			case actReLU:
				for c, v := range z {
					z[c] = max(v, 0)
				}
			case actTanh:
				for c, v := range z {
					z[c] = float32(math.Tanh(float64(v)))
				}
			}
		}
		z := k.acts[last+1][b*m.out : (b+1)*m.out]
		d := z // softmaxDelta leaves z alone without back
		if back {
			d = k.dels[last][b*m.out : (b+1)*m.out]
			copy(d, z)
		}
		l, ok := softmaxDelta(d, int(ex.Y[e]), back)
		loss += l
		if ok {
			correct++
		}
		if !back {
			continue
		}
		for i := last; i > 0; i-- {
			l := m.layers[i]
			d := k.dels[i][b*l.out : (b+1)*l.out]
			p := k.dels[i-1][b*l.in : (b+1)*l.in]
			a := k.acts[i][b*l.in : (b+1)*l.in]
			act := m.layers[i-1].act
			for kk := range p {
				row := w[l.w+kk*l.out : l.w+(kk+1)*l.out]
				var s float32
				for c, v := range d {
					s += row[c] * v
				}
				switch act {
				case actReLU:
					if a[kk] <= 0 {
						s = 0
					}
				case actTanh:
					s *= 1 - a[kk]*a[kk]
				}
				p[kk] = s
			}
		}
	}
	return loss, correct
}

func (k *stackKernel) accumulate(target []float32, s float32) {
	m := k.m
	for i, l := range m.layers {
		W, bias := target[l.w:l.b], target[l.b:l.b+l.out]
		for b := range k.n {
			a := k.acts[i][b*l.in : (b+1)*l.in]
			d := k.dels[i][b*l.out : (b+1)*l.out]
			for c, v := range d {
				bias[c] += s * v
			}
			for kk, v := range a {
				if v == 0 {
					continue
				}
				sv := s * v
				row := W[kk*l.out : (kk+1)*l.out]
				for c, dv := range d {
					row[c] += sv * dv
				}
			}
		}
	}
}
