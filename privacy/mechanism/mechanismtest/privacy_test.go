package mechanismtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
)

// The Chernoff interval must cover the true proportion at least as often as
// promised. With l = ln(100) each side may fail with probability <= 1%, so
// in 20000 trials we expect at most 200 misses per side; allow 260
// (about 4 standard deviations) for the binomial noise of the check itself.
func TestIntervalCoverage(t *testing.T) {
	r := rng.NewSeeded(3)
	l := math.Log(100)
	for _, p := range []float64{0.001, 0.05, 0.5, 0.97} {
		n := 500
		var missLo, missHi int
		for range 20000 {
			k := 0
			for range n {
				if r.Float64() < p {
					k++
				}
			}
			lo, hi := Interval(k, n, l)
			if p < lo {
				missLo++
			}
			if p > hi {
				missHi++
			}
		}
		if missLo > 260 || missHi > 260 {
			t.Errorf("p=%v: interval misses lo %d, hi %d of 20000 (bound 200 each)", p, missLo, missHi)
		}
	}
}

func TestIntervalEdges(t *testing.T) {
	lo, hi := Interval(0, 1000, 10)
	if lo != 0 || !(hi > 0 && hi < 0.02) {
		t.Errorf("k=0: [%v, %v]", lo, hi)
	}
	lo, hi = Interval(1000, 1000, 10)
	if hi != 1 || !(lo < 1 && lo > 0.98) {
		t.Errorf("k=n: [%v, %v]", lo, hi)
	}
}

// Two samplers of the same distribution pass; a pair with a known log
// ratio of 1 passes the claim ε = 1 (it is exactly tight) and is rejected
// for the claim ε = 0.5.
func TestRunDecisions(t *testing.T) {
	// P(0) = e/(1+e), P(1) = 1/(1+e) vs the mirror: LLR exactly 1.
	p := math.E / (1 + math.E)
	s0 := func(r *rand.Rand) int {
		if r.Float64() < p {
			return 0
		}
		return 1
	}
	s1 := func(r *rand.Rand) int { return 1 - s0(r) }
	if rep := Run(1e-9, 2, s0, s0, Options{Samples: 200_000}); rep.Reject {
		t.Errorf("identical distributions rejected: %v", rep)
	}
	rep := Run(1, 2, s0, s1, Options{Samples: 200_000})
	if rep.Reject {
		t.Errorf("exact-ε mechanism rejected: %v", rep)
	}
	if math.Abs(rep.MaxLogRatio-1) > 0.03 || rep.LowerLogRatio < 0.95 {
		t.Errorf("empirical LLR %v, lower bound %v, want about 1", rep.MaxLogRatio, rep.LowerLogRatio)
	}
	if rep := Run(0.5, 2, s0, s1, Options{Samples: 200_000}); !rep.Reject {
		t.Errorf("claim ε=0.5 on a ε=1 mechanism accepted: %v", rep)
	}
}

// Approximate DP: a mechanism that outputs a revealing symbol with
// probability 1e-2 satisfies (0, 1e-2)-DP-ish claims only with δ >= 1e-2.
func TestRunDelta(t *testing.T) {
	leak := func(which int) Sampler {
		return func(r *rand.Rand) int {
			if r.Float64() < 0.01 {
				return 2 + which // revealing
			}
			return int(r.Uint64() >> 63)
		}
	}
	if rep := Run(0.01, 4, leak(0), leak(1), Options{Samples: 200_000, Delta: 0.011}); rep.Reject {
		t.Errorf("(0.01, 0.011) claim rejected: %v", rep)
	}
	if rep := Run(0.01, 4, leak(0), leak(1), Options{Samples: 200_000, Delta: 0.005}); !rep.Reject {
		t.Errorf("(0.01, 0.005) claim accepted: %v", rep)
	}
}

func TestUniformBins(t *testing.T) {
	u := Uniform{Lo: -1, Hi: 1, N: 4}
	for _, c := range []struct {
		y    float64
		want int
	}{{-2, 0}, {-1, 1}, {-0.51, 1}, {-0.5, 2}, {0.99, 4}, {1, 5}, {math.Inf(1), 5}, {math.NaN(), 5}} {
		if got := u.Bin(c.y); got != c.want {
			t.Errorf("Bin(%v) = %d, want %d", c.y, got, c.want)
		}
	}
}

func TestEdgesBins(t *testing.T) {
	e := Edges{-1, 0, 2}
	if e.Bins() != 4 {
		t.Fatalf("Bins() = %d, want 4", e.Bins())
	}
	for _, c := range []struct {
		y    float64
		want int
	}{{math.Inf(-1), 0}, {-1.5, 0}, {-1, 1}, {-0.1, 1}, {0, 2}, {1.99, 2}, {2, 3}, {math.Inf(1), 3}, {math.NaN(), 3}} {
		if got := e.Bin(c.y); got != c.want {
			t.Errorf("Bin(%v) = %d, want %d", c.y, got, c.want)
		}
	}
}

func TestTails(t *testing.T) {
	e := Tails(0.5, 1, 0.25, 2)
	want := Edges{-1, -0.75, -0.5, 1.5, 1.75, 2}
	if len(e) != len(want) || e.Bins() != 2*2+3 {
		t.Fatalf("Tails = %v, want %v", e, want)
	}
	for i := range e {
		if math.Abs(e[i]-want[i]) > 1e-15 {
			t.Fatalf("Tails = %v, want %v", e, want)
		}
	}
	if e.Bin(0.5) != 3 || e.Bin(-0.6) != 2 || e.Bin(1.6) != 4 || e.Bin(5) != 6 || e.Bin(-5) != 0 {
		t.Errorf("unexpected bins for Tails: %v", e)
	}
	if one := Tails(0, 2, 0, 0); len(one) != 2 || one[0] != -2 || one[1] != 2 {
		t.Errorf("Tails(0, 2, 0, 0) = %v, want [-2 2]", one)
	}
}
