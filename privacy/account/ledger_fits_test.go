package account

import "testing"

// TestFits: the one cap rule of the project, with its rounding tolerance.
func TestFits(t *testing.T) {
	sum := 0.0
	for range 9 {
		sum += 0.1
	}
	for _, tc := range []struct {
		name              string
		spent, req, limit float64
		want              bool
	}{
		{"below", 0.5, 0.4, 1, true},
		{"exactly at the cap", 0.5, 0.5, 1, true},
		{"ten releases of 0.1 fit 1", sum, 0.1, 1, true},
		{"within the rounding tolerance", 1, 1e-10, 1, true},
		{"past the tolerance", 1, 1e-8, 1, false},
		{"clearly over", 0.9, 0.2, 1, false},
		{"d-privacy leakage at its cap", 2 * 7850, 7850, 3 * 7850, true},
		{"d-privacy leakage past its cap", 3 * 7850, 7850, 3 * 7850, false},
	} {
		if got := Fits(tc.spent, tc.req, tc.limit); got != tc.want {
			t.Errorf("%s: Fits(%v, %v, %v) = %v", tc.name, tc.spent, tc.req, tc.limit, got)
		}
	}
}
