package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// lbRounds is t rounds of n participants in dimension d, the worst user at
// budget w.
func lbRounds(t, d, n int, w Budget, uniform bool) []LowerBoundRound {
	var rs []LowerBoundRound
	for r := 1; r <= t; r++ {
		rs = append(rs, LowerBoundRound{Shape: Shape{Round: r, Dim: d, Population: n, Participants: n}, Worst: w, Uniform: uniform})
	}
	return rs
}

func lbNew(t *testing.T, name string, p Params) Protocol {
	t.Helper()
	pr, err := New(name, p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pr
}

// TestLowerBoundBelowStatement: for every LowerBounder, one round's lower
// bound at the round's central delta is at most the protocol's own
// statement of that round (its Account), for uniform and personalized
// budgets. A bound above a rigorous statement would refute one of them.
func TestLowerBoundBelowStatement(t *testing.T) {
	const d, n = 20, 60
	lap := map[string]float64{"randomizer": 1}
	for _, tc := range []struct {
		name  string
		p     Params
		eps   []float64 // the participants' budgets (user level); nil: p.Epsilon for all
		delta float64   // the budgets' delta
	}{
		{name: "ss-simple", p: Params{Clip: 0.1, Delta: 1e-6, Epsilon: 20, Rounds: 1, SampleRate: 1, Extra: lap}},
		{name: "ss-simple", p: Params{Clip: 0.1, Delta: 1e-6, Epsilon: 20, Rounds: 1, SampleRate: 1}},
		{name: "ss-double", p: Params{Clip: 0.1, Delta: 1e-6, Epsilon: 4, Rounds: 1, SampleRate: 1, Extra: map[string]float64{"randomizer": 1, "k": 2}}},
		{name: "ss-double", p: Params{Clip: 0.1, Delta: 1e-6, Epsilon: 4, Rounds: 1, SampleRate: 1, Extra: map[string]float64{"k": 2}}},
		{name: "ss-topk", p: Params{Clip: 0.1, Delta: 1e-6, Epsilon: 4, Rounds: 1, SampleRate: 1, Extra: map[string]float64{"randomizer": 1, "k": 2}}},
		{name: "apes", p: Params{Clip: 0.1, Delta: 1e-6, Rounds: 1, SampleRate: 1}, eps: spread(n, 10, 40)},
		{name: "apes", p: Params{Clip: 0.1, Delta: 1e-6, Rounds: 1, SampleRate: 1}, eps: spread(n, 20, 20)},
		{name: "unis", p: Params{Clip: 0.1, Delta: 1e-6, Rounds: 1, SampleRate: 1}, eps: spread(n, 20, 20)},
		{name: "pldp", p: Params{Clip: 0.1, Delta: 1e-6, Rounds: 1, SampleRate: 1}, eps: spread(n, 2, 8)},
		{name: "ldp-min", p: Params{Clip: 0.1, Delta: 1e-6, Rounds: 1, SampleRate: 1, Extra: map[string]float64{"min-epsilon": 2}}, eps: spread(n, 2, 8)},
		{name: "ldp-laplace", p: Params{Clip: 0.1, Delta: 1e-6, Rounds: 1, SampleRate: 1}, eps: spread(n, 2, 8)},
		{name: "e-apes", p: Params{Clip: 1, Delta: 1e-6, Rounds: 1, SampleRate: 1}, eps: spread(n, 1, 4), delta: 1e-6},
		{name: "e-apes", p: Params{Clip: 1, Delta: 1e-6, Rounds: 1, SampleRate: 1}, eps: spread(n, 3, 3), delta: 1e-6},
		{name: "split-mix", p: Params{Clip: 1, Delta: 1e-6, Epsilon: 4, Rounds: 1, SampleRate: 1, Population: n, Layers: []int{d}}},
		{name: "split-mix", p: Params{Clip: 1, Delta: 1e-6, Epsilon: 1, Rounds: 1, SampleRate: 1, Population: n, Layers: []int{d},
			Extra: map[string]float64{"scale": 100.5, "collude": 3}}},
		{name: "split-mix", p: Params{Clip: 1, Delta: 1e-6, Epsilon: 4, Rounds: 1, SampleRate: 0.3, Population: 500, Layers: []int{d}}},
	} {
		p := lbNew(t, tc.name, tc.p)
		s := Shape{Round: 1, Dim: d, Population: n, Participants: n}
		bs := make([]Budget, n)
		for i := range bs {
			bs[i] = Budget{Epsilon: tc.p.Epsilon, Delta: tc.delta}
			if tc.eps != nil {
				bs[i].Epsilon = tc.eps[i]
			}
		}
		priv, err := p.Account(s, bs)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		worst, uniform := bs[0], true
		for _, b := range bs {
			uniform = uniform && b == bs[0]
			if b.Epsilon > worst.Epsilon {
				worst = b
			}
		}
		delta := priv.CentralDelta
		if delta == 0 {
			delta = 1e-6 // a pure statement holds at every delta
		}
		lb, err := LowerBoundOf(p, lbRounds(1, d, n, worst, uniform), delta)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		t.Logf("%s (%v): lower %.5g <= stated %.5g at delta %.3g; %s", tc.name, tc.p.Extra, lb.Epsilon, priv.CentralEpsilon, delta, lb.Method)
		if !(lb.Epsilon > 0) || lb.Epsilon > priv.CentralEpsilon || lb.Method == MethodNone {
			t.Errorf("%s (%v): lower bound %+v, statement %v", tc.name, tc.p.Extra, lb, priv.CentralEpsilon)
		}
	}
}

// spread is n budgets evenly from lo to hi.
func spread(n int, lo, hi float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = lo + (hi-lo)*float64(i)/float64(n-1)
	}
	return out
}

// TestLowerBoundExactSmall: the bounds against the count statistic of
// amplify.CountLowerBound (other code) with tails written out here: APES
// with personalized budgets at the midpoint (Clip-Laplace's
// 1/(1+e^(-eps_c/2)) for the worst user, 1/2 for every other, whatever
// its budget), SS-Simple's Laplace at t = 1/2 (1 - e^(-eps0/2)/2), and
// E-APES's Gaussian at 0 (Phi(C/sigma)); each protocol's bound is at least
// that statistic's (it may find a better threshold).
func TestLowerBoundExactSmall(t *testing.T) {
	const d, n, rounds = 4, 30, 3
	apes := lbNew(t, "apes", Params{Clip: 0.1, Delta: 1e-6, Rounds: rounds, SampleRate: 1})
	e := 24.0 // the worst user's budget; the others' do not enter
	lb, err := LowerBoundOf(apes, lbRounds(rounds, d, n, Budget{Epsilon: e}, false), 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	ec := e / d
	want, err := amplify.CountLowerBound((n-1)*d*rounds, d*rounds, 0.5, 1/(1+math.Exp(ec/2)), 1/(1+math.Exp(-ec/2)), 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(lb.Epsilon-want) > 1e-9*want || !strings.Contains(lb.Method, "t = 0 ") {
		t.Errorf("apes personalized: %+v, want %v at t = 0", lb, want)
	}

	ss := lbNew(t, "ss-simple", Params{Clip: 0.1, Delta: 1e-6, Epsilon: 8, Rounds: rounds, SampleRate: 1, Extra: map[string]float64{"randomizer": 1}})
	lb, err = LowerBoundOf(ss, lbRounds(rounds, d, n, Budget{Epsilon: 8}, true), 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	e0 := 8.0 / d
	want, err = amplify.CountLowerBound((n-1)*d*rounds, d*rounds, 0.5, 0.5*math.Exp(-e0/2), 1-0.5*math.Exp(-e0/2), 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Epsilon < want*(1-1e-9) {
		t.Errorf("ss-simple: %+v, want at least %v", lb, want)
	}

	ea := lbNew(t, "e-apes", Params{Clip: 1, Delta: 1e-6, Rounds: rounds, SampleRate: 1}).(EAPES)
	w := Budget{Epsilon: 6, Delta: 1e-7}
	lb, err = LowerBoundOf(ea, lbRounds(rounds, d, n, w, false), 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := ea.Sigma(w)
	if err != nil {
		t.Fatal(err)
	}
	phi := 0.5 * (1 + math.Erf(1/sig/math.Sqrt2))
	want, err = amplify.CountLowerBound((n-1)*rounds, rounds, 0.5, 1-phi, phi, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(lb.Epsilon-want) > 1e-6*want {
		t.Errorf("e-apes: %+v, want %v", lb, want)
	}
}

// TestLowerBoundNone: settings without a sound bound say so (method none,
// NaN), and bad input is an error, not a panic.
func TestLowerBoundNone(t *testing.T) {
	rs := lbRounds(2, 5, 10, Budget{Epsilon: 5}, true)
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"nonprivate", Params{}},
		{"ss-simple", Params{Clip: 0.1, Delta: 1e-6, Epsilon: 5, Rounds: 2, SampleRate: 1, Secure: true, Extra: map[string]float64{"randomizer": 1}}},
		{"apes", Params{Clip: 0.1, Delta: 1e-6, Rounds: 2, SampleRate: 1, Extra: map[string]float64{"secure": 1}}},
		{"s-apes", Params{Clip: 0.1, Delta: 1e-6, Rounds: 2, SampleRate: 1}},
	} {
		lb, err := LowerBoundOf(lbNew(t, tc.name, tc.p), rs, 1e-6)
		if err != nil || lb.Method != MethodNone || !math.IsNaN(lb.Epsilon) {
			t.Errorf("%s: %+v %v, want method none", tc.name, lb, err)
		}
	}
	// Split-mix with rotation: no bound.
	for _, p := range []Params{
		{Clip: 1, Delta: 1e-6, Epsilon: 4, Rounds: 2, SampleRate: 1, Population: 100, Layers: []int{5}, Extra: map[string]float64{"rotate": 1}},
	} {
		lb, err := LowerBoundOf(lbNew(t, "split-mix", p), rs, 1e-6)
		if err != nil || lb.Method != MethodNone {
			t.Errorf("split-mix %+v: %+v %v, want method none", p, lb, err)
		}
	}
	// The worst user's budget changes between rounds: no single count.
	changing := lbRounds(2, 5, 10, Budget{Epsilon: 5}, true)
	changing[1].Worst.Epsilon = 6
	if lb, err := LowerBoundOf(lbNew(t, "apes", Params{Clip: 0.1, Delta: 1e-6, Rounds: 2, SampleRate: 1}), changing, 1e-6); err != nil || lb.Method != MethodNone {
		t.Errorf("changing budget: %+v %v", lb, err)
	}
	ss := lbNew(t, "ss-simple", Params{Clip: 0.1, Delta: 1e-6, Epsilon: 5, Rounds: 2, SampleRate: 1})
	for _, bad := range []struct {
		name   string
		rounds []LowerBoundRound
		delta  float64
	}{
		{"no rounds", nil, 1e-6},
		{"delta NaN", rs, math.NaN()},
		{"delta 1", rs, 1},
		{"bad shape", []LowerBoundRound{{Shape: Shape{Round: 1, Dim: 0, Population: 1, Participants: 1}, Worst: Budget{Epsilon: 1}}}, 1e-6},
		{"bad budget", []LowerBoundRound{{Shape: Shape{Round: 1, Dim: 3, Population: 4, Participants: 4}, Worst: Budget{Epsilon: math.Inf(1)}}}, 1e-6},
	} {
		if _, err := LowerBoundOf(ss, bad.rounds, bad.delta); err == nil {
			t.Errorf("%s accepted", bad.name)
		}
	}
}

// TestLowerBoundTailsMatchEncoders: the tail probabilities the bounds use
// are those of the protocols' own encoders (Monte Carlo over 40,000
// values each, against the formula with a tolerance of 6 standard
// deviations: a false alarm has probability below 1e-8 per check; the
// formulas themselves are checked exactly in package amplify).
func TestLowerBoundTailsMatchEncoders(t *testing.T) {
	const d, reps = 4000, 10
	r := rand.New(rand.NewPCG(7, 11))
	frac := func(p Protocol, s Shape, val, thr float64, b Budget) float64 {
		above, total := 0, 0
		var rep Report
		for range reps {
			u := make([]float64, s.Dim)
			for i := range u {
				u[i] = val
			}
			if err := p.Encode(r, s, u, b, &rep); err != nil {
				t.Fatal(err)
			}
			for _, v := range rep.Values {
				total++
				if v > thr {
					above++
				}
			}
		}
		return float64(above) / float64(total)
	}
	check := func(name string, got, want float64) {
		t.Helper()
		sd := math.Sqrt(want * (1 - want) / (d * reps))
		if math.Abs(got-want) > 6*sd+1e-12 {
			t.Errorf("%s: fraction %v, formula %v (sd %.2g)", name, got, want, sd)
		}
	}
	s := Shape{Round: 1, Dim: d, Population: 10, Participants: 10}
	const clip = 0.1
	eps := 0.8 * d // eps_c = 0.8
	apes := lbNew(t, "apes", Params{Clip: clip, Delta: 1e-6, Rounds: 1, SampleRate: 1})
	as, err := amplify.ClipLaplaceCountAttacks(0.8, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	check("apes, +C", frac(apes, s, clip, 0, Budget{Epsilon: eps}), as[0].P1)
	check("apes, -C", frac(apes, s, -clip, 0, Budget{Epsilon: eps}), as[0].P0)
	check("apes, 0, another budget", frac(apes, s, 0, 0, Budget{Epsilon: 3 * eps}), 0.5)
	unis := lbNew(t, "unis", Params{Clip: clip, Delta: 1e-6, Rounds: 1, SampleRate: 1})
	la, err := amplify.LaplaceCountAttacks(0.8, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	check("unis, +C", frac(unis, s, clip, 0, Budget{Epsilon: eps}), la[0].P1)
	check("unis, -C", frac(unis, s, -clip, 0, Budget{Epsilon: eps}), la[0].P0)
	ss := lbNew(t, "ss-simple", Params{Clip: clip, Delta: 1e-6, Epsilon: eps, Rounds: 1, SampleRate: 1, Extra: map[string]float64{"randomizer": 1}})
	check("ss-simple, +C", frac(ss, s, clip, 0.5, Budget{Epsilon: eps}), la[0].P1)
	check("ss-simple, 0", frac(ss, s, 0, 0.5, Budget{Epsilon: eps}), 0.5)
	ea := lbNew(t, "e-apes", Params{Clip: 1, Delta: 1e-6, Rounds: 1, SampleRate: 1}).(EAPES)
	w := Budget{Epsilon: 2, Delta: 1e-6}
	sig, err := ea.Sigma(w)
	if err != nil {
		t.Fatal(err)
	}
	ga, err := amplify.GaussianCountAttacks(1/sig, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	// One coordinate at a time: the update C e_1 in dimension 1.
	s1 := Shape{Round: 1, Dim: 1, Population: 10, Participants: 10}
	above := 0
	var rep Report
	for range d * reps {
		if err := ea.Encode(r, s1, []float64{1}, w, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Values[0] > 0 {
			above++
		}
	}
	check("e-apes, C e_1", float64(above)/(d*reps), ga[0].P1)
}

// TestLowerBoundWorkBudget: past the work budget a bound counts fewer
// values (coordinates for the dense protocols, rounds for the sparse ones)
// and says so; it is then the count statistic of that subset (computed
// here directly) and below the full bound.
func TestLowerBoundWorkBudget(t *testing.T) {
	const d, n, rounds = 40, 200, 4
	ss := lbNew(t, "ss-simple", Params{Clip: 0.1, Delta: 1e-6, Epsilon: 40, Rounds: rounds, SampleRate: 1, Extra: map[string]float64{"randomizer": 1}})
	rs := lbRounds(rounds, d, n, Budget{Epsilon: 40}, true)
	full, err := LowerBoundOf(ss, rs, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	defer func(w float64) { lowerBoundWork = w }(lowerBoundWork)
	lowerBoundWork = 1e6
	small, err := LowerBoundOf(ss, rs, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("full %v (%s); budgeted %v (%s)", full.Epsilon, full.Method, small.Epsilon, small.Method)
	if !strings.Contains(small.Method, "coordinates counted") || !(small.Epsilon > 0) || small.Epsilon > full.Epsilon {
		t.Errorf("budgeted %+v, full %+v", small, full)
	}
	var c int
	if _, err := fmt.Sscanf(small.Method[strings.Index(small.Method, "(")+1:], "%d of the", &c); err != nil || c < 1 || c >= d {
		t.Fatalf("coordinates counted: %q (%v)", small.Method, err)
	}
	e0 := 40.0 / d
	want, err := amplify.CountLowerBound((n-1)*c*rounds, c*rounds, 0.5, 0.5*math.Exp(-e0/2), 1-0.5*math.Exp(-e0/2), 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if small.Epsilon < want*(1-1e-9) {
		t.Errorf("budgeted %v below the subset's midpoint count %v", small.Epsilon, want)
	}
	sd := lbNew(t, "ss-double", Params{Clip: 0.1, Delta: 1e-6, Epsilon: 4, Rounds: rounds, SampleRate: 1, Extra: map[string]float64{"randomizer": 1, "k": 4}})
	lowerBoundWork = 1e4
	lb, err := LowerBoundOf(sd, rs, 1e-6)
	if err != nil || !strings.Contains(lb.Method, "rounds counted") || !(lb.Epsilon > 0) {
		t.Errorf("ss-double budgeted: %+v %v", lb, err)
	}
}
