package amplify

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// loadJSON decodes testdata/name into v.
func loadJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// near reports |got - want| <= tol.
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// wantInvalid fails unless err wraps checks.ErrInvalid and mentions substr.
func wantInvalid(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error mentioning %q, got nil", substr)
	}
	if !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("error %v does not wrap checks.ErrInvalid", err)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not mention %q", err, substr)
	}
}

// binomPMF is a slow reference: Bin(n, p) pmf at k via log-gamma.
func binomPMF(n, k int, p float64) float64 {
	if k < 0 || k > n {
		return 0
	}
	if p == 0 {
		if k == 0 {
			return 1
		}
		return 0
	}
	if p == 1 {
		if k == n {
			return 1
		}
		return 0
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return math.Exp(a - b - c + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

// hockey returns sum_x max(0, P(x) - e^eps Q(x)).
func hockey(P, Q []float64, eps float64) float64 {
	s := 0.0
	ee := math.Exp(eps)
	for i := range P {
		q := 0.0
		if i < len(Q) {
			q = Q[i]
		}
		if d := P[i] - ee*q; d > 0 {
			s += d
		}
	}
	return s
}

// shuffledBinaryRRDelta is the exact delta(eps) of shuffling n reports of
// binary randomized response (eps0-LDP) for the neighbouring pair where user
// 1 holds 0 or 1 and the other n-1 users hold 0: the output is the number of
// ones. Any valid shuffle bound must be at least this.
func shuffledBinaryRRDelta(n int, eps0, eps float64) float64 {
	q := 1 / (1 + math.Exp(eps0)) // P(report 1 | input 0)
	others := make([]float64, n)  // Bin(n-1, q) on 0..n-1
	for k := 0; k < n; k++ {
		others[k] = binomPMF(n-1, k, q)
	}
	P := make([]float64, n+1) // user 1 input 0
	Q := make([]float64, n+1) // user 1 input 1
	for k := 0; k < n; k++ {
		P[k] += others[k] * (1 - q)
		P[k+1] += others[k] * q
		Q[k] += others[k] * q
		Q[k+1] += others[k] * (1 - q)
	}
	return math.Max(hockey(P, Q, eps), hockey(Q, P, eps))
}
