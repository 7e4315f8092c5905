package account

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// TestQuantCloneProb: the quantised probability never exceeds p and is
// within 2^-7 of it relative to min(p, 1-p).
func TestQuantCloneProb(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ps := []float64{0, 1, 0.5, 1e-300, 5e-324, 1 - 1e-16, math.Nextafter(1, 0), 0.25, 0.75, 0.97, 0.0213}
	for range 2000 {
		ps = append(ps, r.Float64(), 1-r.Float64()*1e-3, r.Float64()*1e-5)
	}
	for _, p := range ps {
		q := quantCloneProb(p)
		if q > p || q < 0 {
			t.Fatalf("quantCloneProb(%v) = %v, above p or negative", p, q)
		}
		if tol := math.Min(p, 1-p) / 128; p-q > tol && p-q > 1e-300 {
			t.Errorf("quantCloneProb(%v) = %v: off by %v > %v", p, q, p-q, tol)
		}
	}
}

// TestHeteroClonesForm: the histogram's text form, its parse, and bad
// forms rejected.
func TestHeteroClonesForm(t *testing.T) {
	h, err := HeteroClones([]float64{0.5, 0.25, 0.5, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if h != "0*1,0.25*1,0.5*2,1*1" {
		t.Errorf("form %q", h)
	}
	ps, cs, err := parseHeteroClones(h)
	if err != nil || len(ps) != 4 || cs[2] != 2 || ps[1] != 0.25 {
		t.Errorf("parse: %v %v %v", ps, cs, err)
	}
	// a population of 2,000 distinct budgets near p = 0.97 has a few
	// hundred groups at most
	var many []float64
	for i := range 2000 {
		many = append(many, 0.96+0.02*float64(i)/2000)
	}
	h, err = HeteroClones(many)
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Count(h, ",") + 1; g > 300 {
		t.Errorf("%d groups for 2,000 users in [0.96, 0.98]", g)
	}
	for _, bad := range []string{"", "0.5", "0.5*0", "0.5*-1", "1.5*2", "NaN*2", "0.5*2,0.4*1", "0.5*2,0.5*1", "x*1", "0.5*2,", "0.5*1e3"} {
		if _, _, err := parseHeteroClones(bad); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("parse %q: error %v, want checks.ErrInvalid", bad, err)
		}
	}
	for _, bad := range [][]float64{nil, {math.NaN()}, {1.2}, {-0.1}} {
		if _, err := HeteroClones(bad); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("HeteroClones(%v): error %v, want checks.ErrInvalid", bad, err)
		}
	}
}

// heteroComponent is a valid KindShuffleHetero component of n reporters.
func heteroComponent(t *testing.T, n int, eps0 float64) Component {
	t.Helper()
	ps := make([]float64, n-1)
	for i := range ps {
		ps[i] = 0.9 + 0.05*float64(i)/float64(n)
	}
	h, err := HeteroClones(ps)
	if err != nil {
		t.Fatal(err)
	}
	return Component{Epsilon: eps0, Delta: 1e-9, Count: 5, Kind: KindShuffleHetero, Eps0: eps0, Reporters: n, Clones: h}
}

// TestHeteroGaussianComponentsRoundTrip: an accountant with the new kinds
// survives its checkpoint (JSON) with the same figure, and bad components
// are refused with checks.ErrInvalid.
func TestHeteroGaussianComponentsRoundTrip(t *testing.T) {
	a, err := NewAccountant(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	h := heteroComponent(t, 200, 0.3)
	g := Component{Epsilon: 1, Delta: 1e-7, Count: 1, Kind: KindGaussian, Sigma: 3}
	for r := 1; r <= 3; r++ {
		if err := a.Record(Statement{Round: r, SampleRate: 1, Sampled: 200, Reporters: 200, Released: true, Epsilon: 5, Delta: 1e-8,
			Components: []Component{h, g}, Bound: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"clones":"`) {
		t.Errorf("checkpoint has no clone histogram: %s", b)
	}
	c, err := RestoreAccountant(b)
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := a.Spent(), c.Spent()
	if s1 != s2 || !strings.HasPrefix(s1.Method, "PLD") {
		t.Errorf("before %+v, after the round trip %+v", s1, s2)
	}
	bad := []Component{
		{Epsilon: 1, Count: 1, Kind: KindShuffleHetero, Eps0: 0.3, Reporters: 200, Clones: "0.5*10"}, // counts 10 of 199
		{Epsilon: 1, Count: 1, Kind: KindShuffleHetero, Eps0: 0.3, Reporters: 11, Clones: "0.5*9,0.4*1"},
		{Epsilon: 1, Count: 1, Kind: KindShuffleHetero, Eps0: math.NaN(), Reporters: 11, Clones: "0.5*10"},
		{Epsilon: 1, Count: 1, Kind: KindShuffleHetero, Eps0: 600, Reporters: 11, Clones: "0.5*10"},
		{Epsilon: 1, Count: 1, Kind: KindShuffleHetero, Eps0: 0.3, Reporters: 1, Clones: "0.5*0"},
		{Epsilon: 1, Count: 1, Kind: KindShuffleHetero, Eps0: 0.3, Reporters: 11},
		{Epsilon: 1, Count: 1, Kind: KindGaussian, Sigma: 0},
		{Epsilon: 1, Count: 1, Kind: KindGaussian, Sigma: math.Inf(1)},
		{Epsilon: 1, Count: 1, Kind: KindGaussian, Sigma: math.NaN()},
	}
	for i, comp := range bad {
		err := a.Record(Statement{Round: 10 + i, SampleRate: 1, Released: true, Epsilon: 1, Components: []Component{comp}})
		if !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("bad component %d %+v: error %v, want checks.ErrInvalid", i, comp, err)
		}
	}
}

// TestGaussianComponentExact: R Gaussian components compose to at least
// the exact mu-GDP figure of the R-fold composition (mu = sqrt(R)/sigma,
// Dong, Roth and Su Corollary 3.3, computed by GDPToEpsilon) and within
// 0.5% of it.
func TestGaussianComponentExact(t *testing.T) {
	for _, tc := range []struct {
		sigma float64
		r     int
		delta float64
	}{{3, 10, 1e-6}, {0.8, 5, 1e-5}, {20, 100, 1e-8}} {
		e, err := PLDEpsilon([]Component{{Epsilon: 1, Delta: 0.1, Count: tc.r, Kind: KindGaussian, Sigma: tc.sigma}}, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := GDPToEpsilon(math.Sqrt(float64(tc.r))/tc.sigma, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if e < ex*(1-1e-9) || e > ex*1.005 {
			t.Errorf("sigma %v, %d rounds: PLD %v, exact %v", tc.sigma, tc.r, e, ex)
		}
	}
}
