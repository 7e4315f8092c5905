package fl_test

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/learning/fl"
)

func TestEarlyStop(t *testing.T) {
	tests := []struct {
		name     string
		every    int
		patience int
		losses   []float64 // one per validation
		improved []bool
		stopAt   int // index of the validation that says stop, -1 for never
		best     float64
		bestIdx  int
	}{
		{"stops after patience", 2, 2, []float64{5, 4, 4, 4.5}, []bool{true, true, false, false}, 3, 4, 1},
		{"improvement resets", 1, 2, []float64{5, 6, 4, 7, 8}, []bool{true, false, true, false, false}, 4, 4, 2},
		{"patience 0 never stops", 1, 0, []float64{1, 2, 3, 4}, []bool{true, false, false, false}, -1, 1, 0},
		{"NaN never improves", 1, 3, []float64{math.NaN(), 2, math.NaN()}, []bool{false, true, false}, -1, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := fl.EarlyStop{Every: tc.every, Patience: tc.patience}
			for i, l := range tc.losses {
				round := tc.every * (i + 1)
				if !e.Due(round) {
					t.Fatalf("round %d not due", round)
				}
				imp, stop := e.Observe(round, l)
				if imp != tc.improved[i] || stop != (i == tc.stopAt) {
					t.Errorf("validation %d: improved %v stop %v, want %v %v", i, imp, stop, tc.improved[i], i == tc.stopAt)
				}
			}
			if l, r := e.Best(); l != tc.best || r != tc.every*(tc.bestIdx+1) {
				t.Errorf("best %v at %d, want %v at %d", l, r, tc.best, tc.every*(tc.bestIdx+1))
			}
		})
	}
	e := fl.EarlyStop{Every: 5}
	if e.Due(4) || !e.Due(5) || (&fl.EarlyStop{}).Due(1) {
		t.Error("Due wrong")
	}
}
