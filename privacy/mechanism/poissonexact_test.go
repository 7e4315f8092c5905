package mechanism

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// exactMeans are the rational means the exact samplers are tested at:
// below 1, at 1, integers (where two modes tie), non-integers and large.
var exactMeans = []struct{ num, den uint64 }{
	{3, 7}, {1, 1}, {5, 2}, {4, 1}, {100, 1}, {2469, 2}, {161_000, 1},
	{3602879701896397, 1 << 35}, // a dyadic float mean, as split-mix's
}

// poissonLogPMF is the Poisson log-pmf at mean lam, from math.Lgamma (its
// error, about 1e-13 relative, is far below what a chi-square test sees).
func poissonLogPMF(lam float64) func(k int64) float64 {
	return func(k int64) float64 {
		lg, _ := math.Lgamma(float64(k) + 1)
		return float64(k)*math.Log(lam) - lam - lg
	}
}

// exactDraws draws n values of PoissonExact(num/den) from a seeded stream.
func exactDraws(t *testing.T, num, den uint64, n int) []int64 {
	t.Helper()
	p, err := NewPoissonExact(num, den)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.Stream(num*1_000+den, 3)
	xs := make([]int64, n)
	for i := range xs {
		xs[i] = p.Sample(r)
	}
	return xs
}

// TestPoissonExactDistribution: PoissonExact(num/den) against the Poisson
// pmf by chi-square at the critical value of 1 - 1e-6, and its sample mean
// and variance within 5 standard errors of lambda; from mean 50 on, the
// draws are rejected against a mean 2% off (the test has power).
func TestPoissonExactDistribution(t *testing.T) {
	n := 100_000
	if longtest.Enabled() {
		n = 2_000_000
	}
	for _, c := range exactMeans {
		lam := float64(c.num) / float64(c.den)
		t.Run(fmt.Sprintf("%d/%d", c.num, c.den), func(t *testing.T) {
			sd := math.Sqrt(lam)
			lo := max(0, int64(lam-12*sd-10))
			hi := int64(lam + 12*sd + 20)
			xs := exactDraws(t, c.num, c.den, n)
			stat, df, crit := chiSquare(xs, lo, hi, poissonLogPMF(lam))
			if stat > crit {
				t.Errorf("chi-square %.1f on %d df > %.1f", stat, df, crit)
			}
			mean, vr := intMoments(xs)
			// Var of the sample mean is lam/n; of the sample variance
			// about (lam + 2 lam^2)/n.
			if se := math.Sqrt(lam / float64(n)); math.Abs(mean-lam) > 5*se {
				t.Errorf("mean %.4f, want %v ± %.4f", mean, lam, 5*se)
			}
			if se := math.Sqrt((lam + 2*lam*lam) / float64(n)); math.Abs(vr-lam) > 5*se {
				t.Errorf("variance %.4f, want %v ± %.4f", vr, lam, 5*se)
			}
			if lam >= 50 {
				if bad, _, _ := chiSquare(xs, lo, hi, poissonLogPMF(lam*1.02)); bad <= crit {
					t.Errorf("draws passed against mean %v: chi-square %.1f <= %.1f", lam*1.02, bad, crit)
				}
			}
		})
	}
}

// intMoments returns the sample mean and (unbiased) variance.
func intMoments(xs []int64) (mean, variance float64) {
	for _, x := range xs {
		mean += float64(x)
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		d := float64(x) - mean
		variance += d * d
	}
	return mean, variance / float64(len(xs)-1)
}

// TestPoissonExactTotalVariation: at small means the empirical
// distribution is within total variation 0.02 (0.003 long) of the exact
// pmf, computed in rational arithmetic (e^-lam lam^k/k!, with e^-lam as a
// big.Float to 200 bits).
func TestPoissonExactTotalVariation(t *testing.T) {
	n, bound := 20_000, 0.02
	if longtest.Enabled() {
		n, bound = 2_000_000, 0.003
	}
	for _, c := range []struct{ num, den uint64 }{{3, 7}, {5, 2}, {7, 1}} {
		xs := exactDraws(t, c.num, c.den, n)
		counts := map[int64]float64{}
		for _, x := range xs {
			counts[x]++
		}
		pmf := exactPoissonPMF(c.num, c.den, 80)
		tv := 0.0
		for k, p := range pmf {
			tv += math.Abs(counts[int64(k)]/float64(n) - p)
			delete(counts, int64(k))
		}
		for _, o := range counts {
			tv += o / float64(n)
		}
		if tv /= 2; tv > bound {
			t.Errorf("PoissonExact(%d/%d): total variation %.4f > %v", c.num, c.den, tv, bound)
		}
	}
}

// exactPoissonPMF returns P[k] for k < kmax of Poisson(num/den), computed
// with big.Float: lam^k/k! exactly as a rational, times e^-lam from its
// series.
func exactPoissonPMF(num, den uint64, kmax int) []float64 {
	const prec = 200
	lam := new(big.Float).SetPrec(prec).Quo(
		new(big.Float).SetPrec(prec).SetUint64(num), new(big.Float).SetPrec(prec).SetUint64(den))
	// e^-lam = 1 / sum_k lam^k/k! (the series converges fast for small lam).
	sum := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	terms := make([]*big.Float, 0, 400)
	for k := 0; k < 400; k++ {
		terms = append(terms, new(big.Float).Copy(term))
		sum.Add(sum, term)
		term.Mul(term, lam)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k+1)))
	}
	out := make([]float64, kmax)
	for k := range out {
		p := new(big.Float).SetPrec(prec).Quo(terms[k], sum)
		out[k], _ = p.Float64()
	}
	return out
}

// TestSkellamExact: SkellamExact(v) has mean 0 and variance v (5 standard
// errors) and matches the Skellam pmf e^-v I_k(v) by chi-square.
func TestSkellamExact(t *testing.T) {
	n := 40_000
	if longtest.Enabled() {
		n = 500_000
	}
	for _, c := range []struct{ num, den uint64 }{{3, 7}, {5, 1}, {300, 1}, {2469, 2}} {
		v := float64(c.num) / float64(c.den)
		s, err := NewSkellamExact(c.num, c.den)
		if err != nil {
			t.Fatal(err)
		}
		r := rng.Stream(c.num, c.den)
		xs := make([]int64, n)
		for i := range xs {
			xs[i] = s.Sample(r)
		}
		mean, vr := intMoments(xs)
		if se := math.Sqrt(v / float64(n)); math.Abs(mean) > 5*se {
			t.Errorf("SkellamExact(%v): mean %.4f, want 0 ± %.4f", v, mean, 5*se)
		}
		if se := math.Sqrt((v + 2*v*v) / float64(n)); math.Abs(vr-v) > 5*se {
			t.Errorf("SkellamExact(%v): variance %.4f, want %v ± %.4f", v, vr, v, 5*se)
		}
		w := int64(12*math.Sqrt(v)) + 10
		stat, df, crit := chiSquare(xs, -w, w, func(k int64) float64 { return account.SkellamLogPMF(int(k), v) })
		if stat > crit {
			t.Errorf("SkellamExact(%v): chi-square %.1f on %d df > %.1f", v, stat, df, crit)
		}
	}
}

// TestExactBadInput: zero, overflowing or too large means are errors
// naming the problem, not panics.
func TestExactBadInput(t *testing.T) {
	cases := []struct {
		name     string
		num, den uint64
		skellam  bool
		want     string
	}{
		{"zero numerator", 0, 1, false, "must be positive"},
		{"zero denominator", 1, 0, false, "must be positive"},
		{"too large", 1 << 40, 1, false, "exceeds"},
		{"den times mode overflows", math.MaxUint64, 1 << 40, false, "overflows"},
		{"skellam 2 den overflows", 1, math.MaxUint64, true, "overflows"},
		{"skellam zero", 0, 3, true, "must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.skellam {
				_, err = NewSkellamExact(c.num, c.den)
			} else {
				_, err = NewPoissonExact(c.num, c.den)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestPoissonExactLargestMean: the sampler builds at MaxExactMean (its
// set-up multiplies about 2^15 factors by a product tree) and its draws
// average to the mean within 5 standard errors.
func TestPoissonExactLargestMean(t *testing.T) {
	const n = 200
	p, err := NewPoissonExact(MaxExactMean, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.Stream(11)
	sum := 0.0
	for range n {
		sum += float64(p.Sample(r))
	}
	lam := float64(MaxExactMean)
	if se := math.Sqrt(lam / n); math.Abs(sum/n-lam) > 5*se {
		t.Errorf("mean %.1f, want %v ± %.1f", sum/n, lam, 5*se)
	}
	if _, err := NewPoissonExact(MaxExactMean+1, 1); err == nil {
		t.Error("a mean above MaxExactMean was accepted")
	}
}

// TestBigBernoulli: the lazy binary-expansion Bernoulli at p = 0, 1 and
// rationals between: frequencies within 5 standard errors (exactly 0 and
// n at the ends).
func TestBigBernoulli(t *testing.T) {
	const n = 100_000
	for _, c := range []struct{ a, b int64 }{{0, 1}, {1, 1}, {1, 3}, {2, 3}, {1, 2}, {7, 1 << 40}} {
		b := newBigBernoulli(big.NewInt(c.a), big.NewInt(c.b))
		r := rng.Stream(uint64(c.a), uint64(c.b))
		hits := 0
		for range n {
			if b.sample(r) {
				hits++
			}
		}
		p := float64(c.a) / float64(c.b)
		if se := math.Sqrt(p*(1-p)/n) + 1e-12; math.Abs(float64(hits)/n-p) > 5*se {
			t.Errorf("Bernoulli(%d/%d): frequency %v", c.a, c.b, float64(hits)/n)
		}
	}
}

// TestDyadicRational: floats convert exactly, bad ones are errors.
func TestDyadicRational(t *testing.T) {
	cases := []struct {
		v        float64
		num, den uint64
		ok       bool
	}{
		{1, 1, 1, true}, {0.75, 3, 4, true}, {6, 6, 1, true}, {1638.25, 6553, 4, true},
		{0, 0, 0, false}, {-1, 0, 0, false}, {math.Inf(1), 0, 0, false}, {math.NaN(), 0, 0, false},
		{1e-30, 0, 0, false}, {1e30, 0, 0, false},
	}
	for _, c := range cases {
		num, den, err := DyadicRational(c.v)
		if (err == nil) != c.ok || num != c.num || den != c.den {
			t.Errorf("DyadicRational(%v) = %d/%d, %v; want %d/%d ok=%v", c.v, num, den, err, c.num, c.den, c.ok)
		}
		if err == nil && float64(num)/float64(den) != c.v {
			t.Errorf("DyadicRational(%v) = %d/%d, not exact", c.v, num, den)
		}
	}
}

// BenchmarkPoissonExact compares the exact sampler with the floating-point
// Poisson at the means split-mix uses (a client share's lambda is half its
// Skellam variance).
func BenchmarkPoissonExact(b *testing.B) {
	for _, lam := range []uint64{3, 100, 1234, 161_000} {
		b.Run(fmt.Sprintf("exact/%d", lam), func(b *testing.B) {
			p, err := NewPoissonExact(lam, 1)
			if err != nil {
				b.Fatal(err)
			}
			r := rng.Stream(1, 1)
			for b.Loop() {
				p.Sample(r)
			}
		})
		b.Run(fmt.Sprintf("float/%d", lam), func(b *testing.B) {
			r := rng.Stream(1, 1)
			for b.Loop() {
				Poisson(r, float64(lam))
			}
		})
	}
	// A dyadic mean like split-mix's (a float variance taken exactly).
	b.Run("exact/dyadic-104857.6", func(b *testing.B) {
		p, err := NewPoissonExact(3602879701896397, 1<<35)
		if err != nil {
			b.Fatal(err)
		}
		r := rng.Stream(1, 1)
		for b.Loop() {
			p.Sample(r)
		}
	})
}
