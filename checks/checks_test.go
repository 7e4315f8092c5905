package checks

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestValidators(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name    string
		err     error
		wantErr string // "" means valid
	}{
		{"eps ok", Epsilon("epsilon", 1), ""},
		{"eps zero", Epsilon("epsilon", 0), "epsilon must be > 0"},
		{"eps neg", Epsilon("epsilon", -1), "epsilon must be > 0"},
		{"eps nan", Epsilon("epsilon", nan), "epsilon must be a finite number"},
		{"eps inf", Epsilon("epsilon", inf), "epsilon must be a finite number"},
		{"eps0 zero ok", EpsilonOrZero("eps_i", 0), ""},
		{"eps0 neg", EpsilonOrZero("eps_i", -0.1), "eps_i must be >= 0"},
		{"delta ok", Delta("delta", 1e-5), ""},
		{"delta 0", Delta("delta", 0), "delta must be in (0, 1)"},
		{"delta 1", Delta("delta", 1), "delta must be in (0, 1)"},
		{"delta0 ok", DeltaOrZero("delta", 0), ""},
		{"prob ok", Probability("q", 1), ""},
		{"prob bad", Probability("q", 1.5), "q must be in [0, 1]"},
		{"pos", Positive("clip", 0), "clip must be > 0"},
		{"nonneg", NonNegative("mu", -1), "mu must be >= 0"},
		{"int", IntAtLeast("b", 1, 2), "b must be >= 2"},
		{"range", IntInRange("k", 9, 1, 8), "k must be in [1, 8]"},
		{"vec dim", Vector("update", []float64{1, 2}, 3), "update has dimension 2, want 3"},
		{"vec nan", Vector("update", []float64{1, nan}, 2), "update[1] must be finite"},
		{"vec ok", Vector("update", []float64{1, 2}, -1), ""},
		{"inrange", InRange("x", []float64{0.5, 2}, 0, 1, "map to [0,1] first"), "x[1] = 2 is outside [0, 1]: map to [0,1] first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantErr == "" {
				if tc.err != nil {
					t.Fatalf("unexpected error %v", tc.err)
				}
				return
			}
			if tc.err == nil {
				t.Fatalf("want error containing %q", tc.wantErr)
			}
			if !strings.Contains(tc.err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not contain %q", tc.err, tc.wantErr)
			}
			if !errors.Is(tc.err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", tc.err)
			}
		})
	}
}
