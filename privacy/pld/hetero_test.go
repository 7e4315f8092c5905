package pld

import (
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// heteroRefDelta is an independent slow computation of the delta(eps) of
// the heterogeneous clone pair (one direction; both coincide by symmetry):
// the clone count's Poisson-binomial pmf by the naive O(n^2) recursion
// over the expanded list, the first-type count's law given c from
// log-gamma binomials, and the hockey-stick divergence summed over every
// outcome, with no grid.
func heteroRefDelta(ps []float64, eps0, eps float64) float64 {
	pb := []float64{1}
	for _, p := range ps {
		nw := make([]float64, len(pb)+1)
		for k, v := range pb {
			nw[k] += v * (1 - p)
			nw[k+1] += v * p
		}
		pb = nw
	}
	a := math.Exp(eps0) / (1 + math.Exp(eps0))
	binom := func(c, k int) float64 {
		if k < 0 || k > c {
			return 0
		}
		lc, _ := math.Lgamma(float64(c + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lr, _ := math.Lgamma(float64(c - k + 1))
		return math.Exp(lc - lk - lr - float64(c)*math.Ln2)
	}
	d := 0.0
	for c, w := range pb {
		for y := 0; y <= c+1; y++ {
			// P0(y) = a B(y-1) + (1-a) B(y), P1(y) = (1-a) B(y-1) + a B(y)
			p0 := a*binom(c, y-1) + (1-a)*binom(c, y)
			p1 := (1-a)*binom(c, y-1) + a*binom(c, y)
			if v := p0 - math.Exp(eps)*p1; v > 0 {
				d += w * v
			}
		}
	}
	return d
}

func expand(probs []float64, counts []int) []float64 {
	var out []float64
	for g, p := range probs {
		for range counts[g] {
			out = append(out, p)
		}
	}
	return out
}

// TestShuffleClonesHeteroCounts: the histogram form is at or above the
// independent exact computation (and within a few percent of it), agrees
// with ShuffleClonesHetero on the expanded list, and with ShuffleClones
// when there is one group at e^-eps0.
func TestShuffleClonesHeteroCounts(t *testing.T) {
	cases := []struct {
		name   string
		probs  []float64
		counts []int
		eps0   float64
	}{
		{"three groups", []float64{0.2, 0.45, 0.9}, []int{20, 15, 25}, 0.8},
		{"near one", []float64{0.96, 0.97, 0.98}, []int{30, 40, 29}, 0.04},
		{"small p", []float64{0.01, 0.05}, []int{100, 50}, 3},
		{"with zero and one", []float64{0, 0.3, 1}, []int{5, 30, 10}, 1},
	}
	o := Options{Interval: 1e-4}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ShuffleClonesHeteroCounts(tc.probs, tc.counts, tc.eps0, o)
			if err != nil {
				t.Fatal(err)
			}
			list := expand(tc.probs, tc.counts)
			q, err := ShuffleClonesHetero(list, tc.eps0, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []float64{0.05, 0.2, 0.5} {
				eps := f * tc.eps0
				got, ref := p.Delta(eps), heteroRefDelta(list, tc.eps0, eps)
				if got < ref*(1-1e-9) {
					t.Errorf("eps %v: delta %v below the exact %v", eps, got, ref)
				}
				if got > ref*1.05+1e-12 {
					t.Errorf("eps %v: delta %v more than 5%% above the exact %v", eps, got, ref)
				}
				if l := q.Delta(eps); math.Abs(got-l) > 1e-9*l+1e-14 {
					t.Errorf("eps %v: histogram delta %v, list delta %v", eps, got, l)
				}
			}
		})
	}
	t.Run("one group is ShuffleClones", func(t *testing.T) {
		eps0, n := 0.5, 300
		p, err := ShuffleClonesHeteroCounts([]float64{math.Exp(-eps0)}, []int{n - 1}, eps0, o)
		if err != nil {
			t.Fatal(err)
		}
		q, err := ShuffleClones(eps0, n, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0.02, 0.1, 0.3} {
			// the histogram uses p' <= e^-eps0 (q = 1 - p rounded up), so
			// it may be larger by rounding only
			if a, b := p.Delta(eps), q.Delta(eps); math.Abs(a-b) > 1e-9*b+1e-14 {
				t.Errorf("eps %v: histogram %v, ShuffleClones %v", eps, a, b)
			}
		}
	})
}

// TestShuffleClonesHeteroCountsBadInput: every bad input is a
// checks.ErrInvalid error.
func TestShuffleClonesHeteroCountsBadInput(t *testing.T) {
	cases := []struct {
		name   string
		probs  []float64
		counts []int
		eps0   float64
	}{
		{"NaN probability", []float64{math.NaN()}, []int{3}, 1},
		{"probability above 1", []float64{1.5}, []int{3}, 1},
		{"negative probability", []float64{-0.1}, []int{3}, 1},
		{"negative count", []float64{0.5}, []int{-1}, 1},
		{"huge count", []float64{0.5}, []int{1 << 41}, 1},
		{"length mismatch", []float64{0.5, 0.2}, []int{3}, 1},
		{"no user", []float64{0.5}, []int{0}, 1},
		{"eps0 NaN", []float64{0.5}, []int{3}, math.NaN()},
		{"eps0 zero", []float64{0.5}, []int{3}, 0},
		{"eps0 too large", []float64{0.5}, []int{3}, 501},
		{"too many groups", make([]float64, maxHeteroGroups+1), make([]int, maxHeteroGroups+1), 1},
		{"too much work", []float64{0.5, 0.5, 0.5}, []int{1 << 36, 1 << 36, 1 << 36}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ShuffleClonesHeteroCounts(tc.probs, tc.counts, tc.eps0, Options{Interval: 1e-3})
			if !errors.Is(err, checks.ErrInvalid) {
				t.Errorf("error %v, want checks.ErrInvalid", err)
			}
		})
	}
}
