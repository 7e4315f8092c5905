package protocol

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	mt "github.com/shufflefl/shufflefl/privacy/mechanism/mechanismtest"
)

func ifcaProto(t *testing.T, name string, extra map[string]float64) Clustered {
	t.Helper()
	p, err := New(name, Params{Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	return p.(Clustered)
}

// TestPrivacyIFCADP: two updates of the same norm a, x = (a, 0) and
// x' = (-a, 0), get the same noise calibration epsilon_u = n/(nu·a), so the
// releases are epsilon_u·||x - x'|| = 2n/nu indistinguishable (d-privacy);
// the first coordinate of the release is a post-processing and obeys the
// same bound. Releases sanitized with half the claimed nu must be caught.
func TestPrivacyIFCADP(t *testing.T) {
	const a, nu = 1.0, 5.0
	s := Shape{Round: 1, Dim: 2, Population: 10, Participants: 5}
	claim := 2 * float64(s.Dim) / nu // 0.8
	sampler := func(p Clustered, sign float64) func(r *rand.Rand) float64 {
		var rep Report
		base := []float64{0, 0}
		return func(r *rand.Rand) float64 {
			u := []float64{sign * a, 0}
			if err := p.EncodeModel(r, s, base, u, Budget{}, &rep); err != nil {
				t.Fatal(err)
			}
			return rep.Values[0]
		}
	}
	u := mt.Uniform{Lo: -12, Hi: 12, N: 48}
	good := ifcaProto(t, "ifca-dp", map[string]float64{"nu": nu})
	mt.RequirePrivate(t, claim, u.Bins(), u.Continuous(sampler(good, 1)), u.Continuous(sampler(good, -1)), mt.Options{})
	weak := ifcaProto(t, "ifca-dp", map[string]float64{"nu": nu / 4})
	mt.RequireReject(t, claim, u.Bins(), u.Continuous(sampler(weak, 1)), u.Continuous(sampler(weak, -1)), mt.Options{})
}

func TestIFCAEncode(t *testing.T) {
	s := Shape{Round: 1, Dim: 4, Population: 10, Participants: 5}
	base := []float64{1, 2, 3, 4}
	var rep Report
	plain := ifcaProto(t, "ifca", nil)
	if err := plain.EncodeModel(rng.Stream(1), s, base, []float64{1, 1, 1, 1}, Budget{}, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Coords != nil || len(rep.Values) != 4 || rep.Values[3] != 5 || len(rep.Meta) != 0 {
		t.Fatalf("plain IFCA releases %+v, want base+update and no index or count", rep)
	}
	// The noise norm is about nu·||delta|| (E r = n/epsilon = nu·||delta||).
	for _, tc := range []struct {
		name   string
		update []float64
		radius float64
	}{
		{"update of norm 2", []float64{1, 1, 1, 1}, 2},
		{"zero update uses min-radius", []float64{0, 0, 0, 0}, 1e-3},
	} {
		p := ifcaProto(t, "ifca-dp", map[string]float64{"nu": 3, "min-radius": 1e-3})
		r := rng.Stream(2)
		var mean float64
		const n = 20000
		for i := 0; i < n; i++ {
			u := append([]float64(nil), tc.update...)
			if err := p.EncodeModel(r, s, base, u, Budget{}, &rep); err != nil {
				t.Fatal(err)
			}
			var ss float64
			for j, v := range rep.Values {
				e := v - base[j] - tc.update[j]
				ss += e * e
			}
			mean += math.Sqrt(ss) / n
		}
		// Radius ~ Gamma(4, rate): mean 3·radius, sd 1.5·radius; 6 sd of the
		// mean of 20,000.
		want := 3 * tc.radius
		if math.Abs(mean-want) > 6*1.5*tc.radius/math.Sqrt(n) {
			t.Errorf("%s: mean noise norm %v, want %v", tc.name, mean, want)
		}
	}
	p := ifcaProto(t, "ifca-dp", nil)
	if err := p.EncodeModel(rng.Stream(1), s, base[:3], []float64{1, 1, 1, 1}, Budget{}, &rep); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("short hypothesis: %v", err)
	}
	if err := p.EncodeModel(rng.Stream(1), s, base, []float64{1, math.NaN(), 1, 1}, Budget{}, &rep); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("NaN update: %v", err)
	}
	if err := p.Encode(rng.Stream(1), s, base, Budget{}, &rep); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("Encode on a clustered protocol: %v", err)
	}
}

func TestIFCAPerLayer(t *testing.T) {
	s := Shape{Round: 1, Dim: 3, Population: 10, Participants: 5}
	p, err := New("ifca-dp", Params{Layers: []int{1, 2}, Extra: map[string]float64{"per-layer": 1, "nu": 2}})
	if err != nil {
		t.Fatal(err)
	}
	c := p.(Clustered)
	// Layer 1 = (10), layer 2 = (0.1, 0): each noise norm is tuned on its
	// own layer's norm, E r = n_l/epsilon_l = nu·||delta_l||: 2·10 and 2·0.1.
	var n1, n2 float64
	var rep Report
	r := rng.Stream(3)
	const n = 20000
	for i := 0; i < n; i++ {
		if err := c.EncodeModel(r, s, []float64{0, 0, 0}, []float64{10, 0.1, 0}, Budget{}, &rep); err != nil {
			t.Fatal(err)
		}
		n1 += math.Abs(rep.Values[0]-10) / n
		n2 += math.Hypot(rep.Values[1]-0.1, rep.Values[2]) / n
	}
	if math.Abs(n1-20) > 0.5 || math.Abs(n2-0.2) > 0.005 {
		t.Fatalf("per-layer noise norms %v and %v, want about 20 and 0.2", n1, n2)
	}
	if _, err := New("ifca-dp", Params{Extra: map[string]float64{"per-layer": 1}}); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("per-layer without layers: %v", err)
	}
	if err := p.Check(Shape{Round: 1, Dim: 4, Population: 10, Participants: 5}, nil); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("layers that do not cover the model: %v", err)
	}
}

// TestIFCANoiseToUpdateRatio pins the reading of the paper's scale
// ε = n/(ν·||δ_c||) (Algorithm 2 prints η, Section 4.1 n): n is the number
// of model parameters (the paper's Table 1), the same n as the Gamma
// radius's shape (Lemma 1), so the mean noise norm n/ε = ν·||δ_c|| is ν
// times the update whatever the model's size, and the per-coordinate
// standard deviation ν·||δ_c||·sqrt((n+1)/n)/sqrt(n) shrinks as 1/sqrt(n).
// The leakage n/ν is the only place n shows. A reading with n = the
// client's sample count, or with Laplace noise of scale ν·||δ_c|| per
// coordinate, would make the ratio depend on n (by n/|Z_c|, or sqrt(2n)).
// The radius is Gamma(n, ε) with standard deviation sqrt(n)/ε = ν·a/sqrt(n),
// so the mean of 400 draws is within 5·sd/sqrt(400) of ν·a but with
// probability below 6e-7 per n (normal approximation).
func TestIFCANoiseToUpdateRatio(t *testing.T) {
	const nu, a, draws = 7.0, 0.3, 400
	for _, n := range []int{2, 50, 20000} {
		s := Shape{Round: 1, Dim: n, Population: 10, Participants: 5}
		p := ifcaProto(t, "ifca-dp", map[string]float64{"nu": nu})
		base, update := make([]float64, n), make([]float64, n)
		for j := range update {
			update[j] = a / math.Sqrt(float64(n)) // ||update|| = a
		}
		r := rng.Stream(11, uint64(n))
		var rep Report
		mean := 0.0
		for range draws {
			if err := p.EncodeModel(r, s, base, update, Budget{}, &rep); err != nil {
				t.Fatal(err)
			}
			norm := 0.0
			for j, v := range rep.Values {
				d := v - update[j]
				norm += d * d
			}
			mean += math.Sqrt(norm) / draws
		}
		tol := 5 * nu * a / math.Sqrt(float64(n)) / math.Sqrt(draws)
		if math.Abs(mean-nu*a) > tol {
			t.Errorf("n = %d: mean noise norm %.5g, want nu·||delta|| = %.5g ± %.2g", n, mean, nu*a, tol)
		}
		pr, err := p.(Protocol).Account(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := pr.DPrivacy.Level; math.Abs(got-float64(n)/nu) > 1e-9*float64(n) {
			t.Errorf("n = %d: leakage %v, want n/nu = %v", n, got, float64(n)/nu)
		}
	}
}

func TestIFCAEstimateModels(t *testing.T) {
	p := ifcaProto(t, "ifca", map[string]float64{"k": 2})
	s := Shape{Round: 1, Dim: 2, Population: 100, Participants: 40}
	agg := NewAggregate(2)
	agg.KeepVectors()
	r := rng.Stream(4)
	for i := 0; i < 40; i++ {
		c := []float64{5, 6}
		if i%2 == 1 {
			c = []float64{4, -4.5}
		}
		v := []float64{c[0] + 0.1*r.NormFloat64(), c[1] + 0.1*r.NormFloat64()}
		if err := agg.AddReport(&Report{Values: v}); err != nil {
			t.Fatal(err)
		}
	}
	models := [][]float64{{1, 1}, {0, -1}}
	sizes, err := p.EstimateModels(nil, s, agg, models)
	if err != nil {
		t.Fatal(err)
	}
	if sizes[0] != 20 || sizes[1] != 20 {
		t.Fatalf("cluster sizes %v", sizes)
	}
	if math.Hypot(models[0][0]-5, models[0][1]-6) > 0.1 || math.Hypot(models[1][0]-4, models[1][1]+4.5) > 0.1 {
		t.Fatalf("models %v, want about [5 6] and [4 -4.5]", models)
	}
	// A hypothesis nobody is near keeps its parameters.
	models = [][]float64{{5, 6}, {4, -4.5}, {100, 100}}
	p3 := ifcaProto(t, "ifca", map[string]float64{"k": 3})
	sizes, err = p3.EstimateModels(nil, s, agg, models)
	if err != nil || sizes[2] != 0 || models[2][0] != 100 {
		t.Fatalf("empty cluster: sizes %v, model %v, %v", sizes, models[2], err)
	}
	if _, err := p.EstimateModels(nil, s, agg, models); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("3 models for k = 2: %v", err)
	}
}

func TestIFCAAccount(t *testing.T) {
	s := Shape{Round: 1, Dim: 2, Population: 100, Participants: 7}
	priv, err := ifcaProto(t, "ifca-dp", map[string]float64{"nu": 5}).Account(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Section 5.1: n/nu = 2/5 = 0.4 per participation.
	if priv.Private || priv.DPrivacy == nil || priv.DPrivacy.Level != 0.4 || !math.IsInf(priv.CentralEpsilon, 1) {
		t.Fatalf("ifca-dp statement %+v", priv)
	}
	priv, _ = ifcaProto(t, "ifca", nil).Account(s, nil)
	if priv.Private || !math.IsInf(priv.DPrivacy.Level, 1) {
		t.Fatalf("ifca statement %+v", priv)
	}
	if _, err := ifcaProto(t, "ifca-dp", map[string]float64{"k": 8}).Account(s, nil); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("k = 8 > 7 clients per round: %v", err)
	}
	if _, err := New("ifca-dp", Params{Extra: map[string]float64{"nu": -1}}); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("nu = -1: %v", err)
	}
}
