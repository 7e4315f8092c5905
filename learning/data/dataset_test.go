package data

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

func TestSubsetAndRow(t *testing.T) {
	ds := &Dataset{Name: "t", X: []float32{0, 1, 10, 11, 20, 21}, Y: []uint8{0, 1, 2}, Group: []uint8{1, 0, 1},
		Features: 2, Classes: 3}
	if ds.Len() != 3 || !slices.Equal(ds.Row(2), []float32{20, 21}) {
		t.Fatalf("Len %d, Row(2) %v", ds.Len(), ds.Row(2))
	}
	s := ds.Subset([]int{2, 0, 2})
	if !slices.Equal(s.X, []float32{20, 21, 0, 1, 20, 21}) || !slices.Equal(s.Y, []uint8{2, 0, 2}) || !slices.Equal(s.Group, []uint8{1, 1, 1}) {
		t.Fatalf("Subset = %+v", s)
	}
	s.X[0] = -1
	if ds.X[4] != 20 {
		t.Error("Subset shares memory with its source")
	}
	if row := ds.Row(0); cap(row) != 2 {
		t.Errorf("Row has capacity %d, want 2", cap(row))
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	if got := ds.ClassCounts(); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("ClassCounts = %v", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		ds   Dataset
		want string
	}{
		{"no features", Dataset{X: []float32{1}}, "Features must be >= 1"},
		{"ragged", Dataset{X: []float32{1, 2, 3}, Features: 2, Classes: 2}, "not a multiple"},
		{"labels", Dataset{X: []float32{1, 2}, Features: 1, Y: []uint8{0}, Classes: 2}, "1 labels for 2 examples"},
		{"label range", Dataset{X: []float32{1}, Features: 1, Y: []uint8{2}, Classes: 2}, "label 2 of example 0"},
		{"one class", Dataset{X: []float32{1}, Features: 1, Y: []uint8{0}, Classes: 1}, "Classes must be"},
		{"regression without target", Dataset{X: []float32{1}, Features: 1}, "regression set needs"},
		{"groups", Dataset{X: []float32{1}, Features: 1, Y: []uint8{0}, Classes: 2, Group: []uint8{0, 1}}, "2 group entries"},
		{"shape", Dataset{X: []float32{1, 2}, Features: 2, Y: []uint8{0}, Classes: 2, Rows: 2, Cols: 2}, "image shape 2x2"},
	}
	for _, tc := range tests {
		err := tc.ds.Validate()
		if err == nil || !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
