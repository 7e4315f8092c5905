package protocol

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
)

func shape(n, d int) Shape { return Shape{Round: 1, Dim: d, Population: n, Participants: n} }

func mustNew(t *testing.T, name string, p Params) Protocol {
	t.Helper()
	pr, err := New(name, p)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	return pr
}

// runRound encodes the same update for n clients and estimates the mean.
func runRound(t *testing.T, p Protocol, s Shape, update []float64, b Budget, seed uint64) []float64 {
	t.Helper()
	agg := NewAggregate(s.Dim)
	var rep Report
	u := make([]float64, s.Dim)
	for i := 0; i < s.Participants; i++ {
		copy(u, update)
		if err := p.Encode(rng.Stream(seed, rng.LabelNoise, 1, uint64(i)), s, u, b, &rep); err != nil {
			t.Fatal(err)
		}
		if err := agg.AddReport(&rep); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Pad(rng.Stream(seed, rng.LabelShuffle), s, slices.Clone(agg.Count), agg.AddValue); err != nil {
		t.Fatal(err)
	}
	est := make([]float64, s.Dim)
	if err := p.(Estimator).Estimate(rng.Stream(seed, rng.LabelAnalyzer), s, agg, est); err != nil {
		t.Fatal(err)
	}
	return est
}

// TestEstimatorNoise checks, for each baseline, that the analyzer's estimate
// is unbiased for the mean clipped update and that its per-coordinate
// variance is the one the mechanism implies. With d = 2000 coordinates of
// independent noise, the sample variance of the errors has relative standard
// deviation sqrt(2/d) ~ 3.2% (Gaussian) and about sqrt(5/d) ~ 5% (the
// Laplace average is close to Gaussian for n = 50); we allow 6 standard
// deviations. The mean error has standard deviation sqrt(v/d); 6 sd again.
func TestEstimatorNoise(t *testing.T) {
	const n, d, clip = 50, 2000, 0.5
	update := make([]float64, d)
	for j := range update {
		update[j] = 0.3 * math.Sin(float64(j)) // within the clip
	}
	tests := []struct {
		name   string
		params Params
		budget Budget
		want   float64 // variance of one coordinate of the estimate
	}{
		{"ldp-laplace", Params{Clip: clip}, Budget{Epsilon: 4000}, func() float64 {
			b := 2 * clip * d / 4000.0
			return 2 * b * b / n
		}()},
		{"ldp-gaussian", Params{Clip: clip}, Budget{Epsilon: 2000, Delta: 1e-5}, -1},
		{"nonprivate", Params{}, Budget{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, tc.name, tc.params)
			s := shape(n, d)
			est := runRound(t, p, s, update, tc.budget, 7)
			want := tc.want
			if tc.name == "ldp-gaussian" {
				sig := gaussianSigmaFor(t, tc.budget, 2*clip*math.Sqrt(d))
				want = sig * sig / n
			}
			var mean, v float64
			for j := range est {
				e := est[j] - update[j]
				mean += e
				v += e * e
			}
			mean /= d
			v /= d
			if want == 0 {
				if v > 1e-24 { // rounding of the sum of 50 equal values only
					t.Fatalf("non-private estimate has error variance %v", v)
				}
				return
			}
			if math.Abs(mean) > 6*math.Sqrt(want/d) {
				t.Errorf("mean error %v, more than 6 sd (%v) from 0", mean, math.Sqrt(want/d))
			}
			if rel := math.Abs(v/want - 1); rel > 6*math.Sqrt(5.0/d) {
				t.Errorf("error variance %v, want %v (relative deviation %.3f)", v, want, rel)
			}
		})
	}
}

func TestCentralNoise(t *testing.T) {
	const N, n, d = 1000, 100, 3000
	p := mustNew(t, "dp-central", Params{Clip: 1, Epsilon: 2, Delta: 1e-5, Rounds: 10, SampleRate: float64(n) / N})
	c := p.(CentralDP)
	if c.NoiseMultiplier() <= 0 {
		t.Fatal("no noise")
	}
	s := Shape{Round: 1, Dim: d, Population: N, Participants: n}
	agg := NewAggregate(d)
	est := make([]float64, d)
	if err := p.(Estimator).Estimate(rng.Stream(3), s, agg, est); err != nil {
		t.Fatal(err)
	}
	want := c.NoiseMultiplier() / n // sigma*C/(qN) with C = 1
	var v float64
	for _, x := range est {
		v += x * x
	}
	v = math.Sqrt(v / d)
	if math.Abs(v/want-1) > 6*math.Sqrt(1.0/(2*d)) {
		t.Fatalf("noise std %v, want %v", v, want)
	}
	// The round's RDP curve, added up over the planned rounds, must meet
	// the target just below: the noise is calibrated to it. The run's
	// accountant states at most that (it may compose more tightly).
	sp, priv := runSpent(t, p, s, nil, 10, 1e-5)
	total := slices.Clone(priv.RDP)
	for i := range total {
		total[i] *= 10
	}
	rdp, _, err := account.RDPToEpsilon(account.DefaultRDPOrders(), total, 1e-5)
	if err != nil || rdp > 2 || rdp < 1.9 {
		t.Fatalf("RDP composition of the planned rounds %v (%v), want just below 2", rdp, err)
	}
	if want, err := account.SampledGaussianEpsilon(float64(n)/N, c.NoiseMultiplier(), 10, 1e-5); err != nil || math.Abs(rdp-want) > 1e-9*want {
		t.Fatalf("RDP composition %v, want the RDP accountant's %v over 10 steps (%v)", rdp, want, err)
	}
	if sp.Epsilon > rdp*(1+1e-9) || sp.Delta > 1e-5 {
		t.Fatalf("cumulative (%v, %v) by %q after the planned rounds, above the RDP composition %v", sp.Epsilon, sp.Delta, sp.Method, rdp)
	}
	if len(priv.RDP) != len(account.DefaultRDPOrders()) || priv.CentralDelta != account.RoundDelta(1e-5, 10) {
		t.Fatalf("round statement (%v, %v) with %d RDP orders: want the step's curve at account.DefaultRDPOrders and the round's share %v of the run's delta",
			priv.CentralEpsilon, priv.CentralDelta, len(priv.RDP), account.RoundDelta(1e-5, 10))
	}
	if err := p.Check(Shape{Round: 11, Dim: d, Population: N, Participants: n}, nil); err == nil {
		t.Fatal("a round beyond the calibrated number was accepted")
	}
	// Clipping: an update of norm 10 is scaled to norm 1.
	u := make([]float64, d)
	u[0], u[1] = 6, 8
	var rep Report
	if err := p.Encode(rng.Stream(1), s, u, Budget{}, &rep); err != nil {
		t.Fatal(err)
	}
	if math.Abs(rep.Values[0]-0.6) > 1e-12 || math.Abs(rep.Values[1]-0.8) > 1e-12 {
		t.Fatalf("L2 clipping gave %v %v", rep.Values[0], rep.Values[1])
	}
}

// TestLocalPrivacyStatement: without a shuffler, central = local (the
// largest eps_i, no sampling credit), and the run's accountant composes the
// rounds by basic composition (a client may take part in every round).
func TestLocalPrivacyStatement(t *testing.T) {
	p := mustNew(t, "ldp-laplace", Params{Clip: 1})
	s := Shape{Round: 3, Dim: 100, Population: 10, Participants: 3}
	sp, priv := runSpent(t, p, s, []Budget{{Epsilon: 1}, {Epsilon: 3}, {Epsilon: 2}}, 3, 1e-5)
	if priv.LocalEpsilon != (Stats{1, 2, 3}) || priv.CentralEpsilon != 3 || priv.CentralDelta != 0 ||
		priv.LocalCoordEpsilon.Max != 0.03 {
		t.Fatalf("%+v", priv)
	}
	// The optimal composition of three 3-DP randomized responses at delta
	// 1e-5 is 9 - 1.2e-5: any valid accountant states 9 up to that.
	if math.Abs(sp.Epsilon-9) > 1e-4 || sp.Delta > 1e-5 {
		t.Fatalf("cumulative (%v, %v) by %q over 3 rounds, want (9, 0)", sp.Epsilon, sp.Delta, sp.Method)
	}
}

func TestEncodeRejects(t *testing.T) {
	s := shape(4, 3)
	var rep Report
	for _, name := range []string{"nonprivate", "ldp-laplace", "ldp-gaussian"} {
		p := mustNew(t, name, Params{Clip: 1})
		b := Budget{Epsilon: 1, Delta: 1e-5}
		if err := p.Encode(rng.Stream(1), s, []float64{1, 2}, b, &rep); err == nil || !strings.Contains(err.Error(), "dimension") {
			t.Errorf("%s: wrong dimension accepted (%v)", name, err)
		}
		if err := p.Encode(rng.Stream(1), s, []float64{1, math.NaN(), 0}, b, &rep); err == nil || !strings.Contains(err.Error(), "finite") {
			t.Errorf("%s: NaN accepted (%v)", name, err)
		}
	}
	p := mustNew(t, "ldp-laplace", Params{Clip: 1})
	if err := p.Check(s, []Budget{{Epsilon: 0}}); err == nil {
		t.Error("epsilon 0 accepted")
	}
	g := mustNew(t, "ldp-gaussian", Params{Clip: 1})
	if err := g.Check(s, []Budget{{Epsilon: 1, Delta: 0}}); err == nil {
		t.Error("delta 0 accepted by a Gaussian mechanism")
	}
	if _, err := New("ldp-laplace", Params{Clip: 0}); err == nil {
		t.Error("clip 0 accepted")
	}
	if _, err := New("dp-central", Params{Clip: 1, Epsilon: 1, Delta: 1e-5, Rounds: 1, SampleRate: 0}); err == nil {
		t.Error("sample rate 0 accepted")
	}
}

func TestAggregateRejectsMalformed(t *testing.T) {
	agg := NewAggregate(3)
	bad := []Report{
		{Values: []float64{1, 2}},
		{Coords: []int32{0, 5}, Values: []float64{1, 2}},
		{Coords: []int32{-1}, Values: []float64{1}},
		{Coords: []int32{0}, Values: []float64{1, 2}},
		{Values: []float64{1, math.Inf(1), 0}},
		{Values: []float64{1, 2, 3}, Meta: []float64{math.NaN()}},
	}
	for i, rep := range bad {
		if err := agg.AddReport(&rep); err == nil {
			t.Errorf("malformed report %d accepted", i)
		}
	}
	if agg.Reports != 0 || agg.Sum[0] != 0 || agg.Count[0] != 0 || len(agg.Meta) != 0 {
		t.Fatalf("a rejected report changed the aggregate: %+v", agg)
	}
	good := Report{Coords: []int32{2, 0}, Values: []float64{5, 1}, Meta: []float64{0.5}}
	if err := agg.AddReport(&good); err != nil {
		t.Fatal(err)
	}
	if agg.Sum[2] != 5 || agg.Count[2] != 1 || agg.Count[1] != 0 || agg.Meta[0] != 0.5 {
		t.Fatalf("%+v", agg)
	}
	if err := agg.Merge(NewAggregate(4)); err == nil {
		t.Fatal("merged aggregates of different dimensions")
	}
}

// padder is a test protocol that pads every coordinate to a fixed count with
// the value -1 and shuffles per coordinate with metadata.
type padder struct {
	NonPrivateFedAvg
	to   int64
	mode ShuffleMode
}

func (p padder) Mode() ShuffleMode { return p.mode }
func (p padder) Pad(_ *randRand, _ Shape, counts []int64, emit func(int, float64)) error {
	for j, c := range counts {
		for k := c; k < p.to; k++ {
			emit(j, -1)
		}
	}
	return nil
}

func TestShuffleFaithful(t *testing.T) {
	const d = 4
	reports := []Report{
		{Values: []float64{1, 2, 3, 4}, Meta: []float64{10}},
		{Coords: []int32{1, 3}, Values: []float64{20, 40}, Meta: []float64{20}},
		{Values: []float64{100, 200, 300, 400}, Meta: []float64{30}},
	}
	s := shape(3, d)
	for _, mode := range []ShuffleMode{PerCoordinate, WholeReport, NoShuffle} {
		t.Run(mode.String(), func(t *testing.T) {
			p := padder{to: 5, mode: mode}
			sh, err := Shuffle(rng.Stream(1), rng.Stream(2), p, s, reports)
			if err != nil {
				t.Fatal(err)
			}
			agg, err := sh.Aggregate()
			if err != nil {
				t.Fatal(err)
			}
			// Sums: real values plus -1 per dummy.
			wantSum := []float64{101 - 3, 222 - 2, 303 - 3, 444 - 2}
			for j := 0; j < d; j++ {
				if agg.Count[j] != 5 || agg.Sum[j] != wantSum[j] {
					t.Fatalf("coordinate %d: count %d sum %v, want 5 and %v", j, agg.Count[j], agg.Sum[j], wantSum[j])
				}
			}
			meta := slices.Clone(agg.Meta)
			slices.Sort(meta)
			if !slices.Equal(meta, []float64{10, 20, 30}) {
				t.Fatalf("metadata multiset %v", agg.Meta)
			}
			if mode == PerCoordinate {
				for j, col := range sh.Columns {
					if len(col) != 5 {
						t.Fatalf("column %d has %d values", j, len(col))
					}
				}
			}
		})
	}
	// The input reports are not modified.
	if reports[0].Meta[0] != 10 || reports[1].Values[1] != 40 {
		t.Fatal("Shuffle modified its input")
	}
}

// TestShufflePermutesUniformly checks that per-coordinate shuffling puts each
// client's value in each position equally often: over 30,000 shuffles of 3
// values, each of the 9 (value, position) cells has expectation 10,000 and
// sd ~ 81.6; 6 sd bounds.
func TestShufflePermutesUniformly(t *testing.T) {
	reports := []Report{{Values: []float64{0}}, {Values: []float64{1}}, {Values: []float64{2}}}
	p := padder{to: 0, mode: PerCoordinate}
	var counts [3][3]int
	perm := rng.Stream(5)
	for i := 0; i < 30000; i++ {
		sh, err := Shuffle(rng.Stream(1), perm, p, shape(3, 1), reports)
		if err != nil {
			t.Fatal(err)
		}
		for pos, v := range sh.Columns[0] {
			counts[int(v)][pos]++
		}
	}
	for v := range counts {
		for pos, c := range counts[v] {
			if math.Abs(float64(c)-10000) > 6*81.7 {
				t.Fatalf("value %d at position %d %d times, want about 10000", v, pos, c)
			}
		}
	}
}

func TestRegistry(t *testing.T) {
	for _, name := range []string{"nonprivate", "ldp-laplace", "ldp-gaussian", "dp-central"} {
		if !slices.Contains(Names(), name) {
			t.Errorf("%s not registered", name)
		}
		if Summary(name) == "" {
			t.Errorf("%s has no summary", name)
		}
	}
	_, err := New("ss-nothing", Params{})
	if err == nil || !strings.Contains(err.Error(), "known: ") {
		t.Fatalf("unknown protocol error %v does not list the known ones", err)
	}
}

// TestSecureNoiseSnaps: with Params.Secure every noisy value lies on a
// power-of-two grid no finer than 2^(floor(log2 scale) - 12) (the grid of
// package mechanism's secure samplers), while the plain samplers leave
// arbitrary low bits; the estimator stays unbiased.
func TestSecureNoiseSnaps(t *testing.T) {
	const d = 500
	s := shape(1, d)
	onGrid := func(vals []float64, scale float64) bool {
		g := math.Ldexp(1, int(math.Floor(math.Log2(scale)))-12)
		for _, v := range vals {
			if q := v / g; q != math.Trunc(q) {
				return false
			}
		}
		return true
	}
	tests := []struct {
		name  string
		b     Budget
		scale func(p Protocol) float64
	}{
		{"ldp-laplace", Budget{Epsilon: 100}, func(Protocol) float64 { return 2 * 0.5 * d / 100 }},
		{"ldp-gaussian", Budget{Epsilon: 1, Delta: 1e-5}, func(Protocol) float64 {
			return gaussianSigmaFor(t, Budget{Epsilon: 1, Delta: 1e-5}, 2*0.5*math.Sqrt(d))
		}},
		// eps_i^l = 0.5 per dimension (user level d·0.5); Clip-Laplace snaps on min(lambda, A).
		{"apes", Budget{Epsilon: 0.5 * d}, func(Protocol) float64 { return math.Min(2*0.5/0.5, 0.5) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			update := make([]float64, d)
			for j := range update {
				update[j] = 0.3 * math.Cos(float64(j)*1.7)
			}
			var plain, secure Report
			pp := mustNew(t, tc.name, Params{Clip: 0.5, Delta: 1e-8})
			ps := mustNew(t, tc.name, Params{Clip: 0.5, Delta: 1e-8, Secure: true})
			if err := pp.Encode(rng.Stream(3), s, slices.Clone(update), tc.b, &plain); err != nil {
				t.Fatal(err)
			}
			if err := ps.Encode(rng.Stream(3), s, slices.Clone(update), tc.b, &secure); err != nil {
				t.Fatal(err)
			}
			scale := tc.scale(ps)
			if !onGrid(secure.Values, scale) {
				t.Fatalf("secure outputs are not on the power-of-two grid of scale %v", scale)
			}
			if onGrid(plain.Values, scale) {
				t.Fatalf("plain outputs unexpectedly on the grid: the test cannot tell the samplers apart")
			}
		})
	}
}

// TestShapeSampled: Shape.Sampled counts the clients sampled, of whom
// Participants report; SampleRate is the true Sampled/Population (n/N when
// nobody refused), and a shape with fewer sampled than reporting clients,
// or more than the population, is invalid.
func TestShapeSampled(t *testing.T) {
	s := Shape{Round: 1, Dim: 3, Population: 100, Participants: 8}
	if s.SampleRate() != 0.08 || s.Validate() != nil {
		t.Fatalf("no refusals: rate %v (%v), want n/N = 0.08", s.SampleRate(), s.Validate())
	}
	s.Sampled = 10
	if s.SampleRate() != 0.1 || s.Validate() != nil {
		t.Fatalf("2 refusals: rate %v (%v), want Sampled/N = 0.1", s.SampleRate(), s.Validate())
	}
	for _, bad := range []int{7, 101} {
		s.Sampled = bad
		if err := s.Validate(); err == nil {
			t.Errorf("%d sampled for 8 participants of 100 accepted", bad)
		}
		if err := mustNew(t, "ldp-laplace", Params{Clip: 1}).Check(s, []Budget{{Epsilon: 1}}); err == nil {
			t.Errorf("Check accepted %d sampled for 8 participants of 100", bad)
		}
	}
}

// TestDeltaSplit: Params.Delta is the target delta of the whole run of
// Params.Rounds rounds. Every round spends at most its share
// account.RoundDelta(D, T) = D/(2T) — the APES family splits it into
// delta_s = share/(2k) for each of its k dimension-level releases and
// delta' = share/2, FLAME uses it as delta_c, dp-central states its round
// at it, and the engine gives it to the clients as the local delta of the
// Gaussian mechanisms — so the run's accountant, composing the T rounds'
// statements, spends at most D.
func TestDeltaSplit(t *testing.T) {
	const n, d, T, D = 400, 20, 8, 1e-6
	share := account.RoundDelta(D, T)
	small := Shape{Dim: d, Population: n, Participants: n}
	flame := Shape{Dim: flameD, Population: flameN, Participants: flameN}
	apesB := apesBudgets(t, "uniform2", n, d, 6)
	// The whole-vector Laplace and Gaussian baselines: user-level budgets in
	// [0.05, 1]; the Gaussian ones with the engine's local delta, the share.
	gauss := make([]Budget, n)
	lap := make([]Budget, n)
	for i, e := range apesEpsilons(t, "uniform2", n, 6) {
		gauss[i] = Budget{Epsilon: e, Delta: share}
		lap[i] = Budget{Epsilon: e}
	}
	run := Params{Clip: 1, Delta: D, Rounds: T}
	with := func(p Params, f func(*Params)) Params { f(&p); return p }
	tests := []struct {
		proto   string
		params  Params
		shape   Shape
		budgets []Budget
		k       int // dimension-level releases per round (delta_s = share/(2k)); 0: none
	}{
		{"apes", run, small, apesB, d},
		{"unis", run, small, apesB, d},
		{"s-apes", with(run, func(p *Params) { p.Extra = map[string]float64{"b": 4} }), small, apesB, 8},
		{"pldp", run, small, apesB, 0},
		{"ldp-min", with(run, func(p *Params) { p.Extra = map[string]float64{"min-epsilon": 0.05 * d} }), small, apesB, 0},
		{"e-apes", run, small, gauss, 0},
		{"ldp-laplace", run, small, lap, 0},
		{"ldp-gaussian", run, small, gauss, 0},
		{"ss-simple", with(run, func(p *Params) { p.Epsilon = flameEpsL; p.Extra = map[string]float64{"randomizer": 1} }), flame, []Budget{{Epsilon: flameEpsL}}, 0},
		{"ss-double", with(run, func(p *Params) { p.Epsilon = flameEpsL; p.Extra = map[string]float64{"randomizer": 1} }), flame, []Budget{{Epsilon: flameEpsL}}, 0},
		{"ss-topk", with(run, func(p *Params) { p.Epsilon = flameEpsL }), flame, []Budget{{Epsilon: flameEpsL}}, 0},
		{"dp-central", with(run, func(p *Params) { p.Epsilon = 2; p.SampleRate = 0.1 }), Shape{Dim: d, Population: 10 * n, Participants: n}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.proto, func(t *testing.T) {
			t.Parallel() // the run accountant's compositions take seconds
			p := mustNew(t, tc.proto, tc.params)
			sp, pr := runSpent(t, p, tc.shape, tc.budgets, T, D)
			if pr.CentralDelta > share*(1+1e-12) {
				t.Errorf("a round spends delta %v, more than its share %v = D/(2T) of the run's %v", pr.CentralDelta, share, D)
			}
			if tc.k > 0 && (pr.CentralCoordDelta > share/float64(2*tc.k)*(1+1e-12) || strings.Contains(pr.Bound, "unamplified")) {
				t.Errorf("per-dimension delta %v (%q), want amplification at delta_s = share/(2k) = %v", pr.CentralCoordDelta, pr.Bound, share/float64(2*tc.k))
			}
			if strings.HasPrefix(tc.proto, "ss-") && !(pr.CentralDelta >= share*(1-1e-12)) {
				t.Errorf("FLAME's delta_c %v, want the round's share %v (not 0.01/n^1.1)", pr.CentralDelta, share)
			}
			if sp.Delta > D*(1+1e-12) || !(sp.Epsilon > 0) || math.IsInf(sp.Epsilon, 0) {
				t.Errorf("%d rounds compose to (%v, %v) by %q, want a finite epsilon at delta <= %v", T, sp.Epsilon, sp.Delta, sp.Method, D)
			}
		})
	}
}

func TestEstimating(t *testing.T) {
	for _, name := range []string{"ss-simple", "ifca"} {
		p, err := New(name, Params{Clip: 0.1, Delta: 1e-5, Rounds: 1, Epsilon: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Estimating(p)
		_, clustered := p.(Clustered)
		if clustered != (err != nil) {
			t.Errorf("%s: Estimating error %v, clustered %v", name, err, clustered)
		}
	}
}
