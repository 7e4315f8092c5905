package role

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// Analyzer is the analyzer's side of a run, a machine that decides each
// round itself: it holds the global model (or a clustered protocol's k
// models) and the run's accountant, opens rounds in order on the facts a
// driver observed (Open: the protocol's Check and Account, the run's
// target, void or accept), absorbs the round's reports (Absorb), and
// estimates and releases the round (Close) or voids it (Void). Each
// decision comes back as a Ready: what was released and what to persist.
//
// Every input from outside — a batch, a dummy, a partial aggregate — goes
// through an error-returning path: a malformed value (a coordinate out of
// range, a non-finite value, a wrong length) is refused without changing
// the round, never a panic. An estimate the analyzer cannot release (a
// batch it cannot estimate from, a model that would diverge) voids the
// round, changing neither the models nor anything but the accountant's
// record of a void round.
//
// An Analyzer is not safe for concurrent use.
type Analyzer struct {
	acc  protocol.Accounter
	mode protocol.ShuffleMode
	// clustered is set for protocols with k models (models[0] is model).
	clustered protocol.Clustered
	// estimator is the analyzer role of a single-model protocol.
	estimator protocol.Estimator
	models    [][]float64
	sizes     []int
	acct      *account.Accountant
	target    float64
	model     []float64
	est       []float64
	scale     float64
	round     int // last finished round (released or void)
	open      bool
	s         protocol.Shape
	agg       *protocol.Aggregate
	// st is the open round's statement, as Open planned it.
	st   account.Statement
	priv protocol.Privacy
	// next holds a clustered protocol's re-estimated models until Close
	// applies them.
	next [][]float64
	// counted is the protocol's description of what a statement rests on
	// (nil: nothing the analyzer can count); counts is the open round's.
	counted protocol.Counted
	counts  protocol.Counts
	layout  *protocol.Layout
	// sampled, minReports and uniform are the open round's facts the
	// statement may be remade from: uniform is the reporters' common
	// budget (ok false when they differ).
	sampled, minReports int
	uniform             protocol.Budget
	uniformOK           bool
	// dropped counts the open round's opened values (or whole reports)
	// outside the randomizer's range; restated says why the statement
	// was remade from the opened counts ("" when it was not).
	dropped  int64
	restated string
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
	// TargetEpsilon, if positive, is the run's hard limit on the
	// cumulative epsilon: a round that would pass it is void.
	TargetEpsilon float64
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
	if err := checks.Finite("target epsilon", c.TargetEpsilon); err != nil {
		return nil, err
	}
	a := &Analyzer{acc: c.Protocol, mode: c.Protocol.Mode(), acct: c.Accountant, target: c.TargetEpsilon,
		model: c.Model, est: make([]float64, d), scale: c.ServerLR, agg: protocol.NewAggregate(d)}
	a.counted, _ = c.Protocol.(protocol.Counted)
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
