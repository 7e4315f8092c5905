package amplify

import (
	"math"
	"strings"
	"testing"
)

// naiveClassesEps is an independent reference for ThresholdCountLowerBound
// at small sizes: every binomial from Pascal's rule, the count
// distributions by direct summation, bisection on the exact divergence.
func naiveClassesEps(tc ThresholdCount, delta float64) float64 {
	binom := func(n int, p float64) []float64 {
		c := []float64{1}
		for range n {
			next := make([]float64, len(c)+1)
			for i, v := range c {
				next[i] += v
				next[i+1] += v
			}
			c = next
		}
		out := make([]float64, n+1)
		for k := range out {
			out[k] = c[k] * math.Pow(p, float64(k)) * math.Pow(1-p, float64(n-k))
		}
		return out
	}
	conv := func(a, b []float64) []float64 {
		out := make([]float64, len(a)+len(b)-1)
		for i, x := range a {
			for j, y := range b {
				out[i+j] += x * y
			}
		}
		return out
	}
	o := []float64{1}
	for _, c := range tc.Classes {
		o = conv(o, binom(c.N, c.P))
	}
	P, Q := conv(o, binom(tc.Mine, tc.P0)), conv(o, binom(tc.Mine, tc.P1))
	div := func(eps float64) float64 {
		a := math.Exp(eps)
		d1, d2 := 0.0, 0.0
		for i := range P {
			d1 += math.Max(0, P[i]-a*Q[i])
			d2 += math.Max(0, Q[i]-a*P[i])
		}
		return math.Max(d1, d2)
	}
	if div(0) <= delta {
		return 0
	}
	lo, hi := 0.0, 60.0
	for range 200 {
		m := (lo + hi) / 2
		if div(m) > delta {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// TestThresholdCountMatchesNaive: one and two classes of other values
// against the direct summation, and one class against CountLowerBound
// (other code, other floor).
func TestThresholdCountMatchesNaive(t *testing.T) {
	for _, tc := range []struct {
		tc    ThresholdCount
		delta float64
	}{
		{ThresholdCount{Classes: []CountClass{{N: 40, P: 0.5}}, Mine: 3, P0: 0.25, P1: 0.75}, 1e-6},
		{ThresholdCount{Classes: []CountClass{{N: 30, P: 0.1}, {N: 50, P: 0.6}}, Mine: 4, P0: 0.1, P1: 0.7}, 1e-5},
		{ThresholdCount{Classes: []CountClass{{N: 0, P: 0.3}, {N: 20, P: 1}}, Mine: 6, P0: 0.2, P1: 0.9}, 1e-6},
		{ThresholdCount{Mine: 30, P0: 0.3, P1: 0.7}, 1e-6}, // no others
	} {
		got, err := ThresholdCountLowerBound(tc.tc, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveClassesEps(tc.tc, tc.delta)
		if got > want+1e-9 || got < want-1e-5*math.Max(1, want) {
			t.Errorf("%+v: %.12g, naive %.12g", tc.tc, got, want)
		}
		if len(tc.tc.Classes) == 1 {
			c := tc.tc.Classes[0]
			old, err := CountLowerBound(c.N, tc.tc.Mine, c.P, tc.tc.P0, tc.tc.P1, tc.delta)
			if err != nil || math.Abs(old-got) > 1e-9*math.Max(1, got) {
				t.Errorf("%+v: %v, CountLowerBound %v (%v)", tc.tc, got, old, err)
			}
		}
	}
}

// exactBinomialEps is the epsilon at delta of Bin(m, p0) against
// Bin(m, p1) from the analytic privacy loss of each count (no windows):
// delta(eps) = sum_c P(c) (1 - e^(eps - L(c)))_+ in log space, both
// directions, bisected.
func exactBinomialEps(m int, p0, p1, delta float64) float64 {
	lg := func(v float64) float64 { r, _ := math.Lgamma(v); return r }
	lpmf := func(c int, p float64) float64 {
		return lg(float64(m)+1) - lg(float64(c)+1) - lg(float64(m-c)+1) + float64(c)*math.Log(p) + float64(m-c)*math.Log1p(-p)
	}
	div := func(eps float64) float64 {
		d1, d2 := 0.0, 0.0
		for c := 0; c <= m; c++ {
			l0, l1 := lpmf(c, p0), lpmf(c, p1)
			if l0-l1 > eps {
				d1 += math.Exp(l0) * -math.Expm1(eps-(l0-l1))
			}
			if l1-l0 > eps {
				d2 += math.Exp(l1) * -math.Expm1(eps-(l1-l0))
			}
		}
		return math.Max(d1, d2)
	}
	lo, hi := 0.0, float64(m)*math.Abs(math.Log(p1/p0))*1.01+1
	for range 200 {
		mid := (lo + hi) / 2
		if div(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// TestCountDisjointWindows: the user's two binomials so far apart that
// their windows do not overlap (no others). The bound is finite and
// matches the analytic loss computation; before the per-entry accounting
// of the dropped tails, CountLowerBound returned +Inf (a "lower bound"
// above every finite truth).
func TestCountDisjointWindows(t *testing.T) {
	for _, tc := range []struct {
		m      int
		p0, p1 float64
	}{{2000, 0.3, 0.7}, {300, 0.2, 0.8}, {5000, 0.45, 0.55}} {
		want := exactBinomialEps(tc.m, tc.p0, tc.p1, 1e-6)
		old, err := CountLowerBound(0, tc.m, 0.5, tc.p0, tc.p1, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ThresholdCountLowerBound(ThresholdCount{Mine: tc.m, P0: tc.p0, P1: tc.p1}, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("m %d, p %v/%v: exact %.6f, CountLowerBound %.6f, ThresholdCount %.6f", tc.m, tc.p0, tc.p1, want, old, got)
		// Each is exact up to its floor's cap, log(1/(3 floor)) less the
		// log of the entries' size (CountLowerBound's floor 1e-40,
		// ThresholdCount's 1e-290).
		for _, c := range []struct {
			name     string
			v, floor float64
		}{{"CountLowerBound", old, countFloorRel}, {"ThresholdCountLowerBound", got, 1e-290}} {
			if floor := math.Min(want*(1-1e-6), -math.Log(3*c.floor)-8); math.IsInf(c.v, 0) || c.v > want*(1+1e-9) || c.v < floor {
				t.Errorf("m %d: %s %v, exact %v, want at least %v", tc.m, c.name, c.v, want, floor)
			}
		}
	}
}

// TestThresholdCountCapped: with other values the windows' floor caps the
// bound near log(1/(3 floor)) (about 55): a large true epsilon is
// bounded below by that, never above the truth.
func TestThresholdCountCapped(t *testing.T) {
	tc := ThresholdCount{Classes: []CountClass{{N: 100, P: 0.5}}, Mine: 3000, P0: 0.2, P1: 0.8}
	got, err := ThresholdCountLowerBound(tc, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	// The truth is at least the others-free pair's figure less nothing
	// (100 others cannot hide 3000 values far apart): above 1000.
	if !(got > 40 && got < 60) {
		t.Errorf("capped bound %v, want about 55", got)
	}
}

// TestMechanismTails checks the thresholds' tail probabilities against
// independent computations: numerical integration of Clip-Laplace's
// density, math.Erf for the Gaussian, and the exact 1/2 of the midpoint.
func TestMechanismTails(t *testing.T) {
	for _, eps0 := range []float64{0.05, 1, 4} {
		lam := 2 / eps0
		dens := func(z, x float64) float64 {
			s := 1 - 0.5*math.Exp((-1+x)/lam) - 0.5*math.Exp((-1-x)/lam)
			return math.Exp(-math.Abs(z-x)/lam) / (2 * lam * s)
		}
		tail := func(x, t float64) float64 { // Simpson on [t, 1], split at x
			integ := func(a, b float64) float64 {
				if b <= a {
					return 0
				}
				const n = 2000
				h := (b - a) / n
				s := dens(a, x) + dens(b, x)
				for i := 1; i < n; i++ {
					w := 2.0
					if i%2 == 1 {
						w = 4
					}
					s += w * dens(a+float64(i)*h, x)
				}
				return s * h / 3
			}
			if x > t {
				return integ(t, x) + integ(x, 1)
			}
			return integ(t, 1)
		}
		as, err := ClipLaplaceCountAttacks(eps0, 1000, false)
		if err != nil {
			t.Fatal(err)
		}
		if as[0].POther != 0.5 || len(as) < 2 {
			t.Fatalf("eps0 %v: midpoint %+v, %d thresholds", eps0, as[0], len(as))
		}
		for _, a := range []CountAttack{as[0], as[len(as)/2], as[len(as)-1]} {
			for _, c := range []struct {
				name     string
				x, p, pi float64
			}{{"other", 0, a.POther, tail(0, a.Threshold)}, {"user 1", 1, a.P1, tail(1, a.Threshold)}, {"user -1", -1, a.P0, tail(-1, a.Threshold)}} {
				if math.Abs(c.p-c.pi) > 1e-9 {
					t.Errorf("clip-laplace eps0 %v, t %v, %s: %v, integrated %v", eps0, a.Threshold, c.name, c.p, c.pi)
				}
			}
		}
		mid, err := ClipLaplaceCountAttacks(eps0, 1000, true)
		if err != nil || len(mid) != 1 || mid[0].POther != 0.5 {
			t.Errorf("midpoint only: %+v %v", mid, err)
		}
	}
	for _, r := range []float64{0.1, 1, 3} {
		as, err := GaussianCountAttacks(r, 500, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			phi := func(x float64) float64 { return 0.5 * (1 + math.Erf(x/math.Sqrt2)) }
			if math.Abs(a.P1-phi(r-a.Threshold)) > 1e-12 || math.Abs(a.P0-phi(-r-a.Threshold)) > 1e-12 || math.Abs(a.POther-phi(-a.Threshold)) > 1e-12 {
				t.Errorf("gaussian r %v, t %v: %+v", r, a.Threshold, a)
			}
		}
		if as[0].POther != 0.5 {
			t.Errorf("gaussian midpoint %+v", as[0])
		}
	}
	la, err := LaplaceCountAttacks(0.3, 100, true)
	if err != nil || len(la) != 1 || la[0].POther != 0.5 || la[0].Threshold != 0.5 ||
		math.Abs(la[0].P0-0.5*math.Exp(-0.15)) > 1e-15 || math.Abs(la[0].P1-(1-0.5*math.Exp(-0.15))) > 1e-15 {
		t.Errorf("laplace midpoint %+v %v", la, err)
	}
	ra, dummy, err := RGammaBCountAttacks(2, 1)
	if err != nil || len(ra) != 2 || len(dummy) != 2 || dummy[0] != 2.0/3 || dummy[1] != 1.0/3 {
		t.Errorf("R_{gamma,b}: %+v %v %v", ra, dummy, err)
	}
}

func TestThresholdCountBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tc    ThresholdCount
		delta float64
		want  string
	}{
		{"no user values", ThresholdCount{P0: 0.1, P1: 0.2}, 1e-6, "mine"},
		{"NaN probability", ThresholdCount{Mine: 1, P0: math.NaN(), P1: 0.2}, 1e-6, "probability"},
		{"class probability", ThresholdCount{Mine: 1, P0: 0.1, P1: 0.2, Classes: []CountClass{{N: 3, P: 1.5}}}, 1e-6, "probability"},
		{"negative class", ThresholdCount{Mine: 1, P0: 0.1, P1: 0.2, Classes: []CountClass{{N: -3, P: 0.5}}}, 1e-6, "class 0"},
		{"delta", ThresholdCount{Mine: 1, P0: 0.1, P1: 0.2}, math.NaN(), "delta"},
		{"huge", ThresholdCount{Mine: 1, P0: 0.1, P1: 0.2, Classes: []CountClass{{N: 1 << 62, P: 0.5}}}, 1e-6, "window"},
	} {
		if _, err := ThresholdCountLowerBound(tc.tc, tc.delta); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := BestThresholdCount(nil, 1e-6, 0); err == nil {
		t.Error("no statistics accepted")
	}
	for _, f := range []func() error{
		func() error { _, err := LaplaceCountAttacks(math.NaN(), 1, false); return err },
		func() error { _, err := ClipLaplaceCountAttacks(-1, 1, false); return err },
		func() error { _, err := GaussianCountAttacks(math.Inf(1), 1, false); return err },
		func() error { _, _, err := RGammaBCountAttacks(1, 1); return err },
	} {
		if f() == nil {
			t.Error("bad mechanism parameters accepted")
		}
	}
}

// TestBestThresholdCountProbe: the probe picks a threshold on the shrunk
// problem and evaluates it at full size; the result is that threshold's
// own bound, and with shrink 1 it is the full search.
func TestBestThresholdCountProbe(t *testing.T) {
	as, err := LaplaceCountAttacks(0.2, 20000, false)
	if err != nil {
		t.Fatal(err)
	}
	var tcs []ThresholdCount
	for _, a := range as[:8] {
		tcs = append(tcs, ThresholdCount{Threshold: a.Threshold, Classes: []CountClass{{N: 20000, P: a.POther}}, Mine: 200, P0: a.P0, P1: a.P1})
	}
	full, at, err := BestThresholdCount(tcs, 1e-6, 0)
	if err != nil {
		t.Fatal(err)
	}
	probe, pat, err := BestThresholdCountProbe(tcs, 1e-6, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	own, err := ThresholdCountLowerBound(pat, 1e-6)
	if err != nil || own != probe || probe > full {
		t.Errorf("probe %v at %v (own %v), full search %v at %v", probe, pat.Threshold, own, full, at.Threshold)
	}
}

// TestFLAMESparseCount: with the Laplace randomizer the sparse count is
// FLAMECountLowerBound; with R_{gamma,b} it counts the dummies at their own
// rate, and agrees with the direct summation of the two classes.
func TestFLAMESparseCount(t *testing.T) {
	lap := Randomizer{Mech: Laplace}
	a, _, err := FLAMESparseCountLowerBound(lap, 0.5, 4, 30, 50, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := FLAMECountLowerBound(lap, 0.5, 4, 80, 1e-6)
	if err != nil || a != b {
		t.Errorf("laplace: sparse %v, FLAMECountLowerBound %v (%v)", a, b, err)
	}
	rgb := Randomizer{Mech: RGammaB, K: 2}
	got, th, err := FLAMESparseCountLowerBound(rgb, 2, 3, 20, 40, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	attacks, dummy, err := RGammaBCountAttacks(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for i, at := range attacks {
		want = math.Max(want, naiveClassesEps(ThresholdCount{Classes: []CountClass{{N: 20, P: at.POther}, {N: 40, P: dummy[i]}}, Mine: 3, P0: at.P0, P1: at.P1}, 1e-6))
	}
	if (got > want+1e-9 || got < want-1e-5*math.Max(1, want)) || !(th >= 1) {
		t.Errorf("R_{gamma,b}: %v at %v, naive %v", got, th, want)
	}
}
