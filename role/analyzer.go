package role

import (
	"fmt"
	"math"
	"math/rand/v2"

	"shufflefl/account"
	"shufflefl/checks"
	"shufflefl/protocol"
)

// Analyzer is the analyzer's side of a run: it holds the global model and
// the run's accountant, opens rounds in order, absorbs each round's
// shuffled batch (or, in a simulation, the partial aggregates the driver
// streamed reports into), estimates the mean update with the protocol's
// analyzer, applies it, and records the round's privacy statement.
//
// Every input from outside — a batch, a dummy, a partial aggregate — goes
// through an error-returning path: a malformed value (a coordinate out of
// range, a non-finite value, a wrong length) is refused without changing
// the round, never a panic. Releasing a round twice is ErrReleased.
//
// An Analyzer is not safe for concurrent use.
type Analyzer struct {
	proto protocol.Protocol
	// clustered is set for protocols with k models (models[0] is model).
	clustered protocol.Clustered
	// estimator is the analyzer role of a single-model protocol.
	estimator protocol.Estimator
	models    [][]float64
	sizes     []int
	acct      *account.Accountant
	model     []float64
	est       []float64
	scale     float64
	round     int // last finished round (released or void)
	open      bool
	s         protocol.Shape
	agg       *protocol.Aggregate
}

// AnalyzerConfig describes an analyzer.
type AnalyzerConfig struct {
	// Protocol is the run's protocol.
	Protocol protocol.Protocol
	// Model is the initial global model. The analyzer updates it in place:
	// the caller may read it between rounds but must not write it.
	Model []float64
	// Hypotheses are the other k−1 initial models of a clustered protocol
	// (protocol.Clustered), each as long as Model and updated in place
	// like it; nil otherwise.
	Hypotheses [][]float64
	// ServerLR scales the estimate before it is added to the model
	// (FedAvg: the server learning rate; FedSGD: −server-lr × lr).
	ServerLR float64
	// Accountant is the run's accountant (nil for protocols without a
	// privacy statement).
	Accountant *account.Accountant
}

// NewAnalyzer returns an analyzer before its first round.
func NewAnalyzer(c AnalyzerConfig) (*Analyzer, error) {
	if c.Protocol == nil {
		return nil, checks.Invalidf("analyzer: no protocol")
	}
	if len(c.Model) == 0 {
		return nil, checks.Invalidf("analyzer: empty model")
	}
	if err := checks.Finite("server learning rate", c.ServerLR); err != nil {
		return nil, err
	}
	for j, v := range c.Model {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, checks.Invalidf("analyzer: initial model parameter %d is %v", j, v)
		}
	}
	d := len(c.Model)
	a := &Analyzer{proto: c.Protocol, acct: c.Accountant, model: c.Model, est: make([]float64, d), scale: c.ServerLR, agg: protocol.NewAggregate(d)}
	if cl, ok := c.Protocol.(protocol.Clustered); ok {
		if len(c.Hypotheses) != cl.Hypotheses()-1 {
			return nil, checks.Invalidf("analyzer: %s keeps %d models, got %d", cl.Name(), cl.Hypotheses(), len(c.Hypotheses)+1)
		}
		a.clustered = cl
		a.models = append([][]float64{c.Model}, c.Hypotheses...)
		for i, h := range c.Hypotheses {
			if err := checks.Vector(fmt.Sprintf("analyzer: initial hypothesis %d", i+1), h, d); err != nil {
				return nil, err
			}
		}
		a.agg.KeepVectors()
	} else if len(c.Hypotheses) != 0 {
		return nil, checks.Invalidf("analyzer: %s keeps one model, got %d", c.Protocol.Name(), len(c.Hypotheses)+1)
	} else if est, err := protocol.Estimating(c.Protocol); err != nil {
		return nil, fmt.Errorf("analyzer: %w", err)
	} else {
		a.estimator = est
	}
	return a, nil
}

// Models returns the k models of a clustered protocol (models[0] is
// Model()), or just Model(); not copies: do not modify.
func (a *Analyzer) Models() [][]float64 {
	if a.models == nil {
		return [][]float64{a.model}
	}
	return a.models
}

// ClusterSizes returns, for a clustered protocol, how many released
// vectors each model was estimated from in the last released round.
func (a *Analyzer) ClusterSizes() []int { return a.sizes }

// Model returns the global model (not a copy: do not modify).
func (a *Analyzer) Model() []float64 { return a.model }

// Round returns the number of finished rounds (released or void).
func (a *Analyzer) Round() int { return a.round }

// Restore sets the analyzer to a checkpoint: round rounds finished, the
// model (copied into the analyzer's) and the accountant that recorded
// them. No round may be open.
func (a *Analyzer) Restore(round int, model []float64, acct *account.Accountant) error {
	if a.open {
		return fmt.Errorf("analyzer: restore with round %d open: %w", a.s.Round, ErrOrder)
	}
	if round < 0 || len(model) != len(a.model) {
		return checks.Invalidf("analyzer: checkpoint of round %d with %d parameters, want %d", round, len(model), len(a.model))
	}
	copy(a.model, model)
	a.round, a.acct = round, acct
	return nil
}

// RestoreHypotheses sets the other k−1 models of a clustered protocol from
// a checkpoint (see Restore for the first).
func (a *Analyzer) RestoreHypotheses(hs [][]float64) error {
	if a.open {
		return fmt.Errorf("analyzer: restore with round %d open: %w", a.s.Round, ErrOrder)
	}
	want := max(len(a.models), 1) - 1
	if len(hs) != want {
		return checks.Invalidf("analyzer: checkpoint has %d models, the protocol keeps %d", len(hs)+1, want+1)
	}
	for i, h := range hs {
		if err := checks.Vector(fmt.Sprintf("checkpoint hypothesis %d", i+1), h, len(a.model)); err != nil {
			return err
		}
	}
	for i, h := range hs {
		copy(a.models[i+1], h)
	}
	return nil
}

// Open starts round s.Round, which must follow the last finished round.
func (a *Analyzer) Open(s protocol.Shape) error {
	if a.open {
		return fmt.Errorf("analyzer: round %d opened while round %d is open: %w", s.Round, a.s.Round, ErrOrder)
	}
	if s.Round != a.round+1 {
		return fmt.Errorf("analyzer: round %d opened after round %d: %w", s.Round, a.round, ErrOrder)
	}
	if s.Dim != len(a.model) {
		return checks.Invalidf("analyzer: round of dimension %d for a model of %d parameters", s.Dim, len(a.model))
	}
	a.s, a.open = s, true
	a.agg.Reset()
	return nil
}

func (a *Analyzer) checkOpen(op string) error {
	if !a.open {
		return fmt.Errorf("analyzer: %s with no round open (last finished: %d): %w", op, a.round, ErrOrder)
	}
	return nil
}

// Merge folds a partial aggregate (a simulation driver's block of reports,
// already validated by Aggregate.AddReport) into the open round.
func (a *Analyzer) Merge(part *protocol.Aggregate) error {
	if err := a.checkOpen("merge"); err != nil {
		return err
	}
	return a.agg.Merge(part)
}

// AddDummy absorbs one padding value for coordinate j.
func (a *Analyzer) AddDummy(j int, v float64) error {
	if err := a.checkOpen("dummy"); err != nil {
		return err
	}
	if j < 0 || j >= len(a.model) {
		return checks.Invalidf("analyzer: dummy for coordinate %d outside [0, %d)", j, len(a.model))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return checks.Invalidf("analyzer: dummy for coordinate %d is %v", j, v)
	}
	a.agg.AddValue(j, v)
	return nil
}

// Absorb folds the round's shuffled batch into the round, as the analyzer
// does after opening the sealed payloads. The whole batch is checked
// before anything is absorbed: a batch for another round or dimension, a
// non-finite value or a malformed report refuses it whole.
func (a *Analyzer) Absorb(b *Batch[Plain]) error {
	if err := a.checkOpen("batch"); err != nil {
		return err
	}
	if b.Round != a.s.Round || b.Dim != len(a.model) || b.Mode != a.proto.Mode() {
		return fmt.Errorf("analyzer: batch of round %d (dimension %d, %s) in round %d (dimension %d, %s): %w",
			b.Round, b.Dim, b.Mode, a.s.Round, len(a.model), a.proto.Mode(), ErrOrder)
	}
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
		if err := a.agg.CheckReport(p.Report); err != nil { // changes nothing
			return fmt.Errorf("analyzer: report %d of the batch: %w", i, err)
		}
	}
	for i, p := range b.Meta {
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			return checks.Invalidf("analyzer: metadata value %d is %v", i, p.Value)
		}
	}
	for j, col := range b.Columns {
		for _, p := range col {
			a.agg.Sum[j] += p.Value
		}
		a.agg.Count[j] += int64(len(col))
	}
	for _, p := range b.Reports {
		_ = a.agg.AddReport(p.Report) // checked above
	}
	for _, p := range b.Meta {
		a.agg.Meta = append(a.agg.Meta, p.Value)
	}
	a.agg.Reports = int64(b.Senders)
	return nil
}

// Aggregate returns the open (or last) round's aggregate, read-only.
func (a *Analyzer) Aggregate() *protocol.Aggregate { return a.agg }

// Release estimates the round's mean update from its aggregate (drawing
// any analyzer-side noise from r), adds it, scaled, to the global model,
// records st (which must say Released) in the accountant, and finishes the
// round. It returns the estimate (valid until the next round). A second
// Release of the round is ErrReleased; a model that would become
// non-finite is refused before any parameter changes.
func (a *Analyzer) Release(r *rand.Rand, st account.Statement) ([]float64, error) {
	if !a.open {
		if a.round == st.Round && st.Round > 0 {
			return nil, fmt.Errorf("analyzer: round %d: %w", st.Round, ErrReleased)
		}
		return nil, a.checkOpen("release")
	}
	if st.Round != a.s.Round || !st.Released {
		return nil, fmt.Errorf("analyzer: releasing round %d with the statement of round %d (released: %v): %w", a.s.Round, st.Round, st.Released, ErrOrder)
	}
	if a.clustered != nil {
		return nil, a.releaseModels(r, st)
	}
	if err := a.estimator.Estimate(r, a.s, a.agg, a.est); err != nil {
		return nil, fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
	}
	for j, v := range a.est {
		nw := a.model[j] + a.scale*v
		if math.IsNaN(nw) || math.IsInf(nw, 0) {
			return nil, fmt.Errorf("round %d: the global model diverged (parameter %d is %v); lower lr or server-lr", a.s.Round, j, nw)
		}
	}
	if a.acct != nil {
		if err := a.acct.Record(st); err != nil {
			return nil, fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
		}
	}
	for j, v := range a.est {
		a.model[j] += a.scale * v
	}
	a.open, a.round = false, a.s.Round
	return a.est, nil
}

// Void finishes the open round without releasing anything (every client
// refused, too few reports, or the round would pass the run's privacy
// target) and records st, which must not say Released, in the accountant.
func (a *Analyzer) Void(st account.Statement) error {
	if err := a.checkOpen("void"); err != nil {
		return err
	}
	if st.Round != a.s.Round || st.Released {
		return fmt.Errorf("analyzer: voiding round %d with the statement of round %d (released: %v): %w", a.s.Round, st.Round, st.Released, ErrOrder)
	}
	if a.acct != nil {
		if err := a.acct.Record(st); err != nil {
			return fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
		}
	}
	a.open, a.round = false, a.s.Round
	return nil
}

// releaseModels is Release for a clustered protocol: the k models are
// re-estimated from the round's released vectors (on copies, so that a
// refused result changes nothing) and replace the current ones; ServerLR
// does not apply.
func (a *Analyzer) releaseModels(r *rand.Rand, st account.Statement) error {
	next := make([][]float64, len(a.models))
	for i, m := range a.models {
		next[i] = append([]float64(nil), m...)
	}
	sizes, err := a.clustered.EstimateModels(r, a.s, a.agg, next)
	if err != nil {
		return fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
	}
	for i, m := range next {
		for j, v := range m {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("round %d: model %d diverged (parameter %d is %v)", a.s.Round, i, j, v)
			}
		}
	}
	if a.acct != nil {
		if err := a.acct.Record(st); err != nil {
			return fmt.Errorf("analyzer: round %d: %w", a.s.Round, err)
		}
	}
	for i, m := range next {
		copy(a.models[i], m)
	}
	a.sizes = sizes
	a.open, a.round = false, a.s.Round
	return nil
}
