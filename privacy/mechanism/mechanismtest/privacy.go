// Package mechanismtest is the statistical privacy test shared by every local
// randomizer of shufflefl (and by anything else that claims a DP guarantee
// for a sampler it can run).
//
// Run draws Samples outputs of a mechanism on two neighbouring inputs, bins
// them, and rejects the (ε, δ) claim when, with one-sided Chernoff confidence
// intervals on every bin's probability and a union bound, the binned
// hockey-stick divergence provably exceeds δ: a correct mechanism is
// rejected with probability at most Alpha (default 1e-6), whatever the
// binning. RequirePrivate and RequireReject (the negative control) wrap it
// for tests; Tails bins a mechanism whose loss is monotone in a scalar
// output, which keeps power at large ε. The derivation, the power analysis
// and the limits at large ε are in docs/MECHANISMS.md ("The statistical
// privacy test").
package mechanismtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/internal/rng"
)

// Sampler draws one output of the mechanism on a fixed input and returns the
// index of its bin, in [0, bins).
type Sampler func(r *rand.Rand) int

// Options configures a test run. The zero value means 10^6 samples per input
// (through Require*: 10^5 unless the long tests are on, SHUFFLEFL_LONG=1, see
// package longtest), seed 1, α = 1e-6 and pure DP.
type Options struct {
	Samples int     // draws per input
	Seed    uint64  // the two streams are rng.Stream(Seed, 0) and rng.Stream(Seed, 1)
	Alpha   float64 // overall false-reject probability for a correct mechanism
	Delta   float64 // δ of the claim; 0 for pure ε-DP
}

func (o Options) withDefaults() Options {
	if o.Samples <= 0 {
		o.Samples = 1_000_000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Alpha <= 0 {
		o.Alpha = 1e-6
	}
	return o
}

// Report is the outcome of one test.
type Report struct {
	Epsilon, Delta, Alpha float64
	Samples, Bins         int
	// L is the Chernoff exponent ln(4·Bins/α) used for every interval.
	L float64
	// MaxLogRatio is the largest empirical |ln(p̂/q̂)| over bins where both
	// counts are at least 100 ("bins with enough mass"); WorstBin is that bin
	// and Tolerance is its confidence margin ln(p̂/q̂) - ln(lo/hi).
	MaxLogRatio float64
	WorstBin    int
	Tolerance   float64
	// LowerLogRatio is the largest lower confidence bound on |ln(P_j/Q_j)|
	// over all bins: with probability 1-α the mechanism's binned privacy loss
	// is at least this. It exceeds ε exactly when a pure-DP test rejects, and
	// a value well below ε means the mechanism (or the binning) is not tight.
	LowerLogRatio float64
	// HockeyStick is the lower confidence bound on the binned
	// e^ε-hockey-stick divergence, max over the two directions; the test
	// rejects when it exceeds Delta.
	HockeyStick float64
	Reject      bool
}

// String summarises the report on one line.
func (r Report) String() string {
	return fmt.Sprintf("ε=%.4g δ=%.3g: %d bins × %d samples, max empirical |LLR| %.4f (bin %d, tolerance %.4f), lower bound %.4f, hockey-stick lower bound %.3g, α=%.0e, reject=%v",
		r.Epsilon, r.Delta, r.Bins, r.Samples, r.MaxLogRatio, r.WorstBin, r.Tolerance, r.LowerLogRatio, r.HockeyStick, r.Alpha, r.Reject)
}

// Run performs the test of the claim "(eps, opt.Delta)-DP" for the two
// samplers and returns the report without failing anything.
func Run(eps float64, bins int, s0, s1 Sampler, opt Options) Report {
	opt = opt.withDefaults()
	c0 := histogram(s0, bins, opt.Samples, rng.Stream(opt.Seed, 0))
	c1 := histogram(s1, bins, opt.Samples, rng.Stream(opt.Seed, 1))
	return Compare(eps, c0, c1, opt)
}

func histogram(s Sampler, bins, n int, r *rand.Rand) []int {
	c := make([]int, bins)
	for range n {
		c[s(r)]++
	}
	return c
}

// Compare runs the decision rule on two histograms of equal length, each
// from opt.Samples draws (opt.Samples must equal the counts' sums).
func Compare(eps float64, c0, c1 []int, opt Options) Report {
	opt = opt.withDefaults()
	if len(c0) != len(c1) {
		panic("mechanismtest: histograms of different length")
	}
	n := 0
	for _, c := range c0 {
		n += c
	}
	opt.Samples = n
	bins := len(c0)
	rep := Report{Epsilon: eps, Delta: opt.Delta, Alpha: opt.Alpha, Samples: n, Bins: bins, WorstBin: -1}
	rep.L = math.Log(4 * float64(bins) / opt.Alpha)
	ee := math.Exp(eps)
	var hs01, hs10 float64
	for j := range bins {
		lo0, hi0 := Interval(c0[j], n, rep.L)
		lo1, hi1 := Interval(c1[j], n, rep.L)
		hs01 += math.Max(0, lo0-ee*hi1)
		hs10 += math.Max(0, lo1-ee*hi0)
		lower := math.Max(safeLogRatio(lo0, hi1), safeLogRatio(lo1, hi0))
		rep.LowerLogRatio = math.Max(rep.LowerLogRatio, lower)
		if c0[j] >= 100 && c1[j] >= 100 {
			emp := math.Log(float64(c0[j]) / float64(c1[j]))
			tol := emp - safeLogRatio(lo0, hi1)
			if emp < 0 {
				emp, tol = -emp, -emp-safeLogRatio(lo1, hi0)
			}
			if emp > rep.MaxLogRatio {
				rep.MaxLogRatio, rep.WorstBin, rep.Tolerance = emp, j, tol
			}
		}
	}
	rep.HockeyStick = math.Max(hs01, hs10)
	rep.Reject = rep.HockeyStick > opt.Delta
	return rep
}

func safeLogRatio(num, den float64) float64 {
	switch {
	case num <= 0:
		return math.Inf(-1)
	case den <= 0:
		return math.Inf(1)
	}
	return math.Log(num / den)
}

// Interval returns the Chernoff (KL) confidence interval [lo, hi] for a
// binomial proportion after observing k successes in n trials, each side
// failing with probability at most e^-l.
func Interval(k, n int, l float64) (lo, hi float64) {
	p := float64(k) / float64(n)
	bound := l / float64(n)
	// hi: KL(p||q) increases in q on [p, 1].
	if k == n {
		hi = 1
	} else {
		a, b := p, 1.0
		for range 200 {
			m := 0.5 * (a + b)
			if kl(p, m) > bound {
				b = m
			} else {
				a = m
			}
		}
		hi = b
	}
	if k == 0 {
		lo = 0
	} else {
		a, b := 0.0, p
		for range 200 {
			m := 0.5 * (a + b)
			if kl(p, m) > bound {
				a = m
			} else {
				b = m
			}
		}
		lo = a
	}
	return lo, hi
}

// kl is the Bernoulli Kullback-Leibler divergence KL(p || q).
func kl(p, q float64) float64 {
	var s float64
	if p > 0 {
		s += p * math.Log(p/q)
	}
	if p < 1 {
		s += (1 - p) * math.Log((1-p)/(1-q))
	}
	return s
}

func samplesFor(t testing.TB, opt Options) Options {
	if opt.Samples == 0 && !longtest.Enabled() {
		opt.Samples = 100_000
	}
	return opt
}

// RequirePrivate runs the test and fails t if the claim is rejected.
func RequirePrivate(t testing.TB, eps float64, bins int, s0, s1 Sampler, opt Options) Report {
	t.Helper()
	rep := Run(eps, bins, s0, s1, samplesFor(t, opt))
	if rep.Reject {
		t.Errorf("privacy claim rejected: %v", rep)
	} else {
		t.Logf("%v", rep)
	}
	return rep
}

// RequireReject runs the test and fails t if the claim is NOT rejected: the
// negative control for a mechanism that is deliberately less private than
// claimed.
func RequireReject(t testing.TB, eps float64, bins int, s0, s1 Sampler, opt Options) Report {
	t.Helper()
	rep := Run(eps, bins, s0, s1, samplesFor(t, opt))
	if !rep.Reject {
		t.Errorf("a mechanism weaker than claimed passed the test: %v", rep)
	} else {
		t.Logf("rejected as expected: %v", rep)
	}
	return rep
}

// Uniform bins the real line into n equal cells on [lo, hi) plus one tail
// cell on each side: indices 0 (below lo), 1..n, n+1 (at or above hi).
type Uniform struct {
	Lo, Hi float64
	N      int
}

// Bins returns the number of bins, N+2.
func (u Uniform) Bins() int { return u.N + 2 }

// Bin returns the bin of y (NaN goes to the upper tail).
func (u Uniform) Bin(y float64) int {
	if y < u.Lo {
		return 0
	}
	if !(y < u.Hi) {
		return u.N + 1
	}
	j := int((y - u.Lo) / (u.Hi - u.Lo) * float64(u.N))
	return 1 + min(j, u.N-1)
}

// Continuous turns a real-valued sampler into a Sampler with binning u.
func (u Uniform) Continuous(f func(r *rand.Rand) float64) Sampler {
	return func(r *rand.Rand) int { return u.Bin(f(r)) }
}

// Edges bins the real line at sorted cut points: bin 0 is (-∞, e[0]), bin i
// is [e[i-1], e[i]) and bin len(e) is [e[len(e)-1], +∞) (NaN goes there
// too). Unlike Uniform it can spend its bins where the privacy loss is
// decided, for example only in the tails of a Gaussian beyond the point
// where the loss exceeds ε (see Tails). The cut points must be increasing.
type Edges []float64

// Bins returns the number of bins, len(e)+1.
func (e Edges) Bins() int { return len(e) + 1 }

// Bin returns the bin of y.
func (e Edges) Bin(y float64) int {
	if math.IsNaN(y) {
		return len(e)
	}
	// The first cut point above y; y equal to a cut point goes up.
	lo, hi := 0, len(e)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e[m] <= y {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Continuous turns a real-valued sampler into a Sampler with binning e.
func (e Edges) Continuous(f func(r *rand.Rand) float64) Sampler {
	return func(r *rand.Rand) int { return e.Bin(f(r)) }
}

// Tails returns the cut points of a tail binning around center c: the
// central interval [c-a, c+a) is one bin, each tail beyond it is split into
// n bins of width w, and the rest of each tail (|y - c| >= a + n·w) is one
// more bin, 2n+3 bins in all:
//
//	c-a-n·w, ..., c-a-w, c-a, c+a, c+a+w, ..., c+a+n·w.
//
// It is the binning that gives the test power at large ε for a mechanism
// whose privacy loss is monotone in a scalar output. For the Gaussian
// mechanism on inputs 0 and Δ with noise σ the privacy loss of output y is
// (Δ/σ²)(y - Δ/2), which exceeds ε exactly when |y - Δ/2| > a = εσ²/Δ:
// with c = Δ/2 and that a, the tail bins hold all of the hockey-stick
// divergence δ(ε) = Σ_j (P_j - e^ε·Q_j)+ and the central bin none. A uniform
// binning instead wastes almost every bin where P and Q are within e^ε of
// each other, and its tail bins straddle the point of loss ε.
//
// Detectability. In a bin where the other input's count is 0, the test's
// upper bound on that probability is about L/N (L = ln(4·bins/α), N the
// samples), which is multiplied by e^ε: a claim (ε, δ) can only be refuted
// by tail bins where P_j exceeds δ + e^ε·L/N, so at ε = 10 (e^ε = 22026)
// with N = 10^7 and L ≈ 18 only violations of δ larger than about 0.04 are
// visible (see TestPrivacyGaussianLargeEpsilon in package mechanism).
func Tails(c, a, w float64, n int) Edges {
	e := make(Edges, 0, 2*n+2)
	for i := n; i >= 0; i-- {
		e = append(e, c-a-float64(i)*w)
	}
	for i := 0; i <= n; i++ {
		e = append(e, c+a+float64(i)*w)
	}
	return e
}
