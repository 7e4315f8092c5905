package fl

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shufflefl/shufflefl/checks"
)

// Layer kinds of a model specification.
const (
	SpecDense   = "dense"   // fully connected: units
	SpecConv2D  = "conv2d"  // convolution: filters, kernel, stride, padding
	SpecMaxPool = "maxpool" // max pooling: size (stride = size, floor)
	SpecReLU    = "relu"
	SpecTanh    = "tanh"
	SpecFlatten = "flatten"
	SpecSoftmax = "softmax" // softmax cross-entropy head (the loss)
)

// LayerSpec is one layer of a model specification. Only the fields of its
// Type are meaningful; the others are zero.
type LayerSpec struct {
	Type    string `yaml:"type"`
	Units   int    `yaml:"units,omitempty"`
	Filters int    `yaml:"filters,omitempty"`
	Kernel  int    `yaml:"kernel,omitempty"`
	Stride  int    `yaml:"stride,omitempty"`
	Padding int    `yaml:"padding,omitempty"`
	Size    int    `yaml:"size,omitempty"`
}

// Spec is a model specification: its layers from input to loss. The input
// is the data's feature vector (a square single-channel image for a spec
// that starts with conv2d or maxpool); the last layer is softmax, preceded
// by the dense layer of the classes' logits.
type Spec []LayerSpec

// String is the canonical text of s, which ParseSpec reads back into s: the
// preset name when s is a preset's layers with the logits' width left to
// the data (dense=0: ParseSpec's layers of a preset), "mlp:W1,W2,…" for
// such a ReLU dense stack, else the layers separated by commas, each "kind"
// or "kind=a/b/…" (dense=units, conv2d=filters/kernel/stride/padding,
// maxpool=size).
func (s Spec) String() string {
	for _, p := range []string{LogReg, MLP, CNN} {
		if ps, _ := ParseSpec(p); slices.Equal(ps, s) {
			return p
		}
	}
	if w, ok := s.mlpWidths(); ok {
		ws := make([]string, len(w))
		for i, v := range w {
			ws[i] = strconv.Itoa(v)
		}
		return "mlp:" + strings.Join(ws, ",")
	}
	parts := make([]string, len(s))
	for i, l := range s {
		switch l.Type {
		case SpecDense:
			parts[i] = fmt.Sprintf("dense=%d", l.Units)
		case SpecConv2D:
			parts[i] = fmt.Sprintf("conv2d=%d/%d/%d/%d", l.Filters, l.Kernel, l.Stride, l.Padding)
		case SpecMaxPool:
			parts[i] = fmt.Sprintf("maxpool=%d", l.Size)
		default:
			parts[i] = l.Type
		}
	}
	return strings.Join(parts, ",")
}

// mlpWidths returns the hidden widths of s if s is dense=W1, relu, …,
// dense=Wk, relu, dense=0, softmax (k ≥ 1).
func (s Spec) mlpWidths() ([]int, bool) {
	n := len(s)
	if n < 4 || n%2 != 0 || s[n-1] != (LayerSpec{Type: SpecSoftmax}) || s[n-2] != (LayerSpec{Type: SpecDense}) {
		return nil, false
	}
	var w []int
	for i := 0; i < n-2; i += 2 {
		if s[i].Type != SpecDense || s[i].Units < 1 || s[i+1] != (LayerSpec{Type: SpecReLU}) {
			return nil, false
		}
		w = append(w, s[i].Units)
	}
	return w, true
}

// presetSpec returns the layers of a preset, with the logits' width 0 (the
// data's classes).
func presetSpec(name string) (Spec, bool) {
	switch name {
	case LogReg:
		return Spec{{Type: SpecDense}, {Type: SpecSoftmax}}, true
	case MLP:
		return Spec{{Type: SpecDense, Units: MLPHidden}, {Type: SpecReLU}, {Type: SpecDense}, {Type: SpecSoftmax}}, true
	case CNN:
		return Spec{
			{Type: SpecConv2D, Filters: CNNConv1, Kernel: 3, Stride: 1}, {Type: SpecReLU},
			{Type: SpecConv2D, Filters: CNNConv2, Kernel: 3, Stride: 1}, {Type: SpecReLU},
			{Type: SpecMaxPool, Size: 2}, {Type: SpecFlatten},
			{Type: SpecDense, Units: CNNFC}, {Type: SpecReLU},
			{Type: SpecDense}, {Type: SpecSoftmax},
		}, true
	}
	return nil, false
}

// ParseSpec reads a model specification from its text: a preset ("logreg",
// "mlp", "cnn"), "mlp:W1,W2,…" (dense layers of those widths, each followed
// by a ReLU, then the logits and softmax cross-entropy), or the layers of
// Spec.String separated by commas. Errors wrap checks.ErrInvalid and name
// the offending part in one line. ParseSpec checks the layers' order and
// arguments; the shapes against the data are NewModel's.
func ParseSpec(text string) (Spec, error) {
	t := strings.TrimSpace(text)
	if s, ok := presetSpec(t); ok {
		return s, nil
	}
	if ws, ok := strings.CutPrefix(t, "mlp:"); ok {
		var s Spec
		for _, f := range strings.Split(ws, ",") {
			u, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || u < 1 || u > maxWidth {
				return nil, checks.Invalidf("model spec %q: hidden width %q is not an integer in [1, %d]", text, f, maxWidth)
			}
			s = append(s, LayerSpec{Type: SpecDense, Units: u}, LayerSpec{Type: SpecReLU})
		}
		s = append(s, LayerSpec{Type: SpecDense}, LayerSpec{Type: SpecSoftmax})
		return s, nil
	}
	if !strings.ContainsAny(t, ",=") {
		return nil, checks.Invalidf("unknown model %q (known models: %s, mlp:W1,W2,… or a layer list such as dense=128,relu,dense=10,softmax; see --model-spec)", text, strings.Join(Models(), ", "))
	}
	var s Spec
	for _, part := range strings.Split(t, ",") {
		kind, args, _ := strings.Cut(strings.TrimSpace(part), "=")
		var v []int
		if args != "" {
			for _, a := range strings.Split(args, "/") {
				x, err := strconv.Atoi(a)
				if err != nil {
					return nil, checks.Invalidf("model spec %q: layer %q: argument %q is not an integer", text, part, a)
				}
				v = append(v, x)
			}
		}
		l, err := layerFromArgs(kind, v)
		if err != nil {
			return nil, checks.Invalidf("model spec %q: layer %q: %v", text, part, err)
		}
		s = append(s, l)
	}
	if err := s.Validate(); err != nil {
		return nil, checks.Invalidf("model spec %q: %v", text, err)
	}
	return s, nil
}

// maxWidth bounds a dense layer's units and a convolution's filters.
const maxWidth = 1 << 16

// layerFromArgs builds a layer of the given kind from its text arguments.
func layerFromArgs(kind string, v []int) (LayerSpec, error) {
	want := map[string]int{SpecDense: 1, SpecConv2D: 4, SpecMaxPool: 1, SpecReLU: 0, SpecTanh: 0, SpecFlatten: 0, SpecSoftmax: 0}
	n, ok := want[kind]
	if !ok {
		return LayerSpec{}, fmt.Errorf("unknown layer type %q (known: dense, conv2d, maxpool, relu, tanh, flatten, softmax)", kind)
	}
	if len(v) != n {
		return LayerSpec{}, fmt.Errorf("%s takes %d arguments, got %d", kind, n, len(v))
	}
	l := LayerSpec{Type: kind}
	switch kind {
	case SpecDense:
		l.Units = v[0]
	case SpecConv2D:
		l.Filters, l.Kernel, l.Stride, l.Padding = v[0], v[1], v[2], v[3]
	case SpecMaxPool:
		l.Size = v[0]
	}
	return l, nil
}

// ParseSpecYAML reads a model specification from a YAML file's contents: a
// list of layers, each a mapping with "type" and its arguments, e.g.
//
//   - {type: dense, units: 256}
//   - {type: relu}
//   - {type: dense, units: 10}
//   - {type: softmax}
//
// Unknown keys are refused. Errors wrap checks.ErrInvalid.
func ParseSpecYAML(b []byte) (Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, checks.Invalidf("model spec: %v", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if err := s.Validate(); err != nil {
		return nil, checks.Invalidf("model spec: %v", err)
	}
	return s, nil
}

// Validate checks the layers' order and arguments: at least one dense
// layer, softmax last and only there, preceded by a dense layer; conv2d and
// maxpool only before flatten (and flatten once, after them); positive
// sizes, stride ≥ 1, 0 ≤ padding < kernel. A dense layer's units may be 0
// only in the logits layer (the data's classes).
func (s Spec) Validate() error {
	if len(s) < 2 {
		return fmt.Errorf("%d layers: a model needs at least a dense layer and softmax", len(s))
	}
	flat := false
	for i, l := range s {
		pos := fmt.Sprintf("layer %d (%s)", i+1, l.Type)
		extra := l
		extra.Type = ""
		switch l.Type {
		case SpecDense:
			if l.Units < 0 || l.Units > maxWidth || (l.Units == 0 && i != len(s)-2) {
				return fmt.Errorf("%s: units %d not in [1, %d]", pos, l.Units, maxWidth)
			}
			extra.Units = 0
			flat = true
		case SpecConv2D:
			if flat {
				return fmt.Errorf("%s: a convolution after flatten or dense", pos)
			}
			switch {
			case l.Filters < 1 || l.Filters > maxWidth:
				return fmt.Errorf("%s: filters %d not in [1, %d]", pos, l.Filters, maxWidth)
			case l.Kernel < 1:
				return fmt.Errorf("%s: kernel %d < 1", pos, l.Kernel)
			case l.Stride < 1:
				return fmt.Errorf("%s: stride %d < 1", pos, l.Stride)
			case l.Padding < 0 || l.Padding >= l.Kernel:
				return fmt.Errorf("%s: padding %d not in [0, kernel)", pos, l.Padding)
			}
			extra.Filters, extra.Kernel, extra.Stride, extra.Padding = 0, 0, 0, 0
		case SpecMaxPool:
			if flat {
				return fmt.Errorf("%s: pooling after flatten or dense", pos)
			}
			if l.Size < 1 {
				return fmt.Errorf("%s: size %d < 1", pos, l.Size)
			}
			extra.Size = 0
		case SpecFlatten:
			if flat {
				return fmt.Errorf("%s: flatten after flatten or dense", pos)
			}
			flat = true
		case SpecReLU, SpecTanh:
			if i == 0 || s[i-1].Type == SpecReLU || s[i-1].Type == SpecTanh || s[i-1].Type == SpecFlatten {
				return fmt.Errorf("%s: an activation must follow dense, conv2d or maxpool", pos)
			}
		case SpecSoftmax:
			if i != len(s)-1 {
				return fmt.Errorf("%s: softmax cross-entropy must be the last layer", pos)
			}
		default:
			return fmt.Errorf("%s: unknown layer type (known: dense, conv2d, maxpool, relu, tanh, flatten, softmax)", pos)
		}
		if extra != (LayerSpec{}) {
			return fmt.Errorf("%s: argument not taken by this layer type", pos)
		}
	}
	if s[len(s)-1].Type != SpecSoftmax {
		return fmt.Errorf("the last layer is %s: a model ends with softmax (cross-entropy)", s[len(s)-1].Type)
	}
	if s[len(s)-2].Type != SpecDense {
		return fmt.Errorf("softmax must follow the dense layer of the logits, not %s", s[len(s)-2].Type)
	}
	return nil
}

// build returns the model of s for the data's features and classes, named
// by the canonical text of s with the logits' width left to the data, on the
// float32 kernel that runs it: the dense kernel for zero or one ReLU hidden
// layer, the cnn kernel for the cnn preset's layers, the stack kernel for
// any other dense stack. A logits layer of a width other than classes, or
// layers the kernels do not implement, is an error wrapping
// checks.ErrInvalid.
func (s Spec) build(features, classes int) (Model, error) {
	name := s.String()
	if err := s.Validate(); err != nil {
		return nil, checks.Invalidf("model %s: %v", name, err)
	}
	s = slices.Clone(s)
	head := &s[len(s)-2]
	if head.Units != 0 && head.Units != classes {
		return nil, checks.Invalidf("model %s: the logits layer has %d units but the data has %d classes", name, head.Units, classes)
	}
	head.Units = 0
	name = s.String() // the logits' width is the data's
	if cnnSpec, _ := presetSpec(CNN); slices.Equal(s, cnnSpec) {
		return newCNN(features, classes)
	}
	if s[0].Type == SpecConv2D || s[0].Type == SpecMaxPool || slices.ContainsFunc(s, func(l LayerSpec) bool { return l.Type == SpecFlatten }) {
		return nil, checks.Invalidf("model %s: the float32 convolution kernels implement only the cnn preset's layers (conv2d=32/3/1/0,relu,conv2d=64/3/1/0,relu,maxpool=2,flatten,dense=128,relu,dense,softmax); use dense layers or that network", name)
	}
	if w, ok := s.mlpWidths(); ok && len(w) == 1 {
		return newDense(name, features, w[0], classes), nil
	}
	if len(s) == 2 {
		return newDense(name, features, 0, classes), nil
	}
	return newStack(name, s, features, classes)
}

// paramCount returns the parameters of a dense stack (overflow-checked).
func denseParams(in, out int) (int, bool) {
	p := float64(in+1) * float64(out)
	return int(p), p <= math.MaxInt32
}
