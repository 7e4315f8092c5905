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
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// smParams are small split-mix parameters: dimension d, K = slots reporter
// slots, q = 2^bits, everybody sampled (rate 1) unless rate says otherwise.
func smParams(d, slots, bits int, scale, eps, rate float64, extra map[string]float64) Params {
	ex := map[string]float64{smOptSlots: float64(slots), smOptBits: float64(bits), smOptScale: scale}
	for k, v := range extra {
		ex[k] = v
	}
	return Params{Clip: 1, Epsilon: eps, Delta: 1e-5, Rounds: 1, SampleRate: rate, Population: slots, Layers: []int{d}, Extra: ex}
}

func mustSplitMix(t testing.TB, p Params) SplitMix {
	t.Helper()
	pr, err := New("split-mix", p)
	if err != nil {
		t.Fatalf("New(split-mix): %v", err)
	}
	return pr.(SplitMix)
}

// smRound runs one round at protocol level: every update is encoded with
// its own stream rng.Stream(seed, i), the reports are aggregated, the
// shuffler pads with rng.Stream(seed, padLabel), and the analyzer decodes.
func smRound(t testing.TB, sm SplitMix, seed uint64, updates [][]float64) (sum []int64, void bool, agg *Aggregate) {
	t.Helper()
	d := sm.dim
	s := Shape{Round: 1, Dim: d, Population: sm.pop, Participants: len(updates)}
	agg = NewAggregate(d)
	var rep Report
	for i, u := range updates {
		if err := sm.Encode(rng.Stream(seed, uint64(i)), s, slices.Clone(u), Budget{}, &rep); err != nil {
			t.Fatal(err)
		}
		if err := agg.AddReport(&rep); err != nil {
			t.Fatal(err)
		}
	}
	counts := slices.Clone(agg.Count)
	if err := sm.Pad(rng.Stream(seed, padLabel), s, counts, agg.AddValue); err != nil {
		t.Fatal(err)
	}
	sum = make([]int64, d)
	void, err := sm.Decode(agg, sum)
	if err != nil {
		t.Fatal(err)
	}
	return sum, void, agg
}

const padLabel = 1 << 40

// trueSum replays the clients' and dummies' draws (the same streams, the
// same order as Encode and Pad) and returns the exact integer sum of the
// rounded updates and of all noise shares, before any reduction mod q.
func trueSum(sm SplitMix, seed uint64, updates [][]float64) []int64 {
	d := sm.dim
	tot := make([]int64, d)
	for i, u := range updates {
		r := rng.Stream(seed, uint64(i))
		c := slices.Clone(u)
		clipL2(c, sm.clip)
		if sm.rotate {
			c, _ = sm.rotated(1, c) // smRound's round
		}
		for j, v := range c {
			tot[j] += mechanism.RoundUnbiased(r, sm.gamma*v)
			tot[j] += sm.skellam(r)
		}
	}
	r := rng.Stream(seed, padLabel)
	for i := 0; i < (sm.slots-len(updates))*d; i++ {
		tot[i%d] += sm.skellam(r)
	}
	return tot
}

// signedMod maps x to the signed range (-q/2, q/2] mod q.
func signedMod(x, q int64) int64 {
	y := x % q
	if y < 0 {
		y += q
	}
	if y > q/2 {
		y -= q
	}
	return y
}

func randomUpdates(r *rand.Rand, n, d int, scale float64) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, d)
		for j := range out[i] {
			out[i][j] = scale * r.NormFloat64()
		}
	}
	return out
}

// TestSplitMixExactSum: the analyzer's output is the exact integer sum of
// the rounded updates and of every noise share, reduced mod q to the signed
// range; with a small modulus (q = 2^8) and large updates many coordinates
// wrap around, and the test counts them. A protocol whose noise is halved
// (standard deviation) is detected: its output differs from the sum with
// the calibrated noise.
func TestSplitMixExactSum(t *testing.T) {
	const d, slots, n = 16, 19, 12
	for _, fast := range []float64{0, 1} {
		t.Run(fmt.Sprintf("fast=%v", fast), func(t *testing.T) {
			sm := mustSplitMix(t, smParams(d, slots, 8, 100, 1, 1, map[string]float64{smOptFast: fast}))
			updates := randomUpdates(rng.Stream(5), n, d, 1)
			wraps, total := 0, 0
			for seed := uint64(1); seed <= 20; seed++ {
				got, void, _ := smRound(t, sm, seed, updates)
				if void {
					t.Fatal("void round")
				}
				want := trueSum(sm, seed, updates)
				for j := range want {
					if got[j] != signedMod(want[j], sm.mod) {
						t.Fatalf("seed %d coordinate %d: analyzer %d, true sum %d mod %d = %d", seed, j, got[j], want[j], sm.mod, signedMod(want[j], sm.mod))
					}
					total++
					if want[j] <= -sm.mod/2 || want[j] > sm.mod/2 {
						wraps++
					}
				}
			}
			if wraps == 0 {
				t.Errorf("no wrap-around in %d coordinates: the test does not exercise the modular reduction", total)
			}
			t.Logf("%d of %d coordinate sums wrapped around (q = %d); all decoded exactly mod q", wraps, total, sm.mod)
			weak := sm
			weak.slotVar /= 4 // half the noise standard deviation
			got, _, _ := smRound(t, weak, 1, updates)
			want := trueSum(sm, 1, updates)
			same := 0
			for j := range want {
				if got[j] == signedMod(want[j], sm.mod) {
					same++
				}
			}
			if same == d {
				t.Error("the halved-noise protocol matched the calibrated sum on every coordinate")
			}
		})
	}
}

// TestSplitMixFastMatchesShares: the fast path (one value per coordinate)
// and the share path (m shares per coordinate) release bit-identical
// estimates, with padding and in a void round.
func TestSplitMixFastMatchesShares(t *testing.T) {
	const d, slots = 32, 25
	shares := mustSplitMix(t, smParams(d, slots, 20, 4096, 2, 1, nil))
	fast := mustSplitMix(t, smParams(d, slots, 20, 4096, 2, 1, map[string]float64{smOptFast: 1}))
	if shares.ValuesPerCoordinate() != shares.Shares() || fast.ValuesPerCoordinate() != 1 || shares.Shares() < 4 {
		t.Fatalf("values per coordinate: shares %d (m = %d), fast %d", shares.ValuesPerCoordinate(), shares.Shares(), fast.ValuesPerCoordinate())
	}
	for _, n := range []int{0, 1, 13, slots} {
		updates := randomUpdates(rng.Stream(uint64(n)), n, d, 0.3)
		s1, v1, a1 := smRound(t, shares, 9, updates)
		s2, v2, a2 := smRound(t, fast, 9, updates)
		if v1 || v2 || !slices.Equal(s1, s2) {
			t.Fatalf("n=%d: shares %v (void %v), fast %v (void %v)", n, s1, v1, s2, v2)
		}
		if a1.Count[0] != int64(slots*shares.Shares()) || a2.Count[0] != int64(slots) {
			t.Errorf("n=%d: %d and %d values per coordinate, want %d and %d", n, a1.Count[0], a2.Count[0], slots*shares.Shares(), slots)
		}
		s := Shape{Round: 1, Dim: d, Population: slots, Participants: n}
		e1, e2 := make([]float64, d), make([]float64, d)
		if err := shares.Estimate(nil, s, a1, e1); err != nil {
			t.Fatal(err)
		}
		if err := fast.Estimate(nil, s, a2, e2); err != nil {
			t.Fatal(err)
		}
		for j := range e1 {
			if math.Float64bits(e1[j]) != math.Float64bits(e2[j]) {
				t.Fatalf("n=%d coordinate %d: %v vs %v", n, j, e1[j], e2[j])
			}
		}
	}
}

// TestSplitMixVoid: more than K reporters (no padding possible) void the
// round: Estimate releases the zero update; fewer values than K·m (a
// shuffler that did not pad) is an error.
func TestSplitMixVoid(t *testing.T) {
	const d, slots = 8, 19
	sm := mustSplitMix(t, smParams(d, slots, 16, 64, 2, 1, nil))
	_, void, agg := smRound(t, sm, 3, randomUpdates(rng.Stream(1), slots+1, d, 1))
	if !void {
		t.Fatal("K+1 reporters: want a void round")
	}
	s := Shape{Round: 1, Dim: d, Population: slots + 1, Participants: slots + 1}
	est := constVec(d, 7)
	if err := sm.Estimate(nil, s, agg, est); err != nil || slices.ContainsFunc(est, func(v float64) bool { return v != 0 }) {
		t.Errorf("void round: estimate %v, %v; want zeros", est, err)
	}
	short := NewAggregate(d)
	for j := range short.Count {
		short.Count[j] = int64(sm.Shares())
	}
	if _, err := sm.Decode(short, make([]int64, d)); err == nil {
		t.Error("an unpadded round decoded without error")
	}
	short.Count[0]++
	if _, err := sm.Decode(short, make([]int64, d)); err == nil {
		t.Error("unequal counts decoded without error")
	}
}

// TestSplitMixNoiseDistribution: with zero updates the released sum is the
// central noise, the sum of K shares Sk(mu/(K-t)), which must be Sk(mu)
// (t = 0). A chi-square test over the coordinates of many rounds against
// the exact Skellam pmf (account.SkellamLogPMF), bins merged to expected
// counts >= 20; the critical value is the chi-square quantile at 1 - 1e-6
// by the Wilson-Hilferty approximation (accurate to a few percent of the
// statistic at these degrees of freedom), so a correct sampler fails about
// once in a million runs. Negative control: the same protocol with half
// the noise standard deviation per slot (a quarter of the variance, the
// convention of dp-central's negative control) must be rejected.
func TestSplitMixNoiseDistribution(t *testing.T) {
	const d, slots = 50, 19
	sm := mustSplitMix(t, smParams(d, slots, 16, 1, 8, 1, nil))
	mu := sm.Variance()
	if mu > 400 || mu < 5 {
		t.Fatalf("mu = %v: choose parameters with a moderate variance", mu)
	}
	rounds := 400
	if !longtest.Enabled() {
		rounds = 150
	}
	zeros := make([][]float64, 5)
	for i := range zeros {
		zeros[i] = make([]float64, d)
	}
	sample := func(p SplitMix) []int64 {
		var out []int64
		for seed := range uint64(rounds) {
			s, _, _ := smRound(t, p, seed+100, zeros)
			out = append(out, s...)
		}
		return out
	}
	chi := func(xs []int64) (stat float64, df int) {
		w := int(12*math.Sqrt(mu)) + 20
		counts := map[int64]int{}
		for _, x := range xs {
			counts[x]++
		}
		n := float64(len(xs))
		var accE, accO float64
		flush := func() {
			stat += (accO - accE) * (accO - accE) / accE
			df++
			accE, accO = 0, 0
		}
		low := 0
		for _, x := range xs {
			if x < int64(-w) || x > int64(w) {
				low++
			}
		}
		accO = float64(low) // far tails (mass below 1e-30) start the first bin
		for k := -w; k <= w; k++ {
			accE += n * math.Exp(account.SkellamLogPMF(k, mu))
			accO += float64(counts[int64(k)])
			if accE >= 20 && k < w-int(6*math.Sqrt(mu)) {
				flush()
			}
		}
		flush()
		return stat, df - 1
	}
	crit := func(df int) float64 {
		k := float64(df)
		const z = 4.753 // standard normal quantile at 1 - 1e-6
		c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
		return k * c * c * c
	}
	stat, df := chi(sample(sm))
	if stat > crit(df) {
		t.Errorf("summed noise vs Sk(%.4g): chi-square %.1f on %d df exceeds %.1f", mu, stat, df, crit(df))
	} else {
		t.Logf("summed noise vs Sk(%.4g): chi-square %.1f on %d df (critical %.1f at 1e-6)", mu, stat, df, crit(df))
	}
	weak := sm
	weak.slotVar /= 4 // half the noise standard deviation
	if ws, wdf := chi(sample(weak)); ws <= crit(wdf) {
		t.Errorf("halved noise passed: chi-square %.1f on %d df (critical %.1f)", ws, wdf, crit(wdf))
	} else {
		t.Logf("halved noise rejected: chi-square %.1f on %d df", ws, wdf)
	}
}

// TestPrivacySplitMix: the statistical privacy test of the released sum.
// Neighbouring rounds: K = 20 slots, the other reporters have zero updates
// (a dummy is a zero-update reporter, so which others are sampled does not
// matter), and the target, whose clipped update u has norm C, takes part
// with probability q (Poisson sampling; q = 1 and q = 1/2) or is absent.
// The whole pipeline runs (Encode, Pad, Decode) on the fast path (the share
// path releases the same sum, TestSplitMixFastMatchesShares); the estimate
// is projected on u and binned in its tails, and the claim is Account's
// one-round (CentralEpsilon, CentralDelta). Negative control: half the
// noise standard deviation per slot (as dp-central's: half the noise
// multiplier), same claim.
func TestPrivacySplitMix(t *testing.T) {
	longtest.Skip(t) // 10^6 draws per input
	const d, slots, clip = 1, 20, 1.0
	for _, q := range []float64{1, 0.5} {
		t.Run(fmt.Sprintf("q=%v", q), func(t *testing.T) {
			t.Parallel()
			p := smParams(d, slots, 24, 64, 2, q, map[string]float64{smOptFast: 1})
			sm := mustSplitMix(t, p)
			s := Shape{Round: 1, Dim: d, Population: slots, Participants: int(q * slots)}
			priv := claimOf(t, sm, s, nil)
			eps, delta := priv.CentralEpsilon, priv.CentralDelta
			u := constVec(d, clip/math.Sqrt(d))
			est := func(p SplitMix, present float64) func(*rand.Rand) float64 {
				agg := NewAggregate(d)
				dst := make([]float64, d)
				var rep Report
				return func(r *rand.Rand) float64 {
					agg.Reset()
					if present == 1 || (present > 0 && r.Float64() < present) {
						if err := p.Encode(r, s, slices.Clone(u), Budget{}, &rep); err != nil {
							t.Fatal(err)
						}
						if err := agg.AddReport(&rep); err != nil {
							t.Fatal(err)
						}
					}
					if err := p.Pad(r, s, slices.Clone(agg.Count), agg.AddValue); err != nil {
						t.Fatal(err)
					}
					if err := p.Estimate(r, s, agg, dst); err != nil {
						t.Fatal(err)
					}
					return projection(dst, u, clip)
				}
			}
			weak := sm
			weak.slotVar /= 4 // half the noise standard deviation
			requireNoiseControl(t, eps, delta, q, func(w bool, present float64) func(*rand.Rand) float64 {
				if w {
					return est(weak, present)
				}
				return est(sm, present)
			})
		})
	}
}

// shareViews returns the exact distribution of the analyzer's view when n
// parties holding xs each split their value into m additive shares mod q
// (m-1 uniform, the last completing the sum): the sorted multiset of all
// n·m shares if shuffled, the per-party share tuples in order otherwise.
func shareViews(xs []int, m, q int, shuffled bool) map[string]float64 {
	n := len(xs)
	free := n * (m - 1)
	total := 1
	for range free {
		total *= q
	}
	p := 1 / float64(total)
	out := map[string]float64{}
	digits := make([]int, free)
	view := make([]int, n*m)
	for c := 0; c < total; c++ {
		x := c
		for i := range digits {
			digits[i] = x % q
			x /= q
		}
		for i, v := range xs {
			s := 0
			for k := 0; k < m-1; k++ {
				sh := digits[i*(m-1)+k]
				view[i*m+k] = sh
				s += sh
			}
			view[i*m+m-1] = ((v-s)%q + q) % q
		}
		key := slices.Clone(view)
		if shuffled {
			slices.Sort(key)
		}
		out[fmt.Sprint(key)] += p
	}
	return out
}

func totalVariation(a, b map[string]float64) float64 {
	tv := 0.0
	for k, v := range a {
		tv += math.Abs(v - b[k])
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			tv += v
		}
	}
	return tv / 2
}

// TestSplitMixShareDistribution: the shuffled multiset of shares of two
// different inputs with the same sum, computed exactly at small n, m, q.
// The split-and-mix protocol is only statistically secure: at n = 3
// parties and q = 3 the total variation between the two shuffled views is
// 0.370, 0.160 and 0.046 at m = 2, 3 and 4 shares (exact), falling with m
// as the theorem says it must; without the shuffle it is 1 (each party's
// tuple sums to its input), so the test fails when the shuffle of shares is
// removed. It also checks that the protocol's own share generator
// (emitShares) produces m values in [0, q) summing to the input mod q.
func TestSplitMixShareDistribution(t *testing.T) {
	const q = 3
	a, b := []int{0, 0, 1}, []int{2, 2, 0} // both sum to 1 mod 3
	prev := 1.0
	for _, c := range []struct {
		m       int
		maxTV   float64 // shuffled
		minTVNo float64 // not shuffled
	}{{2, 0.371, 0.999}, {3, 0.161, 0.999}, {4, 0.047, 0.999}} {
		tv := totalVariation(shareViews(a, c.m, q, true), shareViews(b, c.m, q, true))
		tvNo := totalVariation(shareViews(a, c.m, q, false), shareViews(b, c.m, q, false))
		t.Logf("n=3, q=%d, m=%d: shuffled TV %.3g, unshuffled TV %.3g", q, c.m, tv, tvNo)
		if tv > c.maxTV {
			t.Errorf("m=%d: shuffled views at TV %v > %v", c.m, tv, c.maxTV)
		}
		if tvNo < c.minTVNo {
			t.Errorf("m=%d: unshuffled views at TV %v < %v: the negative control has no power", c.m, tvNo, c.minTVNo)
		}
		if tv >= prev {
			t.Errorf("m=%d: shuffled TV %v does not fall with m (previous %v)", c.m, tv, prev)
		}
		prev = tv
	}
	sm := mustSplitMix(t, smParams(4, 19, 8, 16, 2, 1, nil))
	r := rng.Stream(3)
	for y := int64(0); y < sm.mod; y += 17 {
		var vals []float64
		sm.emitShares(r, 2, y, func(j int, v float64) {
			if j != 2 {
				t.Fatalf("share for coordinate %d, want 2", j)
			}
			vals = append(vals, v)
		})
		sum := int64(0)
		for _, v := range vals {
			if v < 0 || v >= float64(sm.mod) || v != math.Floor(v) {
				t.Fatalf("share %v outside [0, %d)", v, sm.mod)
			}
			sum += int64(v)
		}
		if len(vals) != sm.Shares() || sum%sm.mod != y {
			t.Fatalf("y=%d: %d shares summing to %d mod %d", y, len(vals), sum%sm.mod, sm.mod)
		}
	}
}

// TestSplitMixStatement: the round's statement names the trust assumptions
// and carries the TV term; calibration meets the target; bad options are
// refused with an error.
func TestSplitMixStatement(t *testing.T) {
	p := Params{Clip: 1, Epsilon: 2, Delta: 1e-6, Rounds: 30, SampleRate: 0.1, Population: 1000, Layers: []int{7850}}
	sm := mustSplitMix(t, p)
	s := Shape{Round: 1, Dim: 7850, Population: 1000, Participants: 100}
	priv := claimOf(t, sm, s, nil)
	for _, want := range []string{"honest shuffler", "colluding with <= 0 clients", "split-and-mix", "skellam"} {
		if !strings.Contains(priv.Bound, want) {
			t.Errorf("Bound %q does not mention %q", priv.Bound, want)
		}
	}
	if !(priv.TV > 0 && priv.TV <= sm.tvBudget()) || len(priv.RDP) != len(account.DefaultRDPOrders()) {
		t.Errorf("TV %v (budget %v), RDP of %d orders", priv.TV, sm.tvBudget(), len(priv.RDP))
	}
	acct, err := account.NewAccountant(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := acct.Plan(account.Statement{Round: 1, SampleRate: 0.1, Sampled: 100, Reporters: 100, Released: true,
		Epsilon: priv.CentralEpsilon, Delta: priv.CentralDelta, Components: priv.Components, RDP: priv.RDP, TV: priv.TV, Bound: priv.Bound}, 30)
	if err != nil || sp.Epsilon > 2 || sp.Epsilon < 1.99 {
		t.Errorf("30 rounds plan %v (%v), want just below the target 2", sp, err)
	}
	t.Logf("K=%d m=%d mu=%.4g z=%.4g: 30 rounds spend %.4f by %s", sm.Slots(), sm.Shares(), sm.Variance(), sm.NoiseMultiplier(), sp.Epsilon, sp.Method)
	for _, c := range []struct {
		name  string
		extra map[string]float64
	}{
		{"unknown option", map[string]float64{"k": 3}},
		{"too few honest slots", map[string]float64{smOptSlots: 200, smOptCollude: 190}},
		{"slots too small for the population", map[string]float64{smOptSlots: 110}},
		{"too few shares", map[string]float64{smOptShares: 5}},
		{"exactness", map[string]float64{smOptBits: 48}},
		{"fractional bits", map[string]float64{smOptBits: 20.5}},
		{"fast=2", map[string]float64{smOptFast: 2}},
	} {
		q := p
		q.Extra = c.extra
		if _, err := New("split-mix", q); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	noDim := p
	noDim.Layers = nil
	if _, err := New("split-mix", noDim); err == nil {
		t.Error("no dimension: accepted")
	}
	if err := sm.Check(Shape{Round: 1, Dim: 7850, Population: 2000, Participants: 200}, nil); err == nil {
		t.Error("Check accepted a population for which K slots are too few")
	}
}

// TestSplitMixPLDTarget: at the frontier's settings (target 2, delta 1e-6,
// 1,000 clients at q = 0.1, 30 rounds, d = 7,850) the calibration takes the
// PLD route of the certified Gaussian domination of the Skellam noise and
// needs noise multiplier <= 1.70 (the RDP route alone needed 1.785; at
// target 0.25, <= 9.0 against 9.567), and
// the run's accountant, given the rounds' statements (component and TV),
// reproduces a spend within the target.
func TestSplitMixPLDTarget(t *testing.T) {
	for _, c := range []struct{ eps, maxZ float64 }{{2, 1.70}, {0.25, 9.0}} {
		p := Params{Clip: 1, Epsilon: c.eps, Delta: 1e-6, Rounds: 30, SampleRate: 0.1, Population: 1000, Layers: []int{7850}}
		sm := mustSplitMix(t, p)
		if z := sm.NoiseMultiplier(); z > c.maxZ || !sm.pldRoute {
			t.Errorf("target %v: noise multiplier %v (PLD route %v), want <= %v", c.eps, z, sm.pldRoute, c.maxZ)
		}
		priv := claimOf(t, sm, Shape{Round: 1, Dim: 7850, Population: 1000, Participants: 100}, nil)
		if len(priv.Components) != 1 || priv.Components[0].Kind != account.KindSampledSkellam || priv.TV < account.SkellamTailTV {
			t.Fatalf("target %v: components %+v, TV %v", c.eps, priv.Components, priv.TV)
		}
		acct, err := account.NewAccountant(1e-6)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := acct.Plan(account.Statement{Round: 1, SampleRate: 0.1, Sampled: 100, Reporters: 100, Released: true,
			Epsilon: priv.CentralEpsilon, Delta: priv.CentralDelta, Components: priv.Components, RDP: priv.RDP, TV: priv.TV, Bound: priv.Bound}, 30)
		if err != nil || sp.Epsilon > c.eps || sp.Epsilon < c.eps*0.999 || !strings.Contains(sp.Method, "PLD") {
			t.Errorf("target %v: 30 rounds plan %+v (%v)", c.eps, sp, err)
		}
		t.Logf("target %v: z = %.4f, plan %.5f by %s", c.eps, sm.NoiseMultiplier(), sp.Epsilon, sp.Method)
	}
}

// TestSplitMixPLDUnavailable: at a variance beyond the Skellam
// certificate's cut (target 0.03: a noise multiplier near 70) the
// calibration keeps the RDP route and the round's statement says so, with
// no PLD component.
func TestSplitMixPLDUnavailable(t *testing.T) {
	p := Params{Clip: 1, Epsilon: 0.03, Delta: 1e-6, Rounds: 30, SampleRate: 0.1, Population: 1000, Layers: []int{7850}}
	sm := mustSplitMix(t, p)
	priv := claimOf(t, sm, Shape{Round: 1, Dim: 7850, Population: 1000, Participants: 100}, nil)
	t.Logf("noise multiplier %.4g, variance %.3g", sm.NoiseMultiplier(), sm.Variance())
	if sm.pldRoute || len(priv.Components) != 0 || !strings.Contains(priv.Bound, "pld route unavailable") {
		t.Errorf("variance %.3g: PLD route %v, components %+v, bound %q", sm.Variance(), sm.pldRoute, priv.Components, priv.Bound)
	}
}
