package deploy

import (
	"context"
	"errors"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// smConfig is a small split-mix run: Poisson sampling of per of clients
// blobs clients, calibrated to cumulative epsilon 4, with the given
// options (split-and-mix and void targets small enough for m·K·d sealed
// shares a round to stay in the tens of thousands).
func smConfig(clients, per, rounds int, opts map[string]float64) round.Config {
	cfg := testConfig("split-mix", clients, rounds)
	cfg.ClientsPerRound, cfg.TargetEpsilon, cfg.Clip = per, 4, 1
	cfg.Options = opts
	return cfg
}

// smSplit is blobs with 2 features: logistic regression over its 10
// classes has d = 30.
func smSplit(t testing.TB, cfg round.Config) data.Split {
	t.Helper()
	split, err := data.Load(cfg.Dataset, data.Options{Seed: cfg.Seed, BlobsFeatures: 2})
	if err != nil {
		t.Fatal(err)
	}
	return split
}

// deployLocal runs st in test mode with the given seed and returns the
// result and the rounds observed.
func deployLocal(t *testing.T, st *Setup, seed uint64) (*LocalResult, []round.RoundResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var got []round.RoundResult
	res, err := RunLocal(ctx, st, LocalOptions{Dir: t.TempDir(), TestSeed: &seed, RoundTimeout: time.Minute,
		Workers: 1, Observe: func(r round.RoundResult) { got = append(got, r) }, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return res, got
}

// TestLocalSplitMixEqualsSimulation: split-mix deployed in test mode
// (Poisson sample drawn by the shuffler, m sealed shares per coordinate
// per client, K − n dummy reporters sealed by the shuffler, shares opened
// and summed mod q by the analyzer) writes exactly the model of the
// simulation's faithful path with the secure sampler (difference 0), with
// the same per-round reporters, statements and cumulative epsilon; every
// round carries (K − n)·m·d dummies and the analyzer opens K·m·d shares.
func TestLocalSplitMixEqualsSimulation(t *testing.T) {
	longtest.Skip(t) // whole deployments of a configuration TestLocalEqualsSimulation's path covers
	t.Parallel()     // a whole deployment or several: overlaps the others' waits
	cfg := smConfig(24, 12, 2, map[string]float64{"sigma-bits": 30, "void-bits": 30})
	split := smSplit(t, cfg)
	eng, want := simulate(t, cfg, split)
	st, err := NewSetup(cfg, split, "test-split-mix")
	if err != nil {
		t.Fatal(err)
	}
	sm := st.Proto.(protocol.SplitMix)
	if !st.Poisson || !st.Sampling() {
		t.Fatalf("setup: Poisson %v, sampling %v", st.Poisson, st.Sampling())
	}
	res, got := deployLocal(t, st, cfg.Seed)
	ew := eng.Weights()
	moved := false
	for j := range ew {
		if res.Model[j] != ew[j] {
			t.Fatalf("parameter %d: deployment %v, simulation %v", j, res.Model[j], ew[j])
		}
		moved = moved || ew[j] != st.Init[j]
	}
	if !moved {
		t.Fatal("the model never moved: the comparison would prove nothing")
	}
	if len(got) != len(want) {
		t.Fatalf("%d rounds, simulation %d", len(got), len(want))
	}
	K, m, d := sm.Slots(), sm.Shares(), st.Dim()
	var shares int64
	for i, w := range want {
		g := got[i]
		if g.Participants != w.Participants || g.Reports != w.Reports || g.Privacy.CentralEpsilon != w.Privacy.CentralEpsilon ||
			g.Privacy.CentralDelta != w.Privacy.CentralDelta || g.Privacy.CumulativeEpsilon != w.Privacy.CumulativeEpsilon || g.Privacy.Bound != w.Privacy.Bound {
			t.Fatalf("round %d: deployment %+v\nsimulation %+v", w.Round, g.Privacy, w.Privacy)
		}
		if dum := int64((K - g.Participants) * m * d); g.Dummies != dum {
			t.Fatalf("round %d: %d dummies, want (K − n)·m·d = (%d − %d)·%d·%d = %d", w.Round, g.Dummies, K, g.Participants, m, d, dum)
		}
		shares += int64(K * m * d)
	}
	if res.Opened.Accepted != shares || res.Opened.Rejected() != 0 {
		t.Fatalf("analyzer opened %+v, want %d shares accepted", res.Opened, shares)
	}
	el, dl := eng.Accountant().Log(), res.Statements
	if len(el) != len(dl) {
		t.Fatalf("%d statements, simulation %d", len(dl), len(el))
	}
	for i := range el {
		e, g := el[i], dl[i]
		if e.SampleRate != g.SampleRate || e.Sampled != g.Sampled || e.Reporters != g.Reporters || e.Epsilon != g.Epsilon || e.Delta != g.Delta || e.TV != g.TV {
			t.Fatalf("statement %d: deployment %+v, simulation %+v", i+1, g, e)
		}
	}
	t.Logf("d = %d, K = %d, m = %d: difference 0; reporters %d, %d; opened %d shares; shuffler %+v",
		d, K, m, got[0].Participants, got[1].Participants, res.Opened.Accepted, res.Shuffler)
}

// voidSeed returns the first seed whose round-1 Poisson sample of
// clients at rate q exceeds k clients.
func voidSeed(t *testing.T, clients int, q float64, k int) uint64 {
	t.Helper()
	for seed := uint64(1); seed < 1<<20; seed++ {
		if n := len(round.SamplePoisson(rng.Stream(seed, rng.LabelSampling, 1), clients, q)); n > k {
			return seed
		}
	}
	t.Fatalf("no seed below 2^20 samples more than %d of %d at rate %v", k, clients, q)
	return 0
}

// TestLocalSplitMixVoidRound: a deployed round whose Poisson sample holds
// more than K clients (a seed chosen for it) is void in split-mix's sense:
// the shuffler adds no dummy, the analyzer sees more than K·m shares per
// coordinate and releases the zero update (the model stays the initial
// one, as in the simulation), and the round is still charged.
func TestLocalSplitMixVoidRound(t *testing.T) {
	cfg := smConfig(40, 20, 1, map[string]float64{"sigma-bits": 16, "void-bits": 16})
	cfg.Delta = 1e-2
	split := smSplit(t, cfg)
	st, err := NewSetup(cfg, split, "test-split-mix-void")
	if err != nil {
		t.Fatal(err)
	}
	sm := st.Proto.(protocol.SplitMix)
	cfg.Seed = voidSeed(t, cfg.Clients, st.PoissonRate(), sm.Slots())
	if st, err = NewSetup(cfg, split, "test-split-mix-void"); err != nil {
		t.Fatal(err)
	}
	eng, want := simulate(t, cfg, split)
	res, got := deployLocal(t, st, cfg.Seed)
	if len(got) != 1 || len(want) != 1 {
		t.Fatalf("%d rounds, simulation %d", len(got), len(want))
	}
	g := got[0]
	if g.Participants <= sm.Slots() || g.Participants != want[0].Participants || g.Dummies != 0 {
		t.Fatalf("seed %d: %d reporters (simulation %d) and %d dummies for K = %d: want more than K and no dummy",
			cfg.Seed, g.Participants, want[0].Participants, g.Dummies, sm.Slots())
	}
	for j, w := range eng.Weights() {
		if res.Model[j] != w || w != st.Init[j] {
			t.Fatalf("parameter %d: deployment %v, simulation %v, initial %v: a void round releases the zero update", j, res.Model[j], w, st.Init[j])
		}
	}
	if e := g.Privacy.CumulativeEpsilon; !(e > 0) || e != want[0].Privacy.CumulativeEpsilon {
		t.Fatalf("cumulative epsilon %v, simulation %v: the void round is charged", e, want[0].Privacy.CumulativeEpsilon)
	}
	if n := int64(g.Participants * sm.Shares() * st.Dim()); res.Opened.Accepted != n {
		t.Fatalf("opened %d shares, want the reporters' n·m·d = %d", res.Opened.Accepted, n)
	}
	t.Logf("seed %d: %d reporters > K = %d: zero update released, cumulative epsilon %.4g", cfg.Seed, g.Participants, sm.Slots(), g.Privacy.CumulativeEpsilon)
}

// sealShares seals, for round r, m shares of every coordinate (value v),
// with extra messages appended.
func sealShares(t *testing.T, h *harness, r int64, m int, v float64, extra ...[2]float64) []*wire.SealedMessage {
	t.Helper()
	s, err := seal.NewSealer(h.creds.HPKEPublic, h.st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*wire.SealedMessage
	add := func(j int, v float64) {
		ct, err := s.Seal(uint64(r), seal.Coord(j), []float64{v})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &wire.SealedMessage{Label: uint32(j), Ciphertext: ct})
	}
	for j := range h.st.Dim() {
		for range m {
			add(j, v)
		}
	}
	for _, e := range extra {
		add(int(e[0]), e[1])
	}
	return out
}

// TestSplitMixBadShares: the shuffler refuses a submission with more than
// m shares of a coordinate (it never reaches the round), and the analyzer
// rejects a share outside [0, q) and a fractional one when it opens them;
// a batch with shares missing is refused by the protocol and the round is
// void, the model unchanged and nothing spent.
func TestSplitMixBadShares(t *testing.T) {
	cfg := smConfig(30, 15, 2, nil)
	h := newSampledHarness(t, cfg, 1, cfg.Clients, time.Minute)
	for i := range cfg.Clients {
		if err := h.register(t, i, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	sample := h.currentSample(t, 1)
	sender := -1
	for i := range cfg.Clients {
		if sample[ClientID(i)] {
			sender = i
			break
		}
	}
	if sender < 0 {
		t.Fatal("nobody sampled in round 1")
	}
	sm := h.st.Proto.(protocol.SplitMix)
	m, q := sm.Shares(), float64(sm.Modulus())
	_, err := h.submit(t, sender, 1, sealShares(t, h, 1, m, 1, [2]float64{0, 1}))
	wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)

	h.cancel() // the test feeds the analyzer the batch itself
	before := h.an.Model()
	ms := sealShares(t, h, 1, m, 1)
	ms[0] = sealShares(t, h, 1, 0, 0, [2]float64{0, q})[0]
	ms[1] = sealShares(t, h, 1, 0, 0, [2]float64{0, 1.5})[0]
	hd := &wire.BatchHeader{Round: 1, RunId: h.st.RunID, Counts: &wire.BatchCounts{Population: uint32(cfg.Clients), Sampled: uint32(len(sample)), Reports: 1, Messages: uint64(len(ms))}}
	resp, err := h.an.batch(hd, ms)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Rejected["range"] != 2 || resp.Accepted != uint64(len(ms)-2) {
		t.Fatalf("accepted %d, rejected %v: want the share q and the share 1.5 rejected for range", resp.Accepted, resp.Rejected)
	}
	e, err := h.an.cfg.DB.Round(1)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != "void" {
		t.Fatalf("round 1 is %s, want void (coordinate 0 lost two shares)", e.Status)
	}
	for j, w := range h.an.Model() {
		if w != before[j] {
			t.Fatalf("the void round changed parameter %d", j)
		}
	}
	if sp := h.an.Accountant().Spent(); sp.Epsilon != 0 {
		t.Fatalf("a void round spent epsilon %v", sp.Epsilon)
	}
}

// TestNewSetupSplitMixRefusals: the fast path and dp-central are refused
// for deployment, and so is a report of m·d shares over the wire's
// per-report limits.
func TestNewSetupSplitMixRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  round.Config
		want string
	}{
		{"fast path", smConfig(24, 12, 2, map[string]float64{"fast": 1}), "simulation-only"},
		{"dp-central", func() round.Config {
			c := smConfig(24, 12, 2, nil)
			c.Protocol = "dp-central"
			return c
		}(), "split-mix only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSetup(tc.cfg, smSplit(t, tc.cfg), "refused")
			if !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an invalid-parameter error saying %q", err, tc.want)
			}
		})
	}
	cfg := smConfig(24, 12, 2, nil)
	st, err := NewSetup(cfg, smSplit(t, cfg), "ok")
	if err != nil {
		t.Fatal(err)
	}
	if err := deployablePoisson("split-mix", st.Proto, st.Dim()); err != nil {
		t.Fatalf("d = %d: %v", st.Dim(), err)
	}
	big := wire.MaxMessagesPerReport/st.Proto.(protocol.SplitMix).Shares() + 1
	if err := deployablePoisson("split-mix", st.Proto, big); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("d = %d: %v, want refused", big, err)
	}
	if err := deployablePoisson("split-mix", st.Proto, int(math.Sqrt(float64(wire.MaxMessagesPerReport)))); err != nil {
		t.Fatalf("m·d below the limits refused: %v", err)
	}
}

// TestSplitMixSpec: the analyzer's opener spec for split-mix admits the
// integers of [0, q-1] only, and the opener queue carries it unchanged to
// remote openers.
func TestSplitMixSpec(t *testing.T) {
	cfg := smConfig(24, 12, 2, map[string]float64{"bits": 40})
	st, err := NewSetup(cfg, smSplit(t, cfg), "spec")
	if err != nil {
		t.Fatal(err)
	}
	sp := st.Spec()
	want := seal.Spec{Mode: seal.PerCoordinate, Dim: st.Dim(), Values: seal.Range{Lo: 0, Hi: 1<<40 - 1}, MetaValues: sp.MetaValues, Integers: true}
	if sp != want {
		t.Fatalf("spec %+v, want %+v", sp, want)
	}
	if got := specOf(specWire(sp)); got != sp {
		t.Fatalf("through the opener queue: %+v, want %+v", got, sp)
	}
}
