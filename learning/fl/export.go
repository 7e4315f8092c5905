package fl

import (
	"archive/zip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// Tensor is one named float32 tensor of an exported model: a layer's
// parameters converted to float32, row-major in the layer's Shape.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Tensors splits the flat parameter vector w of m into its layers, one
// float32 tensor per Layer, in the order of m.Layers(). The training kernels
// run in float32, so converting the float64 vector loses nothing for a model
// they trained. len(w) must be m.Dim(), else the error wraps checks.ErrInvalid.
func Tensors(m Model, w []float64) ([]Tensor, error) {
	if len(w) != m.Dim() {
		return nil, checks.Invalidf("model %s has %d parameters, got %d weights", m.Name(), m.Dim(), len(w))
	}
	var ts []Tensor
	for _, l := range m.Layers() {
		d := make([]float32, l.Len)
		for i := range d {
			d[i] = float32(w[l.Offset+i])
		}
		ts = append(ts, Tensor{Name: l.Name, Shape: append([]int(nil), l.Shape...), Data: d})
	}
	return ts, nil
}

// safetensorsEntry is one tensor's entry in a safetensors header.
type safetensorsEntry struct {
	Dtype       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// WriteSafetensors writes ts in the safetensors format: the length n of the
// JSON header as a little-endian uint64, the header (each tensor's dtype
// "F32", shape and [begin, end) byte offsets in the data section, plus
// "__metadata__" holding meta), padded with spaces to a multiple of 8 bytes,
// then the tensors' data, little-endian, in the order of ts.
func WriteSafetensors(w io.Writer, ts []Tensor, meta map[string]string) error {
	header := map[string]any{}
	if len(meta) > 0 {
		header["__metadata__"] = meta
	}
	var off int64
	for _, t := range ts {
		if t.Name == "__metadata__" || header[t.Name] != nil {
			return checks.Invalidf("safetensors: duplicate or reserved tensor name %q", t.Name)
		}
		n := int64(4 * len(t.Data))
		header[t.Name] = safetensorsEntry{Dtype: "F32", Shape: shapeOrScalar(t.Shape), DataOffsets: [2]int64{off, off + n}}
		off += n
	}
	hb, err := json.Marshal(header) // map keys sorted: the same bytes every time
	if err != nil {
		return fmt.Errorf("safetensors header: %w", err)
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	var lb [8]byte
	binary.LittleEndian.PutUint64(lb[:], uint64(len(hb)))
	if _, err := w.Write(lb[:]); err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	for _, t := range ts {
		if _, err := w.Write(float32Bytes(t.Data)); err != nil {
			return err
		}
	}
	return nil
}

// WriteNPZ writes ts as numpy's .npz: a zip archive (stored, not
// compressed) of one NAME.npy per tensor, each in the .npy format version
// 1.0 with dtype '<f4', C order and the tensor's shape.
func WriteNPZ(w io.Writer, ts []Tensor) error {
	z := zip.NewWriter(w)
	seen := map[string]bool{}
	for _, t := range ts {
		if seen[t.Name] {
			return checks.Invalidf("npz: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		f, err := z.CreateHeader(&zip.FileHeader{Name: t.Name + ".npy", Method: zip.Store, Modified: npzTime})
		if err != nil {
			return err
		}
		if _, err := f.Write(NPYHeader(t.Shape)); err != nil {
			return err
		}
		if _, err := f.Write(float32Bytes(t.Data)); err != nil {
			return err
		}
	}
	return z.Close()
}

// npzTime is every member's modification time: the earliest DOS date, so
// that the archive's bytes depend on the tensors only.
var npzTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// NPYHeader returns the .npy version 1.0 preamble of a little-endian
// float32 C-order array of the given shape: the magic "\x93NUMPY", version
// 1.0, the header length as a little-endian uint16, and the header dict
// padded with spaces and ended by a newline so that the data starts at a
// multiple of 64 bytes.
func NPYHeader(shape []int) []byte {
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = fmt.Sprint(s)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': " + tuple + ", }"
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	b := []byte("\x93NUMPY\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(dict)))
	return append(b, dict...)
}

func shapeOrScalar(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

func float32Bytes(d []float32) []byte {
	b := make([]byte, 4*len(d))
	for i, v := range d {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}
