package account

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// close reports whether got is within rel relative (or abs absolute) error
// of want.
func approx(got, want, rel float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-300)
}

// wantInvalid fails unless err wraps checks.ErrInvalid and mentions substr.
func wantInvalid(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error containing %q, got nil", substr)
	}
	if !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("error %v does not wrap checks.ErrInvalid", err)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not contain %q", err, substr)
	}
}
