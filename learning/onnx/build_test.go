package onnx

import (
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/learning/fl"
)

// TestBuildGraphShapes builds graphs of specifications the float32 kernels
// do not train yet (strided, padded convolutions), so that the shape
// arithmetic of Conv and MaxPool is checked against the tensors' shapes,
// and refuses tensors that do not fit.
func TestBuildGraphShapes(t *testing.T) {
	tensors := func(shapes ...[]int) []fl.Tensor {
		var ts []fl.Tensor
		for i, s := range shapes {
			n := 1
			for _, d := range s {
				n *= d
			}
			ts = append(ts, fl.Tensor{Name: string(rune('a' + i)), Shape: s, Data: make([]float32, n)})
		}
		return ts
	}
	for _, c := range []struct {
		spec     string
		features int
		classes  int
		ts       []fl.Tensor
		nodes    int
		err      string
	}{
		// 10×10 → conv 3/2/1 → 5×5×4 → pool 2 → 2×2×4 → 16 → 3
		{"conv2d=4/3/2/1,relu,maxpool=2,flatten,dense=3,softmax", 100, 3,
			tensors([]int{3, 3, 1, 4}, []int{4}, []int{16, 3}, []int{3}), 8, ""},
		// 9×9 → pool 3 → 3×3 → conv 2/1/0 → 2×2×5 → 20 → 2 (dense without flatten)
		{"maxpool=3,conv2d=5/2/1/0,tanh,dense=2,softmax", 81, 2,
			tensors([]int{2, 2, 1, 5}, []int{5}, []int{20, 2}, []int{2}), 8, ""},
		{"conv2d=4/3/2/1,relu,maxpool=2,flatten,dense=3,softmax", 100, 3,
			tensors([]int{3, 3, 1, 4}, []int{4}, []int{25, 3}, []int{3}), 0, "shape [25 3], the specification needs [16 3]"},
		{"conv2d=4/3/1/0,flatten,dense=3,softmax", 99, 3, nil, 0, "99 features is not a square"},
		{"dense=3,softmax", 4, 3, tensors([]int{4, 3}, []int{3}, []int{1}), 0, "uses 2 of the model's 3 tensors"},
	} {
		t.Run(c.spec, func(t *testing.T) {
			s, err := fl.ParseSpec(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			g, err := buildGraph(s, c.features, c.classes, c.ts)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("buildGraph: %v, want an error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(g.nodes) != c.nodes {
				t.Errorf("%d nodes, want %d", len(g.nodes), c.nodes)
			}
		})
	}
}
