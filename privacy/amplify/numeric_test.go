package amplify

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortNonNegative(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 10, 255, 256, 1000, 100000} {
		x := make([]float64, n)
		for i := range x {
			switch i % 4 {
			case 0:
				x[i] = r.Float64()
			case 1:
				x[i] = r.ExpFloat64() * 1e6
			case 2:
				x[i] = 0
			default:
				x[i] = 0.5 // ties
			}
		}
		want := slices.Clone(x)
		slices.Sort(want)
		sortNonNegative(x)
		if !slices.Equal(x, want) {
			t.Fatalf("n=%d: radix sort differs from slices.Sort", n)
		}
	}
}
