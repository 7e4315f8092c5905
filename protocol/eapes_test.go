package protocol

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// TestEAPESNoise: the analyzer's estimate is unbiased for the mean clipped
// update with per-coordinate variance Σ_i sigma_i²/n² (sigma_i analytic
// Gaussian for (eps_i, delta_i) at L2 sensitivity 2C). d = 2000 independent
// coordinates: mean error within 6 sd (sqrt(v/d)), variance within
// 6·sqrt(2/d) relative.
func TestEAPESNoise(t *testing.T) {
	const n, d, clip = 40, 2000, 1.0
	p := mustNew(t, "e-apes", Params{Clip: clip, Delta: 1e-6})
	if p.Mode() != WholeReport {
		t.Fatalf("mode %v, want whole-report shuffling (E-APES Algorithm 1)", p.Mode())
	}
	budgets := make([]Budget, n)
	want := 0.0
	for i := range budgets {
		budgets[i] = Budget{Epsilon: 50 + 10*float64(i%5), Delta: 1e-5}
		sig := gaussianSigmaFor(t, budgets[i], 2*clip)
		want += sig * sig
	}
	want /= n * n
	update := make([]float64, d)
	for j := range update {
		update[j] = 0.02 * math.Sin(float64(j)) // norm < 1: not clipped
	}
	_, agg := apesRound(t, p, shape(n, d), update, budgets, 5)
	est := apesEstimate(t, p, shape(n, d), agg)
	var m, v float64
	for j := range est {
		e := est[j] - update[j]
		m += e
		v += e * e
	}
	m /= d
	v /= d
	if math.Abs(m) > 6*math.Sqrt(want/d) {
		t.Errorf("mean error %v, more than 6 sd from 0", m)
	}
	if math.Abs(v/want-1) > 6*math.Sqrt(2.0/d) {
		t.Errorf("error variance %v, want %v", v, want)
	}
	// L2 clipping: an update of norm 10 is scaled to norm C before noise.
	u := make([]float64, d)
	u[0], u[1] = 6, 8
	var rep Report
	if err := p.Encode(rng.Stream(1), shape(n, d), u, Budget{Epsilon: 1, Delta: 1e-5}, &rep); err != nil {
		t.Fatal(err)
	}
	if math.Abs(u[0]-0.6) > 1e-12 || math.Abs(u[1]-0.8) > 1e-12 {
		t.Fatalf("L2 clipping gave %v %v", u[0], u[1])
	}
}

// TestEAPESAccount: the rigorous statement is (max eps_i, max delta_i) and
// is not flagged; the run's accountant composes it over the T rounds at the
// run's target delta (at most the better of basic and advanced
// composition). The paper's mu-GDP figure is reported beside it, labelled
// an approximation, and equals amplify's E-APES mu and the exact GDP
// conversion at delta_s = half the round's share of the run's delta.
func TestEAPESAccount(t *testing.T) {
	const n = 1000
	eps, err := account.Budgets("eapes-uniform1", n, rng.Stream(4))
	if err != nil {
		t.Fatal(err)
	}
	budgets := make([]Budget, n)
	deltas := make([]float64, n)
	for i, e := range eps {
		budgets[i] = Budget{Epsilon: e, Delta: 1e-5}
		deltas[i] = 1e-5
	}
	const T, D = 4, 1e-3
	s := Shape{Round: T, Dim: 100, Population: n, Participants: n}
	p := mustNew(t, "e-apes", Params{Clip: 2, Delta: D, Rounds: T})
	sp, pr := runSpent(t, p, s, budgets, T, D)
	st := Summarize(eps)
	if pr.Approximate || pr.CentralEpsilon != st.Max || pr.CentralDelta != 1e-5 || pr.LocalEpsilon != st {
		t.Fatalf("rigorous statement %+v", pr)
	}
	ce, cd, _, err := account.ComposeBest(st.Max, 1e-5, T, D-T*1e-5)
	if err != nil {
		t.Fatal(err)
	}
	// The accountant may compose more tightly than the better of basic and
	// advanced composition, never more loosely, and never below one round.
	if sp.Epsilon > ce*(1+1e-12) || !(sp.Epsilon > st.Max) || cd > D*(1+1e-12) || sp.Delta > D*(1+1e-12) {
		t.Fatalf("cumulative (%v, %v) by %q, want at most (%v, %v) and above one round's %v", sp.Epsilon, sp.Delta, sp.Method, ce, D, st.Max)
	}
	if !strings.Contains(pr.Bound, "APPROXIMATION") {
		t.Fatalf("bound %q does not label the E-APES figure", pr.Bound)
	}
	a, err := p.(EAPES).Approximation(s, budgets)
	if err != nil {
		t.Fatal(err)
	}
	// delta_s = RoundDelta(D, T)/2 = D/16 (exact: a power-of-two scaling).
	deltaS := D / 16
	if deltaS != account.RoundDelta(D, T)/2 {
		t.Fatalf("delta_s %v, want half the round's share %v", deltaS, account.RoundDelta(D, T)/2)
	}
	mu, _ := amplify.EAPESMu(eps, deltas)
	e1, _ := account.GDPToEpsilon(mu, deltaS)
	e4, _ := account.GDPToEpsilon(2*mu, deltaS)
	if a.Mu != mu || a.Epsilon != e1 || a.CumulativeMu != 2*mu || math.Abs(a.CumulativeEpsilon-e4) > 1e-12 || a.Delta != deltaS+1e-5 {
		t.Fatalf("approximation %+v, want mu %v eps %v at delta %v, cumulative %v", a, mu, e1, deltaS+1e-5, e4)
	}
	if !(a.Epsilon < pr.CentralEpsilon) {
		t.Errorf("the E-APES approximation %v should be far below the unamplified %v", a.Epsilon, pr.CentralEpsilon)
	}
}

// TestShuffledMean checks E-APES Algorithm 2: over R = 4000 independent
// runs on n = 60 users with Table 3 (E-APES) Uniform1 budgets and data in
// [20, 80], the estimate's mean is the true mean (within 6 standard errors
// sqrt(V/R)) and its variance is the closed form V = Σ 2(60/eps_i)²/n²
// (relative deviation below 6·sqrt(2/R) plus 0.03 for the excess kurtosis
// of an average of 60 Laplace draws).
func TestShuffledMean(t *testing.T) {
	const n, R = 60, 4000
	r := rng.Stream(12)
	eps, _ := account.Budgets("eapes-uniform1", n, r)
	x := make([]float64, n)
	truth := 0.0
	for i := range x {
		x[i] = 20 + 60*r.Float64()
		truth += x[i] / n
	}
	x[0] = 95 // clipped to 80
	truth += (80 - x[0]) / n
	var m, v, V float64
	for k := 0; k < R; k++ {
		res, err := ShuffledMean(rng.Stream(12, uint64(k)), x, eps, 20, 80)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			got := slices.Clone(res.Epsilons)
			slices.Sort(got)
			want := slices.Clone(eps)
			slices.Sort(want)
			if !slices.Equal(got, want) || slices.Equal(res.Epsilons, eps) {
				t.Fatal("the shuffled epsilons are not a permutation of the budgets")
			}
			mu, _ := amplify.EAPESMu(eps, nil)
			if res.Mu != mu {
				t.Fatalf("mu %v, want Corollary 1's %v", res.Mu, mu)
			}
		}
		V = res.Variance
		m += res.Estimate
		v += (res.Estimate - truth) * (res.Estimate - truth)
	}
	m /= R
	v /= R
	if math.Abs(m-truth) > 6*math.Sqrt(V/R) {
		t.Errorf("mean estimate %v, want %v ± %v", m, truth, 6*math.Sqrt(V/R))
	}
	if math.Abs(v/V-1) > 6*math.Sqrt(2.0/R)+0.03 {
		t.Errorf("variance %v, closed form %v", v, V)
	}
}

// TestShuffledFrequency checks E-APES Algorithm 3 the same way: n = 400
// users, 30% ones, eapes-groups budgets (0.1 / 0.5 / 1) assigned
// independently of the bits, R = 3000 runs; mean within 6 standard errors of
// the true fraction, variance equal to the closed form within
// 6·sqrt(2/R) + 0.02.
func TestShuffledFrequency(t *testing.T) {
	const n, R = 400, 3000
	eps, err := account.Budgets("eapes-groups", n, rng.Stream(3))
	if err != nil {
		t.Fatal(err)
	}
	bits := make([]int, n)
	for i := range bits {
		if i%10 < 3 {
			bits[i] = 1
		}
	}
	var m, v, V float64
	for k := 0; k < R; k++ {
		res, err := ShuffledFrequency(rng.Stream(3, uint64(k)), bits, eps)
		if err != nil {
			t.Fatal(err)
		}
		V = res.Variance
		m += res.Estimate
		v += (res.Estimate - 0.3) * (res.Estimate - 0.3)
	}
	m /= R
	v /= R
	if math.Abs(m-0.3) > 6*math.Sqrt(V/R) {
		t.Errorf("mean estimate %v, want 0.3 ± %v", m, 6*math.Sqrt(V/R))
	}
	if math.Abs(v/V-1) > 6*math.Sqrt(2.0/R)+0.02 {
		t.Errorf("variance %v, closed form %v", v, V)
	}
}

// TestShuffledFrequencyBiasWhenBudgetsCorrelate: "z is an unbiased
// estimator of c" (E-APES Section 4.2) needs budgets independent of the
// data. When every user holding a 1 has eps = 0.1 and every user holding a
// 0 has eps = 3, E[z] = Σ x_i(1-2q_i)/(n-2B) is far from c = 0.3; the
// simulation matches that expectation (6 standard errors) and not c.
func TestShuffledFrequencyBiasWhenBudgetsCorrelate(t *testing.T) {
	const n, R = 400, 2000
	bits := make([]int, n)
	eps := make([]float64, n)
	B, num := 0.0, 0.0
	for i := range bits {
		eps[i] = 3
		if i%10 < 3 {
			bits[i], eps[i] = 1, 0.1
		}
		q := 1 / (1 + math.Exp(eps[i]))
		B += q
		num += float64(bits[i]) * (1 - 2*q)
	}
	expect := num / (n - 2*B)
	m, V := 0.0, 0.0
	for k := 0; k < R; k++ {
		res, err := ShuffledFrequency(rng.Stream(8, uint64(k)), bits, eps)
		if err != nil {
			t.Fatal(err)
		}
		m += res.Estimate / R
		V = res.Variance
	}
	se := math.Sqrt(V / R)
	if math.Abs(m-expect) > 6*se {
		t.Errorf("mean estimate %v, want E[z] = %v ± %v", m, expect, 6*se)
	}
	if math.Abs(m-0.3) < 20*se {
		t.Errorf("mean estimate %v is close to c = 0.3: the correlated budgets should bias it", m)
	}
}

func TestTasksBadInput(t *testing.T) {
	r := rng.Stream(1)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"mean no users", func() error { _, err := ShuffledMean(r, nil, nil, 0, 1); return err }(), "at least one user"},
		{"mean wrong length", func() error { _, err := ShuffledMean(r, []float64{1, 2}, []float64{1}, 0, 1); return err }(), "1 budgets for 2 users"},
		{"mean eps 0", func() error { _, err := ShuffledMean(r, []float64{1}, []float64{0}, 0, 1); return err }(), "eps_0"},
		{"mean empty range", func() error { _, err := ShuffledMean(r, []float64{1}, []float64{1}, 1, 1); return err }(), "lo < hi"},
		{"mean NaN value", func() error { _, err := ShuffledMean(r, []float64{math.NaN()}, []float64{1}, 0, 1); return err }(), "finite"},
		{"mean Inf range", func() error { _, err := ShuffledMean(r, []float64{1}, []float64{1}, 0, math.Inf(1)); return err }(), "hi"},
		{"frequency bit 2", func() error { _, err := ShuffledFrequency(r, []int{0, 2}, []float64{1, 1}); return err }(), "want 0 or 1"},
		{"frequency eps NaN", func() error { _, err := ShuffledFrequency(r, []int{0}, []float64{math.NaN()}); return err }(), "eps_0"},
		{"frequency wrong length", func() error { _, err := ShuffledFrequency(r, []int{0}, []float64{1, 1}); return err }(), "2 budgets for 1 users"},
	}
	for _, tc := range cases {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
	// One user: no amplification, mu is +Inf, the estimate is still defined.
	res, err := ShuffledFrequency(r, []int{1}, []float64{1})
	if err != nil || !math.IsInf(res.Mu, 1) || math.IsNaN(res.Estimate) {
		t.Fatalf("one user: %+v, %v", res, err)
	}
}
