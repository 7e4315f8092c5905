package mechanism

import (
	"fmt"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// chiSquare compares integer draws with a pmf given as a log-pmf function,
// merging bins (in order from the lowest value) until each has an expected
// count of at least 20, and returns the statistic, its degrees of freedom
// and the critical value at 1 - 1e-6 (Wilson-Hilferty approximation of the
// chi-square quantile).
func chiSquare(xs []int64, lo, hi int64, logPMF func(k int64) float64) (stat float64, df int, crit float64) {
	counts := map[int64]int{}
	for _, x := range xs {
		counts[x]++
	}
	n := float64(len(xs))
	var e, o float64
	below := 0
	for _, x := range xs {
		if x < lo || x > hi {
			below++
		}
	}
	o = float64(below) // values outside [lo, hi] (mass below 1e-20) join the first bin
	bins := 0
	for k := lo; k <= hi; k++ {
		e += n * math.Exp(logPMF(k))
		o += float64(counts[k])
		if e >= 20 && hi-k > 6*int64(math.Sqrt(float64(hi-lo))) {
			stat += (o - e) * (o - e) / e
			bins++
			e, o = 0, 0
		}
	}
	stat += (o - e) * (o - e) / e
	bins++
	df = bins - 1
	k := float64(df)
	c := 1 - 2/(9*k) + 4.753*math.Sqrt(2/(9*k))
	return stat, df, k * c * c * c
}

// TestPoissonDistribution: both of Poisson's algorithms (inversion below
// mean 10, PTRS above) against the exact pmf by chi-square, at the critical
// value of 1 - 1e-6; a sampler with a 2% wrong mean is rejected.
func TestPoissonDistribution(t *testing.T) {
	n := 200_000
	if !longtest.Enabled() {
		n = 50_000
	}
	for _, lam := range []float64{0.3, 4, 9.99, 10, 37.5, 1000, 161_000} {
		t.Run(fmt.Sprint(lam), func(t *testing.T) {
			logPMF := func(l float64) func(k int64) float64 {
				return func(k int64) float64 {
					lg, _ := math.Lgamma(float64(k) + 1)
					return float64(k)*math.Log(l) - l - lg
				}
			}
			sd := math.Sqrt(lam)
			lo := max(0, int64(lam-12*sd-10))
			hi := int64(lam + 12*sd + 20)
			draw := func(l float64) []int64 {
				r := rng.Stream(uint64(lam*1000), 1)
				xs := make([]int64, n)
				for i := range xs {
					xs[i] = Poisson(r, l)
				}
				return xs
			}
			stat, df, crit := chiSquare(draw(lam), lo, hi, logPMF(lam))
			if stat > crit {
				t.Errorf("Poisson(%v): chi-square %.1f on %d df > %.1f", lam, stat, df, crit)
			}
			if lam >= 4 {
				bad, _, _ := chiSquare(draw(lam*1.02), lo, hi, logPMF(lam))
				if bad <= crit {
					t.Errorf("Poisson(%v) drawn at mean %v passed: chi-square %.1f <= %.1f", lam, lam*1.02, bad, crit)
				}
			}
		})
	}
}

// TestSkellamDistribution: Skellam(v) against the exact pmf
// e^{-v} I_k(v) (account.SkellamLogPMF).
func TestSkellamDistribution(t *testing.T) {
	for _, v := range []float64{1.5, 25, 300} {
		r := rng.Stream(uint64(v), 2)
		xs := make([]int64, 100_000)
		for i := range xs {
			xs[i] = Skellam(r, v)
		}
		w := int64(12*math.Sqrt(v)) + 10
		stat, df, crit := chiSquare(xs, -w, w, func(k int64) float64 { return account.SkellamLogPMF(int(k), v) })
		if stat > crit {
			t.Errorf("Skellam(%v): chi-square %.1f on %d df > %.1f", v, stat, df, crit)
		}
	}
}

// TestRoundUnbiased: the mean of many roundings is x, every result is
// floor(x) or floor(x)+1, and integers stay put.
func TestRoundUnbiased(t *testing.T) {
	r := rng.Stream(8)
	for _, x := range []float64{0, 3, -2, 0.25, -7.75, 1e6 + 0.5} {
		const n = 200_000
		f := math.Floor(x)
		sum := 0.0
		for range n {
			k := RoundUnbiased(r, x)
			if float64(k) != f && float64(k) != f+1 {
				t.Fatalf("x=%v: %d", x, k)
			}
			sum += float64(k) - f
		}
		p := x - f
		if se := math.Sqrt(p*(1-p)/n) + 1e-12; math.Abs(sum/n-p) > 6*se {
			t.Errorf("x=%v: mean fraction %v, want %v", x, sum/n, p)
		}
	}
}
