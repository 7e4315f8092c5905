package amplify

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
)

func TestEoNCloneProbsAgainstQuadratic(t *testing.T) {
	r := rng.Stream(7)
	eps := make([]float64, 300)
	for i := range eps {
		eps[i] = 0.05 + 1.95*r.Float64()
	}
	eps[10], eps[11] = eps[12], eps[12] // ties
	q, err := EoNCloneProbs(eps)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(len(eps))
	for i, ei := range eps {
		s := 0.0
		for _, ej := range eps {
			s += ClipLaplaceEchoProb(ei, ej)
		}
		if want := s / n; !near(q[i], want, 1e-12*want) {
			t.Fatalf("q[%d] = %v, direct sum %v", i, q[i], want)
		}
	}
}

// clipLaplaceDensity is APES Definition 4 with A = C, lambda = 2C/eps.
func clipLaplaceDensity(z, f, eps, C float64) float64 {
	lam := 2 * C / eps
	S := 1 - 0.5*math.Exp((-C+f)/lam) - 0.5*math.Exp((-C-f)/lam)
	return math.Exp(-math.Abs(z-f)/lam) / (2 * lam * S)
}

func TestClipLaplaceNeighborDivergenceLemma4(t *testing.T) {
	// The true neighbour divergence is the log of the largest density ratio
	// over outputs z and inputs f_s, f_t in [-C, C]; Lemma 4's bound, hence
	// p_ij = exp(-bound), must not exceed what the densities allow.
	const C = 1.0
	grid := 81
	for _, pair := range [][2]float64{{0.05, 1}, {1, 0.05}, {0.5, 0.5}, {0.3, 0.9}, {2, 0.1}} {
		ei, ej := pair[0], pair[1]
		worst := math.Inf(-1)
		for a := 0; a < grid; a++ {
			fs := -C + 2*C*float64(a)/float64(grid-1)
			for b := 0; b < grid; b++ {
				ft := -C + 2*C*float64(b)/float64(grid-1)
				for c := 0; c < grid; c++ {
					z := -C + 2*C*float64(c)/float64(grid-1)
					worst = math.Max(worst, math.Log(clipLaplaceDensity(z, fs, ei, C)/clipLaplaceDensity(z, ft, ej, C)))
				}
			}
		}
		// D_N(mu_i || mu_j) bound of Lemma 4 (A = C) and p_ji = e^{-bound}.
		bound := -math.Log(ClipLaplaceEchoProb(ej, ei))
		if worst > bound+1e-9 {
			t.Errorf("eps_i=%v eps_j=%v: divergence %v exceeds Lemma 4 bound %v", ei, ej, worst, bound)
		}
	}
}

func TestPoissonBinomialAgainstNaive(t *testing.T) {
	r := rng.Stream(3)
	for _, n := range []int{1, 7, 64, 65, 500, 3000} {
		q := make([]float64, n)
		for i := range q {
			q[i] = r.Float64()
		}
		naive := make([]float64, n+1)
		naive[0] = 1
		for i, qi := range q {
			for k := i + 1; k >= 1; k-- {
				naive[k] = naive[k]*(1-qi) + naive[k-1]*qi
			}
			naive[0] *= 1 - qi
		}
		w := poissonBinomial(q, 1e-25)
		if w.Lost > 1e-20 {
			t.Errorf("n=%d: lost mass %g", n, w.Lost)
		}
		for k, want := range naive {
			got := 0.0
			if i := k - w.Lo; i >= 0 && i < len(w.P) {
				got = w.P[i]
			}
			if !near(got, want, 1e-12*want+1e-24) {
				t.Fatalf("n=%d k=%d: got %g, naive %g", n, k, got, want)
			}
		}
	}
}

func TestEoNEqualBudgetsMatchClones(t *testing.T) {
	// With equal budgets p_ij = e^-eps for every pair, so the clone count is
	// Bin(n-1, e^-eps): EoN's numerical bound must equal FMT's.
	for _, tc := range []struct {
		eps   float64
		n     int
		delta float64
	}{{0.5, 2000, 1e-6}, {1, 10000, 1e-8}} {
		eps := make([]float64, tc.n)
		for i := range eps {
			eps[i] = tc.eps
		}
		b, err := EoNNumerical(eps, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ClonesNumerical(tc.eps, tc.n, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if !near(b.Epsilon, c, 1e-5*c) {
			t.Errorf("%+v: EoN %v, clones %v", tc, b.Epsilon, c)
		}
	}
}

func TestAPESTable3(t *testing.T) {
	var tv struct {
		N, D, Seed, B int
		Dist          string
		DeltaS        float64            `json:"delta_s"`
		DeltaPrime    float64            `json:"delta_prime"`
		DeltaUC       float64            `json:"delta_uc"`
		Published     map[string]float64 `json:"published"`
		Authors       map[string]float64 `json:"authors_blocked"`
		Closed        map[string]float64 `json:"closed_forms"`
		Exact         map[string]float64 `json:"exact_user_level"`
	}
	loadJSON(t, "apes_table3.json", &tv)
	eps, err := account.Budgets(tv.Dist, tv.N, rng.Stream(uint64(tv.Seed)))
	if err != nil {
		t.Fatal(err)
	}
	eon, err := EoNNumerical(eps, tv.DeltaS)
	if err != nil {
		t.Fatal(err)
	}
	unis, err := UniSNumerical(eps, tv.DeltaS)
	if err != nil {
		t.Fatal(err)
	}
	if !near(eon.Epsilon, tv.Published["eon"], 0.0005) {
		t.Errorf("EoN numerical = %.5f, published %v", eon.Epsilon, tv.Published["eon"])
	}
	if !near(unis.Epsilon, tv.Published["unis"], 0.0005) {
		t.Errorf("UniS numerical = %.5f, published %v", unis.Epsilon, tv.Published["unis"])
	}
	// The closed forms are far looser: Table 3 cannot come from them.
	ec, err := EoNClosedForm(eps, tv.DeltaS)
	if err != nil || !near(ec.Epsilon, tv.Closed["eon"], 0.005) {
		t.Errorf("EoN closed = %v, %v; want about %v", ec.Epsilon, err, tv.Closed["eon"])
	}
	uc, err := UniS(eps, tv.DeltaS)
	if err != nil || !near(uc.Epsilon, tv.Closed["unis"], 0.005) {
		t.Errorf("UniS closed = %v, %v; want about %v", uc.Epsilon, err, tv.Closed["unis"])
	}
	// User level by advanced composition over d, from the authors' blocked eps^c.
	for _, c := range []struct{ key, pub string }{{"eon", "apes_uc"}, {"unis", "unis_uc"}} {
		u, err := APESUserLevel(tv.Authors[c.key], 0, tv.D, tv.DeltaPrime)
		if err != nil || !near(u.Epsilon, tv.Published[c.pub], 0.05) {
			t.Errorf("%s user level from %v = %v, %v; published %v", c.key, tv.Authors[c.key], u.Epsilon, err, tv.Published[c.pub])
		}
	}
	// From our exact eps^c (the sample differs from the authors').
	u1, _ := APESUserLevel(eon.Epsilon, 0, tv.D, tv.DeltaPrime)
	u2, _ := APESUserLevel(unis.Epsilon, 0, tv.D, tv.DeltaPrime)
	if !near(u1.Epsilon, tv.Exact["apes_uc"], 0.5) || !near(u2.Epsilon, tv.Exact["unis_uc"], 0.5) {
		t.Errorf("exact user level = %v / %v, want about %v / %v", u1.Epsilon, u2.Epsilon, tv.Exact["apes_uc"], tv.Exact["unis_uc"])
	}
	// S-APES: Proposition 1 with b = 0.2 d; delta' is what remains of
	// delta^uc = 3.6e-5 after 2 b delta^c, delta^c = tanh(eps*/2) delta_s.
	deltaC := math.Tanh(0.5) * tv.DeltaS
	dp := tv.DeltaUC - 2*float64(tv.B)*deltaC
	s, err := SAPESUserLevel(tv.Authors["eon"], deltaC, tv.B, dp)
	if err != nil || !near(s.Epsilon, tv.Published["sapes_uc"], 0.05) || !near(s.Delta, tv.DeltaUC, 1e-12) {
		t.Errorf("S-APES = %v, %v; published %v at delta %v", s, err, tv.Published["sapes_uc"], tv.DeltaUC)
	}
}

func TestPersonalInputErrors(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		wants string
	}{
		{"one user", func() error { _, err := EoNNumerical([]float64{1}, 1e-6); return err }(), "n >= 2"},
		{"zero budget eon", func() error { _, err := EoNClosedForm([]float64{1, 0}, 1e-6); return err }(), "eps[1] must be > 0"},
		{"nan budget", func() error { _, err := UniS([]float64{1, math.NaN()}, 1e-6); return err }(), "eps[1] must be a finite number"},
		{"theorem 4 region", func() error { _, err := EoNClosedForm([]float64{1, 1, 1}, 1e-6); return err }(), "16 ln(4/delta_s)"},
		{"delta_s", func() error { _, err := EoNNumerical([]float64{1, 1}, 0); return err }(), "delta_s must be in (0, 1)"},
		{"unis region", func() error { _, err := UniS([]float64{5, 5, 5}, 1e-6); return err }(), "eps0 <= log"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantInvalid(t, tc.err, tc.wants) })
	}
}

func TestEoNNumericalIsValidAndTight(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	eps := make([]float64, 3000)
	for i := range eps {
		eps[i] = 0.1 + 0.9*r.Float64()
	}
	b, err := EoNNumerical(eps, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := EoNDelta(eps, b.Epsilon)
	if d > 1e-6 {
		t.Errorf("delta at the returned eps = %g > 1e-6", d)
	}
	d2, _ := EoNDelta(eps, b.Epsilon*(1-1e-4))
	if d2 <= 1e-6 {
		t.Errorf("returned eps %v is not the smallest", b.Epsilon)
	}
	if c, err := EoNClosedForm(eps, 1e-6); err == nil && c.Epsilon < b.Epsilon {
		t.Errorf("closed form %v tighter than numerical %v", c.Epsilon, b.Epsilon)
	}
}
