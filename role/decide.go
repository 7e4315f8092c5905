package role

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// Facts are what a driver observed of a round before any report reaches
// the analyzer: the round's shape, how many clients were sampled and how
// many of them report, and the budgets the round's statement is made for.
// The analyzer decides the round from them (Analyzer.Open).
type Facts struct {
	// Shape is the round's shape: Participants is the number of reports the
	// estimate divides by (the reporters, or a Poisson-sampled protocol's
	// expected count), Sampled the sample the statement's rate counts.
	Shape protocol.Shape
	// Sampled is the number of clients sampled; Reporters how many of them
	// report (the others refused the round: their cap was reached).
	Sampled, Reporters int
	// Budgets are the budgets the statement is made for: the reporters'
	// (every client's, for a Poisson-sampled round nobody reports in).
	Budgets []protocol.Budget
	// MinReports is the fewest reporters a release needs; with 0 the round
	// is released even with none (a Poisson-sampled protocol's central
	// noise is released whoever takes part).
	MinReports int
}

// Void says why a round released nothing.
type Void uint8

const (
	// NotVoid: the round is open for reports (Open) or released (Close).
	NotVoid Void = iota
	// TooFew: fewer reporters than Facts.MinReports.
	TooFew
	// PastTarget: the round would take the cumulative epsilon past the
	// run's target (the run should stop).
	PastTarget
	// Refused: the round's reports could not be released (a batch the
	// driver or the analyzer refused, an estimate that failed or
	// diverged).
	Refused
)

// Checkpoint is what a driver persists after a finished round to resume
// from it: the models and the accountant that recorded the round. Models
// and Accountant are the analyzer's own: encode them before the next round.
type Checkpoint struct {
	Round      int
	Models     [][]float64
	Accountant *account.Accountant
}

// Ready is the analyzer's decision about a round, as Open, Close and Void
// return it: what was released (Estimate, Statement, Privacy) and what to
// persist (Checkpoint).
type Ready struct {
	Round int
	// Accepting is set by Open when the round is to be released: the driver
	// collects its reports (Absorb) and closes it (Close).
	Accepting bool
	// Released says the round's estimate was applied to the model(s).
	Released bool
	// Void says why nothing was released (NotVoid otherwise); Why says it
	// in words.
	Void Void
	Why  string
	// Err is the refusal behind Void == Refused when the analyzer refused
	// the round itself (Close): a simulation stops on it, a deployment
	// persists the void round.
	Err error
	// Privacy is the protocol's statement of the round (zero when the round
	// was void before it was accounted); Statement is what the accountant
	// recorded (or, while Accepting, will record).
	Privacy   protocol.Privacy
	Statement account.Statement
	// Estimate is a single-model protocol's mean update (valid until the
	// next round; nil unless Released).
	Estimate []float64
	// Checkpoint is what to persist; nil while the round is open.
	Checkpoint *Checkpoint
	// Dropped counts the opened values (whole reports, in whole-report
	// mode) outside the randomizer's output range, which the analyzer
	// left out of the round (Close).
	Dropped int64
	// Restated says, when Close remade the statement from the counts it
	// opened (a coordinate held fewer values than Open's statement
	// counted), what it found; "" otherwise.
	Restated string
}

// Open starts round f.Shape.Round, which must follow the last finished
// round, and decides it: too few reporters void it; otherwise the
// protocol checks and accounts the round for f.Budgets, and a round that
// would take the cumulative epsilon past the run's target is void. A void
// round is recorded and finished at once (Ready.Checkpoint is set); an
// accepted one stays open for Absorb and Close. Errors (a bad order, a
// protocol that refuses the round's parameters) leave nothing open.
func (a *Analyzer) Open(f Facts) (Ready, error) {
	s := f.Shape
	if a.open {
		return Ready{}, fmt.Errorf("analyzer: round %d opened while round %d is open: %w", s.Round, a.s.Round, ErrOrder)
	}
	if s.Round != a.round+1 {
		return Ready{}, fmt.Errorf("analyzer: round %d opened after round %d: %w", s.Round, a.round, ErrOrder)
	}
	if s.Dim != len(a.model) {
		return Ready{}, checks.Invalidf("analyzer: round of dimension %d for a model of %d parameters", s.Dim, len(a.model))
	}
	a.s, a.open, a.priv = s, true, protocol.Privacy{}
	a.agg.Reset()
	a.sampled, a.minReports, a.dropped, a.restated = f.Sampled, f.MinReports, 0, ""
	a.uniform, a.uniformOK = uniformBudget(f.Budgets)
	a.layout = nil
	if l, ok := a.acc.(protocol.Laid); ok {
		lay, err := l.Layout(s)
		if err != nil {
			a.open = false
			return Ready{}, fmt.Errorf("round %d: %w", s.Round, err)
		}
		a.layout = &lay
	}
	a.st = a.statement(f.Sampled, f.Reporters, false, protocol.Privacy{})
	if f.Reporters < f.MinReports {
		return a.void(TooFew, fmt.Sprintf("%d reports, minimum %d", f.Reporters, f.MinReports), nil)
	}
	if err := a.acc.Check(s, f.Budgets); err != nil {
		a.open = false
		return Ready{}, fmt.Errorf("round %d: %w", s.Round, err)
	}
	if a.counted != nil {
		c, err := a.counted.Counts(s)
		if err != nil {
			a.open = false
			return Ready{}, fmt.Errorf("round %d: %w", s.Round, err)
		}
		a.counts = c
	}
	void, why, err := a.account(s, f.Reporters, f.Budgets)
	if err != nil {
		a.open = false
		return Ready{}, err
	}
	if void != NotVoid {
		return a.void(void, why, nil)
	}
	return Ready{Round: s.Round, Accepting: true, Privacy: a.priv, Statement: a.st}, nil
}

// account makes the open round's statement for shape s, reporters and
// their budgets, and says whether it would take the run past its target
// (the run's target is a hard limit: such a round is not released).
func (a *Analyzer) account(s protocol.Shape, reporters int, budgets []protocol.Budget) (Void, string, error) {
	priv, err := a.acc.Account(s, budgets)
	if err != nil {
		return NotVoid, "", fmt.Errorf("round %d: accountant: %w", s.Round, err)
	}
	a.priv = priv
	a.st = a.statement(a.sampled, reporters, true, priv)
	if a.acct != nil && a.target > 0 {
		sp, past, err := a.acct.PastTarget(a.st, a.target)
		if err != nil {
			return NotVoid, "", fmt.Errorf("round %d: accountant: %w", s.Round, err)
		}
		if past {
			a.st.Released = false
			return PastTarget, fmt.Sprintf("round %d would take the cumulative epsilon to %.4g, past the target %g", s.Round, sp.Epsilon, a.target), nil
		}
	}
	return NotVoid, "", nil
}

// uniformBudget returns the budget every one of bs has (ok false when
// they differ or there are none).
func uniformBudget(bs []protocol.Budget) (protocol.Budget, bool) {
	if len(bs) == 0 {
		return protocol.Budget{}, false
	}
	for _, b := range bs[1:] {
		if b != bs[0] {
			return protocol.Budget{}, false
		}
	}
	return bs[0], true
}

// restatePadded makes the statement of a padded protocol again for
// coordinates of m values (protocol.Restater), or voids the round.
func (a *Analyzer) restatePadded(found string, m int64) (Void, string, error) {
	r, ok := a.acc.(protocol.Restater)
	if !ok {
		return Refused, found + " (the statement rests on the padding)", nil
	}
	if !a.uniformOK {
		return Refused, found + " and the reporters' budgets differ", nil
	}
	budgets := make([]protocol.Budget, a.s.Participants)
	for i := range budgets {
		budgets[i] = a.uniform
	}
	priv, err := r.AccountShort(a.s, budgets, m)
	if err != nil {
		return Refused, fmt.Sprintf("%s: %v", found, err), nil
	}
	a.priv = priv
	a.st = a.statement(a.sampled, a.st.Reporters, true, priv)
	if a.acct != nil && a.target > 0 {
		sp, past, err := a.acct.PastTarget(a.st, a.target)
		if err != nil {
			return NotVoid, "", fmt.Errorf("round %d: accountant: %w", a.s.Round, err)
		}
		if past {
			a.st.Released = false
			return PastTarget, fmt.Sprintf("%s: restated, round %d would take the cumulative epsilon to %.4g, past the target %g", found, a.s.Round, sp.Epsilon, a.target), nil
		}
	}
	a.restated = fmt.Sprintf("%s: stated for %d values per coordinate", found, m)
	return NotVoid, "", nil
}

// settle checks what the open round's statement rests on against what
// the analyzer really opened — the smallest per-coordinate count, or the
// number of whole reports — never against a header's or driver's count
// of reporters. When a coordinate holds fewer values than the statement
// counted, the statement is made again for the reporters the counts
// support (protocols without padding, all reporters on one budget, so
// that any subset of them has the same statement), or the round is void:
// a padded protocol's statement rests on its padding, and with personal
// budgets the analyzer cannot tell whose values are missing.
func (a *Analyzer) settle() (Void, string, error) {
	if a.counted == nil {
		return NotVoid, "", nil
	}
	c := a.counts
	supported := int64(a.s.Participants)
	var found string
	if c.PerColumn > 0 && a.mode == protocol.PerCoordinate {
		jmin := 0
		for j, n := range a.agg.Count {
			if n < a.agg.Count[jmin] {
				jmin = j
			}
		}
		if m := a.agg.Count[jmin]; m < c.PerColumn {
			found = fmt.Sprintf("coordinate %d holds %d values, the statement counted %d", jmin, m, c.PerColumn)
			if c.PerReporter == 0 {
				return a.restatePadded(found, m)
			}
			supported = min(supported, m/c.PerReporter)
		}
	}
	if c.Reports > 0 && a.agg.Reports < c.Reports {
		found = fmt.Sprintf("%d whole reports opened, the statement counted %d", a.agg.Reports, c.Reports)
		supported = min(supported, a.agg.Reports)
	}
	if found == "" {
		return NotVoid, "", nil
	}
	n := int(supported)
	switch {
	case n < max(1, a.minReports):
		return TooFew, fmt.Sprintf("%s: %d reports supported, minimum %d", found, n, max(1, a.minReports)), nil
	case !a.uniformOK:
		return Refused, found + " and the reporters' budgets differ (whose values are missing is unknown)", nil
	}
	s := a.s
	s.Participants = n
	budgets := make([]protocol.Budget, n)
	for i := range budgets {
		budgets[i] = a.uniform
	}
	if err := a.acc.Check(s, budgets); err != nil {
		return Refused, fmt.Sprintf("%s; %d reporters: %v", found, n, err), nil
	}
	void, why, err := a.account(s, n, budgets)
	if err != nil || void != NotVoid {
		return void, why, err
	}
	a.s = s
	a.restated = fmt.Sprintf("%s: stated for %d reporters", found, n)
	return NotVoid, "", nil
}

// statement is the open round's statement for the accountant (just the
// round and whether it was released when the run has no accountant).
func (a *Analyzer) statement(sampled, reporters int, released bool, p protocol.Privacy) account.Statement {
	if a.acct == nil {
		return account.Statement{Round: a.s.Round, Released: released}
	}
	return Statement(a.s, sampled, reporters, released, p)
}

func (a *Analyzer) checkOpen(op string) error {
	if !a.open {
		return fmt.Errorf("analyzer: %s with no round open (last finished: %d): %w", op, a.round, ErrOrder)
	}
	return nil
}

// Input is one piece of a round's reports as the analyzer takes them
// (Absorb): a shuffled batch (BatchInput), a partial aggregate a
// simulation's workers folded reports into (PartInput), or one padding
// value a streaming shuffler emitted (DummyInput).
type Input struct {
	batch *Batch[Plain]
	part  *protocol.Aggregate
	coord int
	value float64
}

// BatchInput is the round's shuffled batch, as the analyzer holds it after
// opening the sealed payloads.
func BatchInput(b *Batch[Plain]) Input { return Input{batch: b} }

// PartInput is a partial aggregate of reports already validated by
// Aggregate.AddReport (a simulation's block of reports).
func PartInput(part *protocol.Aggregate) Input { return Input{part: part} }

// DummyInput is one padding value v for coordinate j.
func DummyInput(j int, v float64) Input { return Input{coord: j, value: v} }

// Absorb folds one input into the open round. A malformed input is
// refused whole, leaving the round as it was (a driver may then Void it).
func (a *Analyzer) Absorb(in Input) error {
	if err := a.checkOpen("absorb"); err != nil {
		return err
	}
	switch {
	case in.batch != nil:
		return a.absorbBatch(in.batch)
	case in.part != nil:
		return a.agg.Merge(in.part)
	}
	if in.coord < 0 || in.coord >= len(a.model) {
		return checks.Invalidf("analyzer: dummy for coordinate %d outside [0, %d)", in.coord, len(a.model))
	}
	if math.IsNaN(in.value) || math.IsInf(in.value, 0) {
		return checks.Invalidf("analyzer: dummy for coordinate %d is %v", in.coord, in.value)
	}
	a.agg.AddValue(in.coord, in.value)
	return nil
}

// absorbBatch checks the whole batch, then folds it in: a batch for
// another round or dimension, a non-finite value or a malformed report
// refuses it whole. A finite value outside the randomizer's output range
// (a whole report holding one, or not of the protocol's layout) is left
// out and counted in Ready.Dropped: the round is then stated from the
// values that remain (Close).
func (a *Analyzer) absorbBatch(b *Batch[Plain]) error {
	if b.Round != a.s.Round || b.Dim != len(a.model) || b.Mode != a.mode {
		return fmt.Errorf("analyzer: batch of round %d (dimension %d, %s) in round %d (dimension %d, %s): %w",
			b.Round, b.Dim, b.Mode, a.s.Round, len(a.model), a.mode, ErrOrder)
	}
	if err := a.checkBatch(b); err != nil {
		return err
	}
	in := a.counts.Values.Contains
	for j, col := range b.Columns {
		for _, p := range col {
			if !in(p.Value) {
				a.dropped++
				continue
			}
			a.agg.Sum[j] += p.Value
			a.agg.Count[j]++
		}
	}
	for _, p := range b.Reports {
		if !a.wholeOK(p.Report) {
			a.dropped++
			continue
		}
		_ = a.agg.AddReport(p.Report) // checked
	}
	for _, p := range b.Meta {
		a.agg.Meta = append(a.agg.Meta, p.Value)
	}
	if a.mode == protocol.PerCoordinate {
		// The estimators' guard against a batch without metadata; the
		// statement never rests on this header count (settle).
		a.agg.Reports = int64(b.Senders)
	}
	return nil
}

// wholeOK says whether a whole report has the protocol's layout and only
// values in its randomizer's range.
func (a *Analyzer) wholeOK(r *protocol.Report) bool {
	if l := a.layout; l != nil && (r.Coords != nil || len(r.Values) != l.Coords || len(r.Meta) != l.Meta) {
		return false
	}
	for _, v := range r.Values {
		if !a.counts.Values.Contains(v) {
			return false
		}
	}
	return true
}

// checkBatch checks every value and report of b without changing anything.
func (a *Analyzer) checkBatch(b *Batch[Plain]) error {
	if b.Columns != nil && len(b.Columns) != len(a.model) {
		return checks.Invalidf("analyzer: batch has %d columns for dimension %d", len(b.Columns), len(a.model))
	}
	for j, col := range b.Columns {
		for i, p := range col {
			if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
				return checks.Invalidf("analyzer: value %d of coordinate %d is %v", i, j, p.Value)
			}
		}
	}
	for i, p := range b.Reports {
		if p.Report == nil {
			return checks.Invalidf("analyzer: report %d of the batch is empty", i)
		}
		if err := a.agg.CheckReport(p.Report); err != nil {
			return fmt.Errorf("analyzer: report %d of the batch: %w", i, err)
		}
	}
	for i, p := range b.Meta {
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			return checks.Invalidf("analyzer: metadata value %d is %v", i, p.Value)
		}
	}
	return nil
}

// Aggregate returns the open (or last) round's aggregate, read-only.
func (a *Analyzer) Aggregate() *protocol.Aggregate { return a.agg }

// Close estimates the open round's mean update from its aggregate
// (drawing any analyzer-side noise from r), adds it, scaled, to the global
// model (a clustered protocol's k models are replaced by the re-estimated
// ones), records the statement Open planned, and finishes the round. An
// estimate that fails or would make a model non-finite changes no model:
// the round is void (Ready.Void is Refused, Ready.Err the cause). Closing a
// round twice is ErrReleased.
func (a *Analyzer) Close(r *rand.Rand) (Ready, error) {
	if !a.open {
		if a.round == a.s.Round && a.round > 0 && a.st.Released {
			return Ready{}, fmt.Errorf("analyzer: round %d: %w", a.round, ErrReleased)
		}
		return Ready{}, a.checkOpen("close")
	}
	if !a.st.Released {
		return Ready{}, fmt.Errorf("analyzer: round %d was not accepted: %w", a.s.Round, ErrOrder)
	}
	void, why, err := a.settle()
	if err != nil {
		return Ready{}, fmt.Errorf("analyzer: %w", err)
	}
	if void != NotVoid {
		return a.void(void, why, nil)
	}
	if a.clustered != nil {
		err = a.estimateModels(r)
	} else {
		err = a.estimate(r)
	}
	if err != nil {
		return a.void(Refused, fmt.Sprintf("the batch was refused: %v", err), err)
	}
	if a.acct != nil {
		if err := a.acct.Record(a.st); err != nil {
			return Ready{}, fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
		}
	}
	rd := Ready{Round: a.s.Round, Released: true, Privacy: a.priv, Statement: a.st, Dropped: a.dropped, Restated: a.restated}
	if a.clustered != nil {
		for i, m := range a.next {
			copy(a.models[i], m)
		}
	} else {
		for j, v := range a.est {
			a.model[j] += a.scale * v
		}
		rd.Estimate = a.est
	}
	a.open, a.round = false, a.s.Round
	rd.Checkpoint = a.checkpoint()
	return rd, nil
}

// Void finishes the open round without releasing anything, for a reason
// the driver found (a batch it refused before the analyzer saw it, one
// Absorb refused): the accountant records the round as void.
func (a *Analyzer) Void(why string) (Ready, error) {
	if err := a.checkOpen("void"); err != nil {
		return Ready{}, err
	}
	return a.void(Refused, why, nil)
}

// void records the open round as void and finishes it.
func (a *Analyzer) void(v Void, why string, cause error) (Ready, error) {
	a.st.Released = false
	if a.acct != nil {
		if err := a.acct.Record(a.st); err != nil {
			a.open = false
			return Ready{}, fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
		}
	}
	a.open, a.round = false, a.s.Round
	return Ready{Round: a.s.Round, Void: v, Why: why, Err: cause, Privacy: a.priv, Statement: a.st, Checkpoint: a.checkpoint(), Dropped: a.dropped}, nil
}

func (a *Analyzer) checkpoint() *Checkpoint {
	return &Checkpoint{Round: a.round, Models: a.Models(), Accountant: a.acct}
}

// estimate computes a single-model protocol's estimate into a.est and
// checks that the model would stay finite.
func (a *Analyzer) estimate(r *rand.Rand) error {
	if err := a.estimator.Estimate(r, a.s, a.agg, a.est); err != nil {
		return fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
	}
	for j, v := range a.est {
		nw := a.model[j] + a.scale*v
		if math.IsNaN(nw) || math.IsInf(nw, 0) {
			return fmt.Errorf("round %d: the global model diverged (parameter %d is %v); lower lr or server-lr", a.s.Round, j, nw)
		}
	}
	return nil
}

// estimateModels re-estimates a clustered protocol's k models from the
// round's released vectors into a.next (copies, so that a refused result
// changes nothing); ServerLR does not apply.
func (a *Analyzer) estimateModels(r *rand.Rand) error {
	if a.next == nil {
		a.next = make([][]float64, len(a.models))
	}
	for i, m := range a.models {
		a.next[i] = append(a.next[i][:0], m...)
	}
	sizes, err := a.clustered.EstimateModels(r, a.s, a.agg, a.next)
	if err != nil {
		return fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
	}
	for i, m := range a.next {
		for j, v := range m {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("round %d: model %d diverged (parameter %d is %v)", a.s.Round, i, j, v)
			}
		}
	}
	a.sizes = sizes
	return nil
}
