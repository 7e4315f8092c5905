package fl

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readSafetensors is an independent reader of the safetensors format: it
// checks the header length, that the data offsets tile the data section in
// order without gaps, and decodes every tensor.
func readSafetensors(t *testing.T, b []byte) (map[string]Tensor, map[string]string) {
	t.Helper()
	if len(b) < 8 {
		t.Fatalf("safetensors: %d bytes", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n%8 != 0 || 8+n > uint64(len(b)) {
		t.Fatalf("safetensors: header length %d of %d bytes", n, len(b))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		t.Fatalf("safetensors header: %v", err)
	}
	data := b[8+n:]
	out := map[string]Tensor{}
	var meta map[string]string
	type span struct{ lo, hi int }
	var spans []span
	for name, raw := range header {
		if name == "__metadata__" {
			if err := json.Unmarshal(raw, &meta); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var e struct {
			Dtype       string
			Shape       []int
			DataOffsets []int `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		if e.Dtype != "F32" || len(e.DataOffsets) != 2 {
			t.Fatalf("%s: %+v", name, e)
		}
		lo, hi := e.DataOffsets[0], e.DataOffsets[1]
		count := 1
		for _, s := range e.Shape {
			count *= s
		}
		if hi-lo != 4*count || hi > len(data) {
			t.Fatalf("%s: offsets [%d, %d) for shape %v in %d bytes", name, lo, hi, e.Shape, len(data))
		}
		d := make([]float32, count)
		for i := range d {
			d[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[lo+4*i:]))
		}
		out[name] = Tensor{Name: name, Shape: e.Shape, Data: d}
		spans = append(spans, span{lo, hi})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.lo - b.lo })
	end := 0
	for _, s := range spans {
		if s.lo != end {
			t.Fatalf("safetensors: gap or overlap at byte %d", s.lo)
		}
		end = s.hi
	}
	if end != len(data) {
		t.Fatalf("safetensors: %d data bytes, tensors cover %d", len(data), end)
	}
	return out, meta
}

var npyShape = regexp.MustCompile(`^\{'descr': '<f4', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n$`)

// readNPZ is an independent reader of an .npz of float32 .npy files.
func readNPZ(t *testing.T, b []byte) map[string]Tensor {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Tensor{}
	for _, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if string(raw[:8]) != "\x93NUMPY\x01\x00" {
			t.Fatalf("%s: magic %q", f.Name, raw[:8])
		}
		hl := int(binary.LittleEndian.Uint16(raw[8:]))
		if (10+hl)%64 != 0 {
			t.Fatalf("%s: data at %d, not 64-aligned", f.Name, 10+hl)
		}
		m := npyShape.FindStringSubmatch(string(raw[10 : 10+hl]))
		if m == nil {
			t.Fatalf("%s: header %q", f.Name, raw[10:10+hl])
		}
		var shape []int
		count := 1
		for _, s := range strings.Split(m[1], ",") {
			if s = strings.TrimSpace(s); s != "" {
				v, _ := strconv.Atoi(s)
				shape = append(shape, v)
				count *= v
			}
		}
		data := raw[10+hl:]
		if len(data) != 4*count {
			t.Fatalf("%s: %d bytes for shape %v", f.Name, len(data), shape)
		}
		d := make([]float32, count)
		for i := range d {
			d[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		name := strings.TrimSuffix(f.Name, ".npy")
		out[name] = Tensor{Name: name, Shape: shape, Data: d}
	}
	return out
}

// TestExportRoundTrip writes each model's tensors in both formats and reads
// them back with the independent readers: every name, shape and float32 bit.
func TestExportRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		features int
	}{{"logreg", 784}, {"mlp", 784}, {"cnn", 64}, {"mlp:7,5", 9}, {"dense=6,tanh,dense=0,softmax", 3}} {
		m := mustModel(t, tc.spec, tc.features, 10)
		w := make([]float64, m.Dim())
		r := rand.New(rand.NewPCG(1, 1))
		for i := range w {
			w[i] = float64(float32(r.NormFloat64()))
		}
		w[0], w[1], w[2] = math.Inf(1), math.Copysign(0, -1), float64(math.SmallestNonzeroFloat32)
		ts, err := Tensors(m, w)
		if err != nil {
			t.Fatal(err)
		}
		check := func(format string, got map[string]Tensor) {
			if len(got) != len(m.Layers()) {
				t.Errorf("%s %s: %d tensors, want %d", tc.spec, format, len(got), len(m.Layers()))
			}
			for _, l := range m.Layers() {
				g, ok := got[l.Name]
				if !ok || !slices.Equal(g.Shape, l.Shape) || len(g.Data) != l.Len {
					t.Errorf("%s %s: tensor %s = %v %d, want shape %v", tc.spec, format, l.Name, g.Shape, len(g.Data), l.Shape)
					continue
				}
				for i, v := range g.Data {
					if math.Float32bits(v) != math.Float32bits(float32(w[l.Offset+i])) {
						t.Errorf("%s %s: %s[%d] = %v, want %v", tc.spec, format, l.Name, i, v, w[l.Offset+i])
						break
					}
				}
			}
		}
		var sb, nb bytes.Buffer
		meta := map[string]string{"model": m.Name(), "round": "3"}
		if err := WriteSafetensors(&sb, ts, meta); err != nil {
			t.Fatal(err)
		}
		got, gotMeta := readSafetensors(t, sb.Bytes())
		check("safetensors", got)
		if fmt.Sprint(gotMeta) != fmt.Sprint(meta) {
			t.Errorf("%s: metadata %v, want %v", tc.spec, gotMeta, meta)
		}
		if err := WriteNPZ(&nb, ts); err != nil {
			t.Fatal(err)
		}
		check("npz", readNPZ(t, nb.Bytes()))
	}
}

func TestExportRefuses(t *testing.T) {
	m := mustModel(t, "logreg", 4, 2)
	if _, err := Tensors(m, make([]float64, 3)); err == nil {
		t.Error("Tensors accepted 3 weights for d=10")
	}
	dup := []Tensor{{Name: "a", Shape: []int{1}, Data: []float32{1}}, {Name: "a", Shape: []int{1}, Data: []float32{2}}}
	if err := WriteSafetensors(io.Discard, dup, nil); err == nil {
		t.Error("WriteSafetensors accepted a duplicate name")
	}
	if err := WriteSafetensors(io.Discard, []Tensor{{Name: "__metadata__"}}, nil); err == nil {
		t.Error("WriteSafetensors accepted the reserved name")
	}
	if err := WriteNPZ(io.Discard, dup); err == nil {
		t.Error("WriteNPZ accepted a duplicate name")
	}
}
