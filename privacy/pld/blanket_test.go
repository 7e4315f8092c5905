package pld

import (
	"errors"
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// blanketDirectDelta is an independent slow computation of the hockey-stick
// divergence H_{e^eps}(P || Q) of the blanket pair of Step 1 (every blanket
// count N, no slot bound): sum over N ~ Bin(n-1, gamma) and over every
// (C0, C1) of (P_N - e^eps Q_N)^+, with the multinomial probabilities of
// the N blanket draws and the user's k-ary randomized response at level 0
// (P) or 1 (Q), summed exactly from lgamma.
func blanketDirectDelta(eps0 float64, levels, n int, eps float64) float64 {
	b := float64(levels)
	k := b + 1
	e := math.Exp(eps0)
	g := k / (e + b)
	lf := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	multi := func(N, c0, c1 int) float64 { // N draws, c0 at level 0, c1 at level 1
		if c0 < 0 || c1 < 0 || c0+c1 > N {
			return 0
		}
		r := N - c0 - c1
		lp := lf(N) - lf(c0) - lf(c1) - lf(r) + float64(c0+c1)*math.Log(1/k)
		if r > 0 {
			lp += float64(r) * math.Log((k-2)/k)
		}
		return math.Exp(lp)
	}
	hi, lo, other := e/(e+b), 1/(e+b), (b-1)/(e+b)
	var delta float64
	for N := 0; N <= n-1; N++ {
		wN := math.Exp(lf(n-1) - lf(N) - lf(n-1-N) + float64(N)*math.Log(g) + float64(n-1-N)*math.Log1p(-g))
		if n-1 == N {
			wN = math.Pow(g, float64(N))
		}
		for c0 := 0; c0 <= N+1; c0++ {
			for c1 := 0; c0+c1 <= N+1; c1++ {
				p := hi*multi(N, c0-1, c1) + lo*multi(N, c0, c1-1) + other*multi(N, c0, c1)
				q := lo*multi(N, c0-1, c1) + hi*multi(N, c0, c1-1) + other*multi(N, c0, c1)
				if v := p - math.Exp(eps)*q; v > 0 {
					delta += wN * v
				}
			}
		}
	}
	return delta
}

func TestShuffleBlanketRRAgainstDirect(t *testing.T) {
	for _, tc := range []struct {
		eps0   float64
		levels int
		n      int
	}{
		{1, 2, 30}, {0.5, 2, 60}, {2, 3, 25}, {0.2, 2, 80},
	} {
		p, err := ShuffleBlanketRR(tc.eps0, tc.levels, tc.n, Options{Interval: 1e-4})
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0, 0.05, 0.1, 0.3, 0.6} {
			if eps >= tc.eps0 {
				continue
			}
			want := blanketDirectDelta(tc.eps0, tc.levels, tc.n, eps)
			got := p.Delta(eps)
			if got < want*(1-1e-9) {
				t.Errorf("%+v eps %v: PLD delta %.6g below the direct %.6g", tc, eps, got, want)
			}
			if got > want*1.05+1e-4 {
				t.Errorf("%+v eps %v: PLD delta %.6g far above the direct %.6g", tc, eps, got, want)
			}
		}
	}
}

// The blanket pair is tighter than the clone pair for R_{gamma,2} at the
// default SS-Simple run (eps0 = 1724/7850, n = 2000): per column and over
// the run's 78,500 columns.
func TestShuffleBlanketRRBelowClones(t *testing.T) {
	eps0, n := 1724.0/7850, 2000
	o := Options{Interval: 2e-5}
	bl, err := ShuffleBlanketRR(eps0, 2, n, o)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ShuffleClones(eps0, n, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, eps := range []float64{0.001, 0.005, 0.01} {
		if b, c := bl.Delta(eps), cl.Delta(eps); !(b < c) {
			t.Errorf("eps %v: blanket delta %.4g not below clone delta %.4g", eps, b, c)
		}
	}
	if s, c := bl.LossStdDev(), cl.LossStdDev(); !(s < 0.9*c) {
		t.Errorf("blanket loss sd %.4g not below 0.9 times the clone pair's %.4g", s, c)
	}
}

func TestShuffleBlanketRRBadInput(t *testing.T) {
	o := Options{Interval: 1e-4}
	for _, tc := range []struct {
		eps0   float64
		levels int
		n      int
	}{
		{math.NaN(), 2, 10}, {-1, 2, 10}, {0, 2, 10}, {41, 2, 10}, {1, 1, 10}, {1, 0, 10}, {1, 2, 0}, {1, 2, 1 << 31}, {1e-3, 2, 1 << 29},
	} {
		_, err := ShuffleBlanketRR(tc.eps0, tc.levels, tc.n, o)
		if !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%+v: want an invalid-input error, got %v", tc, err)
		}
	}
}

func TestBlanketSlots(t *testing.T) {
	for _, tc := range []struct {
		n int
		g float64
	}{{0, 0.5}, {1<<30 + 1, 0.5}, {10, 0}, {10, 1.5}, {10, math.NaN()}} {
		if _, _, err := BlanketSlots(tc.n, tc.g); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%+v: want an invalid-input error, got %v", tc, err)
		}
	}
	// n = 2000, gamma = e^{-0.11}: N has mean 1791 and sd 13.3; the slots
	// are 8 sd below and the bound on P(N < slots - 1) is tiny.
	s, f, err := BlanketSlots(2000, math.Exp(-0.11))
	if err != nil || s < 1650 || s > 1700 || !(f >= 0 && f < 1e-12) {
		t.Errorf("BlanketSlots(2000, e^-0.11) = %d, %v, %v", s, f, err)
	}
	// The bound is at or above the exact binomial tail.
	n, g := 300, 0.8
	s, f, _ = BlanketSlots(n, g)
	var exact float64
	for k := 0; k < s-1; k++ {
		lc, _ := math.Lgamma(float64(n))
		la, _ := math.Lgamma(float64(k + 1))
		lb, _ := math.Lgamma(float64(n - k))
		exact += math.Exp(lc - la - lb + float64(k)*math.Log(g) + float64(n-1-k)*math.Log1p(-g))
	}
	if f < exact {
		t.Errorf("fail bound %v below the exact tail %v", f, exact)
	}
}
