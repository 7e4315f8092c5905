package data

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTemp writes content to dir/name and returns the path.
func writeTemp(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// clientCSV has 3 clients (ids 10, 2 and 7: sorted numerically 2, 7, 10)
// of 4, 3 and 5 rows, string labels and 2 features.
const clientCSV = `x1,client,x2,label
0.5,10,1,cat
1.5,10,2,dog
2.5,10,3,cat
3.5,10,4,emu
4.5,2,5,dog
5.5,2,6,dog
6.5,2,7,cat
7.5,7,8,emu
8.5,7,9,emu
9.5,7,10,cat
10.5,7,11,dog
11.5,7,12,cat
`

func TestLoadCSVClients(t *testing.T) {
	dir := t.TempDir()
	f := writeTemp(t, dir, "d.csv", clientCSV)
	s, err := Load("csv", Options{Seed: 3, UserData: UserData{DataFile: f, ClientColumn: "client", TestFraction: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	tr, te := s.Train, s.Test
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := te.Validate(); err != nil {
		t.Fatal(err)
	}
	if tr.Features != 2 || tr.Classes != 3 || !slices.Equal(tr.Labels, []string{"cat", "dog", "emu"}) {
		t.Fatalf("features %d, classes %d, labels %q; want 2, 3, [cat dog emu]", tr.Features, tr.Classes, tr.Labels)
	}
	if !slices.Equal(tr.ClientNames, []string{"2", "7", "10"}) {
		t.Fatalf("client names %q, want numeric order [2 7 10]", tr.ClientNames)
	}
	// Per client, floor(0.5 n_c) rows are held out: 1 of client "2"'s 3, 2 of
	// "7"'s 5, 2 of "10"'s 4.
	count := map[int32]int{}
	for _, c := range tr.Client {
		count[c]++
	}
	if want := map[int32]int{0: 2, 1: 3, 2: 2}; len(count) != 3 || count[0] != want[0] || count[1] != want[1] || count[2] != want[2] {
		t.Fatalf("training rows per client %v, want %v", count, want)
	}
	if tr.Len()+te.Len() != 12 || te.Len() != 5 || te.Client != nil {
		t.Fatalf("train %d + test %d rows (test clients %v), want 7 + 5, none", tr.Len(), te.Len(), te.Client)
	}
	// Rows keep their features, labels and clients: x2 = x1 + 0.5 and the
	// client is a function of x1.
	for i := range tr.Len() {
		x := tr.Row(i)
		if x[1] != x[0]+0.5 {
			t.Fatalf("row %d: features %v do not match the file", i, x)
		}
		var wantClient int32 // x1 < 4: client "10" (index 2); < 7: "2" (0); else "7" (1)
		switch {
		case x[0] < 4:
			wantClient = 2
		case x[0] < 7:
			wantClient = 0
		default:
			wantClient = 1
		}
		if tr.Client[i] != wantClient {
			t.Fatalf("row %d (x1 = %v): client %d, want %d", i, x[0], tr.Client[i], wantClient)
		}
	}
	// Same seed, same split; another seed, (here) another one.
	again, err := Load("csv", Options{Seed: 3, UserData: UserData{DataFile: f, ClientColumn: "client", TestFraction: 0.5}})
	if err != nil || !slices.Equal(again.Train.X, tr.X) {
		t.Fatalf("the split is not reproducible from the seed: %v", err)
	}
	other, err := Load("csv", Options{Seed: 4, UserData: UserData{DataFile: f, ClientColumn: "client", TestFraction: 0.5}})
	if err != nil || slices.Equal(other.Train.X, tr.X) {
		t.Fatalf("seeds 3 and 4 give the same split: %v", err)
	}
}

func TestLoadCSVTestFile(t *testing.T) {
	dir := t.TempDir()
	f := writeTemp(t, dir, "train.csv", "a,b,y\n1,2,10\n3,4,2\n5,6,10\n")
	// The test file's columns in another order, with a client column to be
	// ignored and a label (7) the training file does not have.
	tf := writeTemp(t, dir, "test.csv", "y,c,b,a\n7,u,20,10\n2,v,40,30\n")
	s, err := Load("csv", Options{UserData: UserData{DataFile: f, TestFile: tf, LabelColumn: "y", ClientColumn: "c"}})
	if err == nil {
		t.Fatalf("a training file without the client column loaded: %+v", s)
	}
	s, err = Load("csv", Options{UserData: UserData{DataFile: f, TestFile: writeTemp(t, dir, "t2.csv", "y,b,a\n7,20,10\n2,40,30\n"), LabelColumn: "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Train.Labels, []string{"2", "7", "10"}) || !slices.Equal(s.Train.Y, []uint8{2, 0, 2}) || !slices.Equal(s.Test.Y, []uint8{1, 0}) {
		t.Fatalf("labels %q, train y %v, test y %v; want [2 7 10], [2 0 2], [1 0]", s.Train.Labels, s.Train.Y, s.Test.Y)
	}
	if !slices.Equal(s.Test.X, []float32{10, 20, 30, 40}) {
		t.Fatalf("test x %v, want the columns in the training order [10 20 30 40]", s.Test.X)
	}
	if s.Train.Client != nil {
		t.Fatalf("clients %v without a client column", s.Train.Client)
	}
}

func TestLoadCSVGzipTSV(t *testing.T) {
	dir := t.TempDir()
	f := writeTemp(t, dir, "d.tsv", "label\tx\n0\t1\n1\t2\n0\t3\n1\t4\n")
	s, err := Load("csv", Options{UserData: UserData{DataFile: f}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len()+s.Test.Len() != 4 || s.Test.Len() != 1 {
		t.Fatalf("%d + %d rows, want 3 + 1 (floor(0.2·4) = 0, at least 1)", s.Train.Len(), s.Test.Len())
	}
}

func TestLoadCSVBadFiles(t *testing.T) {
	defer func(m int) { maxRows = m }(maxRows)
	maxRows = 5
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		opt           UserData
		want          []string // in the error, after the file name
	}{
		{"non-numeric", "x,label\n1,a\nabc,b\n", UserData{}, []string{"line 3", `column "x"`, `"abc" is not a number`}},
		{"empty value", "x,label\n1,a\n,b\n", UserData{}, []string{"line 3", `column "x"`, "empty value"}},
		{"NaN", "x,label\n1,a\nNaN,b\n", UserData{}, []string{"line 3", `column "x"`, "not a finite number"}},
		{"beyond float32", "x,label\n1,a\n1e300,b\n", UserData{}, []string{"line 3", `column "x"`, "float32"}},
		{"ragged", "x,y,label\n1,2,a\n1,2\n", UserData{}, []string{"line 3 has 2 fields", "header has 3"}},
		{"no label column", "x,y\n1,2\n", UserData{}, []string{"line 1", `no label column "label"`, "columns: x, y"}},
		{"no such label column", "x,label\n1,2\n", UserData{LabelColumn: "class"}, []string{`no label column "class"`}},
		{"no client column", "x,label\n1,a\n2,b\n", UserData{ClientColumn: "user"}, []string{`no client column "user"`}},
		{"empty label", "x,label\n1,a\n2, \n", UserData{}, []string{"line 3", `column "label"`, "empty label"}},
		{"empty client", "x,u,label\n1,p,a\n2,,b\n", UserData{ClientColumn: "u"}, []string{"line 3", `column "u"`, "empty client"}},
		{"one class", "x,label\n1,a\n2,a\n3,a\n", UserData{}, []string{`column "label"`, "one class only"}},
		{"too many rows", "x,label\n1,a\n2,b\n3,a\n4,b\n5,a\n6,b\n", UserData{}, []string{"line 7", "more than 5 rows"}},
		{"duplicate column", "x,x,label\n1,2,a\n", UserData{}, []string{"line 1", `column "x" appears twice`}},
		{"no features", "label\na\nb\n", UserData{}, []string{"no feature column"}},
		{"header only", "x,label\n", UserData{}, []string{"no data rows"}},
		{"empty", "", UserData{}, []string{"empty file"}},
		{"bad quote", "x,label\n1,\"a\n", UserData{}, []string{"line 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeTemp(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".csv", tc.content)
			tc.opt.DataFile = f
			_, err := Load("csv", Options{UserData: tc.opt})
			if err == nil {
				t.Fatal("loaded")
			}
			if !errors.Is(err, ErrData) {
				t.Errorf("error does not wrap ErrData: %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, f+": ") || strings.Contains(msg, "\n") {
				t.Errorf("error is not one line naming the file %s: %q", f, msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
}

func TestLoadCSVTestFileBad(t *testing.T) {
	dir := t.TempDir()
	f := writeTemp(t, dir, "train.csv", "a,b,label\n1,2,x\n3,4,y\n")
	for _, tc := range []struct{ name, content, want string }{
		{"missing feature", "a,label\n1,x\n", `no column "b"`},
		{"extra column", "a,b,z,label\n1,2,3,x\n", `column "z" is not a column of the training file`},
		{"bad value", "a,b,label\n1,?,x\n", `line 2, column "b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tf := writeTemp(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".csv", tc.content)
			_, err := Load("csv", Options{UserData: UserData{DataFile: f, TestFile: tf}})
			if err == nil || !errors.Is(err, ErrData) || !strings.Contains(err.Error(), tf+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an ErrData naming %s and saying %q", err, tf, tc.want)
			}
		})
	}
}

func TestValueIndexOrder(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"10", "2", "-3", "2"}, []string{"-3", "2", "10"}},
		{[]string{"b", "10", "a", "2"}, []string{"10", "2", "a", "b"}},
		{[]string{"1.5", "1"}, []string{"1", "1.5"}},
	} {
		idx, got := valueIndex(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("valueIndex(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for i, v := range got {
			if idx[v] != i {
				t.Errorf("index of %q = %d, want %d", v, idx[v], i)
			}
		}
	}
}

func TestSplitFractionBad(t *testing.T) {
	for _, p := range []float64{0, 1, -0.1, 1.5} {
		if _, _, err := SplitFraction(1, 10, p, nil, 0); err == nil {
			t.Errorf("fraction %v accepted", p)
		}
	}
	if _, err := Load("csv", Options{UserData: UserData{DataFile: "f.csv", ClientColumn: "label"}}); err == nil {
		t.Error("the label column as the client column was accepted")
	}
	// Every client has one row: nothing can be held out.
	if _, _, err := SplitFraction(1, 3, 0.5, []int32{0, 1, 2}, 3); err == nil {
		t.Error("an empty test set was accepted")
	}
}

// TestNaturalClientsHandOver checks that the set NaturalClients reads is
// handed to the next Load with the same options, once, and not when the
// file has changed.
func TestNaturalClientsHandOver(t *testing.T) {
	dir := t.TempDir()
	f := writeTemp(t, dir, "d.csv", clientCSV)
	o := Options{Seed: 1, UserData: UserData{DataFile: f, ClientColumn: "client"}}
	k, err := NaturalClients("csv", o)
	if err != nil || k != 3 {
		t.Fatalf("NaturalClients = %d, %v; want 3", k, err)
	}
	a, err := Load("csv", o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load("csv", o)
	if err != nil {
		t.Fatal(err)
	}
	if &a.Train.X[0] == &b.Train.X[0] || !slices.Equal(a.Train.X, b.Train.X) {
		t.Fatal("the second Load did not read the file afresh, or read other data")
	}
	if _, err := NaturalClients("csv", o); err != nil {
		t.Fatal(err)
	}
	// Another seed is another load.
	if c, _ := Load("csv", Options{Seed: 2, UserData: o.UserData}); c.Train == nil || slices.Equal(c.Train.X, a.Train.X) {
		t.Fatal("a load with another seed got the kept set")
	}
	if _, err := NaturalClients("csv", o); err != nil {
		t.Fatal(err)
	}
	writeTemp(t, dir, "d.csv", clientCSV+"12.5,2,13,cat\n")
	c, err := Load("csv", o)
	if err != nil || c.Train.Len()+c.Test.Len() != 13 {
		t.Fatalf("a changed file was not read again: %v", err)
	}
	for _, name := range []string{"blobs", "fashion-mnist-sample"} {
		if k, err := NaturalClients(name, Options{}); k != 0 || err != nil {
			t.Errorf("NaturalClients(%s) = %d, %v", name, k, err)
		}
	}
}
