package data

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// npy is a .npy array built by hand for the tests, as numpy.save writes it.
type npy struct {
	descr   string
	fortran bool
	shape   []int
	data    []byte
	version byte   // major version; 0 means 1
	header  string // a raw header instead of the dict built from the fields
	extra   []byte // bytes after the data
}

// bytes encodes the array: magic, version, header length, the header dict
// padded with spaces and a newline to a multiple of 64 bytes, the data.
func (a npy) bytes() []byte {
	h := a.header
	if h == "" {
		dims := make([]string, len(a.shape))
		for i, d := range a.shape {
			dims[i] = fmt.Sprint(d)
		}
		shape := "(" + strings.Join(dims, ", ") + ")"
		if len(a.shape) == 1 {
			shape = fmt.Sprintf("(%d,)", a.shape[0])
		}
		fo := "False"
		if a.fortran {
			fo = "True"
		}
		h = fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", a.descr, fo, shape)
	}
	major := max(a.version, 1)
	lenBytes := 2
	if major >= 2 {
		lenBytes = 4
	}
	pre := 6 + 2 + lenBytes
	for (pre+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := []byte(npyMagic)
	b = append(b, major, 0)
	if lenBytes == 2 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	}
	b = append(b, h...)
	b = append(b, a.data...)
	return append(b, a.extra...)
}

func f8(v ...float64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

func f4(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func i8(v ...int64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}

func i4(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

// member is one entry of a test archive.
type member struct {
	name    string
	arr     npy
	deflate bool
}

// writeNPZ writes the members as a zip archive (stored, or deflated as
// numpy.savez_compressed writes them) to dir/name.
func writeNPZ(t *testing.T, dir, name string, ms ...member) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		method := zip.Store
		if m.deflate {
			method = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.arr.bytes()); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadNPZ(t *testing.T) {
	dir := t.TempDir()
	// 6 rows of 2 features (row i is [i, 10 + i]); labels 5 and 9; the
	// x member deflated, the others stored; clients 30, 4 (4 < 30).
	x := f8(0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15)
	f := writeNPZ(t, dir, "d.npz",
		member{"x.npy", npy{descr: "<f8", shape: []int{6, 2}, data: x}, true},
		member{"y.npy", npy{descr: "<i8", shape: []int{6}, data: i8(9, 5, 9, 5, 9, 5)}, false},
		member{"client.npy", npy{descr: "<i4", shape: []int{6}, data: i4(30, 30, 30, 4, 4, 4)}, false},
		member{"notes.npy", npy{descr: "<U5", shape: []int{1}, data: make([]byte, 20)}, false},
	)
	s, err := Load("npz", Options{Seed: 1, UserData: UserData{DataFile: f, TestFraction: 0.34}})
	if err != nil {
		t.Fatal(err)
	}
	tr, te := s.Train, s.Test
	if tr.Features != 2 || tr.Classes != 2 || !slices.Equal(tr.Labels, []string{"5", "9"}) || !slices.Equal(tr.ClientNames, []string{"4", "30"}) {
		t.Fatalf("features %d classes %d labels %q clients %q", tr.Features, tr.Classes, tr.Labels, tr.ClientNames)
	}
	// floor(0.34·3) = 1 test row per client.
	if tr.Len() != 4 || te.Len() != 2 {
		t.Fatalf("%d train / %d test rows, want 4 / 2", tr.Len(), te.Len())
	}
	for i := range tr.Len() {
		r := tr.Row(i)
		id := int(r[0])
		if r[1] != float32(10+id) || tr.Y[i] != uint8(1-id%2) || tr.Client[i] != int32(map[bool]int{true: 1, false: 0}[id < 3]) {
			t.Fatalf("row %d = %v, label %d, client %d: not row %d of the archive", i, r, tr.Y[i], tr.Client[i], id)
		}
	}
}

func TestLoadNPZShapesAndDtypes(t *testing.T) {
	dir := t.TempDir()
	// x as uint8 images (4, 2, 3) in Fortran order, version 2.0 headers,
	// an own test set (x_test as float32), labels as int32.
	img := make([]byte, 4*2*3) // C order value of (i, r, c) is 6i + 3r + c
	fort := make([]byte, len(img))
	for i := range 4 {
		for r := range 2 {
			for c := range 3 {
				img[6*i+3*r+c] = byte(6*i + 3*r + c)
				fort[i+4*(r+2*c)] = byte(6*i + 3*r + c)
			}
		}
	}
	f := writeNPZ(t, dir, "img.npz",
		member{"x_train.npy", npy{descr: "|u1", fortran: true, shape: []int{4, 2, 3}, data: fort, version: 2}, true},
		member{"y_train.npy", npy{descr: "<i4", shape: []int{4}, data: i4(0, 1, 2, 1), version: 2}, true},
		member{"x_test.npy", npy{descr: "<f4", shape: []int{1, 6}, data: f4(1, 2, 3, 4, 5, 6)}, false},
		member{"y_test.npy", npy{descr: "|u1", shape: []int{1}, data: []byte{2}}, false},
	)
	s, err := Load("npz", Options{UserData: UserData{DataFile: f}})
	if err != nil {
		t.Fatal(err)
	}
	tr, te := s.Train, s.Test
	if tr.Features != 6 || tr.Rows != 2 || tr.Cols != 3 || tr.Classes != 3 || tr.Client != nil {
		t.Fatalf("features %d, image %dx%d, classes %d, clients %v", tr.Features, tr.Rows, tr.Cols, tr.Classes, tr.Client)
	}
	for i, v := range tr.X {
		if v != float32(img[i]) {
			t.Fatalf("x[%d] = %v, want %v (Fortran order read as C order?)", i, v, img[i])
		}
	}
	if !slices.Equal(te.X, []float32{1, 2, 3, 4, 5, 6}) || !slices.Equal(te.Y, []uint8{2}) || !slices.Equal(tr.Y, []uint8{0, 1, 2, 1}) {
		t.Fatalf("test x %v y %v, train y %v", te.X, te.Y, tr.Y)
	}
	// An archive with its own test set takes no test options.
	if _, err := Load("npz", Options{UserData: UserData{DataFile: f, TestFraction: 0.5}}); err == nil {
		t.Error("test-fraction accepted beside x_test")
	}
}

func TestLoadNPZTestFile(t *testing.T) {
	dir := t.TempDir()
	tr := writeNPZ(t, dir, "tr.npz",
		member{"x.npy", npy{descr: "<f4", shape: []int{2, 1}, data: f4(1, 2)}, false},
		member{"y.npy", npy{descr: "<i8", shape: []int{2}, data: i8(0, 1)}, false})
	te := writeNPZ(t, dir, "te.npz",
		member{"x.npy", npy{descr: "<f8", shape: []int{1, 1}, data: f8(3)}, true},
		member{"y.npy", npy{descr: "<i8", shape: []int{1}, data: i8(1)}, true})
	s, err := Load("npz", Options{UserData: UserData{DataFile: tr, TestFile: te}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 2 || !slices.Equal(s.Test.X, []float32{3}) || !slices.Equal(s.Test.Y, []uint8{1}) {
		t.Fatalf("train %d rows, test %v %v", s.Train.Len(), s.Test.X, s.Test.Y)
	}
	bad := writeNPZ(t, dir, "bad.npz",
		member{"x.npy", npy{descr: "<f8", shape: []int{1, 2}, data: f8(3, 4)}, false},
		member{"y.npy", npy{descr: "<i8", shape: []int{1}, data: i8(1)}, false})
	if _, err := Load("npz", Options{UserData: UserData{DataFile: tr, TestFile: bad}}); err == nil || !strings.Contains(err.Error(), "2 features") {
		t.Errorf("a test set of another width: %v", err)
	}
}

func TestLoadNPZBad(t *testing.T) {
	dir := t.TempDir()
	y2 := member{"y.npy", npy{descr: "<i8", shape: []int{2}, data: i8(0, 1)}, false}
	x2 := member{"x.npy", npy{descr: "<f8", shape: []int{2, 1}, data: f8(1, 2)}, false}
	xOf := func(a npy) member { return member{"x.npy", a, true} }
	for _, tc := range []struct {
		name   string
		ms     []member
		member string // the member the error names ("" for the archive)
		want   string
	}{
		{"big-endian", []member{xOf(npy{descr: ">f8", shape: []int{2, 1}, data: f8(1, 2)}), y2}, "x.npy", `dtype ">f8" is not supported`},
		{"float16", []member{xOf(npy{descr: "<f2", shape: []int{2, 1}, data: make([]byte, 4)}), y2}, "x.npy", `dtype "<f2" is not supported`},
		{"bool", []member{x2, {"y.npy", npy{descr: "|b1", shape: []int{2}, data: []byte{0, 1}}, false}}, "y.npy", `dtype "|b1" is not supported`},
		{"structured", []member{xOf(npy{header: "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }"}), y2}, "x.npy", "structured arrays are not supported"},
		{"float labels", []member{x2, {"y.npy", npy{descr: "<f8", shape: []int{2}, data: f8(0, 1)}, false}}, "y.npy", "must be integers"},
		{"version 3", []member{xOf(npy{descr: "<f8", shape: []int{2, 1}, data: f8(1, 2), version: 3}), y2}, "x.npy", "version 3.0 is not supported"},
		{"truncated", []member{xOf(npy{descr: "<f8", shape: []int{2, 1}, data: f8(1)}), y2}, "x.npy", "truncated data"},
		// A header declaring 6.7 GB over 16 bytes: refused as truncated
		// without allocating what it declares; beyond the cap, at once.
		{"huge shape", []member{xOf(npy{descr: "<f8", shape: []int{1 << 24, 50}, data: f8(1, 2)}), y2}, "x.npy", "truncated data"},
		{"too large", []member{xOf(npy{descr: "<f8", shape: []int{1 << 30, 1 << 20}, data: f8(1, 2)}), y2}, "x.npy", "is too large"},
		{"trailing", []member{xOf(npy{descr: "<f8", shape: []int{2, 1}, data: f8(1, 2), extra: []byte{7}}), y2}, "x.npy", "bytes after"},
		{"NaN", []member{xOf(npy{descr: "<f8", shape: []int{2, 1}, data: f8(1, math.NaN())}), y2}, "x.npy", "row 1, column 0"},
		{"1-D x", []member{xOf(npy{descr: "<f8", shape: []int{2}, data: f8(1, 2)}), y2}, "x.npy", "reshape"},
		{"lengths", []member{x2, {"y.npy", npy{descr: "<i8", shape: []int{3}, data: i8(0, 1, 1)}, false}}, "y.npy", "one value per row of x, shape (2,)"},
		{"no y", []member{x2}, "", "needs arrays x and y"},
		{"one class", []member{x2, {"y.npy", npy{descr: "<i8", shape: []int{2}, data: i8(4, 4)}, false}}, "", "one class only"},
		{"bad magic", []member{{"x.npy", npy{header: "x"}, false}, y2}, "x.npy", ""},
		{"bad header", []member{xOf(npy{header: "{'descr': '<f8', 'shape': (2, 1), }"}), y2}, "x.npy", "no fortran_order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeNPZ(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".npz", tc.ms...)
			if tc.name == "bad magic" {
				corruptMagic(t, f)
			}
			_, err := Load("npz", Options{UserData: UserData{DataFile: f}})
			if err == nil {
				t.Fatal("loaded")
			}
			if !errors.Is(err, ErrData) {
				t.Errorf("error does not wrap ErrData: %v", err)
			}
			where := f + ": "
			if tc.member != "" {
				where = f + ": " + tc.member + ": "
			}
			if msg := err.Error(); !strings.Contains(msg, where) || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %q and saying %q", msg, where, tc.want)
			}
		})
	}
	if _, err := Load("npz", Options{UserData: UserData{DataFile: writeTemp(t, dir, "not.npz", "hello")}}); err == nil || !errors.Is(err, ErrData) {
		t.Errorf("a non-zip file: %v", err)
	}
}

// corruptMagic rewrites the archive f with x.npy's magic string spoilt.
func corruptMagic(t *testing.T, f string) {
	t.Helper()
	zr, err := zip.OpenReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range zr.File {
		rc, _ := m.Open()
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		data := b.Bytes()
		if m.Name == "x.npy" {
			data = append([]byte("\x93NUMPX"), data[6:]...)
		}
		w, _ := zw.Create(m.Name)
		w.Write(data)
	}
	zr.Close()
	zw.Close()
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseNPYHeader(t *testing.T) {
	for _, tc := range []struct {
		h       string
		descr   string
		fortran bool
		shape   []int
	}{
		{"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }", "<f8", false, []int{3, 4}},
		{"{'descr': '|u1', 'fortran_order': True, 'shape': (5,), }  \n", "|u1", true, []int{5}},
		{"{'shape': (), 'fortran_order': False, 'descr': '<i8'}", "<i8", false, []int{}},
	} {
		d, f, s, err := parseNPYHeader(tc.h)
		if err != nil || d != tc.descr || f != tc.fortran || !slices.Equal(s, tc.shape) {
			t.Errorf("parseNPYHeader(%q) = %q %v %v %v", tc.h, d, f, s, err)
		}
	}
	for _, h := range []string{"", "{", "{'descr': '<f8'", "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (1,)}", "{'descr': '<f8', 'fortran_order': False, 'shape': (a,)}", "{'x': 1}", "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)} junk"} {
		if _, _, _, err := parseNPYHeader(h); err == nil {
			t.Errorf("parseNPYHeader(%q) accepted", h)
		}
	}
}
