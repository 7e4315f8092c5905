package ifca_test

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/learning/ifca"
)

func TestChooseHypothesis(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name   string
		losses []float64
		want   int
	}{
		{"lowest", []float64{3, 1, 2}, 1},
		{"tie to the lowest index", []float64{1, 1}, 0},
		{"+Inf never chosen", []float64{inf, 2}, 1},
		{"NaN never chosen", []float64{nan, 2, 3}, 1},
		{"NaN after the best", []float64{1, nan}, 0},
		{"one hypothesis", []float64{5}, 0},
		{"none", nil, 0},
		{"none finite", []float64{inf, nan}, 0},
		{"negative losses", []float64{-1, -3}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ifca.ChooseHypothesis(tc.losses); got != tc.want {
				t.Errorf("ChooseHypothesis(%v) = %d, want %d", tc.losses, got, tc.want)
			}
		})
	}
}
