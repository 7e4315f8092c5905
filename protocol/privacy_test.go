package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/internal/rng"
	mt "github.com/shufflefl/shufflefl/privacy/mechanism/mechanismtest"
)

// Protocol-level statistical privacy tests. Every registered private
// protocol is built with New at small, realistic parameters, its real
// Encode (for dp-central: its Estimate, where its noise is added) is run on
// the extreme neighbouring inputs, and mechanismtest checks the outputs
// against the epsilon that the protocol's OWN Account states:
//
//   - per coordinate (one coordinate's output binned; the claim is
//     Privacy.LocalCoordEpsilon) for the per-coordinate randomizers;
//   - on the whole report (a joint binning of all coordinates, or a
//     sufficient statistic of it; the claim is Privacy.LocalEpsilon, with
//     Privacy.LocalDelta for the Gaussian ones).
//
// The tests never compute the epsilon themselves from the budget: whatever
// Budget.Epsilon means for a protocol (whole update or per dimension), the
// randomizer must deliver what Account says. Binnings may use the claim to
// place bins (any deterministic binning is post-processing, so this affects
// only the power of the test, never its validity).
//
// Each family has a negative control: the same protocol built or called
// with twice the budget (half the noise) must be rejected at the 1x claim.

// privSamples is the number of draws per input: 3·10^5 (10^5 unless SHUFFLEFL_LONG=1).
func privSamples() int {
	if !longtest.Enabled() {
		return 100_000
	}
	return 300_000
}

func privShape(d, n int) Shape {
	return Shape{Round: 1, Dim: d, Population: n, Participants: n}
}

func sameBudgets(n int, b Budget) []Budget {
	out := make([]Budget, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func mustProtocol(t testing.TB, name string, p Params) Protocol {
	t.Helper()
	pr, err := New(name, p)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return pr
}

// claimOf returns the protocol's own privacy statement for the round after
// checking that the round is valid for it.
func claimOf(t testing.TB, p Protocol, s Shape, budgets []Budget) Privacy {
	t.Helper()
	if err := p.Check(s, budgets); err != nil {
		t.Fatalf("%s: Check: %v", p.Name(), err)
	}
	priv, err := p.Account(s, budgets)
	if err != nil {
		t.Fatalf("%s: Account: %v", p.Name(), err)
	}
	if !priv.Private {
		t.Fatalf("%s: Account says not private", p.Name())
	}
	return priv
}

// uniformClaim returns the Stats' common value, failing if the participants'
// figures differ (the tests give every participant the same budget, so the
// claim for the tested client is unambiguous).
func uniformClaim(t testing.TB, what string, st Stats) float64 {
	t.Helper()
	if st.Min != st.Max {
		t.Fatalf("%s differs across participants with equal budgets: %+v", what, st)
	}
	if !(st.Max > 0) || math.IsInf(st.Max, 0) {
		t.Fatalf("%s = %v is not a finite positive epsilon", what, st.Max)
	}
	return st.Max
}

// encoder returns a function that runs the protocol's Encode on a fresh
// copy of update (Encode may clip in place) and returns the report; it
// reuses one Report, so each returned report is valid until the next call.
func encoder(t testing.TB, p Protocol, s Shape, b Budget, update []float64) func(r *rand.Rand) *Report {
	buf := make([]float64, len(update))
	rep := &Report{}
	return func(r *rand.Rand) *Report {
		copy(buf, update)
		if err := p.Encode(r, s, buf, b, rep); err != nil {
			t.Fatalf("%s: Encode: %v", p.Name(), err)
		}
		return rep
	}
}

// coordValue returns the value a report holds for coordinate j and whether
// it holds one (dense reports hold every coordinate).
func coordValue(rep *Report, j int) (float64, bool) {
	if rep.Coords == nil {
		return rep.Values[j], true
	}
	for i, c := range rep.Coords {
		if int(c) == j {
			return rep.Values[i], true
		}
	}
	return 0, false
}

func constVec(d int, v float64) []float64 {
	x := make([]float64, d)
	for i := range x {
		x[i] = v
	}
	return x
}

// coordSampler bins coordinate j of the report with u (bin u.Bins() for
// "not reported", so the sampler has u.Bins()+1 bins).
func coordSampler(enc func(*rand.Rand) *Report, j int, u mt.Uniform) mt.Sampler {
	return func(r *rand.Rand) int {
		v, ok := coordValue(enc(r), j)
		if !ok {
			return u.Bins()
		}
		return u.Bin(v)
	}
}

// sumSampler bins T = Σ_j clamp(v_j, -c, c) over the reported coordinates
// on [-d·c, d·c]: for Laplace and Clip-Laplace randomizers on the inputs
// all +c and all -c, the privacy loss of a report is proportional to T, so
// this one statistic carries the whole report's loss. The point masses
// T = ±d·c (every coordinate beyond the clip) get bins of their own.
func sumSampler(enc func(*rand.Rand) *Report, d int, c float64) (mt.Sampler, int) {
	eta := 1e-9 * c
	u := mt.Uniform{Lo: -float64(d)*c + eta, Hi: float64(d)*c - eta, N: 32}
	return func(r *rand.Rand) int {
		t := 0.0
		for _, v := range enc(r).Values {
			t += math.Max(-c, math.Min(c, v))
		}
		return u.Bin(t)
	}, u.Bins()
}

// laplaceCoordBins is a uniform binning for one coordinate of a Laplace
// randomizer of scale lam on inputs in [-c, c].
func laplaceCoordBins(c, lam float64) mt.Uniform {
	return mt.Uniform{Lo: -c - 4*lam, Hi: c + 4*lam, N: 100}
}

// laplaceCase is one Laplace-type APES/LDP baseline: a protocol and how to
// build its weak (half-noise) variant.
type laplaceCase struct {
	name   string
	params Params
	budget Budget
	// weak returns the protocol and budget of the negative control: twice
	// the privacy budget of the claim.
	weak func(t testing.TB) (Protocol, Budget)
}

// TestPrivacyLaplaceBaselines: ldp-laplace, pldp, unis and ldp-min clip
// every coordinate to [-C, C] and add Laplace noise. Per coordinate, inputs
// +C and -C, at LocalCoordEpsilon (a sensitivity of C instead of 2C, i.e.
// twice the claimed epsilon per coordinate, fails here); whole report,
// inputs all +C vs all -C, at LocalEpsilon (a per-coordinate share larger
// than LocalEpsilon/d fails here).
func TestPrivacyLaplaceBaselines(t *testing.T) {
	const d, n, clip = 4, 5, 1.0
	s := privShape(d, n)
	apes := func(extra map[string]float64) Params {
		return Params{Clip: clip, Delta: 1e-6, Rounds: 1, Extra: extra}
	}
	b := Budget{Epsilon: 4}
	double := Budget{Epsilon: 2 * b.Epsilon}
	simpleWeak := func(name string, p Params) func(testing.TB) (Protocol, Budget) {
		return func(t testing.TB) (Protocol, Budget) { return mustProtocol(t, name, p), double }
	}
	cases := []laplaceCase{
		{"ldp-laplace", Params{Clip: clip}, b, simpleWeak("ldp-laplace", Params{Clip: clip})},
		{"ldp-laplace", Params{Clip: clip, Secure: true}, b, simpleWeak("ldp-laplace", Params{Clip: clip, Secure: true})},
		{"pldp", apes(map[string]float64{"secure": 1}), b, simpleWeak("pldp", apes(map[string]float64{"secure": 1}))},
		{"pldp", apes(nil), b, simpleWeak("pldp", apes(nil))},
		{"unis", apes(nil), b, simpleWeak("unis", apes(nil))},
		// LDP-Min: the tested client has twice the population minimum and
		// must perturb at the minimum; the weak variant is a protocol whose
		// min-epsilon is twice the one of the claim.
		{"ldp-min", apes(map[string]float64{"min-epsilon": b.Epsilon}), double, func(t testing.TB) (Protocol, Budget) {
			return mustProtocol(t, "ldp-min", apes(map[string]float64{"min-epsilon": double.Epsilon})), double
		}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/secure=%v", c.name, c.params.Secure || c.params.Extra["secure"] == 1), func(t *testing.T) {
			t.Parallel()
			p := mustProtocol(t, c.name, c.params)
			priv := claimOf(t, p, s, sameBudgets(n, c.budget))
			coordEps := uniformClaim(t, "LocalCoordEpsilon", priv.LocalCoordEpsilon)
			userEps := uniformClaim(t, "LocalEpsilon", priv.LocalEpsilon)
			wp, wb := c.weak(t)
			opt := mt.Options{Samples: privSamples()}

			// Per coordinate: coordinate 0 at +C vs -C (the others equal).
			u := laplaceCoordBins(clip, 2*clip/coordEps)
			coord := func(p Protocol, b Budget, x0 float64) mt.Sampler {
				x := constVec(d, 0.3*clip)
				x[0] = x0
				return coordSampler(encoder(t, p, s, b, x), 0, u)
			}
			mt.RequirePrivate(t, coordEps, u.Bins()+1, coord(p, c.budget, clip), coord(p, c.budget, -clip), opt)
			mt.RequireReject(t, coordEps, u.Bins()+1, coord(wp, wb, clip), coord(wp, wb, -clip), opt)

			// Whole report: all +C vs all -C (inputs beyond C are clipped).
			whole := func(p Protocol, b Budget, v float64) (mt.Sampler, int) {
				return sumSampler(encoder(t, p, s, b, constVec(d, v)), d, clip)
			}
			s0, bins := whole(p, c.budget, 3*clip)
			s1, _ := whole(p, c.budget, -3*clip)
			mt.RequirePrivate(t, userEps, bins, s0, s1, opt)
			w0, _ := whole(wp, wb, 3*clip)
			w1, _ := whole(wp, wb, -3*clip)
			mt.RequireReject(t, userEps, bins, w0, w1, opt)
		})
	}
}

// TestPrivacyAPES: apes and s-apes perturb every coordinate with
// Clip-Laplace. Per coordinate (coordinate 0 at +C vs -C) at
// LocalCoordEpsilon and on the whole report (all +C vs all -C, through the
// sufficient statistic Σ y_j) at LocalEpsilon. For s-apes the top-b
// selection and the CLap(0) padding are post-processing of the d
// Clip-Laplace draws, so the same claims must hold; the tested coordinate
// is the only large one, so it is kept most of the time and the negative
// control keeps its power.
func TestPrivacyAPES(t *testing.T) {
	const d, n, clip = 4, 5, 1.0
	s := privShape(d, n)
	b := Budget{Epsilon: 4}
	double := Budget{Epsilon: 2 * b.Epsilon}
	for _, c := range []struct {
		name  string
		extra map[string]float64
	}{
		{"apes", nil},
		{"apes-secure", map[string]float64{"secure": 1}},
		{"s-apes", map[string]float64{"b": 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			name := c.name
			if name == "apes-secure" {
				name = "apes"
			}
			p := mustProtocol(t, name, Params{Clip: clip, Delta: 1e-6, Rounds: 1, Extra: c.extra})
			priv := claimOf(t, p, s, sameBudgets(n, b))
			coordEps := uniformClaim(t, "LocalCoordEpsilon", priv.LocalCoordEpsilon)
			userEps := uniformClaim(t, "LocalEpsilon", priv.LocalEpsilon)
			opt := mt.Options{Samples: privSamples()}

			u := mt.Uniform{Lo: -clip, Hi: clip, N: 20}
			coord := func(b Budget, x0 float64) mt.Sampler {
				x := constVec(d, 0)
				x[0] = x0
				return coordSampler(encoder(t, p, s, b, x), 0, u)
			}
			mt.RequirePrivate(t, coordEps, u.Bins()+1, coord(b, clip), coord(b, -clip), opt)
			mt.RequireReject(t, coordEps, u.Bins()+1, coord(double, clip), coord(double, -clip), opt)

			if name == "s-apes" {
				// Whole report of s-apes: the sum is not sufficient after
				// padding, but it is a valid statistic; no negative control
				// (the padding dilutes it).
				s0, bins := sumSampler(encoder(t, p, s, b, constVec(d, clip)), d, clip)
				s1, _ := sumSampler(encoder(t, p, s, b, constVec(d, -clip)), d, clip)
				mt.RequirePrivate(t, userEps, bins, s0, s1, opt)
				return
			}
			whole := func(b Budget, v float64) (mt.Sampler, int) {
				return sumSampler(encoder(t, p, s, b, constVec(d, v)), d, clip)
			}
			s0, bins := whole(b, clip)
			s1, _ := whole(b, -clip)
			mt.RequirePrivate(t, userEps, bins, s0, s1, opt)
			w0, _ := whole(double, clip)
			w1, _ := whole(double, -clip)
			mt.RequireReject(t, userEps, bins, w0, w1, opt)
		})
	}
}

// TestPrivacyPersonalizedBudgets: with personalized budgets every client
// must randomize with its OWN budget. Participants have budgets b, 2b, ...,
// 5b; Account's LocalCoordEpsilon.Min must hold for the client with b and
// .Max for the client with 5b (per coordinate, inputs ±C), and the client
// with b must be rejected at the claim of half its budget (it does not
// borrow privacy from the others).
func TestPrivacyPersonalizedBudgets(t *testing.T) {
	const d, n, clip = 4, 5, 1.0
	s := privShape(d, n)
	budgets := make([]Budget, n)
	for i := range budgets {
		budgets[i] = Budget{Epsilon: 2 * float64(i+1)}
	}
	lo, hi := budgets[0], budgets[n-1]
	for _, c := range []struct {
		name   string
		params Params
		clap   bool // Clip-Laplace outputs in [-C, C]
	}{
		{"ldp-laplace", Params{Clip: clip}, false},
		{"pldp", Params{Clip: clip, Delta: 1e-6, Rounds: 1}, false},
		{"unis", Params{Clip: clip, Delta: 1e-6, Rounds: 1}, false},
		{"apes", Params{Clip: clip, Delta: 1e-6, Rounds: 1}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := mustProtocol(t, c.name, c.params)
			priv := claimOf(t, p, s, budgets)
			st := priv.LocalCoordEpsilon
			if !(st.Min < st.Max) {
				t.Fatalf("LocalCoordEpsilon %+v does not reflect personalized budgets", st)
			}
			opt := mt.Options{Samples: privSamples()}
			coord := func(u mt.Uniform, b Budget, x0 float64) mt.Sampler {
				x := constVec(d, 0)
				x[0] = x0
				return coordSampler(encoder(t, p, s, b, x), 0, u)
			}
			for _, tc := range []struct {
				b   Budget
				eps float64
			}{{lo, st.Min}, {hi, st.Max}} {
				u := laplaceCoordBins(clip, 2*clip/tc.eps)
				if c.clap {
					u = mt.Uniform{Lo: -clip, Hi: clip, N: 20}
				}
				mt.RequirePrivate(t, tc.eps, u.Bins()+1, coord(u, tc.b, clip), coord(u, tc.b, -clip), opt)
			}
			u := laplaceCoordBins(clip, 4*clip/st.Min)
			if c.clap {
				u = mt.Uniform{Lo: -clip, Hi: clip, N: 20}
			}
			mt.RequireReject(t, st.Min/2, u.Bins()+1, coord(u, lo, clip), coord(u, lo, -clip), opt)
		})
	}
}

// jointSampler bins a whole R_{gamma,b} report jointly: coordinate j's state
// is 0 when not reported and 1+v for a reported value v in {0, ..., levels},
// and the bin is the base-(levels+2) number of the d states (the order of
// Coords is ignored, as the shuffler ignores it).
func jointSampler(enc func(*rand.Rand) *Report, d, levels int) (mt.Sampler, int) {
	base := levels + 2
	bins := 1
	for range d {
		bins *= base
	}
	return func(r *rand.Rand) int {
		rep := enc(r)
		idx := 0
		for j := d - 1; j >= 0; j-- {
			st := 0
			if v, ok := coordValue(rep, j); ok {
				st = 1 + int(v)
			}
			idx = idx*base + st
		}
		return idx
	}, bins
}

// TestPrivacyFLAME: FLAME's SS-Simple, SS-Double and SS-Topk with
// R_{gamma,b} (b = 2 levels) and, for SS-Simple, the Laplace randomizer.
// FLAME's public eps_l is Params.Epsilon, so the negative control is the
// protocol built with 2·eps_l (and budgets to match) tested at the claim
// of eps_l. Per coordinate: coordinate 0's state (not reported, or its
// value) at LocalCoordEpsilon; whole report: the joint state of all d
// coordinates at LocalEpsilon. Inputs are all +C vs all -C, and for SS-Topk
// (whose top-k set is data-dependent) also two updates with disjoint top-k
// sets, which swap real values and blanket dummies.
func TestPrivacyFLAME(t *testing.T) {
	const d, n, clip, eps = 4, 5, 1.0, 4.0
	s := privShape(d, n)
	type flameCase struct {
		name    string
		extra   map[string]float64
		x0, x1  []float64 // whole-report inputs
		laplace bool
		secure  bool
		levels  int // b of R_{gamma,b} (0: the default)
	}
	cases := []flameCase{
		{name: "ss-simple", x0: constVec(d, clip), x1: constVec(d, -clip)},
		{name: "ss-simple", extra: map[string]float64{"randomizer": 1}, x0: constVec(d, clip), x1: constVec(d, -clip), laplace: true},
		{name: "ss-simple", extra: map[string]float64{"randomizer": 1}, x0: constVec(d, clip), x1: constVec(d, -clip), laplace: true, secure: true},
		{name: "ss-double", extra: map[string]float64{"k": 2, "randomizer": 1}, x0: constVec(d, clip), x1: constVec(d, -clip), laplace: true},
		{name: "ss-topk", extra: map[string]float64{"k": 2, "randomizer": 1}, x0: constVec(d, clip), x1: constVec(d, -clip), laplace: true},
		{name: "ss-double", extra: map[string]float64{"k": 3, "levels": 4}, x0: constVec(d, clip), x1: constVec(d, -clip), levels: 4},
		{name: "ss-double", extra: map[string]float64{"k": 2}, x0: constVec(d, clip), x1: constVec(d, -clip)},
		{name: "ss-topk", extra: map[string]float64{"k": 2}, x0: constVec(d, clip), x1: constVec(d, -clip)},
		{name: "ss-topk", extra: map[string]float64{"k": 2}, x0: []float64{clip, clip, 0, 0}, x1: []float64{0, 0, -clip, -clip}},
		{name: "ss-topk", extra: map[string]float64{"k": 1}, x0: []float64{clip, 0, 0, 0}, x1: []float64{0, 0, 0, -clip}},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.name, i), func(t *testing.T) {
			t.Parallel()
			t.Logf("options %v, secure %v", c.extra, c.secure)
			build := func(e float64) (Protocol, Budget) {
				return mustProtocol(t, c.name, Params{Clip: clip, Epsilon: e, Secure: c.secure, Extra: c.extra}), Budget{Epsilon: e}
			}
			p, b := build(eps)
			wp, wb := build(2 * eps)
			priv := claimOf(t, p, s, sameBudgets(n, b))
			coordEps := uniformClaim(t, "LocalCoordEpsilon", priv.LocalCoordEpsilon)
			userEps := uniformClaim(t, "LocalEpsilon", priv.LocalEpsilon)
			opt := mt.Options{Samples: privSamples()}

			if c.laplace { // values are u + Lap on the unit interval
				u := mt.Uniform{Lo: -4 / coordEps, Hi: 1 + 4/coordEps, N: 100}
				coord := func(p Protocol, b Budget, x []float64) mt.Sampler {
					return coordSampler(encoder(t, p, s, b, x), 0, u)
				}
				mt.RequirePrivate(t, coordEps, u.Bins()+1, coord(p, b, c.x0), coord(p, b, c.x1), opt)
				mt.RequireReject(t, coordEps, u.Bins()+1, coord(wp, wb, c.x0), coord(wp, wb, c.x1), opt)
				// Whole report: Σ clamp(v, 0, 1) - d/2 is the sufficient statistic.
				sum := func(p Protocol, b Budget, x []float64) (mt.Sampler, int) {
					enc := encoder(t, p, s, b, x)
					return sumSampler(func(r *rand.Rand) *Report {
						rep := enc(r)
						for k, v := range rep.Values {
							rep.Values[k] = 2*v - 1 // to [-1, 1] for sumSampler
						}
						return rep
					}, d, 1)
				}
				s0, bins := sum(p, b, c.x0)
				s1, _ := sum(p, b, c.x1)
				mt.RequirePrivate(t, userEps, bins, s0, s1, opt)
				w0, _ := sum(wp, wb, c.x0)
				w1, _ := sum(wp, wb, c.x1)
				mt.RequireReject(t, userEps, bins, w0, w1, opt)
				return
			}
			levels := flameDefaultLevels
			if c.levels != 0 {
				levels = c.levels
			}
			coord := func(p Protocol, b Budget, x []float64) mt.Sampler {
				enc := encoder(t, p, s, b, x)
				return func(r *rand.Rand) int {
					v, ok := coordValue(enc(r), 0)
					if !ok {
						return 0
					}
					return 1 + int(v)
				}
			}
			mt.RequirePrivate(t, coordEps, levels+2, coord(p, b, c.x0), coord(p, b, c.x1), opt)
			if c.x0[0] != 0 && c.x1[0] != 0 {
				mt.RequireReject(t, coordEps, levels+2, coord(wp, wb, c.x0), coord(wp, wb, c.x1), opt)
			}
			joint := func(p Protocol, b Budget, x []float64) (mt.Sampler, int) {
				return jointSampler(encoder(t, p, s, b, x), d, levels)
			}
			s0, bins := joint(p, b, c.x0)
			s1, _ := joint(p, b, c.x1)
			mt.RequirePrivate(t, userEps, bins, s0, s1, opt)
			w0, _ := joint(wp, wb, c.x0)
			w1, _ := joint(wp, wb, c.x1)
			mt.RequireReject(t, userEps, bins, w0, w1, opt)
		})
	}
}

// gaussTails returns a tail binning (mechanismtest.Tails) for a scalar
// statistic f of a Gaussian mechanism's output on two inputs: from pilot
// draws on independent streams it estimates the two means and the common
// standard deviation and puts the cut points where the privacy loss of the
// statistic reaches eps, plus four more bins of width sd/2 in each tail.
// Estimation errors only move the bins (costing power, not validity).
// projection is the score of an estimate dst in the direction u of client
// 0's update: <dst, u>/clip.
func projection(dst, u []float64, clip float64) float64 {
	dot := 0.0
	for j := range dst {
		dot += dst[j] * u[j] / clip
	}
	return dot
}

// requireNoiseControl runs the statistical privacy test of a mechanism whose
// noise is calibrated to eps (at delta) and its negative control with less
// noise: est(weak, present) samples the released score with client 0
// present with weight present (0: absent, q: Poisson-sampled, 1: always),
// from the calibrated mechanism (weak false) or the under-noised one. The
// calibrated one must pass, the control must be rejected. Bins come from the
// full-participation pair (the mixture's variance would blur the pilot
// estimate).
func requireNoiseControl(t *testing.T, eps, delta, q float64, est func(weak bool, present float64) func(*rand.Rand) float64) {
	t.Helper()
	opt := mt.Options{Samples: 1_000_000, Delta: delta}
	for _, weak := range []bool{false, true} {
		f0, f1 := est(weak, 0), est(weak, q)
		e := gaussTails(f0, est(weak, 1), eps)
		if weak {
			mt.RequireReject(t, eps, e.Bins(), e.Continuous(f0), e.Continuous(f1), opt)
		} else {
			mt.RequirePrivate(t, eps, e.Bins(), e.Continuous(f0), e.Continuous(f1), opt)
		}
	}
}

func gaussTails(f0, f1 func(*rand.Rand) float64, eps float64) mt.Edges {
	const pilot = 20_000
	stats := func(f func(*rand.Rand) float64, seed uint64) (mean, vr float64) {
		r := rng.Stream(seed, 7)
		var s, s2 float64
		for range pilot {
			v := f(r)
			s += v
			s2 += v * v
		}
		mean = s / pilot
		return mean, s2/pilot - mean*mean
	}
	m0, v0 := stats(f0, 11)
	m1, v1 := stats(f1, 12)
	sd := math.Sqrt((v0 + v1) / 2)
	delta := math.Abs(m1 - m0)
	return mt.Tails((m0+m1)/2, eps*sd*sd/delta, sd/2, 4)
}

// TestPrivacyGaussianProtocols: ldp-gaussian and e-apes add Gaussian noise
// to the whole update, so the test is on the whole report: the projection
// of the report on the direction between the two inputs (all +C vs all -C
// for ldp-gaussian's per-coordinate clipping; ±C/sqrt(d) in every
// coordinate, the L2-clipped extreme, for e-apes) is a one-dimensional
// Gaussian carrying the whole privacy loss, binned in its tails at
// (LocalEpsilon, LocalDelta). E-APES also claims LocalCoordEpsilon for one
// coordinate (inputs ±C on coordinate 0), tested on that coordinate.
func TestPrivacyGaussianProtocols(t *testing.T) {
	const d, n, clip = 4, 5, 1.0
	s := privShape(d, n)
	for _, c := range []struct {
		name    string
		params  Params
		v       float64 // every coordinate of the +input (the -input is -v)
		budget  Budget
		samples int
	}{
		// ldp-gaussian recalibrates its sigma (a bisection) in every
		// Encode, 10-20 µs a call, hence the larger delta and fewer draws
		// (the negative control's hockey-stick lower bound is still above
		// 0.01, ten times the claimed delta).
		{"ldp-gaussian", Params{Clip: clip}, clip, Budget{Epsilon: 2, Delta: 1e-3}, 60_000},
		{"e-apes", Params{Clip: clip, Delta: 1e-6, Rounds: 1}, 5 * clip, Budget{Epsilon: 2, Delta: 1e-5}, 1_000_000}, // clipped to C/sqrt(d) each
		{"e-apes", Params{Clip: clip, Delta: 1e-6, Rounds: 1, Secure: true}, 5 * clip, Budget{Epsilon: 2, Delta: 1e-5}, 1_000_000},
	} {
		t.Run(fmt.Sprintf("%s/secure=%v", c.name, c.params.Secure), func(t *testing.T) {
			t.Parallel()
			longtest.Skip(t) // needs 3·10^5 to 10^6 draws per input for a delta > 0 claim
			b := c.budget
			double := Budget{Epsilon: 2 * b.Epsilon, Delta: b.Delta}
			p := mustProtocol(t, c.name, c.params)
			priv := claimOf(t, p, s, sameBudgets(n, b))
			userEps := uniformClaim(t, "LocalEpsilon", priv.LocalEpsilon)
			opt := mt.Options{Samples: c.samples, Delta: priv.LocalDelta}
			if !(priv.LocalDelta > 0 && priv.LocalDelta < 1) {
				t.Fatalf("LocalDelta = %v for a Gaussian mechanism", priv.LocalDelta)
			}
			proj := func(b Budget, v float64) func(*rand.Rand) float64 {
				enc := encoder(t, p, s, b, constVec(d, v))
				return func(r *rand.Rand) float64 {
					sum := 0.0
					for _, y := range enc(r).Values {
						sum += y
					}
					return sum
				}
			}
			run := func(b Budget, eps float64, wantPrivate bool) {
				f0, f1 := proj(b, c.v), proj(b, -c.v)
				e := gaussTails(f0, f1, eps)
				s0, s1 := e.Continuous(f0), e.Continuous(f1)
				if wantPrivate {
					mt.RequirePrivate(t, eps, e.Bins(), s0, s1, opt)
				} else {
					mt.RequireReject(t, eps, e.Bins(), s0, s1, opt)
				}
			}
			run(b, userEps, true)
			run(double, userEps, false)

			if c.name == "e-apes" {
				coordEps := uniformClaim(t, "LocalCoordEpsilon", priv.LocalCoordEpsilon)
				one := func(b Budget, x0 float64) func(*rand.Rand) float64 {
					x := constVec(d, 0)
					x[0] = x0
					enc := encoder(t, p, s, b, x)
					return func(r *rand.Rand) float64 { return enc(r).Values[0] }
				}
				f0, f1 := one(b, clip), one(b, -clip)
				e := gaussTails(f0, f1, coordEps)
				mt.RequirePrivate(t, coordEps, e.Bins(), e.Continuous(f0), e.Continuous(f1), opt)
			}
		})
	}
}

// TestPrivacyCentralEstimate: dp-central's clients send their clipped
// updates in the clear (no local guarantee: Account says LocalEpsilon =
// +Inf), and the noise is added by the analyzer in Estimate. The test runs
// Estimate on neighbouring aggregates — without and with one client whose
// clipped update u has norm C, present with probability q (Poisson
// sampling; q = 1 and q = 1/2) — projects the estimate on u and checks
// Account's one-round (CentralEpsilon, CentralDelta). The negative control
// is the same protocol with half the noise multiplier (white box).
func TestPrivacyCentralEstimate(t *testing.T) {
	longtest.Skip(t) // 10^6 draws per input are needed at delta = 1e-5
	const d, clip = 4, 1.0
	for _, c := range []struct {
		q      float64
		secure bool
	}{{1, true}, {0.5, true}, {0.5, false}} {
		q := c.q
		t.Run(fmt.Sprintf("q=%v/secure=%v", q, c.secure), func(t *testing.T) {
			t.Parallel()
			const pop = 4
			s := Shape{Round: 1, Dim: d, Population: pop, Participants: int(q * pop)}
			p := mustProtocol(t, "dp-central", Params{Clip: clip, Epsilon: 2, Delta: 1e-5, Rounds: 1, SampleRate: q, Secure: c.secure})
			priv := claimOf(t, p, s, nil)
			if !math.IsInf(priv.LocalEpsilon.Max, 1) {
				t.Errorf("dp-central claims a local epsilon %v: its clients send clipped updates in the clear", priv.LocalEpsilon.Max)
			}
			eps, delta := priv.CentralEpsilon, priv.CentralDelta
			u := constVec(d, clip/math.Sqrt(d)) // norm C
			est := func(p Protocol, present float64) func(*rand.Rand) float64 {
				agg := NewAggregate(d)
				dst := make([]float64, d)
				return func(r *rand.Rand) float64 {
					clear(agg.Sum)
					if present == 1 || (present > 0 && r.Float64() < present) {
						copy(agg.Sum, u)
					}
					if err := p.(Estimator).Estimate(r, s, agg, dst); err != nil {
						t.Fatal(err)
					}
					return projection(dst, u, clip)
				}
			}
			weak := p.(CentralDP)
			weak.sigma /= 2
			requireNoiseControl(t, eps, delta, q, func(w bool, present float64) func(*rand.Rand) float64 {
				if w {
					return est(weak, present)
				}
				return est(p, present)
			})
		})
	}
}

// TestPrivacyCoversEveryProtocol makes sure a newly registered protocol gets
// a statistical privacy test here (or is explicitly non-private).
func TestPrivacyCoversEveryProtocol(t *testing.T) {
	covered := []string{
		"ldp-laplace", "pldp", "unis", "ldp-min", // TestPrivacyLaplaceBaselines, TestPrivacyPersonalizedBudgets
		"apes", "s-apes", // TestPrivacyAPES
		"ss-simple", "ss-double", "ss-topk", // TestPrivacyFLAME
		"ldp-gaussian", "e-apes", // TestPrivacyGaussianProtocols
		"dp-central", // TestPrivacyCentralEstimate
		"split-mix",  // TestPrivacySplitMix (splitmix_test.go)
		"nonprivate", // no guarantee (checked below)
		"ifca-dp",    // TestPrivacyIFCADP (d-privacy)
		"ifca",       // no guarantee (TestIFCAAccount)
	}
	for _, name := range Names() {
		if !slices.Contains(covered, name) {
			t.Errorf("protocol %q has no statistical privacy test in privacy_test.go", name)
		}
	}
	p := mustProtocol(t, "nonprivate", Params{})
	if priv, err := p.Account(privShape(4, 5), sameBudgets(5, Budget{Epsilon: 1})); err != nil || priv.Private {
		t.Errorf("nonprivate: Account = %+v, %v; want Private = false", priv, err)
	}
}

// Fixed privacy bug (ldp-gaussian): Account stated LocalCoordEpsilon = eps_i/d with
// LocalDelta = delta_i, but one coordinate of the report is a Gaussian with
// sensitivity 2C and the sigma calibrated for the whole update's L2
// sensitivity 2C·sqrt(d) at (eps_i, delta_i), so a coordinate is only
// (roughly eps_i/sqrt(d), delta_i)-DP. Exact figures (analytic Gaussian
// formula, mechanism.GaussianDelta, C = 1):
//
//	(eps_i, delta_i), d    claimed per coord   true delta there   true eps at delta_i
//	(2, 1e-3), 4           0.5                 0.0146             0.871 (1.7x)
//	(2, 1e-5), 4           0.5                 0.00276            0.930 (1.9x)
//	(8, 1e-5), 100         0.08                0.0353             0.594 (7.4x)
//	(78.5, 1e-5), 7850     0.01                0.0360             0.348 (35x)
//
// ldp.go documented eps_i/d as "only a budget share", but the Privacy field
// read as a guarantee; it now states the whole update's (eps_i, delta_i),
// which covers any one coordinate, and this test checks that claim. Inputs: coordinate 0 at +C vs -C, others 0; the
// test measures a hockey-stick lower bound of about 0.0035 > 1e-3.
func TestPrivacyLDPGaussianCoordClaim(t *testing.T) {
	const d, n, clip = 4, 5, 1.0
	s := privShape(d, n)
	b := Budget{Epsilon: 2, Delta: 1e-3}
	p := mustProtocol(t, "ldp-gaussian", Params{Clip: clip})
	priv := claimOf(t, p, s, sameBudgets(n, b))
	coordEps := uniformClaim(t, "LocalCoordEpsilon", priv.LocalCoordEpsilon)
	one := func(x0 float64) func(*rand.Rand) float64 {
		x := constVec(d, 0)
		x[0] = x0
		enc := encoder(t, p, s, b, x)
		return func(r *rand.Rand) float64 { return enc(r).Values[0] }
	}
	f0, f1 := one(clip), one(-clip)
	e := gaussTails(f0, f1, coordEps)
	mt.RequirePrivate(t, coordEps, e.Bins(), e.Continuous(f0), e.Continuous(f1), mt.Options{Samples: 300_000, Delta: priv.LocalDelta})
}

// Fixed privacy bug (ss-topk): when l·k < d (k does not divide d, or option nu or a
// small n_p lowers l), some non-top coordinates are never reported while
// the k top coordinates always are, so the SET of reported coordinates
// reveals the top-k indexes: with d = 5, k = 2 (l = 2, 4 of 5 coordinates
// reported), an update whose top-2 set is {0, 1} can produce the coordinate
// set {0, 1, 2, 3}, which is impossible for an update whose top-2 set is
// {3, 4}. The privacy loss is infinite, yet Account stated LocalEpsilon =
// eps_l; it now states no local epsilon there. FLAME's nu-index privacy (Definition 3) is not local DP; the
// local claim holds only when l·k = d (every coordinate reported).
func TestPrivacySSTopkReportedSetClaim(t *testing.T) {
	const d, n, clip, eps = 5, 5, 1.0, 4.0
	s := privShape(d, n)
	p := mustProtocol(t, "ss-topk", Params{Clip: clip, Epsilon: eps, Extra: map[string]float64{"k": 2}})
	b := Budget{Epsilon: eps}
	priv := claimOf(t, p, s, sameBudgets(n, b))
	// The statement no longer claims eps_l for the whole report ...
	if !math.IsInf(priv.LocalEpsilon.Max, 1) || !math.IsInf(priv.LocalCoordEpsilon.Max, 1) || !strings.Contains(priv.Bound, "nu-index") {
		t.Fatalf("ss-topk with l k < d states local %v / %v (%s); want no eps-LDP claim", priv.LocalEpsilon, priv.LocalCoordEpsilon, priv.Bound)
	}
	// ... and rightly: the reported index set alone violates eps_l-LDP.
	set := func(x []float64) mt.Sampler {
		enc := encoder(t, p, s, b, x)
		return func(r *rand.Rand) int {
			m := 0
			for _, c := range enc(r).Coords {
				m |= 1 << c
			}
			return m
		}
	}
	mt.RequireReject(t, eps, 1<<d, set([]float64{clip, clip, 0, 0, 0}), set([]float64{0, 0, 0, clip, clip}), mt.Options{Samples: 100_000})
	// With l k = d every coordinate is reported and the claim stands.
	s4 := privShape(4, n)
	if pr := claimOf(t, p, s4, sameBudgets(n, b)); pr.LocalEpsilon.Max != eps {
		t.Fatalf("ss-topk with l k = d states local %v, want %v", pr.LocalEpsilon, eps)
	}
}

// clipL2 must not square before scaling: with |x_i| > 1.3e154 the sum of
// squares overflowed to +Inf and the "clipped" update became all zeros;
// with entries below 1e-162 it underflowed to 0 and a vector longer than a
// tiny clip bound escaped clipping.
func TestClipL2Extremes(t *testing.T) {
	norm2 := func(x []float64) float64 {
		m := 0.0
		for _, v := range x {
			m = math.Max(m, math.Abs(v))
		}
		s := 0.0
		for _, v := range x {
			s += (v / m) * (v / m)
		}
		return m * math.Sqrt(s)
	}
	for _, c := range []struct {
		name     string
		x        []float64
		clip     float64
		wantNorm float64 // returned norm before clipping
	}{
		{"1e200", []float64{1e200, -1e200, 1e200, 1e200}, 1, 2e200},
		{"max float", []float64{math.MaxFloat64, math.MaxFloat64, -math.MaxFloat64, 0}, 3, math.Inf(1)},
		{"mixed scales", []float64{3e300, 4e300, 1e-300, 0}, 1, 5e300},
		{"tiny entries, tiny clip", []float64{3e-300, 4e-300}, 1e-310, 5e-300},
		{"subnormal clip", []float64{1, 1, 1, 1}, 1e-310, 2},
		{"below the clip", []float64{0.3, -0.4}, 1, 0.5},
		{"zero", []float64{0, 0, 0}, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := slices.Clone(c.x)
			got := clipL2(x, c.clip)
			if !(got == c.wantNorm || math.Abs(got-c.wantNorm) <= 1e-12*c.wantNorm) {
				t.Errorf("returned norm %v, want %v", got, c.wantNorm)
			}
			after := norm2(x)
			want := math.Min(c.clip, c.wantNorm)
			if c.wantNorm == 0 {
				after = 0
			}
			if math.Abs(after-want) > 1e-12*want || after > c.clip*(1+1e-12) {
				t.Errorf("norm after clipping %v, want %v (clip %v); x = %v", after, want, c.clip, x)
			}
			if c.wantNorm > c.clip { // direction preserved
				for i := range x {
					if math.Signbit(x[i]) != math.Signbit(c.x[i]) && c.x[i] != 0 {
						t.Errorf("sign of coordinate %d flipped: %v -> %v", i, c.x[i], x[i])
					}
				}
			}
		})
	}
	// Non-finite input is rejected by checkUpdate before clipping; clipL2
	// itself releases nothing of such a vector.
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		x := []float64{1, bad, 2}
		if got := clipL2(x, 1); !math.IsNaN(got) || x[0] != 0 || x[1] != 0 || x[2] != 0 {
			t.Errorf("clipL2 with %v: returned %v, x = %v; want NaN and zeros", bad, got, x)
		}
	}
}

// The L2-clipping protocols (dp-central, e-apes) keep the direction of an
// update with huge entries instead of zeroing it, and reject non-finite
// updates.
func TestClipL2Protocols(t *testing.T) {
	const d, n = 4, 5
	s := privShape(d, n)
	huge := constVec(d, 1e200)
	huge[1] = -1e200
	t.Run("dp-central", func(t *testing.T) {
		p := mustProtocol(t, "dp-central", Params{Clip: 2, Epsilon: 1, Delta: 1e-5, Rounds: 1, SampleRate: 1})
		var rep Report
		if err := p.Encode(rng.NewSeeded(1), s, slices.Clone(huge), Budget{}, &rep); err != nil {
			t.Fatal(err)
		}
		want := []float64{1, -1, 1, 1} // 2·x/|x|
		for j, v := range rep.Values {
			if math.Abs(v-want[j]) > 1e-12 {
				t.Fatalf("clipped report %v, want %v", rep.Values, want)
			}
		}
	})
	t.Run("e-apes", func(t *testing.T) {
		p := mustProtocol(t, "e-apes", Params{Clip: 1, Delta: 1e-6, Rounds: 1})
		b := Budget{Epsilon: 2, Delta: 1e-5}
		r := rng.NewSeeded(2)
		var rep Report
		const draws = 16_000
		mean := make([]float64, d)
		for range draws {
			if err := p.Encode(r, s, slices.Clone(huge), b, &rep); err != nil {
				t.Fatal(err)
			}
			for j, v := range rep.Values {
				mean[j] += v / draws
			}
		}
		// E[report] = C·x/|x| = (0.5, -0.5, 0.5, 0.5); the noise sigma is
		// about 4 (analytic Gaussian, (2, 1e-5), sensitivity 2C), so the
		// mean of 16000 draws has standard error 0.032 and is within 0.2.
		for j, want := range []float64{0.5, -0.5, 0.5, 0.5} {
			if math.Abs(mean[j]-want) > 0.2 {
				t.Errorf("mean report %v, want about (0.5, -0.5, 0.5, 0.5): the huge update was not clipped to its direction", mean)
				break
			}
		}
	})
	for _, name := range []string{"dp-central", "e-apes"} {
		p := mustProtocol(t, name, Params{Clip: 1, Epsilon: 1, Delta: 1e-5, Rounds: 1, SampleRate: 1})
		for _, bad := range []float64{math.NaN(), math.Inf(1)} {
			x := constVec(d, 0.1)
			x[2] = bad
			var rep Report
			if err := p.Encode(rng.NewSeeded(3), s, x, Budget{Epsilon: 1, Delta: 1e-5}, &rep); err == nil {
				t.Errorf("%s: Encode accepted an update with %v", name, bad)
			}
		}
	}
}

// dp-central with a subnormal clip (noise std sigma·C subnormal): the secure
// Gaussian derives its snapping grid from the exponent bits of the scale,
// which are 0 for a subnormal, so the grid was garbage (a huge negative
// "power of two") and every noisy coordinate snapped to zero — the analyzer
// silently returned an all-zero model. The constructor now rejects a clip
// whose noise scale the samplers cannot represent; if it ever accepts one
// again, Estimate must at least add noise.
func TestClipCentralSubnormal(t *testing.T) {
	const d = 4
	s := privShape(d, 4)
	for _, c := range []struct {
		clip   float64
		secure bool
	}{{1e-310, true}, {1e-310, false}, {1e-300, true}, {1e300, true}} {
		t.Run(fmt.Sprintf("clip=%v/secure=%v", c.clip, c.secure), func(t *testing.T) {
			p, err := New("dp-central", Params{Clip: c.clip, Epsilon: 1, Delta: 1e-5, Rounds: 1, SampleRate: 1, Secure: c.secure})
			if err != nil {
				t.Logf("rejected: %v", err)
				return
			}
			agg := NewAggregate(d)
			agg.Sum = constVec(d, c.clip/2)
			dst := make([]float64, d)
			r := rng.NewSeeded(4)
			distinct := map[float64]bool{}
			for range 20 {
				if err := p.(Estimator).Estimate(r, s, agg, dst); err != nil {
					t.Fatal(err)
				}
				for _, v := range dst {
					distinct[v] = true
				}
			}
			if len(distinct) < 40 {
				t.Errorf("clip %v: Estimate gave only %d distinct values in 80 noisy coordinates (e.g. %v): the noise is lost", c.clip, len(distinct), dst)
			}
		})
	}
	// A moderate clip still works.
	if _, err := New("dp-central", Params{Clip: 1e-6, Epsilon: 1, Delta: 1e-5, Rounds: 1, SampleRate: 1, Secure: true}); err != nil {
		t.Errorf("clip 1e-6 rejected: %v", err)
	}
}
