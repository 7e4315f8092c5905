package deploy

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// TestSampleIndexesMatchesEngine: the shuffler's sampler, fed the engine's
// stream, draws the engine's sample (sim.Engine.Sample) for every
// round, and takes everyone when the population is not above m.
func TestSampleIndexesMatchesEngine(t *testing.T) {
	for _, tc := range []struct{ clients, per int }{{60, 20}, {50, 1}, {12, 11}, {30, 30}} {
		cfg := testConfig("ss-double", tc.clients, 5)
		cfg.ClientsPerRound = tc.per
		eng, err := sim.New(cfg, testSplit(t, cfg), nil)
		if err != nil {
			t.Fatal(err)
		}
		for r := 1; r <= 5; r++ {
			want := eng.Sample(r)
			got := round.SampleFixed(rng.Stream(cfg.Seed, rng.LabelSampling, uint64(r)), tc.clients, tc.per)
			if len(got) != len(want) {
				t.Fatalf("%d of %d, round %d: %d sampled, engine %d", tc.per, tc.clients, r, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%d of %d, round %d: sample %v, engine %v", tc.per, tc.clients, r, got, want)
				}
			}
		}
	}
	if got := round.SampleFixed(nil, 4, 10); len(got) != 4 || got[3] != 3 {
		t.Fatalf("population 4 below m = 10: sample %v, want everyone", got)
	}
}

// TestLocalSampledEqualsSimulation: a deployment in test mode with client
// sampling by the shuffler (60 clients, 20 per round, 3 rounds), and one
// with personalized APES budgets (--eps-dist uniform2 scaled by 20, every
// client every round, and sampled), end with the simulation's model
// exactly (difference 0), and state every round exactly as the engine
// does: the same round epsilon and delta, the same sampling rate, sample
// and reporters, and the same cumulative epsilon.
func TestLocalSampledEqualsSimulation(t *testing.T) {
	longtest.Skip(t) // whole deployments with sampling
	t.Parallel()     // a whole deployment or several: overlaps the others' waits
	for _, tc := range []struct {
		name, proto      string
		clients, per     int
		epsDist          string
		epsScale         float64
		wantCentralBelow bool // the round's epsilon below the local one (amplified)
	}{
		{"ss-double sampled", "ss-double", 60, 20, "", 0, false},
		{"apes personalized", "apes", 50, 0, "uniform2", 20, false},
		{"apes personalized sampled", "apes", 60, 20, "uniform2", 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !longtest.Enabled() && tc.name == "apes personalized" {
				t.Skip("without the long tests, the sampled personalized case covers it")
			}
			cfg := testConfig(tc.proto, tc.clients, 3)
			cfg.ClientsPerRound, cfg.EpsDist, cfg.EpsScale = tc.per, tc.epsDist, tc.epsScale
			split := testSplit(t, cfg)
			eng, want := simulate(t, cfg, split)
			st, err := NewSetup(cfg, split, "test-sampled")
			if err != nil {
				t.Fatal(err)
			}
			if st.Sampling() != (tc.per != 0) || st.Personalized != (tc.proto == "apes") {
				t.Fatalf("setup: sampling %v, personalized %v", st.Sampling(), st.Personalized)
			}
			seed := cfg.Seed
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var got []round.RoundResult
			res, err := RunLocal(ctx, st, LocalOptions{Dir: t.TempDir(), TestSeed: &seed, RoundTimeout: time.Minute,
				Workers: 1, Observe: func(r round.RoundResult) { got = append(got, r) }, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			ew := eng.Weights()
			moved := false
			for j := range ew {
				if res.Model[j] != ew[j] {
					t.Fatalf("parameter %d: deployment %v, simulation %v (difference %g)", j, res.Model[j], ew[j], res.Model[j]-ew[j])
				}
				moved = moved || ew[j] != st.Init[j]
			}
			if !moved {
				t.Fatal("the model never moved: the comparison would prove nothing")
			}
			if len(got) != len(want) {
				t.Fatalf("%d rounds, simulation %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Participants != w.Participants || g.Privacy.CentralEpsilon != w.Privacy.CentralEpsilon ||
					g.Privacy.CentralDelta != w.Privacy.CentralDelta || g.Privacy.CumulativeEpsilon != w.Privacy.CumulativeEpsilon {
					t.Fatalf("round %d: deployment %d reporters, eps %v delta %v cumulative %v; simulation %d, %v %v %v",
						w.Round, g.Participants, g.Privacy.CentralEpsilon, g.Privacy.CentralDelta, g.Privacy.CumulativeEpsilon,
						w.Participants, w.Privacy.CentralEpsilon, w.Privacy.CentralDelta, w.Privacy.CumulativeEpsilon)
				}
			}
			el, dl := eng.Accountant().Log(), res.Statements
			if len(el) != len(dl) {
				t.Fatalf("%d statements, simulation %d", len(dl), len(el))
			}
			for i := range el {
				e, d := el[i], dl[i]
				if e.SampleRate != d.SampleRate || e.Sampled != d.Sampled || e.Reporters != d.Reporters || e.Epsilon != d.Epsilon || e.Delta != d.Delta {
					t.Fatalf("statement %d: deployment %+v, simulation %+v", i+1, d, e)
				}
			}
			t.Logf("%s: d = %d, difference 0; round 1 eps %.6g at q = %.4g (%d of %d sampled); cumulative eps %.6g; shuffler %+v",
				tc.name, len(ew), el[0].Epsilon, el[0].SampleRate, el[0].Sampled, tc.clients, want[len(want)-1].Privacy.CumulativeEpsilon, res.Shuffler)
		})
	}
}

// newSampledHarness is newHarnessTimeout with the shuffler's Quorum set:
// the first round is sampled once quorum clients have registered.
func newSampledHarness(t *testing.T, cfg round.Config, min, quorum int, timeout time.Duration) *harness {
	t.Helper()
	return startHarness(t, cfg, "sampled", min, quorum, timeout)
}

// register registers client i with the declared budget.
func (h *harness) register(t *testing.T, i int, eps, delta float64) error {
	t.Helper()
	s := h.signer(t, i)
	req := &wire.RegisterRequest{Auth: &wire.RequestAuth{}, PublicKey: s.Public(), KeyAlgorithm: "ed25519", Epsilon: eps, Delta: delta}
	if err := sign(s, testRand(), time.Now(), wire.Shuffler_Register_FullMethodName, 0, req); err != nil {
		t.Fatal(err)
	}
	_, err := h.cli.Register(context.Background(), req)
	return err
}

// pull is client i's PullTask after round after.
func (h *harness) pull(t *testing.T, i int, after int64) *wire.RoundAnnouncement {
	t.Helper()
	req := &wire.PullTaskRequest{Auth: &wire.RequestAuth{}, AfterRound: after}
	if err := sign(h.signer(t, i), testRand(), time.Now(), wire.Shuffler_PullTask_FullMethodName, 0, req); err != nil {
		t.Fatal(err)
	}
	resp, err := h.cli.PullTask(context.Background(), req)
	if d, ok := wire.DetailOf(err); ok && d.Reason == wire.Reason_REASON_NOT_SAMPLED {
		// Outside the open round's sample: no task, and the round named.
		wantStatus(t, err, codes.PermissionDenied, wire.Reason_REASON_NOT_SAMPLED)
		if d.Round <= after {
			t.Fatalf("not sampled in round %d, pulled after round %d", d.Round, after)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return resp.Task
}

// currentSample returns the clients the shuffler sampled for its current
// round (what only the shuffler knows), waiting for round r to open.
func (h *harness) currentSample(t *testing.T, r int64) map[string]bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		h.sh.mu.Lock()
		cur := h.sh.cur
		h.sh.mu.Unlock()
		if cur != nil && cur.t == r {
			return cur.sample
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("round %d never opened", r)
	return nil
}

// TestSampledStatementTrueRate: the analyzer's statement is at the true
// sampling rate sampled/registered and for the reports actually shuffled,
// never at the configured rate clients-per-round/clients (10/30 here):
//
//   - 6 of the 30 configured clients registered: all 6 are sampled (fewer
//     than m = 10), the rate is 1, and the statement equals an independent
//     Account of shape (population 6, sampled 6, reporters 6);
//   - 15 registered, 10 sampled, only 7 of them report before the deadline:
//     the rate is 10/15 and the statement is for 7 reporters. A client
//     outside the sample is offered no task (its pull is answered
//     REASON_NOT_SAMPLED with the round, so that a client left out of the
//     last round stops), and its submission is refused with
//     REASON_NOT_SAMPLED.
func TestSampledStatementTrueRate(t *testing.T) {
	t.Parallel() // a whole deployment or several: overlaps the others' waits
	for _, tc := range []struct {
		name                       string
		registered, report         int
		wantSampled                int
		timeout                    time.Duration
		wantRateNum, wantRateDenom int
	}{
		{"fewer registered than m", 6, 6, 6, time.Minute, 6, 6},
		{"sampled with dropouts", 15, 7, 10, 4 * time.Second, 10, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// ss-simple: dense per-coordinate reports (what sealedReport
			// forges) and FLAME's client-sampling credit (FLAME Lemma 4),
			// so that the rate shows in the statement.
			cfg := testConfig("ss-simple", 30, 1)
			cfg.ClientsPerRound = 10
			h := newSampledHarness(t, cfg, 1, tc.registered, tc.timeout)
			for i := 0; i < tc.registered; i++ {
				if err := h.register(t, i, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			sample := h.currentSample(t, 1)
			if len(sample) != tc.wantSampled {
				t.Fatalf("%d sampled of %d registered, want %d", len(sample), tc.registered, tc.wantSampled)
			}
			good := sealedReport(t, h, 1, 0.01)
			reported := 0
			for i := 0; i < tc.registered; i++ {
				id := ClientID(i)
				task := h.pull(t, i, 0)
				if !sample[id] {
					if task != nil {
						t.Fatalf("%s is not sampled but was offered round %d", id, task.Round)
					}
					_, err := h.submit(t, i, 1, good)
					wantStatus(t, err, codes.PermissionDenied, wire.Reason_REASON_NOT_SAMPLED)
					continue
				}
				if task == nil || task.Round != 1 {
					t.Fatalf("sampled %s was not offered round 1 (%v)", id, task)
				}
				if reported == tc.report {
					continue // a dropout
				}
				if _, err := h.submit(t, i, 1, sealedReport(t, h, 1, 0.01)); err != nil {
					t.Fatal(err)
				}
				reported++
			}
			h.waitFinished(t, 1)
			log := h.an.Accountant().Log()
			if len(log) != 1 {
				t.Fatalf("%d statements, want 1", len(log))
			}
			got := log[0]
			rate := float64(tc.wantRateNum) / float64(tc.wantRateDenom)
			if got.SampleRate != rate || got.Sampled != tc.wantSampled || got.Reporters != tc.report || !got.Released {
				t.Fatalf("statement %+v: want rate %v, %d sampled, %d reporters, released", got, rate, tc.wantSampled, tc.report)
			}
			// Independent: the protocol's own Account of the true shape.
			s := protocol.Shape{Round: 1, Dim: h.st.Dim(), Population: tc.registered, Participants: tc.report, Sampled: tc.wantSampled}
			bs := make([]protocol.Budget, tc.report)
			for i := range bs {
				bs[i] = h.st.Budget
			}
			p, err := h.st.Proto.Account(s, bs)
			if err != nil {
				t.Fatal(err)
			}
			if got.Epsilon != p.CentralEpsilon || got.Delta != p.CentralDelta {
				t.Fatalf("statement (%v, %v), the protocol's account of the true shape (%v, %v)", got.Epsilon, got.Delta, p.CentralEpsilon, p.CentralDelta)
			}
			// The configured rate 10/30 would have claimed less.
			cs := protocol.Shape{Round: 1, Dim: h.st.Dim(), Population: 30, Participants: tc.report, Sampled: 10}
			cp, err := h.st.Proto.Account(cs, bs)
			if err != nil {
				t.Fatal(err)
			}
			if !(cp.CentralEpsilon < got.Epsilon) {
				t.Fatalf("configured-rate epsilon %v is not below the true-rate %v: the test would not tell them apart", cp.CentralEpsilon, got.Epsilon)
			}
			t.Logf("%s: stated eps %.6g delta %.3g at q = %.4g (%d reporters); the configured q = 1/3 would claim eps %.6g",
				tc.name, got.Epsilon, got.Delta, got.SampleRate, got.Reporters, cp.CentralEpsilon)
		})
	}
}

// TestRegistrationBudgets: what a client may declare at registration, and
// that the declaration is durable and fixed for the run.
func TestRegistrationBudgets(t *testing.T) {
	t.Run("uniform protocol", func(t *testing.T) {
		cfg := testConfig("ss-double", 4, 1)
		cfg.ClientsPerRound = 2
		h := newSampledHarness(t, cfg, 1, 4, time.Minute)
		if err := h.register(t, 0, h.st.Budget.Epsilon/2, 0); err == nil {
			t.Fatal("ss-double took a declared budget other than the public one")
		} else {
			wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
		}
		if err := h.register(t, 0, h.st.Budget.Epsilon, h.st.Budget.Delta); err != nil {
			t.Fatalf("the public budget declared explicitly: %v", err)
		}
		for i := 1; i < 4; i++ {
			if err := h.register(t, i, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		// A fifth client (it has credentials) finds the run's 4 registered.
		wantStatus(t, h.register(t, 4, 0, 0), codes.ResourceExhausted, wire.Reason_REASON_NOT_REGISTERED)
	})
	t.Run("personalized protocol", func(t *testing.T) {
		cfg := testConfig("apes", 4, 1)
		cfg.ClientsPerRound = 2
		h := newSampledHarness(t, cfg, 1, 4, time.Minute)
		d := h.st.Budget.Delta
		for _, c := range []struct {
			name       string
			eps, delta float64
		}{
			{"above the largest budget", 2 * h.st.MaxEpsilon(), 0},
			{"another delta", 1, d / 2},
			{"negative", -1, 0},
		} {
			wantStatus(t, h.register(t, 0, c.eps, c.delta), codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
		}
		if err := h.register(t, 0, 1, 0); err != nil {
			t.Fatal(err)
		}
		if err := h.register(t, 0, 1, d); err != nil {
			t.Fatalf("the same budget again: %v", err)
		}
		wantStatus(t, h.register(t, 0, 2, 0), codes.FailedPrecondition, wire.Reason_REASON_MALFORMED)
		regs, err := h.sdb.Registrations()
		if err != nil {
			t.Fatal(err)
		}
		if len(regs) != 1 || regs[0].Epsilon != 1 || regs[0].Delta != d {
			t.Fatalf("stored registrations %+v, want client 0 at (1, %v)", regs, d)
		}
	})
}

// TestOwnBudgetsRegistration: in a run with the clients' own budgets
// (--eps-dist) a client must declare its budget, and a client that did not
// register may not report (its budget is unknown).
func TestOwnBudgetsRegistration(t *testing.T) {
	cfg := testConfig("apes", 4, 1)
	cfg.EpsDist, cfg.EpsScale = "uniform2", 20
	h := newSampledHarness(t, cfg, 1, 0, time.Minute)
	if !h.st.OwnBudgets {
		t.Fatal("--eps-dist did not set OwnBudgets")
	}
	wantStatus(t, h.register(t, 0, 0, 0), codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
	if err := h.register(t, 0, h.st.ClientBudget(0).Epsilon, 0); err != nil {
		t.Fatal(err)
	}
	h.waitRound(t, 1)
	_, err := h.submit(t, 1, 1, sealedReport(t, h, 1, 0.01))
	wantStatus(t, err, codes.PermissionDenied, wire.Reason_REASON_NOT_REGISTERED)
}

// TestFactsRefusals: the analyzer refuses a batch header it can check to
// be wrong: counts that are not the shuffler's sample, reports beyond it,
// and budget lists that are not one sorted entry per report.
func TestFactsRefusals(t *testing.T) {
	mk := func(proto string, per int) *Setup {
		cfg := testConfig(proto, 30, 2)
		cfg.ClientsPerRound = per
		st, err := NewSetup(cfg, testSplit(t, cfg), "facts")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	sampled, uniformAll, apes := mk("ss-double", 10), mk("ss-double", 0), mk("apes", 10)
	own := mk("apes", 10)
	own.OwnBudgets = true // as --eps-dist sets it
	for i := range own.Budgets {
		own.Budgets[i].Epsilon = float64(i+1) / 10
	}
	e, d := apes.Budget.Epsilon, apes.Budget.Delta
	hdr := func(reports, pop, smp int, eps, dts []float64) *wire.BatchHeader {
		return &wire.BatchHeader{Round: 1, Counts: &wire.BatchCounts{Reports: uint32(reports), Population: uint32(pop), Sampled: uint32(smp)},
			ReporterEpsilons: eps, ReporterDeltas: dts}
	}
	for _, c := range []struct {
		name string
		st   *Setup
		h    *wire.BatchHeader
		ok   bool
	}{
		{"sampled ok", sampled, hdr(8, 25, 10, nil, nil), true},
		{"fewer registered than m", sampled, hdr(4, 4, 4, nil, nil), true},
		{"no population under sampling", sampled, hdr(8, 0, 0, nil, nil), false},
		{"population above the run's clients", sampled, hdr(8, 31, 10, nil, nil), false},
		{"sample not min(m, population)", sampled, hdr(8, 25, 12, nil, nil), false},
		{"reports beyond the sample", sampled, hdr(11, 25, 10, nil, nil), false},
		{"counts without sampling", uniformAll, hdr(8, 30, 30, nil, nil), false},
		{"no counts without sampling", uniformAll, hdr(30, 0, 0, nil, nil), true},
		{"budgets for a uniform protocol", sampled, hdr(1, 25, 10, []float64{1}, []float64{1e-6}), false},
		{"personalized ok", apes, hdr(2, 20, 10, []float64{e / 2, e}, []float64{d, d}), true},
		{"personalized, empty lists: uniform", apes, hdr(2, 20, 10, nil, nil), true},
		{"personalized, one list empty", apes, hdr(2, 20, 10, []float64{e / 2, e}, nil), false},
		{"personalized list too short", apes, hdr(3, 20, 10, []float64{e / 2, e}, []float64{d, d}), false},
		{"personalized list too long", apes, hdr(1, 20, 10, []float64{e / 2, e}, []float64{d, d}), false},
		{"own budgets, empty lists", own, hdr(2, 20, 10, nil, nil), false},
		{"own budgets ok", own, hdr(2, 20, 10, []float64{own.Budgets[3].Epsilon, own.MaxEpsilon()}, []float64{d, d}), true},
		{"personalized unsorted", apes, hdr(2, 20, 10, []float64{e, e / 2}, []float64{d, d}), false},
		{"personalized above the largest budget", apes, hdr(2, 20, 10, []float64{e, 2 * e}, []float64{d, d}), false},
		{"personalized other delta", apes, hdr(2, 20, 10, []float64{e / 2, e}, []float64{d / 2, d}), false},
	} {
		f, err := c.st.Facts(c.h)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !c.ok && err == nil:
			t.Errorf("%s: accepted as %+v", c.name, f)
		case !c.ok && !errors.Is(err, checks.ErrInvalid):
			t.Errorf("%s: %v does not wrap checks.ErrInvalid", c.name, err)
		}
	}
}

// TestNewSetupPersonalizedRefusals: personalized budgets with a protocol
// that takes one public budget, or with a target epsilon, are refused.
func TestNewSetupPersonalizedRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*round.Config)
	}{
		{"ss-double with eps-dist", func(c *round.Config) { c.Protocol, c.EpsDist = "ss-double", "uniform2" }},
		{"apes with eps-dist and a target", func(c *round.Config) { c.EpsDist, c.TargetEpsilon = "uniform2", 8 }},
		{"missing eps-file", func(c *round.Config) { c.EpsFile = filepath.Join(t.TempDir(), "none.txt") }},
	} {
		cfg := testConfig("apes", 10, 1)
		c.mod(&cfg)
		if _, err := NewSetup(cfg, testSplit(t, cfg), "x"); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v, want an error wrapping checks.ErrInvalid", c.name, err)
		}
	}
}

// TestCheckMeta: APES's opened metadata must be accounted for by the
// header's budgets; dropped metadata may be missing, none may differ.
func TestCheckMeta(t *testing.T) {
	cfg := testConfig("apes", 10, 1)
	st, err := NewSetup(cfg, testSplit(t, cfg), "meta")
	if err != nil {
		t.Fatal(err)
	}
	d := float64(st.Dim())
	b := func(e float64) protocol.Budget { return protocol.Budget{Epsilon: e, Delta: st.Budget.Delta} }
	bs := []protocol.Budget{b(1), b(2), b(2)}
	for _, c := range []struct {
		name string
		meta []float64
		ok   bool
	}{
		{"equal, any order", []float64{2 / d, 1 / d, 2 / d}, true},
		{"one dropped", []float64{2 / d, 1 / d}, true},
		{"extra", []float64{2 / d, 1 / d, 2 / d, 1 / d}, false},
		{"another budget", []float64{2 / d, 1 / d, 3 / d}, false},
		{"one budget twice", []float64{1 / d, 1 / d}, false},
	} {
		err := st.CheckMeta(1, bs, c.meta)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, checks.ErrInvalid)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestMetaMismatchVoidsRound: a client that registered epsilon 1 but
// encoded with the run's epsilon 4 (its APES metadata says 4/d): the
// analyzer's statement would be for epsilon 1, so the round is void and
// nothing is stated or released.
func TestMetaMismatchVoidsRound(t *testing.T) {
	cfg := testConfig("apes", 2, 1)
	h := newSampledHarness(t, cfg, 1, 0, time.Minute)
	for i, e := range []float64{1, h.st.Budget.Epsilon} {
		if err := h.register(t, i, e, 0); err != nil {
			t.Fatal(err)
		}
	}
	h.waitRound(t, 1)
	for i := 0; i < 2; i++ {
		if _, err := h.submit(t, i, 1, sealedReport(t, h, 1, 0.01)); err != nil { // meta = 4/d for both
			t.Fatal(err)
		}
	}
	h.waitFinished(t, 1)
	for _, s := range h.an.Accountant().Log() {
		if s.Released {
			t.Fatalf("a round was released with metadata that disagree with the budgets: %+v", s)
		}
	}
	for j, w := range h.an.Model() {
		if w != h.st.Init[j] {
			t.Fatalf("the model moved (parameter %d)", j)
		}
	}
}
