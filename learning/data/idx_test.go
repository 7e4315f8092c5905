package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idxBytes encodes an IDX file, optionally gzip-compressed.
func idxBytes(t testing.TB, dims []int, body []byte, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	if !gz {
		if err := WriteIDX(&buf, dims, body); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	zw := gzip.NewWriter(&buf)
	if err := WriteIDX(zw, dims, body); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 37)
	}
	return b
}

func TestReadIDXRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		dims []int
		gz   bool
	}{
		{"images raw", []int{3, 4, 5}, false},
		{"images gzip", []int{3, 4, 5}, true},
		{"labels raw", []int{7}, false},
		{"labels gzip", []int{7}, true},
		{"4 dims", []int{2, 3, 2, 2}, false},
		{"single pixel", []int{1, 1, 1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := 1
			for _, d := range tc.dims {
				n *= d
			}
			body := seq(n)
			m, err := ReadIDX(bytes.NewReader(idxBytes(t, tc.dims, body, tc.gz)))
			if err != nil {
				t.Fatal(err)
			}
			if !equal(m.Dims, tc.dims) || !bytes.Equal(m.Data, body) {
				t.Fatalf("got dims %v data %v, want %v %v", m.Dims, m.Data, tc.dims, body)
			}
		})
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadIDXImagesScales(t *testing.T) {
	body := []byte{0, 255, 51, 102, 204, 1}
	for _, gz := range []bool{false, true} {
		n, rows, cols, px, err := ReadIDXImages(bytes.NewReader(idxBytes(t, []int{1, 2, 3}, body, gz)))
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || rows != 2 || cols != 3 {
			t.Fatalf("shape %d×%d×%d, want 1×2×3", n, rows, cols)
		}
		want := []float32{0, 1, 0.2, 0.4, 0.8, 1.0 / 255}
		if !equal(px, want) {
			t.Fatalf("pixels %v, want %v", px, want)
		}
	}
	labels, err := ReadIDXLabels(bytes.NewReader(idxBytes(t, []int{3}, []byte{9, 0, 4}, true)))
	if err != nil || !equal(labels, []uint8{9, 0, 4}) {
		t.Fatalf("labels %v, %v", labels, err)
	}
}

func TestReadIDXCorrupt(t *testing.T) {
	good := idxBytes(t, []int{2, 2, 2}, seq(8), false)
	goodGz := gzipBytes(t, good)
	mod := func(b []byte, f func([]byte) []byte) []byte { return f(append([]byte(nil), b...)) }
	badCRC := mod(goodGz, func(b []byte) []byte { b[len(b)-8] ^= 0xff; return b })
	tests := []struct {
		name  string
		in    []byte
		ndims int // 3 images, 1 labels, 0 any
		want  string
	}{
		{"empty", nil, 0, "empty file"},
		{"bad magic", mod(good, func(b []byte) []byte { b[0] = 1; return b }), 3, "bad magic number"},
		{"text file", []byte("hello, world\n"), 0, "bad magic number"},
		{"wrong type", mod(good, func(b []byte) []byte { b[2] = 0x0D; return b }), 3, "data type code 0x0d"},
		{"labels as images", idxBytes(t, []int{8}, seq(8), false), 3, "1 dimensions, want 3"},
		{"images as labels", good, 1, "3 dimensions, want 1"},
		{"zero dims", []byte{0, 0, 8, 0}, 0, "0 dimensions"},
		{"zero size", []byte{0, 0, 8, 1, 0, 0, 0, 0}, 0, "dimension 0 has size 0"},
		{"huge size", []byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1}, 0, "more than"},
		{"truncated magic", good[:3], 3, "truncated header: 3 of 4"},
		{"truncated sizes", good[:9], 3, "truncated header: 5 of 12"},
		{"truncated body", good[:len(good)-1], 3, "truncated body: header declares 8 data bytes, file holds 7"},
		{"header only", good[:16], 3, "truncated body"},
		{"trailing bytes", append(append([]byte(nil), good...), 0, 0), 3, "2 trailing bytes"},
		{"gzip truncated body", gzipBytes(t, good[:len(good)-3]), 3, "truncated body"},
		{"gzip trailing", gzipBytes(t, append(append([]byte(nil), good...), 1)), 3, "1 trailing bytes"},
		{"gzip stream cut", goodGz[:len(goodGz)-10], 3, "unexpected EOF"},
		{"gzip bad checksum", badCRC, 3, "corrupt gzip stream"},
		{"gzip bad header", []byte{0x1f, 0x8b, 0, 0}, 3, "bad gzip header"},
		{"gzip of nothing", gzipBytes(t, nil), 3, "truncated header: 0 of 4"},
		{"one byte", []byte{0}, 3, "truncated header: 1 of 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, unit := range []bool{false, true} {
				_, err := readIDX(bytes.NewReader(tc.in), idxOpts{ndims: tc.ndims, unit: unit})
				if err == nil {
					t.Fatalf("unit=%v: no error", unit)
				}
				if !errors.Is(err, ErrData) {
					t.Errorf("unit=%v: error %q does not wrap ErrData", unit, err)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("unit=%v: error %q does not contain %q", unit, err, tc.want)
				}
			}
		})
	}
}

// writeMNISTDir writes the four standard files into a new directory.
func writeMNISTDir(t *testing.T, nTrain, nTest int, gz bool) string {
	t.Helper()
	dir := t.TempDir()
	suffix := ""
	if gz {
		suffix = ".gz"
	}
	write := func(name string, dims []int, body []byte) {
		if err := os.WriteFile(filepath.Join(dir, name+suffix), idxBytes(t, dims, body, gz), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	labels := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i % 10)
		}
		return b
	}
	write(TrainImagesFile, []int{nTrain, 4, 3}, seq(nTrain*12))
	write(TrainLabelsFile, []int{nTrain}, labels(nTrain))
	write(TestImagesFile, []int{nTest, 4, 3}, seq(nTest*12))
	write(TestLabelsFile, []int{nTest}, labels(nTest))
	return dir
}

func TestLoadIDXDir(t *testing.T) {
	for _, gz := range []bool{false, true} {
		dir := writeMNISTDir(t, 30, 12, gz)
		s, err := LoadIDXDir(dir, "toy", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, ds := range []*Dataset{s.Train, s.Test} {
			if err := ds.Validate(); err != nil {
				t.Error(err)
			}
		}
		if s.Train.Len() != 30 || s.Test.Len() != 12 || s.Train.Features != 12 || s.Train.Rows != 4 || s.Train.Cols != 3 {
			t.Errorf("gz=%v: got %d/%d examples of %d features (%dx%d)", gz, s.Train.Len(), s.Test.Len(), s.Train.Features, s.Train.Rows, s.Train.Cols)
		}
		if got := s.Train.Row(1); got[0] != float32(byte(12*37%256))/255 {
			t.Errorf("row 1 starts with %v", got[0])
		}
	}
}

func TestLoadIDXDirCorrupt(t *testing.T) {
	overwrite := func(t *testing.T, dir, name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		mutate  func(t *testing.T, dir string)
		want    []string
		missing bool
	}{
		{"label count mismatch", func(t *testing.T, dir string) {
			overwrite(t, dir, TrainLabelsFile+".gz", idxBytes(t, []int{29}, make([]byte, 29), true))
		}, []string{TrainLabelsFile + ".gz", "holds 29 labels", "30 images"}, false},
		{"label out of range", func(t *testing.T, dir string) {
			lbl := make([]byte, 12)
			lbl[5] = 10
			overwrite(t, dir, TestLabelsFile+".gz", idxBytes(t, []int{12}, lbl, true))
		}, []string{TestLabelsFile + ".gz", "label 10 of example 5 is out of range [0, 10)"}, false},
		{"not gzip despite .gz", func(t *testing.T, dir string) {
			overwrite(t, dir, TrainImagesFile+".gz", idxBytes(t, []int{30, 4, 3}, seq(360), false))
		}, []string{TrainImagesFile + ".gz", "not gzip-compressed"}, false},
		{"empty file", func(t *testing.T, dir string) {
			overwrite(t, dir, TestImagesFile+".gz", nil)
		}, []string{TestImagesFile + ".gz", "empty file"}, false},
		{"truncated", func(t *testing.T, dir string) {
			b := idxBytes(t, []int{30, 4, 3}, seq(360), false)
			overwrite(t, dir, TrainImagesFile+".gz", gzipBytes(t, b[:100]))
		}, []string{TrainImagesFile + ".gz", "truncated body"}, false},
		{"missing labels", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, TrainLabelsFile+".gz"))
		}, []string{"missing " + TrainLabelsFile + "[.gz]"}, true},
		{"image shapes differ", func(t *testing.T, dir string) {
			overwrite(t, dir, TestImagesFile+".gz", idxBytes(t, []int{12, 3, 4}, seq(144), true))
		}, []string{"training images are 4x3 but test images are 3x4"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeMNISTDir(t, 30, 12, true)
			tc.mutate(t, dir)
			_, err := LoadIDXDir(dir, "toy", 10)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrData) {
				t.Errorf("error %q does not wrap ErrData", err)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tc.missing {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tc.missing)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestReadIDXFileNamesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad-idx1-ubyte")
	if err := os.WriteFile(path, []byte{0, 0, 8, 1, 0, 0, 0, 5, 1, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadIDXFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated body") {
		t.Fatalf("error %v should name %s and say truncated body", err, path)
	}
	_, err = ReadIDXFile(filepath.Join(dir, "absent"))
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrData) || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestWriteIDXRejects(t *testing.T) {
	tests := []struct {
		name string
		dims []int
		body []byte
	}{
		{"no dims", nil, nil},
		{"zero size", []int{0}, nil},
		{"length mismatch", []int{2, 2}, make([]byte, 3)},
	}
	for _, tc := range tests {
		if err := WriteIDX(&bytes.Buffer{}, tc.dims, tc.body); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func FuzzReadIDX(f *testing.F) {
	f.Add(idxBytes(f, []int{2, 2, 2}, seq(8), false))
	f.Add(idxBytes(f, []int{2, 2, 2}, seq(8), true))
	f.Add(idxBytes(f, []int{5}, seq(5), false))
	f.Add([]byte{0, 0, 8, 3, 0, 0, 0, 1})
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, ndims := range []int{0, 1, 3} {
			m, err := readIDX(bytes.NewReader(b), idxOpts{ndims: ndims})
			if err != nil {
				if !errors.Is(err, ErrData) {
					t.Fatalf("error %q does not wrap ErrData", err)
				}
				continue
			}
			n := 1
			for _, d := range m.dims {
				n *= d
			}
			if len(m.data) != n || (ndims > 0 && len(m.dims) != ndims) {
				t.Fatalf("dims %v with %d bytes", m.dims, len(m.data))
			}
			// The fused float32 path must agree with the byte path.
			u, err := readIDX(bytes.NewReader(b), idxOpts{ndims: ndims, unit: true})
			if err != nil || !equal(u.unit, BytesToUnit(m.data)) {
				t.Fatalf("unit path: %v", err)
			}
		}
	})
}

// TestReadIDXLargeGzip covers the read-ahead path taken by compressed image
// bodies above aheadThreshold: a round trip, and corruptions detected
// inside the decompressing goroutine.
func TestReadIDXLargeGzip(t *testing.T) {
	dims := []int{90, 224, 224} // 4.5 MB > aheadThreshold
	body := seq(90 * 224 * 224)
	good := idxBytes(t, dims, body, true)
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-8] ^= 0xff
	raw := idxBytes(t, dims, body, false)
	tests := []struct {
		name string
		in   []byte
		want string // "" for success
	}{
		{"round trip", good, ""},
		{"bad checksum", badCRC, "corrupt gzip stream"},
		{"stream cut", good[:len(good)/2], "truncated body"},
		{"truncated body", gzipBytes(t, raw[:len(raw)-1]), "truncated body"},
		{"trailing", gzipBytes(t, append(append([]byte(nil), raw...), 7)), "1 trailing bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, rows, cols, px, err := ReadIDXImages(bytes.NewReader(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if n != 90 || rows != 224 || cols != 224 || !equal(px, BytesToUnit(body)) {
					t.Fatal("round trip changed the images")
				}
				return
			}
			if err == nil || !errors.Is(err, ErrData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrData containing %q", err, tc.want)
			}
		})
	}
}
