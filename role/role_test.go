package role

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

func newProto(t *testing.T, name string, extra map[string]float64) protocol.Protocol {
	t.Helper()
	p, err := protocol.New(name, protocol.Params{Clip: 0.1, Delta: 1e-6, Epsilon: 10, Rounds: 1, SampleRate: 1, Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClientReadyAdvance: the client machine's contract. Stage checks the
// ledger and returns the release to charge without writing anything;
// Advance refuses until the driver has made that charge durable, and
// refuses a ready the machine did not stage; a second report in a round
// and a round past the cap are refused; without a ledger Advance only
// closes the stage.
func TestClientReadyAdvance(t *testing.T) {
	p := newProto(t, "ss-simple", nil)
	ledger := account.NewLedger(account.NewMemoryStore())
	if err := ledger.SetDefaultCap(account.Cap{Epsilon: 25}); err != nil {
		t.Fatal(err)
	}
	c := NewClient(ClientConfig{ID: "3", Budget: protocol.Budget{Epsilon: 10}, Protocol: p, Ledger: ledger})
	s := protocol.Shape{Round: 1, Dim: 2, Population: 4, Participants: 2}
	var rep protocol.Report
	if err := c.Advance(ClientReady{Round: 1, Charge: true, Release: c.Release(1)}); !errors.Is(err, ErrOrder) {
		t.Fatalf("advance without a staged report: %v", err)
	}
	rd, err := c.Stage(rng.Stream(1), s, []float64{0.1, 0.2}, &rep)
	if err != nil || rd.Round != 1 || !rd.Charge || rd.Release.LocalEpsilon != 10 || len(rep.Values) != 2 {
		t.Fatalf("stage: %+v, %v", rd, err)
	}
	if sp, _ := ledger.Spent("3"); sp.Epsilon != 0 {
		t.Fatalf("Stage wrote the ledger: spent %v", sp.Epsilon)
	}
	if _, err := c.Stage(rng.Stream(1), s, []float64{0.1, 0.2}, &rep); !errors.Is(err, ErrOrder) {
		t.Fatalf("second stage in a round: %v", err)
	}
	// The driver has not charged yet: the report may not leave.
	if err := c.Advance(rd); !errors.Is(err, ErrOrder) {
		t.Fatalf("advance before the charge is durable: %v", err)
	}
	forged := rd
	forged.Release.LocalEpsilon = 1
	if err := c.Advance(forged); !errors.Is(err, ErrOrder) {
		t.Fatalf("advance of a ready the machine did not stage: %v", err)
	}
	if err := ledger.Charge(rd.Release); err != nil {
		t.Fatal(err)
	}
	if err := c.Advance(rd); err != nil {
		t.Fatal(err)
	}
	if err := c.Advance(rd); !errors.Is(err, ErrOrder) {
		t.Fatalf("second advance: %v", err)
	}
	if _, err := c.Stage(rng.Stream(1), s, []float64{0.1, 0.2}, &rep); !errors.Is(err, ErrOrder) {
		t.Fatalf("stage after the round advanced: %v", err)
	}
	// Round 2 fits (20 <= 25), round 3 would not (30 > 25): refused at Stage.
	s.Round = 2
	rd, err = c.Stage(rng.Stream(2), s, []float64{0, 0}, &rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.Charge(rd.Release); err != nil {
		t.Fatal(err)
	}
	if err := c.Advance(rd); err != nil {
		t.Fatal(err)
	}
	s.Round = 3
	if _, err := c.Stage(rng.Stream(3), s, []float64{0, 0}, &rep); !errors.Is(err, account.ErrCapExceeded) {
		t.Fatalf("stage over the cap: %v", err)
	}
	if err := c.Check(3); !errors.Is(err, account.ErrCapExceeded) {
		t.Fatalf("check over the cap: %v", err)
	}
	if sp, _ := ledger.Spent("3"); sp.Epsilon != 20 {
		t.Fatalf("spent %v, want 20", sp.Epsilon)
	}
	// Without a ledger (no local guarantee) nothing is charged.
	np := NewClient(ClientConfig{ID: "8", Protocol: newProto(t, "nonprivate", nil)})
	s.Round = 1
	rd, err = np.Stage(rng.Stream(1), s, []float64{1, 2}, &rep)
	if err != nil || rd.Charge {
		t.Fatalf("ledger-less stage: %+v, %v", rd, err)
	}
	if err := np.Advance(rd); err != nil {
		t.Fatal(err)
	}
}

func TestMessages(t *testing.T) {
	dense := &protocol.Report{Values: []float64{1, 2, 3}, Meta: []float64{0.5}}
	sparse := &protocol.Report{Coords: []int32{4, 1}, Values: []float64{7, 8}}
	got := Messages(protocol.PerCoordinate, dense, nil)
	want := []Message[Plain]{{0, Plain{Value: 1}}, {1, Plain{Value: 2}}, {2, Plain{Value: 3}}, {MetaLabel, Plain{Value: 0.5}}}
	if !slices.Equal(got, want) {
		t.Fatalf("dense per-coordinate: %v", got)
	}
	got = Messages(protocol.PerCoordinate, sparse, nil)
	if len(got) != 2 || got[0].Label != 4 || got[0].Payload.Value != 7 || got[1].Label != 1 {
		t.Fatalf("sparse per-coordinate: %v", got)
	}
	got = Messages(protocol.WholeReport, dense, nil)
	if len(got) != 2 || got[0].Label != ReportLabel || got[0].Payload.Report.Meta != nil || got[1].Label != MetaLabel {
		t.Fatalf("whole report: %+v", got)
	}
}

// plainMsgs builds a dense per-coordinate submission.
func plainMsgs(vals ...float64) []Message[Plain] {
	return Messages(protocol.PerCoordinate, &protocol.Report{Values: vals}, nil)
}

func TestShufflerRejects(t *testing.T) {
	p := newProto(t, "ss-simple", nil)
	s := protocol.Shape{Round: 3, Dim: 3, Population: 10}
	cases := []struct {
		name string
		msgs []Message[Plain]
		want error
	}{
		{"label out of range", []Message[Plain]{{Label: 3}}, ErrBadMessage},
		{"negative label", []Message[Plain]{{Label: -7}}, ErrBadMessage},
		{"whole report to a per-coordinate protocol", []Message[Plain]{{Label: ReportLabel}}, ErrBadMessage},
		{"repeated coordinate", []Message[Plain]{{Label: 1}, {Label: 1}}, ErrBadMessage},
		{"two metadata values", []Message[Plain]{{Label: 0}, {Label: MetaLabel}, {Label: MetaLabel}}, ErrBadMessage},
		{"metadata only", []Message[Plain]{{Label: MetaLabel}}, ErrBadMessage},
		{"empty", nil, ErrBadMessage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sh, err := NewShuffler[Plain](p, s, 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sh.Accept("a", tc.msgs); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if sh.Senders() != 0 {
				t.Fatal("a refused submission was counted")
			}
			// The refused sender may still submit a good one.
			if _, err := sh.Accept("a", plainMsgs(1, 2, 3)); err != nil {
				t.Fatal(err)
			}
		})
	}
	whole := newProto(t, "e-apes", nil)
	sh, _ := NewShuffler[Plain](whole, s, 1)
	if _, err := sh.Accept("a", []Message[Plain]{{Label: 0}}); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("coordinate message to a whole-report protocol: %v", err)
	}
	if _, err := sh.Accept("a", []Message[Plain]{{Label: ReportLabel}, {Label: ReportLabel}}); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("two reports in one submission: %v", err)
	}
}

func TestShufflerRound(t *testing.T) {
	p := newProto(t, "ss-simple", nil)
	s := protocol.Shape{Round: 1, Dim: 3, Population: 10}
	sh, err := NewShuffler[Plain](p, s, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sh.Accept("a", plainMsgs(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := sh.Accept("a", plainMsgs(1, 2, 3)); !errors.Is(err, ErrDuplicateSender) {
		t.Fatalf("second submission: %v", err)
	}
	if _, err := sh.Accept("b", plainMsgs(10, 20, 30)); err != nil {
		t.Fatal(err)
	}
	b, err := sh.Close(rng.Stream(1), rng.Stream(2), PlainDummy(p.Mode()))
	if err != nil {
		t.Fatal(err)
	}
	if b.Senders != 2 || b.Round != 1 || len(b.Columns) != 3 {
		t.Fatalf("batch %+v", b)
	}
	for j, col := range b.Columns {
		var sum float64
		for _, v := range col {
			sum += v.Value
		}
		if len(col) != 2 || sum != float64(j+1)*11 {
			t.Fatalf("column %d = %v", j, col)
		}
	}
	if _, err := sh.Accept("c", plainMsgs(1, 2, 3)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if _, err := sh.Close(rng.Stream(1), rng.Stream(2), PlainDummy(p.Mode())); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}

	// Below the minimum the round is void and releases nothing.
	sh, _ = NewShuffler[Plain](p, s, 2)
	_, _ = sh.Accept("a", plainMsgs(1, 2, 3))
	if b, err := sh.Close(rng.Stream(1), rng.Stream(2), PlainDummy(p.Mode())); !errors.Is(err, ErrTooFew) || b != nil {
		t.Fatalf("one of two: %v, %v", b, err)
	}
	if _, err := sh.Accept("b", plainMsgs(1, 2, 3)); !errors.Is(err, ErrClosed) {
		t.Fatalf("void round accepted: %v", err)
	}
}

// TestShufflerPermutes checks that each column comes out in a uniformly
// random order: over many rounds, each sender's value lands at each
// position equally often.
func TestShufflerPermutes(t *testing.T) {
	p := newProto(t, "ss-simple", nil)
	const n, trials = 4, 40000
	var pos [n][n]int
	for tr := 0; tr < trials; tr++ {
		sh, _ := NewShuffler[Plain](p, protocol.Shape{Round: 1, Dim: 1, Population: n}, 1)
		for i := 0; i < n; i++ {
			_, _ = sh.Accept(strconv.Itoa(i), plainMsgs(float64(i)))
		}
		b, err := sh.Close(rng.Stream(0), rng.Stream(uint64(tr), 9), PlainDummy(p.Mode()))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range b.Columns[0] {
			pos[int(v.Value)][k]++
		}
	}
	// Each cell is Binomial(trials, 1/n): mean 10,000, sd 86.6; 6 sd over
	// 16 cells rejects a correct shuffler with probability < 1e-7.
	for i := range pos {
		for k := range pos[i] {
			if d := math.Abs(float64(pos[i][k]) - trials/n); d > 6*math.Sqrt(trials*(1.0/n)*(1-1.0/n)) {
				t.Fatalf("sender %d at position %d %d times of %d", i, k, pos[i][k], trials)
			}
		}
	}
}

func TestShufflerPadsSSDouble(t *testing.T) {
	p, err := protocol.New("ss-double", protocol.Params{Clip: 0.1, Delta: 1e-6, Epsilon: 10, Rounds: 1, SampleRate: 1,
		Extra: map[string]float64{"k": 2, "np": 40}})
	if err != nil {
		t.Fatal(err)
	}
	s := protocol.Shape{Round: 1, Dim: 8, Population: 20, Participants: 20}
	sh, _ := NewShuffler[Plain](p, s, 1)
	r := rng.Stream(5)
	for i := 0; i < 20; i++ {
		var rep protocol.Report
		if err := p.Encode(r, s, make([]float64, 8), protocol.Budget{Epsilon: 10}, &rep); err != nil {
			t.Fatal(err)
		}
		if _, err := sh.Accept(strconv.Itoa(i), Messages(p.Mode(), &rep, nil)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := sh.Close(rng.Stream(1), rng.Stream(2), PlainDummy(p.Mode()))
	if err != nil {
		t.Fatal(err)
	}
	for j, col := range b.Columns {
		if len(col) != 40 {
			t.Fatalf("coordinate %d padded to %d values, want np = 40", j, len(col))
		}
	}
}

// facts are the facts of round t of a run of n clients, all reporting
// with budget epsilon.
func facts(t, d, n int, epsilon float64) Facts {
	f := Facts{Shape: protocol.Shape{Round: t, Dim: d, Population: n, Participants: n, Sampled: n}, Sampled: n, Reporters: n, MinReports: 1}
	for range n {
		f.Budgets = append(f.Budgets, protocol.Budget{Epsilon: epsilon})
	}
	return f
}

func TestAnalyzer(t *testing.T) {
	p := newProto(t, "nonprivate", nil)
	model := []float64{1, 1, 1}
	a, err := NewAnalyzer(AnalyzerConfig{Protocol: p, Model: model, ServerLR: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Close(rng.Stream(1)); !errors.Is(err, ErrOrder) {
		t.Fatalf("close before open: %v", err)
	}
	if _, err := a.Open(facts(2, 3, 2, 1)); !errors.Is(err, ErrOrder) {
		t.Fatalf("open round 2 first: %v", err)
	}
	if rd, err := a.Open(facts(1, 3, 2, 1)); err != nil || !rd.Accepting || rd.Checkpoint != nil {
		t.Fatalf("open: %+v, %v", rd, err)
	}
	bad := []struct {
		name string
		in   Input
		want error
	}{
		{"other round", BatchInput(&Batch[Plain]{Round: 2, Dim: 3, Mode: p.Mode()}), ErrOrder},
		{"other mode", BatchInput(&Batch[Plain]{Round: 1, Dim: 3, Mode: protocol.PerCoordinate}), ErrOrder},
		{"NaN value", BatchInput(&Batch[Plain]{Round: 1, Dim: 3, Mode: p.Mode(), Reports: []Plain{{Report: &protocol.Report{Values: []float64{0, math.NaN(), 0}}}}}), checks.ErrInvalid},
		{"short report", BatchInput(&Batch[Plain]{Round: 1, Dim: 3, Mode: p.Mode(), Reports: []Plain{{Report: &protocol.Report{Values: []float64{0}}}}}), checks.ErrInvalid},
		{"coordinate out of range", BatchInput(&Batch[Plain]{Round: 1, Dim: 3, Mode: p.Mode(), Reports: []Plain{{Report: &protocol.Report{Coords: []int32{9}, Values: []float64{0}}}}}), checks.ErrInvalid},
		{"missing report", BatchInput(&Batch[Plain]{Round: 1, Dim: 3, Mode: p.Mode(), Reports: []Plain{{}}}), checks.ErrInvalid},
		{"infinite metadata", BatchInput(&Batch[Plain]{Round: 1, Dim: 3, Mode: p.Mode(), Meta: []Plain{{Value: math.Inf(1)}}}), checks.ErrInvalid},
		{"dummy out of range", DummyInput(3, 0), checks.ErrInvalid},
		{"NaN dummy", DummyInput(0, math.NaN()), checks.ErrInvalid},
	}
	for _, tc := range bad {
		if err := a.Absorb(tc.in); !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if a.Aggregate().Reports != 0 || a.Aggregate().Sum[1] != 0 {
		t.Fatal("a refused input changed the round")
	}
	good := &Batch[Plain]{Round: 1, Dim: 3, Mode: p.Mode(), Senders: 2, Reports: []Plain{
		{Report: &protocol.Report{Values: []float64{1, 2, 3}}}, {Report: &protocol.Report{Values: []float64{3, 2, 1}}}}}
	if err := a.Absorb(BatchInput(good)); err != nil {
		t.Fatal(err)
	}
	rd, err := a.Close(rng.Stream(1))
	if err != nil {
		t.Fatal(err)
	}
	if !rd.Released || !slices.Equal(rd.Estimate, []float64{2, 2, 2}) || !slices.Equal(a.Model(), []float64{3, 3, 3}) {
		t.Fatalf("ready %+v, model %v", rd, a.Model())
	}
	if rd.Checkpoint == nil || rd.Checkpoint.Round != 1 || !slices.Equal(rd.Checkpoint.Models[0], []float64{3, 3, 3}) {
		t.Fatalf("checkpoint %+v", rd.Checkpoint)
	}
	if _, err := a.Close(rng.Stream(1)); !errors.Is(err, ErrReleased) {
		t.Fatalf("second close: %v, want ErrReleased", err)
	}
	if a.Round() != 1 {
		t.Fatalf("round %d", a.Round())
	}
}

// TestAnalyzerDecides: the analyzer voids a round with too few reporters
// or past the run's target, records it, and goes on to the next round; a
// round it cannot estimate it voids itself, changing no model.
func TestAnalyzerDecides(t *testing.T) {
	p := newProto(t, "ldp-laplace", nil)
	acct, err := account.NewAccountant(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAnalyzer(AnalyzerConfig{Protocol: p, Model: make([]float64, 2), ServerLR: 1, Accountant: acct, TargetEpsilon: 2.5})
	if err != nil {
		t.Fatal(err)
	}
	few := facts(1, 2, 4, 1)
	few.Reporters, few.Budgets = 0, nil
	rd, err := a.Open(few)
	if err != nil || rd.Void != TooFew || rd.Released || rd.Checkpoint == nil || rd.Statement.Released {
		t.Fatalf("no reporters: %+v, %v", rd, err)
	}
	if acct.Rounds() != 1 || acct.Spent().Releases != 0 {
		t.Fatalf("accountant after a void round: %d rounds, %d releases", acct.Rounds(), acct.Spent().Releases)
	}
	// Diverging update: voided before the model changes.
	if rd, err = a.Open(facts(2, 2, 1, 1)); err != nil || !rd.Accepting {
		t.Fatalf("round 2: %+v, %v", rd, err)
	}
	if err := a.Absorb(BatchInput(&Batch[Plain]{Round: 2, Dim: 2, Mode: p.Mode(), Senders: 1, Reports: []Plain{{Report: &protocol.Report{Values: []float64{math.MaxFloat64, 0}}}}})); err != nil {
		t.Fatal(err)
	}
	a.scale = 10
	rd, err = a.Close(rng.Stream(1))
	if err != nil || rd.Void != Refused || rd.Err == nil || rd.Released || !strings.HasPrefix(rd.Why, "the batch was refused: ") {
		t.Fatalf("a diverging release: %+v, %v", rd, err)
	}
	if acct.Rounds() != 2 || acct.Spent().Releases != 0 || a.Model()[0] != 0 {
		t.Fatal("a refused release changed the model or released in the accountant")
	}
	a.scale = 1
	// A batch the driver refuses: it voids the open round itself.
	if rd, err = a.Open(facts(3, 2, 1, 1)); err != nil || !rd.Accepting {
		t.Fatalf("round 3: %+v, %v", rd, err)
	}
	if rd, err = a.Void("metadata is not the budgets'"); err != nil || rd.Void != Refused || acct.Spent().Releases != 0 {
		t.Fatalf("driver's void: %+v, %v", rd, err)
	}
	// Rounds of epsilon 1 are released until the next would pass the
	// target 2.5.
	r := 4
	for ; r < 20; r++ {
		if rd, err = a.Open(facts(r, 2, 1, 1)); err != nil || !rd.Accepting {
			break
		}
		zero := &Batch[Plain]{Round: r, Dim: 2, Mode: p.Mode(), Senders: 1, Reports: []Plain{{Report: &protocol.Report{Values: []float64{0, 0}}}}}
		if err := a.Absorb(BatchInput(zero)); err != nil {
			t.Fatal(err)
		}
		if rd, err = a.Close(rng.Stream(1)); err != nil || !rd.Released {
			t.Fatalf("round %d: %+v, %v", r, rd, err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if rd.Void != PastTarget || !strings.Contains(rd.Why, "past the target 2.5") || acct.Spent().Releases != 2 || acct.Spent().Epsilon > 2.5 {
		t.Fatalf("past the target: %+v, spent %v", rd, acct.Spent())
	}
}

func TestAnalyzerClustered(t *testing.T) {
	p := newProto(t, "ifca", map[string]float64{"k": 2})
	if _, err := NewAnalyzer(AnalyzerConfig{Protocol: p, Model: []float64{0, 0}, ServerLR: 1}); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("one model for k = 2: %v", err)
	}
	a, err := NewAnalyzer(AnalyzerConfig{Protocol: p, Model: []float64{0, 0}, Hypotheses: [][]float64{{10, 10}}, ServerLR: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RestoreHypotheses(nil); !errors.Is(err, checks.ErrInvalid) {
		t.Fatalf("checkpoint without the second model: %v", err)
	}
	if _, err := a.Open(facts(1, 2, 4, 1)); err != nil {
		t.Fatal(err)
	}
	var reps []Plain
	for _, v := range [][]float64{{1, 1}, {-1, -1}, {9, 11}, {11, 9}} {
		reps = append(reps, Plain{Report: &protocol.Report{Values: v}})
	}
	if err := a.Absorb(BatchInput(&Batch[Plain]{Round: 1, Dim: 2, Mode: p.Mode(), Senders: 4, Reports: reps})); err != nil {
		t.Fatal(err)
	}
	if rd, err := a.Close(rng.Stream(1)); err != nil || !rd.Released || rd.Estimate != nil || len(rd.Checkpoint.Models) != 2 {
		t.Fatalf("%+v, %v", rd, err)
	}
	m := a.Models()
	if !slices.Equal(m[0], []float64{0, 0}) || !slices.Equal(m[1], []float64{10, 10}) || !slices.Equal(a.ClusterSizes(), []int{2, 2}) {
		t.Fatalf("models %v, sizes %v", m, a.ClusterSizes())
	}
}

// TestClientStageModel: a clustered client stages its whole model with the
// charge contract of Stage (a second stage in the round and a stage past
// the cap are refused; Advance checks the ledger), its report is base +
// update (plain IFCA), and a one-model protocol refuses StageModel.
func TestClientStageModel(t *testing.T) {
	p := newProto(t, "ifca", map[string]float64{"k": 2})
	ledger := account.NewLedger(account.NewMemoryStore())
	_ = ledger.SetDefaultCap(account.Cap{Epsilon: 15})
	c := NewClient(ClientConfig{ID: "7", Budget: protocol.Budget{Epsilon: 10}, Protocol: p, Ledger: ledger})
	s := protocol.Shape{Round: 1, Dim: 2, Population: 4, Participants: 2}
	var rep protocol.Report
	rel, err := c.StageModel(rng.Stream(1), s, []float64{1, 2}, []float64{0.5, -0.5}, &rep)
	if err != nil || rel.Round != 1 || !slices.Equal(rep.Values, []float64{1.5, 1.5}) {
		t.Fatalf("stage model: %+v %v, report %v", rel, err, rep.Values)
	}
	if _, err := c.StageModel(rng.Stream(1), s, []float64{1, 2}, []float64{0, 0}, &rep); !errors.Is(err, ErrOrder) {
		t.Fatalf("second stage in a round: %v", err)
	}
	if err := ledger.Charge(rel.Release); err != nil {
		t.Fatal(err)
	}
	if err := c.Advance(rel); err != nil {
		t.Fatal(err)
	}
	s.Round = 2
	if _, err := c.StageModel(rng.Stream(2), s, []float64{1, 2}, []float64{0, 0}, &rep); !errors.Is(err, account.ErrCapExceeded) {
		t.Fatalf("stage over the cap: %v", err)
	}
	one := NewClient(ClientConfig{ID: "8", Budget: protocol.Budget{Epsilon: 1}, Protocol: newProto(t, "ss-simple", nil)})
	if _, err := one.StageModel(rng.Stream(1), protocol.Shape{Round: 1, Dim: 2, Population: 4, Participants: 2}, []float64{0, 0}, []float64{0, 0}, &rep); !errors.Is(err, ErrOrder) {
		t.Fatalf("StageModel on a one-model protocol: %v", err)
	}
}
