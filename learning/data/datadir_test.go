package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDataDirs(t *testing.T) {
	exe := filepath.Join("/repo", "bin", "shufflefl")
	tests := []struct {
		name         string
		dataDir, env string
		exe          string
		want         []string
	}{
		{"explicit dir only", "/d", "/env", exe, []string{"/d"}},
		{"env first", "", "/env", exe, []string{"/env", "/repo/bin/datasets", "/repo/datasets", "datasets", "."}},
		{"no env", "", "", exe, []string{"/repo/bin/datasets", "/repo/datasets", "datasets", "."}},
		{"no executable", "", "", "", []string{"datasets", "."}},
		{"duplicates removed", "", "/repo/datasets", exe, []string{"/repo/datasets", "/repo/bin/datasets", "datasets", "."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := dataDirs(tc.dataDir, tc.env, tc.exe); !slices.Equal(got, tc.want) {
				t.Fatalf("dataDirs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFindDataFile(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(b, "f.tgz"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(a, "f.tgz"), 0o755); err != nil { // a directory is not the file
		t.Fatal(err)
	}
	got, err := findIn([]string{a, b}, "f.tgz")
	if err != nil || got != filepath.Join(b, "f.tgz") {
		t.Fatalf("findIn = %q, %v; want the file in the second directory", got, err)
	}
	_, err = findIn([]string{a, "/nonexistent"}, "g.tgz")
	if err == nil || !errors.Is(err, ErrData) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: error %v does not wrap ErrData and fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), a+", /nonexistent") {
		t.Fatalf("error %q does not list the directories searched", err)
	}
	// $SHUFFLEFL_DATA is searched when no data directory is given.
	t.Setenv(DataDirEnv, b)
	if got, err := FindDataFile("", "f.tgz"); err != nil || got != filepath.Join(b, "f.tgz") {
		t.Fatalf("FindDataFile with $%s = %q, %v", DataDirEnv, got, err)
	}
	// An explicit directory is the only one searched.
	if _, err := FindDataFile(a, "f.tgz"); err == nil {
		t.Fatal("FindDataFile looked beyond the explicit data directory")
	}
}

func TestClassificationNames(t *testing.T) {
	want := []string{"blobs", "csv", "fashion-mnist", "fashion-mnist-sample", "leaf", "mnist-10k", "mnist-dir", "npz", "synthetic-fedprox"}
	if got := ClassificationNames(); !slices.Equal(got, want) {
		t.Fatalf("ClassificationNames() = %v, want %v", got, want)
	}
	if !IsRegression("synthetic-clusters") || IsRegression("blobs") || IsRegression("nope") {
		t.Fatal("IsRegression is wrong")
	}
}
