package onnx

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// ONNX versions of the encoded file.
const (
	// IRVersion is the ONNX IR version of the ModelProto (7: ONNX 1.8, the
	// first release with operator set 13).
	IRVersion = 7
	// Opset is the version of the default ("ai.onnx") operator set the
	// graph's nodes use.
	Opset = 13
)

// Names of the graph's input and output.
const (
	InputName  = "input"
	OutputName = "probabilities"
)

// MaxBytes is the largest file Encode writes: a protobuf message, and so an
// ONNX file with its weights inside, is limited to 2 GiB − 1 bytes.
const MaxBytes = math.MaxInt32

// headroom is the room Encode keeps below MaxBytes for everything but the
// weights (nodes, names, shapes, metadata): far more than any spec needs.
const headroom = 1 << 20

// Encode returns the ONNX model of m with parameters w (m.Dim() values, as
// in a run's model.json): a serialized ModelProto whose graph maps "input"
// [N, m.Features()] to "probabilities" [N, m.Classes()], the weights
// converted to float32 initializers. meta becomes the model's
// metadata_props (sorted by key).
//
// A model whose float32 weights do not fit in one protobuf message (more
// than MaxBytes less a megabyte of graph, about 536 million parameters) is
// refused before w is read: such a model exports as safetensors or npz
// only. That error, weights of the wrong length or a non-finite weight, and
// a model whose layers do not match its specification wrap
// checks.ErrInvalid.
func Encode(m fl.Model, w []float64, meta map[string]string) ([]byte, error) {
	if wb := 4 * int64(m.Dim()); wb > MaxBytes-headroom {
		return nil, checks.Invalidf("onnx: model %s has %d parameters, %d bytes of float32 weights: an ONNX file is one protobuf message, limited to 2 GiB (%d bytes); export it as safetensors or npz", m.Name(), m.Dim(), wb, MaxBytes)
	}
	if i := slices.IndexFunc(w, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }); i >= 0 {
		return nil, checks.Invalidf("onnx: weight %d of model %s is %v, want a finite number", i, m.Name(), w[i])
	}
	spec, err := fl.ParseSpec(m.Name())
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	ts, err := fl.Tensors(m, w)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	g, err := buildGraph(spec, m.Features(), m.Classes(), ts)
	if err != nil {
		return nil, fmt.Errorf("onnx: model %s: %w", m.Name(), err)
	}
	graph := appendString(nil, graphName, "shufflefl")
	graph = appendString(graph, graphDocString, "shufflefl model "+m.Name())
	for _, n := range g.nodes {
		graph = appendMessage(graph, graphNode, n)
	}
	for _, t := range g.inits {
		graph = appendMessage(graph, graphInitializer, t)
	}
	graph = appendMessage(graph, graphInput, floatValueInfo(InputName, []int64{-1, int64(m.Features())}))
	graph = appendMessage(graph, graphOutput, floatValueInfo(OutputName, []int64{-1, int64(m.Classes())}))

	b := appendInt(nil, modelIRVersion, IRVersion)
	b = appendString(b, modelProducerName, "shufflefl")
	b = appendString(b, modelProducerVer, "1")
	b = appendString(b, modelDocString, fmt.Sprintf("%s: input [N, %d] float32 features, output [N, %d] class probabilities", m.Name(), m.Features(), m.Classes()))
	b = appendMessage(b, modelGraph, graph)
	b = appendMessage(b, modelOpsetImport, opset(Opset))
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		b = appendMessage(b, modelMetadataProps, entry(k, meta[k]))
	}
	if len(b) > MaxBytes {
		return nil, checks.Invalidf("onnx: model %s encodes to %d bytes, more than the %d of a protobuf message", m.Name(), len(b), MaxBytes)
	}
	return b, nil
}

// graph is the nodes and initializers of a model, each encoded.
type graph struct {
	nodes, inits [][]byte
}

// builder walks a specification, keeping the name and shape of the
// current activation.
type builder struct {
	graph
	ts      []fl.Tensor
	next    int    // next tensor of ts to consume
	cur     string // name of the current activation
	spatial bool   // cur is [N, c, h, w] (else [N, width])
	c, h, w int    // its channels and sides when spatial
	width   int    // its features when flat
	step    int    // counter for node names
}

// buildGraph emits the nodes of spec on inputs of features values and
// classes outputs, consuming the tensors ts in order.
func buildGraph(spec fl.Spec, features, classes int, ts []fl.Tensor) (graph, error) {
	b := &builder{ts: ts, cur: InputName, width: features}
	if t := spec[0].Type; t == fl.SpecConv2D || t == fl.SpecMaxPool {
		side := int(math.Sqrt(float64(features)))
		for side*side > features {
			side--
		}
		for (side+1)*(side+1) <= features {
			side++
		}
		if side*side != features {
			return graph{}, fmt.Errorf("a %s input needs square single-channel images, but %d features is not a square", t, features)
		}
		b.inits = append(b.inits, int64Tensor("image_shape", []int64{4}, []int64{-1, 1, int64(side), int64(side)}))
		b.emit("Reshape", []string{b.cur, "image_shape"})
		b.spatial, b.c, b.h, b.w = true, 1, side, side
	}
	for i, l := range spec {
		var err error
		switch l.Type {
		case fl.SpecDense:
			units := l.Units
			if i == len(spec)-2 {
				units = classes
			}
			err = b.dense(units)
		case fl.SpecConv2D:
			err = b.conv(l)
		case fl.SpecMaxPool:
			if !b.spatial || l.Size > b.h || l.Size > b.w {
				return graph{}, fmt.Errorf("layer %d: maxpool=%d needs an image of side at least %d", i+1, l.Size, l.Size)
			}
			s := int64(l.Size)
			b.emit("MaxPool", []string{b.cur}, intsAttr("kernel_shape", s, s), intsAttr("strides", s, s))
			b.h, b.w = b.h/l.Size, b.w/l.Size
		case fl.SpecReLU:
			b.emit("Relu", []string{b.cur})
		case fl.SpecTanh:
			b.emit("Tanh", []string{b.cur})
		case fl.SpecFlatten:
			b.flatten()
		case fl.SpecSoftmax:
			b.emitNamed("Softmax", []string{b.cur}, OutputName, intAttr("axis", 1))
		default:
			err = fmt.Errorf("layer type %q has no ONNX encoding", l.Type)
		}
		if err != nil {
			return graph{}, fmt.Errorf("layer %d (%s): %w", i+1, l.Type, err)
		}
	}
	if b.next != len(ts) {
		return graph{}, fmt.Errorf("the specification uses %d of the model's %d tensors", b.next, len(ts))
	}
	return b.graph, nil
}

// emit appends a node of op on inputs whose one output becomes the current
// activation.
func (b *builder) emit(op string, inputs []string, attrs ...[]byte) {
	b.emitNamed(op, inputs, fmt.Sprintf("%s_%d", op, b.step+1), attrs...)
}

// emitNamed is emit with the output's name given.
func (b *builder) emitNamed(op string, inputs []string, out string, attrs ...[]byte) {
	b.step++
	b.nodes = append(b.nodes, node(fmt.Sprintf("%s_%d", op, b.step), op, inputs, []string{out}, attrs...))
	b.cur = out
}

// take consumes the next tensor, which must have the given shape.
func (b *builder) take(shape ...int) (fl.Tensor, error) {
	if b.next >= len(b.ts) {
		return fl.Tensor{}, fmt.Errorf("the model has no tensor left for a layer of shape %v", shape)
	}
	t := b.ts[b.next]
	if !slices.Equal(t.Shape, shape) {
		return fl.Tensor{}, fmt.Errorf("tensor %s has shape %v, the specification needs %v", t.Name, t.Shape, shape)
	}
	b.next++
	return t, nil
}

// flatten turns a spatial activation [N, c, h, w] into [N, h·w·c] in
// shufflefl's channel-last order: a Transpose to NHWC, then Flatten.
func (b *builder) flatten() {
	if !b.spatial {
		return
	}
	b.emit("Transpose", []string{b.cur}, intsAttr("perm", 0, 2, 3, 1))
	b.emit("Flatten", []string{b.cur}, intAttr("axis", 1))
	b.spatial, b.width = false, b.c*b.h*b.w
}

// dense emits Gemm(x, W [in, out], b [out]) with the next two tensors.
func (b *builder) dense(units int) error {
	b.flatten()
	wt, err := b.take(b.width, units)
	if err != nil {
		return err
	}
	bt, err := b.take(units)
	if err != nil {
		return err
	}
	b.inits = append(b.inits,
		floatTensor(wt.Name, []int64{int64(b.width), int64(units)}, wt.Data),
		floatTensor(bt.Name, []int64{int64(units)}, bt.Data))
	b.emit("Gemm", []string{b.cur, wt.Name, bt.Name})
	b.width = units
	return nil
}

// conv emits Conv with the next two tensors: the weight, stored HWIO
// [k, k, in, out], written OIHW; the bias [out].
func (b *builder) conv(l fl.LayerSpec) error {
	if !b.spatial {
		return fmt.Errorf("a convolution needs an image input")
	}
	k, s, p := l.Kernel, l.Stride, l.Padding
	if b.h+2*p < k || b.w+2*p < k {
		return fmt.Errorf("a %d×%d kernel does not fit a %d×%d image padded by %d", k, k, b.h, b.w, p)
	}
	wt, err := b.take(k, k, b.c, l.Filters)
	if err != nil {
		return err
	}
	bt, err := b.take(l.Filters)
	if err != nil {
		return err
	}
	oihw := make([]float32, len(wt.Data))
	for i := range k {
		for j := range k {
			for c := range b.c {
				for o := range l.Filters {
					oihw[((o*b.c+c)*k+i)*k+j] = wt.Data[((i*k+j)*b.c+c)*l.Filters+o]
				}
			}
		}
	}
	b.inits = append(b.inits,
		floatTensor(wt.Name, []int64{int64(l.Filters), int64(b.c), int64(k), int64(k)}, oihw),
		floatTensor(bt.Name, []int64{int64(l.Filters)}, bt.Data))
	k64, s64, p64 := int64(k), int64(s), int64(p)
	b.emit("Conv", []string{b.cur, wt.Name, bt.Name},
		intsAttr("kernel_shape", k64, k64), intsAttr("strides", s64, s64), intsAttr("pads", p64, p64, p64, p64))
	b.c, b.h, b.w = l.Filters, (b.h+2*p-k)/s+1, (b.w+2*p-k)/s+1
	return nil
}
