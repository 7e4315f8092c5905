package account

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// exactSampledSkellamDelta returns the exact hockey-stick divergence at
// eps of k compositions of the Poisson-subsampled (rate q) one-dimensional
// Skellam mechanism at integer shift s and variance v, in the remove
// direction ((1-q) Sk + q (Sk+s) against Sk) and the add direction (the
// reverse), by direct summation over Z^k of the pmf from its Bessel series
// (SkellamLogPMF) — independent of the certificate's ratios and of the
// FFT. It is a lower bound on any valid statement for the mechanism (one
// pair of neighbouring inputs: a target whose rounded update is s).
func exactSampledSkellamDelta(v float64, s int, q float64, k int, eps float64) (rem, add float64) {
	r := int(14*math.Sqrt(v)) + 12
	n := 2*r + s + 1 // outputs -r .. r+s
	sk := func(z int) float64 {
		if z < -r || z > r {
			return 0
		}
		return math.Exp(SkellamLogPMF(z, v))
	}
	mix, base := make([]float64, n), make([]float64, n)
	for i := range n {
		z := i - r
		base[i] = sk(z)
		mix[i] = (1-q)*sk(z) + q*sk(z-s)
	}
	e := math.Exp(eps)
	hockey := func(p, o []float64) float64 {
		var h float64
		switch k {
		case 1:
			for i := range n {
				h += math.Max(0, p[i]-e*o[i])
			}
		case 2:
			for i := range n {
				for j := range n {
					h += math.Max(0, p[i]*p[j]-e*o[i]*o[j])
				}
			}
		case 3:
			for i := range n {
				for j := range n {
					pij, oij := p[i]*p[j], o[i]*o[j]
					for l := range n {
						h += math.Max(0, pij*p[l]-e*oij*o[l])
					}
				}
			}
		}
		return h
	}
	return hockey(mix, base), hockey(base, mix)
}

// TestSampledSkellamPLDAboveExact: the PLD route's epsilon (the
// certified Gaussian domination, then the sampled-Gaussian PLD, with the
// TV term) is never below the exact epsilon of the one-dimensional
// mechanism at shift L2: the exact delta at the PLD's epsilon is within
// the target, in both directions, for 1 to 3 compositions.
func TestSampledSkellamPLDAboveExact(t *testing.T) {
	for _, c := range []struct {
		v     float64
		s     int
		q     float64
		k     int
		delta float64
	}{
		{4, 2, 1, 1, 1e-3}, {4, 2, 0.3, 1, 1e-3}, {4, 2, 0.3, 3, 1e-3}, {10, 1, 0.2, 3, 1e-4},
		{30, 5, 0.1, 1, 1e-6}, {30, 2, 0.3, 3, 1e-3},
		// two compositions take pld's slower direct-DFT refinement (a second each)
		{10, 3, 0.5, 2, 1e-5}, {30, 5, 0.1, 2, 1e-6}, {2, 1, 1, 2, 1e-2},
	} {
		if c.k == 2 && !longtest.Enabled() {
			continue
		}
		e, err := SampledSkellamPLDEpsilon(c.q, c.v, float64(c.s), 1, c.k, c.delta, SkellamTailTV)
		if err != nil {
			t.Fatal(err)
		}
		rem, add := exactSampledSkellamDelta(c.v, c.s, c.q, c.k, e)
		if rem > c.delta || add > c.delta {
			t.Errorf("%+v: PLD epsilon %v, exact deltas there %v (remove) %v (add) exceed %v", c, e, rem, add, c.delta)
		}
		// the exact epsilon (a lower bound on every valid statement), for the log
		if c.k == 3 {
			continue
		}
		lo, hi := 0.0, e
		for range 14 {
			m := (lo + hi) / 2
			if r, a := exactSampledSkellamDelta(c.v, c.s, c.q, c.k, m); math.Max(r, a) > c.delta {
				lo = m
			} else {
				hi = m
			}
		}
		t.Logf("%+v: PLD route %.5f, exact %.4f", c, e, hi)
	}
}

// TestSampledSkellamNearGaussian: at split-mix's frontier settings the
// PLD route's epsilon is within 1e-4 of the sampled Gaussian's at noise
// multiplier sqrt(mu)/L2 (the Skellam noise is nearly Gaussian there),
// and never below it by more than the PLD's own discretisation noise.
func TestSampledSkellamNearGaussian(t *testing.T) {
	const q, v, l2, d, rounds = 0.1, 4.84e7, 4184.6, 7850, 30
	e, err := SampledSkellamPLDEpsilon(q, v, l2, d, rounds, 1e-6, SkellamTailTV)
	if err != nil {
		t.Fatal(err)
	}
	g, err := PLDEpsilon([]Component{{Kind: KindSampledGaussian, Q: q, Sigma: math.Sqrt(v) / l2, Count: rounds}}, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if e < g*(1-1e-5) || e > g*(1+1e-4) {
		t.Errorf("sampled Skellam %v, sampled Gaussian %v", e, g)
	}
}

// TestSampledSkellamComponent: the accountant composes the kind, charges
// the TV term in its PLD method (delta(eps) + (1 + e^eps) TV within the
// target), requires the tail term in the statement's TV, refuses bad
// fields, and round-trips the component through JSON (old ledgers,
// without the new fields, still decode).
func TestSampledSkellamComponent(t *testing.T) {
	c := Component{Kind: KindSampledSkellam, Epsilon: 0.5, Delta: 1e-8, Count: 1, Q: 0.1, Variance: 4.84e7, L2: 4184.6, Dim: 7850}
	st := Statement{Round: 1, SampleRate: 0.1, Sampled: 100, Reporters: 100, Released: true, Epsilon: 0.5, Delta: 1e-8,
		Components: []Component{c}, TV: 1e-9, Bound: "test"}
	a, err := NewAccountant(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := a.Plan(st, 30)
	if err != nil {
		t.Fatal(err)
	}
	c30 := c
	c30.Count = 30
	acc, err := pldCompose([]Component{c30})
	if err != nil {
		t.Fatal(err)
	}
	if d := acc.Delta(sp.Epsilon) + (1+math.Exp(sp.Epsilon))*30*st.TV; d > 1e-6 {
		t.Errorf("plan %v: delta %v with the TV term", sp, d)
	}
	noTV, err := PLDEpsilon([]Component{c30}, 1e-6)
	if err != nil || !(sp.Epsilon >= noTV) {
		t.Errorf("plan %v below the PLD without TV %v (%v)", sp, noTV, err)
	}
	// TV below the tail term, bad fields
	for name, mod := range map[string]func(*Statement){
		"tv":       func(s *Statement) { s.TV = SkellamTailTV / 2 },
		"q":        func(s *Statement) { s.Components[0].Q = 0 },
		"variance": func(s *Statement) { s.Components[0].Variance = math.NaN() },
		"l2":       func(s *Statement) { s.Components[0].L2 = math.Inf(1) },
		"dim":      func(s *Statement) { s.Components[0].Dim = 0 },
	} {
		bad := st
		bad.Components = []Component{c}
		mod(&bad)
		if err := a.Record(bad); err == nil {
			t.Errorf("%s: a bad statement was recorded", name)
		}
	}
	for name, err := range map[string]error{
		"q":   func() error { _, err := SampledSkellamPLDEpsilon(1.5, 1e4, 10, 1, 1, 1e-6, SkellamTailTV); return err }(),
		"var": func() error { _, err := SampledSkellamPLDEpsilon(0.1, -1, 10, 1, 1, 1e-6, SkellamTailTV); return err }(),
		"l2": func() error {
			_, err := SampledSkellamPLDEpsilon(0.1, 1e4, math.NaN(), 1, 1, 1e-6, SkellamTailTV)
			return err
		}(),
		"rounds": func() error { _, err := SampledSkellamPLDEpsilon(0.1, 1e4, 10, 1, 0, 1e-6, SkellamTailTV); return err }(),
		"tv":     func() error { _, err := SampledSkellamPLDEpsilon(0.1, 1e4, 10, 1, 1, 1e-6, 0); return err }(),
		"huge":   func() error { _, err := SampledSkellamPLDEpsilon(0.1, 1e16, 10, 1, 1, 1e-6, SkellamTailTV); return err }(),
	} {
		wantInvalid(t, err, "")
		_ = name
	}
	// JSON
	if err := a.Record(st); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Component
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("component round trip: %s -> %+v (%v)", b, back, err)
	}
	ck, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	r, err := RestoreAccountant(ck)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Spent(), a.Spent(); got != want {
		t.Errorf("restored accountant spends %+v, want %+v", got, want)
	}
	var old Component
	if err := json.Unmarshal([]byte(`{"epsilon":1,"delta":0,"count":2}`), &old); err != nil || old != (Component{Epsilon: 1, Count: 2}) {
		t.Errorf("old component decodes to %+v (%v)", old, err)
	}
}
