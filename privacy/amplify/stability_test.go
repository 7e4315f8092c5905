package amplify

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// stabilityEps0 spans the local epsilons every numerical bound must handle.
var stabilityEps0 = []float64{1e-6, 1e-4, 1e-3, 0.01, 0.1, 0.5, 1, 2, 4, 8, 12, 20, 28, 30, 34, 36.7, 37, 40, 50, 60}

// The clones delta (the basis of ClonesNumerical, UniS and EoN) against the
// same quantity computed by definition in 320-bit floats: it must be an
// upper bound and tight, including eps0 = 40 and 60, where 1 - alpha is
// below the float64 resolution of alpha, and eps just below eps0.
func TestClonesDeltaAgainstBigFloat(t *testing.T) {
	for _, n := range []int{50, 200} {
		halves := bigCloneHalves(n - 1)
		for _, e0 := range []float64{1e-6, 1e-3, 1, 10, 40, 60} {
			w := bigBinomialWeights(n-1, e0)
			for _, eps := range []float64{0.1 * e0, 0.5 * e0, 0.9 * e0, e0 * (1 - 1e-7), e0 - 1e-6*e0} {
				ref := f64(bigClonesDelta(w, halves, e0, eps))
				got, err := ClonesDelta(eps, e0, n)
				if err != nil {
					t.Fatal(err)
				}
				if got < ref || got > ref*(1+1e-6)+1e-13 {
					t.Errorf("n=%d eps0=%v eps=%v: ClonesDelta = %.12g, 320-bit reference %.12g", n, e0, eps, got, ref)
				}
			}
		}
	}
}

// ShuffledRRLowerBound against the exact curve in 320-bit floats: the
// computed delta at the returned epsilon exceeds the target (so it is a
// lower bound) and the exact delta just above it does not (so it is tight).
func TestShuffledRRLowerBoundAgainstBigFloat(t *testing.T) {
	for _, n := range []int{50, 200} {
		for _, e0 := range []float64{1e-3, 0.1, 1, 4, 10, 40, 60} {
			for _, delta := range []float64{1e-3, 1e-6} {
				lb, err := ShuffledRRLowerBound(e0, n, delta)
				if err != nil {
					t.Fatal(err)
				}
				if lb == 0 {
					if d := f64(bigShuffledRRDelta(n, e0, 0)); d > delta {
						t.Errorf("n=%d eps0=%v delta=%v: lower bound 0 but exact delta(0) = %g", n, e0, delta, d)
					}
					continue
				}
				if d := f64(bigShuffledRRDelta(n, e0, lb)); d <= delta {
					t.Errorf("n=%d eps0=%v delta=%v: exact delta at the lower bound %v is %g <= target: not a lower bound", n, e0, delta, lb, d)
				}
				up := lb + 1e-9*lb + 1e-12
				if d := f64(bigShuffledRRDelta(n, e0, up)); d > delta {
					t.Errorf("n=%d eps0=%v delta=%v: exact delta just above the lower bound %v is %g: not tight", n, e0, delta, lb, d)
				}
			}
		}
	}
	// Against the float64 helper in its comfortable range.
	for _, tc := range []struct {
		e0    float64
		n     int
		delta float64
	}{{1, 2000, 1e-6}, {4, 500, 1e-4}, {0.5, 1000, 1e-8}} {
		lb, err := ShuffledRRLowerBound(tc.e0, tc.n, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if d := shuffledBinaryRRDelta(tc.n, tc.e0, lb); d < tc.delta*(1-1e-9) {
			t.Errorf("%+v: delta at the lower bound %v is %g", tc, lb, d)
		}
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"eps0", func() error { _, err := ShuffledRRLowerBound(0, 10, 1e-6); return err }(), "eps0 must be > 0"},
		{"n", func() error { _, err := ShuffledRRLowerBound(1, 1, 1e-6); return err }(), "n must be >= 2"},
		{"delta", func() error { _, err := ShuffledRRLowerBound(1, 10, 1); return err }(), "delta must be in (0, 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantInvalid(t, tc.err, tc.want) })
	}
}

// The blanket deltas (every mechanism, Bennett and Hoeffding) against the
// textbook formulas evaluated in 320-bit floats. Before the stable forms,
// E[L^2] of the Laplace mechanism lost its leading digits to cancellation
// below eps0 = 1e-4 and the generic one likewise.
func TestBlanketDeltaAgainstBigFloat(t *testing.T) {
	for _, r := range []Randomizer{{Mech: Laplace}, {Mech: KRR, K: 2}, {Mech: KRR, K: 10}, {Mech: Generic}} {
		for _, v := range []BlanketVariant{Bennett, Hoeffding} {
			for _, e0 := range []float64{1e-6, 1e-4, 1e-3, 1, 10, 40, 60} {
				for _, f := range []float64{0.1, 0.5, 0.9} {
					for _, n := range []int{50, 1000, 100000} {
						eps := f * e0
						ref := bigBlanketDelta(r, v, eps, e0, n)
						got, err := BlanketDelta(r, v, eps, e0, n)
						if err != nil {
							t.Fatal(err)
						}
						if !near(got, ref, 1e-10*ref) {
							t.Errorf("%v %v eps0=%v eps=%v n=%d: delta %.13g, 320-bit %.13g (rel %.2g)", r.Mech, v, e0, eps, n, got, ref, (got-ref)/ref)
						}
					}
				}
			}
		}
	}
}

// E[L^2] of the Laplace mechanism at small eps0 (the reported case: the
// textbook form gave 4.0843187e-6 where the exact value is 4.0843206e-6).
func TestLaplaceSecondMomentSmallEps0(t *testing.T) {
	r := Randomizer{Mech: Laplace}
	for _, tc := range []struct{ eps, eps0 float64 }{{1e-3, 1.7e-3}, {1e-4, 2e-3}, {5e-5, 1e-4}, {1e-7, 1e-6}, {0.3, 0.5}, {20, 40}} {
		one := bf(1)
		h := bigExpF(tc.eps0 / 2)
		ee := bigExpF(tc.eps)
		e0i := bigExpF(-tc.eps0)
		ref := f64(bsub(bmul(bquo(badd(bmul(ee, ee), one), bf(3)), badd(bmul(bf(2), h), e0i)),
			bmul(bmul(bf(2), ee), bsub(bmul(bf(2), bquo(one, h)), e0i))))
		if got := r.secondMomentL(tc.eps, tc.eps0); !near(got, ref, 1e-13*ref) {
			t.Errorf("%+v: E[L^2] = %.10g, 320-bit %.10g (rel %.2g)", tc, got, ref, (got-ref)/ref)
		}
	}
}

func TestBennettPhiSeries(t *testing.T) {
	for _, u := range []float64{1e-12, 1e-8, 1e-5, 1e-3, 0.05, 0.0999, 0.1, 0.5, 3, 1e3} {
		bu := bf(u)
		ref := f64(bsub(bmul(badd(bf(1), bu), bigLog(badd(bf(1), bu))), bu))
		if got := bennettPhi(u); !near(got, ref, 1e-14*ref) {
			t.Errorf("phi(%v) = %.15g, 320-bit %.15g", u, got, ref)
		}
	}
}

// genericBound is one shuffle bound that claims to hold for every
// eps0-LDP randomizer (or for binary randomized response itself).
type genericBound struct {
	name string
	f    func(eps0 float64, n int, delta float64) (float64, error)
}

func equalBudgets(e0 float64, n int) []float64 {
	eps := make([]float64, n)
	for i := range eps {
		eps[i] = e0
	}
	return eps
}

func personalAsUniform(f PersonalBound) func(float64, int, float64) (float64, error) {
	return func(e0 float64, n int, delta float64) (float64, error) {
		b, err := f(equalBudgets(e0, n), delta)
		return b.Epsilon, err
	}
}

func blanketAsUniform(r Randomizer, v BlanketVariant) func(float64, int, float64) (float64, error) {
	return func(e0 float64, n int, delta float64) (float64, error) {
		e, _, err := BlanketEpsilon(r, v, e0, n, delta)
		return e, err
	}
}

// Every upper bound's epsilon must be at least the exact epsilon of shuffled
// binary randomized response (ShuffledRRLowerBound) at the same delta, for
// eps0 from 1e-6 to 60. Before the fix ClonesNumerical(40, 1000, 1e-6)
// returned 36.94 where the lower bound is 39.999999, BestUniform(50, 10^5,
// 1e-6, generic) 37.41, and UniS/EoN behaved the same above eps0 ~ 28.
func TestUpperBoundsAboveShuffledRR(t *testing.T) {
	bounds := []genericBound{
		{"clones-numerical", ClonesNumerical},
		{"clones-theorem", ClonesTheorem},
		{"clones-closed", ClonesClosedForm},
		{"erlingsson", Erlingsson},
		{"blanket-closed-b2", func(e0 float64, n int, d float64) (float64, error) { return BlanketClosedForm(e0, 2, n, d) }},
		{"best-generic", func(e0 float64, n int, d float64) (float64, error) {
			b, err := BestUniform(e0, n, d, Randomizer{Mech: Generic})
			return b.Epsilon, err
		}},
		{"best-krr2", func(e0 float64, n int, d float64) (float64, error) {
			b, err := BestUniform(e0, n, d, Randomizer{Mech: KRR, K: 2})
			return b.Epsilon, err
		}},
	}
	for _, m := range []Randomizer{{Mech: Generic}, {Mech: KRR, K: 2}, {Mech: RGammaB, K: 2}} {
		for _, v := range []BlanketVariant{Bennett, Hoeffding} {
			bounds = append(bounds, genericBound{"blanket-" + v.String() + "-" + m.Mech.String(), blanketAsUniform(m, v)})
		}
	}
	personal := []genericBound{
		{"unis", personalAsUniform(UniS)},
		{"unis-numerical", personalAsUniform(UniSNumerical)},
		{"eon-closed", personalAsUniform(EoNClosedForm)},
		{"eon-numerical", personalAsUniform(EoNNumerical)},
		{"eon-worst-case", personalAsUniform(EoNWorstCase)},
		{"eon-exact-echo", personalAsUniform(EoNExactEcho)},
		{"best-personal", personalAsUniform(BestPersonal)},
	}
	checked := 0
	for _, n := range []int{50, 1000, 100000} {
		for _, delta := range []float64{1e-6, 1e-10} {
			for _, e0 := range stabilityEps0 {
				lb, err := ShuffledRRLowerBound(e0, n, delta)
				if err != nil {
					t.Fatal(err)
				}
				list := bounds
				if n <= 1000 {
					list = append(append([]genericBound(nil), bounds...), personal...)
				}
				for _, b := range list {
					e, err := b.f(e0, n, delta)
					if err != nil {
						if !errors.Is(err, checks.ErrInvalid) && !strings.Contains(err.Error(), "no bound applies") {
							t.Errorf("%s eps0=%v n=%d: unexpected error %v", b.name, e0, n, err)
						}
						continue
					}
					checked++
					if math.IsNaN(e) || e < lb || e > e0*(1+1e-12) {
						t.Errorf("%s eps0=%v n=%d delta=%v: eps = %.10g, exact shuffled RR needs %.10g (and eps0 is %v)", b.name, e0, n, delta, e, lb, e0)
					}
				}
				// The Laplace blanket bounds: thresholding each Laplace
				// report at 1/2 is binary RR with e^eps' = 2 e^(eps0/2) - 1.
				lapLB, err := ShuffledRRLowerBound(math.Log(2*math.Exp(e0/2)-1), n, delta)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range []BlanketVariant{Bennett, Hoeffding} {
					e, _, err := BlanketEpsilon(Randomizer{Mech: Laplace}, v, e0, n, delta)
					if err != nil || e < lapLB {
						t.Errorf("laplace %v eps0=%v n=%d: eps = %v (%v), thresholded-Laplace RR needs %v", v, e0, n, e, err, lapLB)
					}
				}
			}
		}
	}
	if checked < 500 {
		t.Errorf("only %d (bound, parameter) pairs checked", checked)
	}
}

// The reported cases, by name.
func TestLargeEps0Regressions(t *testing.T) {
	tests := []struct {
		name string
		f    func() (float64, error)
		e0   float64
		n    int
	}{
		{"clones-numerical 40", func() (float64, error) { return ClonesNumerical(40, 1000, 1e-6) }, 40, 1000},
		{"best generic 50", func() (float64, error) {
			b, err := BestUniform(50, 100000, 1e-6, Randomizer{Mech: Generic})
			return b.Epsilon, err
		}, 50, 100000},
		{"unis-numerical 36.7", func() (float64, error) {
			b, err := UniSNumerical(equalBudgets(36.7, 500), 1e-6)
			return b.Epsilon, err
		}, 36.7, 500},
		{"eon-numerical 30", func() (float64, error) {
			b, err := EoNNumerical(equalBudgets(30, 500), 1e-6)
			return b.Epsilon, err
		}, 30, 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tc.f()
			if err != nil {
				t.Fatal(err)
			}
			lb, _ := ShuffledRRLowerBound(tc.e0, tc.n, 1e-6)
			if e < lb || lb < tc.e0-2e-6 {
				t.Errorf("eps = %.10g, lower bound %.10g", e, lb)
			}
		})
	}
}

// EoN with heterogeneous budgets whose largest is above 28: the returned
// epsilons are checked against the delta of their own model recomputed in
// 320-bit floats (Poisson binomial of the clone probabilities, clone pair at
// eps*), and UniS against shuffled RR at the largest budget.
func TestPersonalLargeBudgetsAgainstBigFloat(t *testing.T) {
	const n, delta = 80, 1e-6
	for _, top := range []float64{10, 30, 36.7, 40, 60} {
		eps := make([]float64, n)
		for i := range eps {
			eps[i] = 0.5 + 2*float64(i)/n
		}
		eps[n-1] = top
		eps[n-2] = top
		halves := bigCloneHalves(n - 1)
		check := func(name string, b Bound, others []float64, es float64) {
			t.Helper()
			d := f64(bigClonesDelta(bigPoissonBinomial(others), halves, es, b.Epsilon))
			if d > delta {
				t.Errorf("%s top=%v: eps %v has exact model delta %g > %g", name, top, b.Epsilon, d, delta)
			}
		}
		w, err := EoNWorstCase(eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		o, es, _ := eonWorstOthers(eps)
		check("eon-worst-case", w, o, es)
		x, err := EoNExactEcho(eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		o, es, _ = eonExactOthers(eps)
		check("eon-exact-echo", x, o, es)
		h, err := EoNNumerical(eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		o, es, _ = eonOthers(eps)
		check("eon-numerical", h, o, es)
		u, err := UniSNumerical(eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		if lb, _ := ShuffledRRLowerBound(top, n, delta); u.Epsilon < lb {
			t.Errorf("unis-numerical top=%v: %v below shuffled RR %v", top, u.Epsilon, lb)
		}
	}
}

// The inverse searches return local epsilons whose shuffled RR epsilon
// does not exceed the target (a bound that under-reports would let them
// return too large an eps0), across targets from 1e-6 to 55.
func TestInverseAgainstShuffledRR(t *testing.T) {
	for _, tc := range []struct {
		target float64
		n      int
	}{{1e-6, 1000}, {1e-3, 1000}, {0.5, 10000}, {5, 1000}, {30, 1000}, {39.5, 1000}, {55, 100000}} {
		e0, err := InverseEps0(ClonesNumerical, tc.target, tc.n, 1e-6, 60)
		if err != nil {
			t.Fatal(err)
		}
		if lb, _ := ShuffledRRLowerBound(e0, tc.n, 1e-6); lb > tc.target {
			t.Errorf("%+v: eps0 %v gives shuffled RR %v > target", tc, e0, lb)
		}
	}
	eps := equalBudgets(1, 300)
	for _, target := range []float64{0.05, 20, 45} {
		s, err := InverseScale(EoNWorstCase, eps, 1e-6, target, 60)
		if err != nil {
			t.Fatal(err)
		}
		if lb, _ := ShuffledRRLowerBound(s, len(eps), 1e-6); lb > target {
			t.Errorf("target %v: scale %v gives shuffled RR %v > target", target, s, lb)
		}
	}
}

// table3Budgets is APES Table 3's population (Uniform2, n = 10^4, seed 1).
func table3Budgets(t *testing.T) []float64 {
	t.Helper()
	eps, err := account.Budgets("uniform2", 10000, rng.Stream(1))
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

// EoN's q_i average over the differing user's budget (APES's hidden-budget
// assumption). With public budgets the worst case is the largest budget,
// which on APES Table 3's population gives about 0.0765 (worse than UniS's
// 0.0689); the default choice must not report the assumption-based 0.0572.
func TestEoNHiddenBudgetAssumption(t *testing.T) {
	eps := table3Budgets(t)
	const delta = 1e-8
	hid, err := EoNNumerical(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	worst, err := EoNWorstCase(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	unis, err := UniSNumerical(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"eon hidden budget", hid.Epsilon, 0.05721, 5e-5},
		{"unis numerical", unis.Epsilon, 0.06885, 5e-5},
		{"eon worst case", worst.Epsilon, 0.07652, 5e-5},
	}
	for _, tc := range tests {
		if !near(tc.got, tc.want, tc.tol) {
			t.Errorf("%s = %.6g, want about %v", tc.name, tc.got, tc.want)
		}
	}
	if hid.Assumption != HiddenBudgetAssumption || !strings.Contains(hid.Note, "hidden-budget") || hid.Standard() {
		t.Errorf("EoN numerical not labelled: %+v", hid)
	}
	if worst.Assumption != "" || !worst.Standard() {
		t.Errorf("EoN worst case labelled with an assumption: %+v", worst)
	}
	if d, _ := EoNWorstCaseDelta(eps, worst.Epsilon); d > delta {
		t.Errorf("worst-case delta at its own epsilon %g > %g", d, delta)
	}
	best, err := BestPersonal(eps, delta)
	// EoN with Clip-Laplace's exact echo probabilities (0.05965) is the
	// tightest standard bound, below UniS (0.06885) and Lemma 6's worst case
	if err != nil || best.Name != "eon-exact-echo" || !best.Standard() || !near(best.Epsilon, 0.05965, 5e-5) {
		t.Errorf("BestPersonal = %v, %v; want eon-exact-echo, about 0.05965 (standard definition)", best, err)
	}
	bh, err := BestPersonalOpts(eps, delta, PersonalOptions{HiddenBudget: true})
	if err != nil || bh.Name != "eon-numerical" || bh.Assumption != HiddenBudgetAssumption {
		t.Errorf("BestPersonalOpts(hidden) = %v, %v; want eon-numerical under the assumption", bh, err)
	}
	rows, err := ComparePersonal(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Name] = true
		wantAssume := r.Name == "eon" || r.Name == "eon-numerical"
		if (r.Assumption != "") != wantAssume {
			t.Errorf("row %s: assumption %q", r.Name, r.Assumption)
		}
	}
	for _, name := range []string{"unis", "unis-numerical", "eon", "eon-numerical", "eon-worst-case", "eapes-gdp"} {
		if !seen[name] {
			t.Errorf("ComparePersonal lacks %s", name)
		}
	}
	if s := hid.String(); !strings.Contains(s, "hidden-budget") {
		t.Errorf("String() = %q does not state the assumption", s)
	}
	if js, err := json.Marshal(hid); err != nil || !strings.Contains(string(js), `"assumption":"APES's hidden-budget`) {
		t.Errorf("JSON %s (%v) lacks the assumption", js, err)
	}
	if js, _ := json.Marshal(worst); strings.Contains(string(js), "assumption") {
		t.Errorf("JSON %s of a standard bound mentions an assumption", js)
	}
}

// The differing user with the largest budget is the worst case: computing
// the EoN bound for every possible differing user (its own budget as eps1,
// the others' clone probabilities against it) and taking the maximum gives
// EoNWorstCase.
func TestEoNWorstCaseIsMaxOverUsers(t *testing.T) {
	r := rng.Stream(11)
	for _, tc := range []struct {
		n     int
		lo    float64
		hi    float64
		delta float64
	}{{60, 0.05, 1, 1e-3}, {200, 0.5, 3, 1e-4}, {100, 5, 40, 1e-6}} {
		eps := make([]float64, tc.n)
		for i := range eps {
			eps[i] = tc.lo + (tc.hi-tc.lo)*r.Float64()
		}
		worst := 0.0
		for k, ek := range eps {
			others := make([]float64, 0, tc.n-1)
			for i, e := range eps {
				if i != k {
					others = append(others, ClipLaplaceEchoProb(e, ek))
				}
			}
			w := poissonBinomial(others, pbFloorFor(tc.delta, len(others)))
			worst = math.Max(worst, clonesSearch(w, ek, ek, tc.delta))
		}
		b, err := EoNWorstCase(eps, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if !near(b.Epsilon, worst, 1e-6*worst) {
			t.Errorf("%+v: EoNWorstCase %v, max over differing users %v", tc, b.Epsilon, worst)
		}
		h, _ := EoNNumerical(eps, tc.delta)
		if h.Epsilon > b.Epsilon*(1+1e-6) {
			t.Errorf("%+v: hidden-budget %v above worst case %v", tc, h.Epsilon, b.Epsilon)
		}
	}
	wantInvalid(t, func() error { _, err := EoNWorstCase([]float64{1}, 1e-6); return err }(), "n >= 2")
	wantInvalid(t, func() error { _, err := EoNWorstCase([]float64{1, 1}, 0); return err }(), "delta must be in (0, 1)")
	wantInvalid(t, func() error { _, err := EoNWorstCaseDelta([]float64{1, 0}, 0.1); return err }(), "eps[1] must be > 0")
}

// Results computed with the flawed legacy Bennett code are never marked
// rigorous.
func TestLegacyResultsMarkedApproximate(t *testing.T) {
	const deltaC = 5.011872336272725e-06
	lap := Randomizer{Mech: Laplace}
	tests := []struct {
		name       string
		amp        Amplifier
		wantLegacy bool
	}{
		{"legacy laplace", BlanketAmplifier(lap, BennettLegacyFLAME), true},
		{"legacy krr", BlanketAmplifier(Randomizer{Mech: KRR, K: 3}, BennettLegacyFLAME), true},
		{"bennett", BlanketAmplifier(lap, Bennett), false},
		{"hoeffding", BlanketAmplifier(lap, Hoeffding), false},
		{"clones", ClonesAmplifier(), false},
		{"closure", func(e float64, n int, d float64) (float64, error) { return e / 2, nil }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsLegacyAmplifier(tc.amp); got != tc.wantLegacy {
				t.Fatalf("IsLegacyAmplifier = %v", got)
			}
			s, err := SSSimple(78.5, 7850, 1000, deltaC, tc.amp)
			if err != nil {
				t.Fatal(err)
			}
			d1, err := SSDoubleFLAME(78.5, 7850, 157, 1000, 333, deltaC, tc.amp, false)
			if err != nil {
				t.Fatal(err)
			}
			d2, err := SSDouble(78.5, 7850, 157, 1000, 333, deltaC, tc.amp)
			if err != nil {
				t.Fatal(err)
			}
			d3, err := SSDoubleFLAME(78.5, 7850, 157, 1000, 333, deltaC, tc.amp, true)
			if err != nil {
				t.Fatal(err)
			}
			if !d3.Approximation || !strings.Contains(d3.Note, "NOT RIGOROUS") || tc.wantLegacy && !strings.Contains(d3.Note, "FLAWED") {
				t.Errorf("%s: approximation %v, note %q", d3.Name, d3.Approximation, d3.Note)
			}
			for _, r := range []ProtocolResult{s, d1, d2} {
				if r.Approximation != tc.wantLegacy || (tc.wantLegacy && !strings.Contains(r.Note, "FLAWED")) {
					t.Errorf("%s: approximation %v, note %q", r.Name, r.Approximation, r.Note)
				}
			}
		})
	}
	rows, err := CompareUniform(0.5, 1000, 1e-6, lap, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if isLegacy(r.Name) != r.Approximation && r.Name != "eapes-gdp" {
			t.Errorf("row %s: approximation %v", r.Name, r.Approximation)
		}
	}
	if IsLegacyAmplifier(nil) {
		t.Error("nil amplifier reported as legacy")
	}
}

// A huge local budget makes advanced composition overflow (e^eps beyond
// float64); the protocols fall back to the finite basic composition.
func TestFLAMECompositionOverflowUsesBasic(t *testing.T) {
	amp := BlanketAmplifier(Randomizer{Mech: Laplace}, Bennett)
	tests := []struct {
		name string
		f    func() (ProtocolResult, error)
		want float64 // basic composition
	}{
		{"simple d=1", func() (ProtocolResult, error) { return SSSimple(1000, 1, 1000, 1e-6, amp) }, 1000},
		{"simple d=2", func() (ProtocolResult, error) { return SSSimple(2000, 2, 1000, 1e-6, amp) }, 2000},
		{"double k=1", func() (ProtocolResult, error) { return SSDoubleFLAME(1000, 200, 1, 1000, 333, 5e-6, amp, false) }, 2 * 1000},
		{"double eps 1e5", func() (ProtocolResult, error) { return SSDoubleFLAME(1e5, 7850, 157, 1000, 333, 5e-6, amp, false) }, 2 * 1e5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.f()
			if err != nil {
				t.Fatal(err)
			}
			if math.IsInf(r.Epsilon, 0) || math.IsNaN(r.Epsilon) || !near(r.Epsilon, tc.want, 1e-9*tc.want) {
				t.Errorf("epsilon = %v, want basic composition %v", r.Epsilon, tc.want)
			}
		})
	}
	for _, tc := range []struct{ eps, dd, t float64 }{{800, 1e-8, 314}, {1e6, 1e-12, 7850}, {0.01, 1e-9, 7850}} {
		got := composeFLAME(tc.eps, tc.dd, tc.t)
		adv := tc.eps*math.Sqrt(2*tc.t*math.Log(1/tc.dd)) + tc.t*tc.eps*math.Expm1(tc.eps)
		if want := math.Min(tc.t*tc.eps, adv); math.IsInf(got, 0) || !near(got, want, 1e-12*want) {
			t.Errorf("composeFLAME%+v = %v, want %v", tc, got, want)
		}
	}
}

func ExampleShuffledRRLowerBound() {
	lb, _ := ShuffledRRLowerBound(40, 1000, 1e-6)
	ub, _ := ClonesNumerical(40, 1000, 1e-6)
	fmt.Printf("%.6f <= %.6f\n", lb, ub)
	// Output: 39.999999 <= 40.000000
}

// Backs the note in docs/ACCOUNTING.md: for Clip-Laplace (A = C) with
// eps_i <= eps*, the smallest density ratio mu_i(z; f_s)/mu_*(z; f_t) on a
// grid is F(eps_i)/F(eps*) e^-eps_i (F(e) = e/(1-e^-e)), attained at
// f_s = C, z = f_t = -C. It is at least e^-eps* (UniS's clone probability)
// and well above Lemma 4's e^-eps* F(eps_i)/F(eps*), so Lemma 4 is what
// makes the worst-case EoN looser than UniS.
func TestClipLaplaceEchoRatioGrid(t *testing.T) {
	const C, grid = 1.0, 81
	for _, tc := range []struct{ ei, es float64 }{{0.05, 1}, {0.5, 1}, {0.9, 1}, {0.1, 0.5}} {
		worst := math.Inf(1)
		for a := 0; a < grid; a++ {
			fs := -C + 2*C*float64(a)/float64(grid-1)
			for b := 0; b < grid; b += 8 {
				ft := -C + 2*C*float64(b)/float64(grid-1)
				for c := 0; c < grid; c++ {
					z := -C + 2*C*float64(c)/float64(grid-1)
					worst = math.Min(worst, clipLaplaceDensity(z, fs, tc.ei, C)/clipLaplaceDensity(z, ft, tc.es, C))
				}
			}
		}
		corner := echoF(tc.ei) / echoF(tc.es) * math.Exp(-tc.ei)
		if !near(worst, corner, 1e-9) {
			t.Errorf("%+v: grid minimum %v, corner value %v", tc, worst, corner)
		}
		if worst < math.Exp(-tc.es) || ClipLaplaceEchoProb(tc.ei, tc.es) > math.Exp(-tc.es) {
			t.Errorf("%+v: grid %v, e^-eps* %v, Lemma 4 %v", tc, worst, math.Exp(-tc.es), ClipLaplaceEchoProb(tc.ei, tc.es))
		}
	}
}
