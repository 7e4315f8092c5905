package data

import (
	"math"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
)

func TestRotateImages(t *testing.T) {
	// One 2×3 image:
	//   1 2 3
	//   4 5 6
	ds := &Dataset{Name: "img", X: []float32{1, 2, 3, 4, 5, 6}, Y: []uint8{7}, Features: 6, Classes: 10, Rows: 2, Cols: 3}
	tests := []struct {
		turns      int
		want       []float32
		rows, cols int
	}{
		{0, []float32{1, 2, 3, 4, 5, 6}, 2, 3},
		{1, []float32{3, 6, 2, 5, 1, 4}, 3, 2}, // counter-clockwise
		{2, []float32{6, 5, 4, 3, 2, 1}, 2, 3},
		{3, []float32{4, 1, 5, 2, 6, 3}, 3, 2}, // clockwise
		{4, []float32{1, 2, 3, 4, 5, 6}, 2, 3},
		{-1, []float32{4, 1, 5, 2, 6, 3}, 3, 2},
	}
	for _, tc := range tests {
		got := RotateImages(ds, 2, 3, tc.turns)
		if !slices.Equal(got.X, tc.want) || got.Rows != tc.rows || got.Cols != tc.cols {
			t.Errorf("%d turns: got %v (%dx%d), want %v (%dx%d)", tc.turns, got.X, got.Rows, got.Cols, tc.want, tc.rows, tc.cols)
		}
		if !slices.Equal(got.Y, ds.Y) || got.Features != 6 {
			t.Errorf("%d turns: labels or features changed", tc.turns)
		}
	}
	if !slices.Equal(ds.X, []float32{1, 2, 3, 4, 5, 6}) {
		t.Error("input modified")
	}
}

func TestRotateImagesComposes(t *testing.T) {
	s, err := Load("fashion-mnist-sample", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds := s.Test.Subset([]int{0, 1, 2})
	once := RotateImages(ds, 28, 28, 1)
	twice := RotateImages(once, 28, 28, 1)
	if !slices.Equal(twice.X, RotateImages(ds, 28, 28, 2).X) {
		t.Error("two quarter turns differ from a half turn")
	}
	if slices.Equal(once.X, ds.X) {
		t.Error("a quarter turn left the images unchanged")
	}
	if !slices.Equal(RotateImages(twice, 28, 28, 2).X, ds.X) {
		t.Error("four quarter turns are not the identity")
	}
}

func TestRotationGroups(t *testing.T) {
	for _, tc := range []struct{ clients, groups int }{{100, 2}, {10, 4}, {3, 5}, {0, 2}, {7, 1}} {
		g := RotationGroups(rng.Stream(2, rng.LabelPartition), tc.clients, tc.groups)
		if len(g) != tc.clients {
			t.Fatalf("%v: %d assignments", tc, len(g))
		}
		count := make([]int, tc.groups)
		for _, v := range g {
			count[v]++
		}
		lo, hi := slices.Min(count), slices.Max(count)
		if tc.clients >= tc.groups && hi-lo > 1 {
			t.Errorf("%v: unbalanced group sizes %v", tc, count)
		}
	}
	a := RotationGroups(rng.Stream(2, rng.LabelPartition), 50, 2)
	b := RotationGroups(rng.Stream(2, rng.LabelPartition), 50, 2)
	c := RotationGroups(rng.Stream(3, rng.LabelPartition), 50, 2)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Error("RotationGroups is not a deterministic function of the seed")
	}
}

func TestRotateFeatures(t *testing.T) {
	ds := &Dataset{X: []float32{1, 0, 2, 3, 4, 5, 9}, Features: 7, Y: []uint8{0}, Classes: 2}
	got := RotateFeatures(ds, math.Pi/2)
	want := []float32{0, 1, -3, 2, -5, 4, 9}
	for i := range want {
		if math.Abs(float64(got.X[i]-want[i])) > 1e-6 {
			t.Fatalf("got %v, want %v", got.X, want)
		}
	}
	// Orthogonal: the norm of a random row is kept, for any angle.
	s := Blobs(1, 20, 0, 8, 1)
	r := RotateFeatures(s.Train, 2*math.Pi/3)
	for i := range s.Train.Len() {
		if a, b := norm(s.Train.Row(i)), norm(r.Row(i)); math.Abs(a-b) > 1e-5*a {
			t.Fatalf("row %d: norm %v became %v", i, a, b)
		}
	}
}

func norm(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}
