package account

import (
	"fmt"
	"math"
	"testing"
)

// skellamPMF returns the pmf of Sk(v) on [-w, w], w wide enough to hold all
// but about 1e-30 of the mass.
func skellamPMF(v float64) (pmf []float64, w int) {
	w = int(15*math.Sqrt(v)) + 40
	pmf = make([]float64, 2*w+1)
	for k := -w; k <= w; k++ {
		pmf[k+w] = math.Exp(SkellamLogPMF(k, v))
	}
	return pmf, w
}

// renyiMix returns D_alpha(P || Q) for P = (1-q) Sk(v) + q (Sk(v) + s) and
// Q = Sk(v) (forward), or D_alpha(Q || P) (reverse), by summing the pmf in
// log space over a window that holds all but about e^-100 of the mass.
func renyiMix(alpha, v float64, s int, q float64, reverse bool) float64 {
	w := int(20*math.Sqrt(v)) + 60 + s
	lp := make([]float64, 2*w+1)
	for k := -w; k <= w; k++ {
		lp[k+w] = SkellamLogPMF(k, v)
	}
	at := func(k int) float64 { return lp[k+w] }
	acc := math.Inf(-1)
	for k := -w + s; k <= w; k++ {
		lq := at(k)
		lpk := lq
		if q < 1 {
			lpk = logAdd(math.Log1p(-q)+lq, math.Log(q)+at(k-s))
		} else {
			lpk = at(k - s)
		}
		if reverse {
			lpk, lq = lq, lpk
		}
		acc = logAdd(acc, alpha*lpk+(1-alpha)*lq)
	}
	return acc / (alpha - 1)
}

// TestSkellamPMFSumsToOne checks the independent pmf against its own
// normalisation and variance.
func TestSkellamPMFSumsToOne(t *testing.T) {
	for _, v := range []float64{0.5, 3, 40, 250} {
		pmf, w := skellamPMF(v)
		sum, varr := 0.0, 0.0
		for i, p := range pmf {
			k := float64(i - w)
			sum += p
			varr += p * k * k
		}
		if math.Abs(sum-1) > 1e-12 || math.Abs(varr-v) > 1e-9*v {
			t.Errorf("Sk(%v): mass %v, variance %v", v, sum, varr)
		}
	}
}

// TestSkellamRDPAboveExact compares Agarwal, Kairouz and Liu's bound with
// the exact Rényi divergence of the one-dimensional Skellam mechanism
// (shift s, so L1 = L2 = s) computed from the pmf: the bound must never be
// below it. The test can fail: the same bound evaluated at twice the
// variance — the mix-up between the paper's parameter mu of Sk_{mu,mu}
// (Poisson(mu) - Poisson(mu), variance 2 mu) and the variance — is below
// the exact divergence, and the test counts those cases.
func TestSkellamRDPAboveExact(t *testing.T) {
	mixupBelow := 0
	for _, v := range []float64{1, 4, 20, 100, 400} {
		for _, s := range []int{1, 2, 5, 12} {
			for _, a := range []float64{1.5, 2, 3, 5, 10, 20, 40} {
				exact := renyiMix(a, v, s, 1, false)
				bound := SkellamRDP(a, v, float64(s), float64(s))
				if !(bound >= exact*(1-1e-9)) {
					t.Errorf("v=%v s=%d alpha=%v: bound %v below the exact %v", v, s, a, bound, exact)
				}
				if g := SkellamRDP(a, 2*v, float64(s), float64(s)); g < exact*(1-1e-6) {
					mixupBelow++
				}
			}
		}
	}
	if mixupBelow == 0 {
		t.Errorf("the bound at twice the variance was never below the exact divergence: the test has no power")
	}
	t.Logf("the bound at twice the variance (parameter mix-up) is below the exact divergence in %d of 140 cases", mixupBelow)
}

// TestPoissonSubsampledRDPGaussian checks Zhu and Wang's general bound,
// with the Gaussian mechanism's RDP as the base curve, against the exact
// sampled Gaussian RDP (Mironov, Talwar and Zhang 2019): it must not be
// smaller.
func TestPoissonSubsampledRDPGaussian(t *testing.T) {
	for _, q := range []float64{0.01, 0.1, 0.5} {
		for _, sigma := range []float64{0.7, 1, 2, 5} {
			base := func(l int) float64 { return float64(l) / (2 * sigma * sigma) }
			exact, err := SampledGaussianRDP(q, sigma, []float64{2, 3, 5, 8, 16, 32, 64})
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range []int{2, 3, 5, 8, 16, 32, 64} {
				got := PoissonSubsampledRDP(q, a, base)
				if got < exact[i]*(1-1e-9) {
					t.Errorf("q=%v sigma=%v alpha=%d: general bound %v below the exact %v", q, sigma, a, got, exact[i])
				}
			}
		}
	}
}

// TestSampledSkellamAboveExact compares SampledSkellamRDP with the exact
// Rényi divergences of the Poisson-subsampled one-dimensional Skellam
// mechanism in both directions (add and remove).
func TestSampledSkellamAboveExact(t *testing.T) {
	orders := []float64{1.5, 2, 3, 4.5, 8, 16, 32}
	for _, q := range []float64{0.05, 0.3, 1} {
		for _, v := range []float64{4, 30, 200} {
			for _, s := range []int{1, 3, 10} {
				curve, err := SampledSkellamRDP(q, v, float64(s), float64(s), orders)
				if err != nil {
					t.Fatal(err)
				}
				for i, a := range orders {
					for _, rev := range []bool{false, true} {
						exact := renyiMix(a, v, s, q, rev)
						if !(curve[i] >= exact*(1-1e-9)) {
							t.Errorf("q=%v v=%v s=%d alpha=%v reverse=%v: bound %v below the exact %v", q, v, s, a, rev, curve[i], exact)
						}
					}
				}
			}
		}
	}
}

// TestRDPToEpsilonTV: with tv = 0 it is RDPToEpsilon; with tv > 0 the
// epsilon is larger and delta' + (1 + e^eps) tv fits in delta, where
// delta' is the smallest delta the curve gives at that epsilon.
func TestRDPToEpsilonTV(t *testing.T) {
	orders := DefaultRDPOrders()
	curve, err := GaussianRDP(3, orders)
	if err != nil {
		t.Fatal(err)
	}
	e0, _, _ := RDPToEpsilon(orders, curve, 1e-6)
	e, _, err := RDPToEpsilonTV(orders, curve, 1e-6, 0)
	if err != nil || e != e0 {
		t.Fatalf("tv = 0: %v, %v; want %v", e, err, e0)
	}
	for _, tv := range []float64{1e-12, 1e-9, 1e-8} {
		e, _, err := RDPToEpsilonTV(orders, curve, 1e-6, tv)
		if err != nil {
			t.Fatal(err)
		}
		d, _, _ := RDPToDelta(orders, curve, e)
		if e < e0 || d+(1+math.Exp(e))*tv > 1e-6*(1+1e-6) {
			t.Errorf("tv=%v: eps %v (tv-free %v), delta' %v + (1+e^eps) tv = %v > 1e-6", tv, e, e0, d, d+(1+math.Exp(e))*tv)
		}
	}
	if e, _, _ := RDPToEpsilonTV(orders, curve, 1e-6, 1e-6); !math.IsInf(e, 1) {
		t.Errorf("tv = delta: eps %v, want +Inf", e)
	}
}

// TestBinomialUpperTail against a direct sum.
func TestBinomialUpperTail(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{10, 0.3}, {50, 0.1}, {1000, 0.1}} {
		for _, k := range []int{-1, 0, 3, c.n / 5, c.n / 2, c.n} {
			want := 0.0
			for j := k + 1; j <= c.n; j++ {
				if j < 0 {
					continue
				}
				lc, _ := math.Lgamma(float64(c.n + 1))
				l1, _ := math.Lgamma(float64(j + 1))
				l2, _ := math.Lgamma(float64(c.n - j + 1))
				want += math.Exp(lc - l1 - l2 + float64(j)*math.Log(c.p) + float64(c.n-j)*math.Log1p(-c.p))
			}
			got := BinomialUpperTail(c.n, c.p, k)
			if math.Abs(got-want) > 1e-12+1e-9*want {
				t.Errorf("P[Bin(%d, %v) > %d] = %v, want %v", c.n, c.p, k, got, want)
			}
		}
	}
}

// TestSplitMixMessagesWorkedExample: the reading of Balle et al.'s theorem
// reproduces their example (q = 2^32, n = 10^4: 12 messages for 2^-40),
// and the conservative application asks for one more.
func TestSplitMixMessagesWorkedExample(t *testing.T) {
	q := math.Exp2(32)
	// The unconservative reading at m messages is our bound at m + 1.
	if b := SplitMixSecurityBits(10_000, 13, q); b < 40 {
		t.Errorf("12 messages (credited as 12) give %.2f bits, want >= 40 (the paper's example)", b)
	}
	if b := SplitMixSecurityBits(10_000, 12, q); b >= 40 {
		t.Errorf("11 messages (credited as 11) give %.2f bits: the reading is looser than the paper's example", b)
	}
	m, err := SplitMixMessages(10_000, q, 40)
	if err != nil || m != 13 {
		t.Errorf("SplitMixMessages(10^4, 2^32, 40) = %d, %v; want 13 (12 + 1 uncredited)", m, err)
	}
	for _, c := range []struct{ n, m int }{{18, 100}, {19, 3}} {
		if b := SplitMixSecurityBits(c.n, c.m, q); !math.IsInf(b, -1) {
			t.Errorf("n=%d m=%d: %v bits, want no claim", c.n, c.m, b)
		}
	}
	if _, err := SplitMixMessages(18, q, 40); err == nil {
		t.Error("18 parties: want an error")
	}
	for _, n := range []int{19, 100, 173, 10_000} {
		m, err := SplitMixMessages(n, q, 53)
		if err != nil {
			t.Fatal(err)
		}
		if SplitMixSecurityBits(n, m, q) < 53 || SplitMixSecurityBits(n, m-1, q) >= 53 {
			t.Errorf("n=%d: m=%d is not the smallest number of shares for 53 bits", n, m)
		}
		t.Log(fmt.Sprintf("n=%d, q=2^32: %d shares for 2^-53 per coordinate", n, m))
	}
}

// TestShiftLemmaPointwise checks the inequality behind
// PoissonSubsampledShiftRDP on a grid: x^a + L y^a >= x^{1-a} + L y^{1-a}
// with x = 1 + q(L-1), y = 1 + q(1/L-1), for a >= 1 (remove <= add).
func TestShiftLemmaPointwise(t *testing.T) {
	for _, a := range []float64{1, 1.1, 1.5, 2, 3, 7, 12, 33, 64, 256} {
		for _, q := range []float64{1e-4, 0.01, 0.1, 0.5, 0.9, 0.999} { // q = 1: equality
			for i := -300; i <= 300; i++ {
				L := math.Exp(float64(i) / 20)
				x, y := 1+q*(L-1), 1+q*(1/L-1)
				add := math.Pow(x, a) + L*math.Pow(y, a)
				rem := math.Pow(x, 1-a) + L*math.Pow(y, 1-a)
				if math.IsInf(add, 0) {
					continue
				}
				if rem > add*(1+1e-9) {
					t.Fatalf("a=%v q=%v L=%v: remove %v > add %v", a, q, L, rem, add)
				}
			}
		}
	}
}

// TestShiftRDPGaussianExact: with the Gaussian's RDP as base curve the
// symmetric bound is the exact sampled Gaussian RDP of Mironov, Talwar and
// Zhang (their integer-order expansion is the same sum), and the general
// bound is strictly larger.
func TestShiftRDPGaussianExact(t *testing.T) {
	orders := []int{2, 3, 5, 8, 16, 32, 64}
	fo := make([]float64, len(orders))
	for i, a := range orders {
		fo[i] = float64(a)
	}
	for _, q := range []float64{0.01, 0.1, 0.5} {
		for _, sigma := range []float64{0.8, 1.5, 3} {
			base := func(l int) float64 { return float64(l) / (2 * sigma * sigma) }
			exact, err := SampledGaussianRDP(q, sigma, fo)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range orders {
				sym := PoissonSubsampledShiftRDP(q, a, base)
				if math.Abs(sym-exact[i]) > 1e-9*exact[i]+1e-15 {
					t.Errorf("q=%v sigma=%v alpha=%d: symmetric bound %v, exact %v", q, sigma, a, sym, exact[i])
				}
				if gen := PoissonSubsampledRDP(q, a, base); a >= 3 && gen <= sym {
					t.Errorf("q=%v sigma=%v alpha=%d: general bound %v not above the symmetric %v", q, sigma, a, gen, sym)
				}
			}
		}
	}
}

// TestAccountantTV: a round's TV term is charged by the RDP method (the
// run's epsilon grows with it, and a TV term too large for the target
// delta leaves no finite RDP figure), survives a checkpoint, and an invalid
// TV is refused.
func TestAccountantTV(t *testing.T) {
	orders := DefaultRDPOrders()
	curve, err := SampledSkellamRDP(0.1, sq(1.8*4184.6), 370757, 4184.6, orders)
	if err != nil {
		t.Fatal(err)
	}
	run := func(tv float64) (*Accountant, Spent) {
		a, err := NewAccountant(1e-6)
		if err != nil {
			t.Fatal(err)
		}
		share := RoundDelta(1e-6, 30)
		e, _, err := RDPToEpsilonTV(orders, curve, share, tv)
		if err != nil {
			t.Fatal(err)
		}
		for r := 1; r <= 30; r++ {
			if err := a.Record(Statement{Round: r, SampleRate: 0.1, Sampled: 100, Reporters: 100, Released: true,
				Epsilon: e, Delta: share, RDP: curve, TV: tv}); err != nil {
				t.Fatal(err)
			}
		}
		return a, a.Spent()
	}
	_, none := run(0)
	a, small := run(1e-12)
	_, big := run(1e-9)
	if !(none.Epsilon <= small.Epsilon && small.Epsilon < big.Epsilon) {
		t.Errorf("epsilon with TV 0, 1e-12, 1e-9 per round: %v, %v, %v; want increasing", none.Epsilon, small.Epsilon, big.Epsilon)
	}
	b, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := RestoreAccountant(b)
	if err != nil || back.Spent() != small {
		t.Errorf("restored %v (%v), want %v", back.Spent(), err, small)
	}
	acc, _ := NewAccountant(1e-6)
	if err := acc.Record(Statement{Round: 1, SampleRate: 0.1, Released: true, Epsilon: 1, Delta: 1e-8, RDP: curve, TV: 1}); err == nil {
		t.Error("TV = 1 accepted")
	}
	t.Logf("30 rounds: eps %.5f without TV, %.5f with 1e-12 per round, %.5f with 1e-9", none.Epsilon, small.Epsilon, big.Epsilon)
}

func sq(x float64) float64 { return x * x }
