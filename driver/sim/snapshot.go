package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// Snapshot is the state of a run after its last completed round: with the
// run's configuration it is everything needed to continue the run exactly
// as if it had not stopped. Every random draw of round t comes from streams
// named by (seed, purpose, t, client), so no generator state needs saving;
// the model, the per-client ledger, the run's accountant and the round
// number do. A Snapshot is plain data (JSON); package sim does no I/O.
type Snapshot struct {
	// Version is the snapshot format (SnapshotVersion).
	Version int `json:"version"`
	// Protocol, Seed, Clients and Dim identify the run it belongs to.
	Protocol string `json:"protocol"`
	Seed     uint64 `json:"seed"`
	Clients  int    `json:"clients"`
	Dim      int    `json:"dim"`
	// Round is the number of completed rounds.
	Round int `json:"round"`
	// Weights is the global model after Round rounds.
	Weights Vector `json:"weights"`
	// Ledger holds every release charged so far, in order per client.
	Ledger []account.Release `json:"ledger"`
	// Accountant is the run accountant's checkpoint (account.Accountant's
	// JSON), absent for non-private runs.
	Accountant json.RawMessage `json:"accountant,omitempty"`
	// MaxClientEpsilon is the largest total local epsilon charged to a
	// client so far.
	MaxClientEpsilon float64 `json:"max_client_epsilon"`
	// Halted is set when the run stopped at its privacy target.
	Halted string `json:"halted,omitempty"`
	// Hypotheses are the other k−1 models of a clustered protocol
	// (Weights is the first).
	Hypotheses []Vector `json:"hypotheses,omitempty"`
	// DLeak is every client's cumulative d-privacy leakage (protocols whose
	// guarantee is d-privacy).
	DLeak []float64 `json:"d_leak,omitempty"`
	// Validation is the early-stopping state (runs with validation
	// clients).
	Validation *ValidationState `json:"validation,omitempty"`
}

// UnmarshalJSON decodes a snapshot, naming the field whose value is
// corrupt (a checkpoint edited or truncated by hand): "weights: ...",
// "hypotheses[1]: ...". The error wraps checks.ErrInvalid.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	type plain Snapshot // without this method
	var raw struct {
		plain
		Weights    json.RawMessage   `json:"weights"`
		Hypotheses []json.RawMessage `json:"hypotheses,omitempty"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*s = Snapshot(raw.plain)
	if len(raw.Weights) > 0 {
		if err := json.Unmarshal(raw.Weights, &s.Weights); err != nil {
			return corrupt("weights: %v", err)
		}
	}
	s.Hypotheses = nil
	for i, h := range raw.Hypotheses {
		var v Vector
		if err := json.Unmarshal(h, &v); err != nil {
			return corrupt("hypotheses[%d]: %v", i, err)
		}
		s.Hypotheses = append(s.Hypotheses, v)
	}
	return nil
}

// SnapshotVersion is the current Snapshot format.
const SnapshotVersion = 1

// Snapshot returns the engine's state after the last completed round.
func (e *Engine) Snapshot() (Snapshot, error) {
	s := Snapshot{
		Version: SnapshotVersion, Protocol: e.cfg.Protocol, Seed: e.cfg.Seed, Clients: e.cfg.Clients, Dim: len(e.w),
		Round: e.round, Weights: append([]float64(nil), e.w...), MaxClientEpsilon: e.maxSpent, Halted: e.halted,
	}
	if !e.charges {
		s.MaxClientEpsilon = 0
	}
	if e.models != nil {
		for _, h := range e.models[1:] {
			s.Hypotheses = append(s.Hypotheses, append(Vector(nil), h...))
		}
	}
	if e.dlevel > 0 {
		s.DLeak = append([]float64(nil), e.dleak...)
	}
	if e.val != nil {
		st := e.val.state
		s.Validation = &st
	}
	for c := 0; c < e.cfg.Clients; c++ {
		rs, err := e.ledger.Entries(strconv.Itoa(c))
		if err != nil {
			return Snapshot{}, fmt.Errorf("snapshot: ledger: %w", err)
		}
		s.Ledger = append(s.Ledger, rs...)
	}
	if e.acct != nil {
		b, err := e.acct.MarshalJSON()
		if err != nil {
			return Snapshot{}, fmt.Errorf("snapshot: accountant: %w", err)
		}
		s.Accountant = b
	}
	return s, nil
}

// Restore sets a freshly built engine (no round run yet) to the state of
// snap, which must come from a run of the same protocol, seed, population
// and model. The configuration may plan more rounds than the snapshot's run
// did; the pre-flight check is then redone for the remaining rounds on top
// of what was already spent, and an error says if they no longer fit the
// run's delta or target. The privacy plan (PrivacyPlan) becomes that
// composition: the rounds done, with the statements they really made
// (their per-round deltas are the first plan's share, RoundDelta of its
// rounds), and the remaining rounds under the new plan. An extended run
// therefore states a different figure from a run planned that long from
// the start. Nothing is changed on error.
func (e *Engine) Restore(snap Snapshot) error {
	switch {
	case snap.Version != SnapshotVersion:
		return checks.Invalidf("checkpoint format %d, this shufflefl reads %d", snap.Version, SnapshotVersion)
	case e.round != 0:
		return checks.Invalidf("restore needs an engine that has not run a round yet")
	case snap.Protocol != e.cfg.Protocol || snap.Seed != e.cfg.Seed || snap.Clients != e.cfg.Clients || snap.Dim != len(e.w):
		return checks.Invalidf("checkpoint of %s (seed %d, %d clients, d = %d) does not match the run (%s, seed %d, %d clients, d = %d)",
			snap.Protocol, snap.Seed, snap.Clients, snap.Dim, e.cfg.Protocol, e.cfg.Seed, e.cfg.Clients, len(e.w))
	case snap.Round < 0 || snap.Round > e.cfg.Rounds:
		return checks.Invalidf("checkpoint after round %d, but the run has %d rounds (raise --rounds to continue it)", snap.Round, e.cfg.Rounds)
	case len(snap.Weights) != len(e.w):
		return checks.Invalidf("checkpoint has %d weights, the model %d", len(snap.Weights), len(e.w))
	}
	for i, v := range snap.Weights {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return checks.Invalidf("checkpoint weight %d is %v", i, v)
		}
	}
	ledger, maxSpent, err := e.restoreLedger(snap)
	if err != nil {
		return err
	}
	acct, plan, err := e.restoreAccountant(snap)
	if err != nil {
		return err
	}
	if (e.dlevel > 0) != (snap.DLeak != nil) || snap.DLeak != nil && len(snap.DLeak) != e.cfg.Clients {
		return checks.Invalidf("checkpoint has %d d-privacy leakage entries for %d clients of %s", len(snap.DLeak), e.cfg.Clients, e.cfg.Protocol)
	}
	if (e.val != nil) != (snap.Validation != nil) {
		return checks.Invalidf("checkpoint and run disagree on validation clients (checkpoint has early-stopping state: %v)", snap.Validation != nil)
	}
	if v := snap.Validation; v != nil && (v.Stop.Every != e.cfg.ValidateEvery || v.Stop.BestRound > snap.Round || v.Stop.BestRound < 0 || v.Stop.Bad < 0) {
		return checks.Invalidf("checkpoint's early-stopping state (every %d, best round %d, %d bad) does not fit the run (validate-every %d, round %d)",
			v.Stop.Every, v.Stop.BestRound, v.Stop.Bad, e.cfg.ValidateEvery, snap.Round)
	}
	var hyps [][]float64
	for _, h := range snap.Hypotheses {
		hyps = append(hyps, h)
	}
	if err := e.an.RestoreHypotheses(hyps); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := e.an.Restore(snap.Round, snap.Weights, acct); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if snap.DLeak != nil {
		copy(e.dleak, snap.DLeak)
	}
	if snap.Validation != nil {
		e.val.state = *snap.Validation
		// A resumed run may change the patience (e.g. to train on).
		e.val.state.Stop.Patience = e.cfg.Patience
	}
	e.ledger, e.acct, e.round, e.halted, e.plan = ledger, acct, snap.Round, snap.Halted, plan
	e.maxSpent = math.Max(maxSpent, snap.MaxClientEpsilon)
	if !e.charges {
		e.maxSpent = 0
	}
	return nil
}

// newLedger returns an empty per-client ledger with every client's cap set
// to cfg.ClientCap (none when 0).
func newLedger(cfg round.Config) (*account.Ledger, error) {
	l := account.NewLedger(account.NewMemoryStore())
	capEps := cfg.ClientCap
	if capEps == 0 {
		capEps = math.MaxFloat64
	}
	if err := l.SetDefaultCap(account.Cap{Epsilon: capEps, Delta: math.Nextafter(1, 0)}); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return l, nil
}

// SetStop installs a function that Run calls before each round; when it
// returns true, Run returns after the round in progress (the engine is then
// consistent and can be snapshotted).
func (e *Engine) SetStop(stop func() bool) { e.stop = stop }

// restoreLedger rebuilds the clients' ledger from a checkpoint's entries
// and returns it with the largest spend in it.
func (e *Engine) restoreLedger(snap Snapshot) (*account.Ledger, float64, error) {
	ledger, err := newLedger(e.cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("restore: %w", err)
	}
	maxSpent := 0.0
	for _, r := range snap.Ledger {
		if err := ledger.Charge(r); err != nil {
			return nil, 0, fmt.Errorf("restore: ledger entry %+v: %w", r, err)
		}
		sp, err := ledger.Spent(r.Client)
		if err != nil {
			return nil, 0, fmt.Errorf("restore: ledger: %w", err)
		}
		maxSpent = math.Max(maxSpent, sp.Epsilon)
	}
	return ledger, maxSpent, nil
}

// restoreAccountant restores a checkpoint's accountant (nil for a run
// without a guarantee) and the plan of the resumed run: what the rounds
// done really spent composed with the rounds that remain.
func (e *Engine) restoreAccountant(snap Snapshot) (*account.Accountant, round.Plan, error) {
	var acct *account.Accountant
	plan := e.plan
	if e.acct != nil {
		if len(snap.Accountant) == 0 {
			return nil, round.Plan{}, checks.Invalidf("checkpoint of a private run has no accountant state")
		}
		a, err := account.RestoreAccountant(snap.Accountant)
		if err != nil {
			return nil, round.Plan{}, fmt.Errorf("restore: %w", err)
		}
		if a.TargetDelta() != e.cfg.Delta {
			return nil, round.Plan{}, checks.Invalidf("checkpoint's run targets delta %g, the run %g", a.TargetDelta(), e.cfg.Delta)
		}
		if a.Rounds() != snap.Round {
			return nil, round.Plan{}, checks.Invalidf("checkpoint's accountant has %d rounds, the checkpoint %d", a.Rounds(), snap.Round)
		}
		// The plan is what the rounds done really spent (their recorded
		// statements, made under the plan of the run that ran them) composed
		// with the rounds that remain; those must still fit.
		// A run halted (at its target, or early) runs no further round and
		// keeps the plan it was run under.
		sp := a.Spent()
		if more := e.cfg.Rounds - snap.Round; snap.Halted == "" && more > 0 {
			if sp, _, err = e.pre.PlanFromBudgets(a, snap.Round+1, e.proto, e.budgets, true, false); err != nil {
				return nil, round.Plan{}, err
			}
			if sp.Delta > e.cfg.Delta*(1+1e-12) || math.IsInf(sp.Epsilon, 1) || math.IsNaN(sp.Epsilon) || e.cfg.TargetEpsilon > 0 && sp.Epsilon > e.cfg.TargetEpsilon*(1+1e-9) {
				return nil, round.Plan{}, checks.Invalidf("the %d remaining rounds do not fit the run's privacy budget on top of the %d done (they would reach epsilon %.4g at delta %.3g)",
					more, snap.Round, sp.Epsilon, sp.Delta)
			}
		}
		if snap.Halted == "" {
			plan.Done, plan.Epsilon, plan.Delta, plan.Method, plan.Approximate = snap.Round, sp.Epsilon, sp.Delta, sp.Method, sp.Approximate
		}
		acct = a
	} else if len(snap.Accountant) != 0 {
		return nil, round.Plan{}, checks.Invalidf("checkpoint has accountant state but %s is not private", e.cfg.Protocol)
	}
	return acct, plan, nil
}
