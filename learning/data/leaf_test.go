package data

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// leafDir writes a LEAF data directory: train files and test files.
func leafDir(t *testing.T, train, test map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range train {
		writeTemp(t, dir, filepath.Join("train", name), content)
	}
	for name, content := range test {
		writeTemp(t, dir, filepath.Join("test", name), content)
	}
	return dir
}

func TestLoadLEAF(t *testing.T) {
	// Two train files (users f_2 and f_10 in one, f_1 in the other; user
	// ids sort bytewise), labels as integers and as FedProx's floats.
	dir := leafDir(t, map[string]string{
		"b.json": `{"users": ["f_2", "f_10"], "num_samples": [2, 1], "hierarchies": [],
			"user_data": {"f_2": {"x": [[1, 2, 3], [4, 5, 6]], "y": [3, 61]}, "f_10": {"x": [[7, 8, 9]], "y": [3.0]}}}`,
		"a.json": `{"users": ["f_1"], "num_samples": [1], "user_data": {"f_1": {"x": [[0.5, 0.25, 0]], "y": [0]}}}`,
	}, map[string]string{
		"t.json": `{"users": ["f_2", "f_99"], "num_samples": [1, 1], "user_data": {"f_2": {"x": [[1, 1, 1]], "y": [61]}, "f_99": {"x": [[2, 2, 2]], "y": [5]}}}`,
	})
	s, err := Load("leaf", Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tr, te := s.Train, s.Test
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if tr.Features != 3 || tr.Len() != 4 || te.Len() != 2 || tr.Classes != 4 || !slices.Equal(tr.Labels, []string{"0", "3", "5", "61"}) {
		t.Fatalf("features %d, %d/%d rows, classes %d, labels %q", tr.Features, tr.Len(), te.Len(), tr.Classes, tr.Labels)
	}
	if !slices.Equal(tr.ClientNames, []string{"f_1", "f_10", "f_2"}) {
		t.Fatalf("clients %q, want the training users in bytewise order", tr.ClientNames)
	}
	// Rows in file order: a.json's f_1, then b.json's f_2 (2 rows), f_10.
	if !slices.Equal(tr.Client, []int32{0, 2, 2, 1}) || !slices.Equal(tr.Y, []uint8{0, 1, 3, 1}) || !slices.Equal(tr.Row(3), []float32{7, 8, 9}) {
		t.Fatalf("clients %v, labels %v, row 3 %v", tr.Client, tr.Y, tr.Row(3))
	}
	if !slices.Equal(te.Y, []uint8{3, 2}) || te.Client != nil {
		t.Fatalf("test labels %v (clients %v), want [3 2] pooled", te.Y, te.Client)
	}
}

func TestLoadLEAFImages(t *testing.T) {
	row := "[" + strings.Repeat("0.5,", 783) + "1]"
	user := `{"users": ["u"], "num_samples": [2], "user_data": {"u": {"x": [` + row + "," + row + `], "y": [1, 2]}}}`
	s, err := Load("leaf", Options{DataDir: leafDir(t, map[string]string{"x.json": user}, map[string]string{"x.json": user})})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Rows != 28 || s.Train.Cols != 28 || s.Test.Rows != 28 {
		t.Fatalf("FEMNIST-sized rows are %dx%d images, want 28x28", s.Train.Rows, s.Train.Cols)
	}
}

func TestLoadLEAFBad(t *testing.T) {
	good := `{"users": ["u"], "num_samples": [2], "user_data": {"u": {"x": [[1], [2]], "y": [0, 1]}}}`
	for _, tc := range []struct {
		name, file, want string
	}{
		{"shakespeare", `{"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": ["to be or not"], "y": ["t"]}}}`, `user "u": sample 0: x holds text`},
		{"ragged", `{"users": ["u"], "num_samples": [2], "user_data": {"u": {"x": [[1, 2], [3]], "y": [0, 1]}}}`, `user "u", sample 1: x has 1 features, the first sample 2`},
		{"num_samples", `{"users": ["u"], "num_samples": [3], "user_data": {"u": {"x": [[1], [2]], "y": [0, 1]}}}`, "num_samples 3 disagree"},
		{"no user_data", `{"users": ["u", "v"], "num_samples": [2, 1], "user_data": {"u": {"x": [[1], [2]], "y": [0, 1]}}}`, `user "v" has no user_data`},
		{"float label", `{"users": ["u"], "num_samples": [2], "user_data": {"u": {"x": [[1], [2]], "y": [0.5, 1]}}}`, "label 0.5 is not an integer"},
		{"nested x", `{"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": [[[1, 2]]], "y": [0]}}}`, "not a list of numbers"},
		{"not json", `{"users": [`, "not LEAF JSON"},
		{"huge value", `{"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": [[1e300]], "y": [0]}}}`, "beyond float32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := leafDir(t, map[string]string{"bad.json": tc.file}, map[string]string{"t.json": good})
			_, err := Load("leaf", Options{DataDir: dir})
			f := filepath.Join(dir, "train", "bad.json")
			if err == nil || !errors.Is(err, ErrData) || !strings.Contains(err.Error(), f+": ") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v: want one ErrData line naming %s and saying %q", err, f, tc.want)
			}
		})
	}
	// A user in two training files, and missing directories.
	dup := leafDir(t, map[string]string{"a.json": good, "b.json": good}, map[string]string{"t.json": good})
	if _, err := Load("leaf", Options{DataDir: dup}); err == nil || !strings.Contains(err.Error(), `user "u" is also in`) {
		t.Errorf("a user in two files: %v", err)
	}
	noTest := leafDir(t, map[string]string{"a.json": good}, nil)
	if _, err := Load("leaf", Options{DataDir: noTest}); err == nil || !errors.Is(err, ErrData) {
		t.Errorf("no test directory: %v", err)
	}
	oneClass := `{"users": ["u"], "num_samples": [2], "user_data": {"u": {"x": [[1], [2]], "y": [4, 4]}}}`
	if _, err := Load("leaf", Options{DataDir: leafDir(t, map[string]string{"a.json": oneClass}, map[string]string{"t.json": oneClass})}); err == nil || !strings.Contains(err.Error(), "one class only") {
		t.Errorf("one class: %v", err)
	}
	if _, err := Load("leaf", Options{}); err == nil {
		t.Error("leaf without a directory")
	}
}
