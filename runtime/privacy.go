package runtime

import (
	"fmt"
	"maps"
	"math"

	"shufflefl/account"
	"shufflefl/checks"
	"shufflefl/protocol"
)

// Plan is the privacy statement a run makes before round 1: what its planned
// rounds will spend if every sampled client reports, and how the local
// budgets were calibrated to a target.
type Plan struct {
	// Private is false for protocols without a guarantee.
	Private bool `json:"private"`
	// Rounds is the number of planned rounds.
	Rounds int `json:"rounds"`
	// Done is the number of rounds already run when the plan was made: 0
	// before round 1, the checkpoint's round for a resumed run, whose plan
	// composes the statements those rounds really made (under the plan of
	// the run that made them) with the Rounds-Done rounds that remain.
	Done int `json:"done,omitempty"`
	// Epsilon and Delta are the planned cumulative central guarantee.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Method names the composition behind them.
	Method string `json:"method"`
	// Approximate: some planned or recorded round's statement is an
	// approximation, not a proven bound (S-APES), so the plan is too.
	Approximate bool `json:"approximate,omitempty"`
	// TargetEpsilon is the requested target (0: none).
	TargetEpsilon float64 `json:"target_epsilon,omitempty"`
	// Scale is the factor applied to every local budget to meet the target
	// (1 without a target).
	Scale float64 `json:"scale"`
	// LocalEpsilon is the calibrated uniform local epsilon (user level, one
	// round), or the largest calibrated personalized budget.
	LocalEpsilon float64 `json:"local_epsilon"`
}

// targetTolerance is the relative precision of the calibration to a target:
// the calibrated scale is within this factor of the largest scale whose
// planned cumulative epsilon is at most the target.
const targetTolerance = 1e-3

// CentralTarget reports whether protocol name calibrates its noise to the
// run's target central epsilon itself (Params.Epsilon is then the target).
func CentralTarget(name string) bool { return name == "dp-central" || name == "split-mix" }

// buildProtocol constructs the run's protocol with every local budget
// multiplied by scale (the public eps_l of FLAME, the clients' budgets).
func (e *Engine) buildProtocol(scale float64) (protocol.Protocol, error) {
	cfg := e.cfg
	params := protocol.Params{
		Clip: cfg.Clip, Delta: cfg.Delta, Epsilon: cfg.Epsilon * scale, Rounds: cfg.Rounds,
		SampleRate: float64(e.perRound) / float64(cfg.Clients), Extra: cfg.Options, Secure: cfg.SecureNoise,
		Population: cfg.Clients,
	}
	for _, l := range e.model.Layers() {
		params.Layers = append(params.Layers, l.Len)
	}
	if CentralTarget(cfg.Protocol) {
		if cfg.TargetEpsilon <= 0 {
			return nil, checks.Invalidf("%s calibrates its noise to a target central epsilon of the whole run: set --target-epsilon (--epsilon is a client's local budget, which %s does not have)", cfg.Protocol, cfg.Protocol)
		}
		params.Epsilon = cfg.TargetEpsilon
	}
	if cfg.Protocol == "ldp-min" && scale != 1 {
		params.Extra = maps.Clone(cfg.Options)
		params.Extra["min-epsilon"] *= scale
	}
	return protocol.New(cfg.Protocol, params)
}

// scaled returns budgets with every epsilon multiplied by scale.
func scaled(budgets []protocol.Budget, scale float64) []protocol.Budget {
	out := make([]protocol.Budget, len(budgets))
	for i, b := range budgets {
		out[i] = protocol.Budget{Epsilon: b.Epsilon * scale, Delta: b.Delta}
	}
	return out
}

// statement turns a round's Privacy into the accountant's record.
func statement(s protocol.Shape, sampled, reporters int, released bool, p protocol.Privacy) account.Statement {
	return account.Statement{
		Round: s.Round, SampleRate: s.SampleRate(), Sampled: sampled, Reporters: reporters, Released: released,
		Epsilon: p.CentralEpsilon, Delta: p.CentralDelta, Components: p.Components, RDP: p.RDP, TV: p.TV, Bound: p.Bound,
		Approximate: p.Approximate,
	}
}

// roundBudgets returns the budgets of round t's sampled clients (all
// clients if nobody is sampled, so that a statement still exists).
func (e *Engine) roundBudgets(t int, budgets []protocol.Budget) ([]protocol.Budget, int) {
	parts := e.Sample(t)
	if len(parts) == 0 {
		return budgets, 0
	}
	out := make([]protocol.Budget, len(parts))
	for i, c := range parts {
		out[i] = budgets[c]
	}
	return out, len(parts)
}

// planRounds returns the planned cumulative spend of the run's rounds with
// protocol p and the given budgets, if every sampled client reports: the
// plan of a run starting from round 1 (planFrom with a fresh accountant).
func (e *Engine) planRounds(p protocol.Protocol, budgets []protocol.Budget, exact, fast bool) (account.Spent, protocol.Privacy, error) {
	acct, err := account.NewAccountant(e.cfg.Delta)
	if err != nil {
		return account.Spent{}, protocol.Privacy{}, err
	}
	return e.planFrom(acct, 1, p, budgets, exact, fast)
}

// planFrom returns what the run will have spent after its last planned
// round if rounds first..Rounds are released with protocol p and the given
// budgets, every sampled client reporting, on top of the rounds acct has
// recorded (a resumed run's real rounds: their own statements, whatever
// plan they were made under). It also returns round first's statement.
// When every planned round has the same statement (uniform budgets, or
// every client in every round) it is computed once; otherwise every
// round's own sample is accounted when exact is set, and round first's
// statement repeated when not.
//
// With fast set, the plan leaves out the PLD method (never tighter than
// the full plan, and much cheaper): calibration brackets with it. acct is
// not changed.
func (e *Engine) planFrom(acct *account.Accountant, first int, p protocol.Protocol, budgets []protocol.Budget, exact, fast bool) (account.Spent, protocol.Privacy, error) {
	if fast {
		acct = acct.WithoutPLD()
	}
	uniform := true
	for _, b := range budgets {
		if b.Epsilon != budgets[0].Epsilon {
			uniform = false
			break
		}
	}
	T := e.cfg.Rounds
	one := func(t int) (account.Statement, protocol.Privacy, error) {
		s := e.shape(t)
		bs, n := e.roundBudgets(t, budgets)
		if !e.poisson && n > 0 {
			s.Participants = n
		}
		if err := p.Check(s, bs); err != nil {
			return account.Statement{}, protocol.Privacy{}, fmt.Errorf("round %d: %w", t, err)
		}
		priv, err := p.Account(s, bs)
		if err != nil {
			return account.Statement{}, protocol.Privacy{}, fmt.Errorf("round %d: accountant: %w", t, err)
		}
		return statement(s, len(bs), len(bs), true, priv), priv, nil
	}
	st, priv, err := one(first)
	if err != nil {
		return account.Spent{}, priv, err
	}
	if uniform || e.perRound == e.cfg.Clients && !e.poisson || !exact {
		sp, err := acct.Plan(st, T-first+1)
		return sp, priv, err
	}
	all := []account.Statement{st}
	for t := first + 1; t <= T; t++ {
		s, _, err := one(t)
		if err != nil {
			return account.Spent{}, priv, err
		}
		all = append(all, s)
	}
	sp, err := acct.PlanAll(all)
	return sp, priv, err
}

// preflight validates the run's privacy before round 1: the first round's
// statement, calibration to TargetEpsilon, and the planned composition.
func (e *Engine) preflight() error {
	cfg := e.cfg
	_, priv, err := e.planRounds(e.proto, e.budgets, false, true)
	if err != nil {
		return err
	}
	e.plan = Plan{Private: priv.Private, Rounds: cfg.Rounds, Scale: 1, TargetEpsilon: cfg.TargetEpsilon}
	// Only protocols that give clients a local guarantee charge the ledger.
	e.charges = priv.Private && !math.IsInf(priv.LocalEpsilon.Max, 1)
	e.approxLocal = priv.LocalDelta > 0
	if priv.DPrivacy != nil && !math.IsInf(priv.DPrivacy.Level, 1) {
		e.dlevel = priv.DPrivacy.Level
	}
	if !priv.Private {
		if cfg.TargetEpsilon > 0 {
			return checks.Invalidf("target-epsilon needs a private protocol; %s gives no guarantee", cfg.Protocol)
		}
		e.plan.Epsilon = math.Inf(1)
		return nil
	}
	if e.acct, err = account.NewAccountant(cfg.Delta); err != nil {
		return err
	}
	if cfg.TargetEpsilon > 0 && !CentralTarget(cfg.Protocol) {
		if err := e.calibrate(); err != nil {
			return err
		}
	}
	sp, priv, err := e.planRounds(e.proto, e.budgets, true, false)
	if err != nil {
		return err
	}
	e.round1 = priv
	if sp.Delta <= cfg.Delta*(1+1e-12) && (math.IsInf(sp.Epsilon, 1) || math.IsNaN(sp.Epsilon)) {
		return checks.Invalidf("the %d planned rounds of %s compose to epsilon %v by %s, beyond what a float64 holds: lower --epsilon",
			cfg.Rounds, cfg.Protocol, sp.Epsilon, sp.Method)
	}
	if sp.Delta > cfg.Delta*(1+1e-12) || math.IsInf(sp.Epsilon, 1) || math.IsNaN(sp.Epsilon) {
		return checks.Invalidf("the %d planned rounds of %s do not compose within the run's delta %g (they need delta %.3g, epsilon %v by %s): raise --delta or lower --rounds",
			cfg.Rounds, cfg.Protocol, cfg.Delta, sp.Delta, sp.Epsilon, sp.Method)
	}
	if cfg.TargetEpsilon > 0 && sp.Epsilon > cfg.TargetEpsilon*(1+1e-9) {
		return checks.Invalidf("target-epsilon %g is not reachable: the %d planned rounds of %s spend at least %.4g at delta %g by %s",
			cfg.TargetEpsilon, cfg.Rounds, cfg.Protocol, sp.Epsilon, cfg.Delta, sp.Method)
	}
	e.plan.Epsilon, e.plan.Delta, e.plan.Method, e.plan.Approximate = sp.Epsilon, sp.Delta, sp.Method, sp.Approximate
	for _, b := range e.budgets {
		e.plan.LocalEpsilon = math.Max(e.plan.LocalEpsilon, b.Epsilon)
	}
	return nil
}

// calibrate finds the largest common scale of the local budgets whose
// planned cumulative epsilon is at most the target (within
// targetTolerance), and rebuilds the protocol and budgets with it. Only
// scales whose plan was computed and met the target are ever accepted, so
// the result is rigorous whatever the numerical behaviour of the bounds.
//
// The search first brackets the scale with the cheap accountant (without
// PLD, whose epsilon is never smaller, so its scale fits the full plan
// too), then refines with the full accountant, whose scale can only be
// larger.
func (e *Engine) calibrate() error {
	cfg := e.cfg
	target := cfg.TargetEpsilon
	base := e.budgets
	cum := func(scale float64, exact, fast bool) (float64, error) {
		p, err := e.buildProtocol(scale)
		if err != nil {
			return math.Inf(1), err
		}
		sp, _, err := e.planRounds(p, scaled(base, scale), exact, fast)
		if err != nil {
			return math.Inf(1), err
		}
		if sp.Delta > cfg.Delta*(1+1e-12) {
			return math.Inf(1), nil
		}
		return sp.Epsilon, nil
	}
	fits := func(scale float64, exact, fast bool) bool {
		c, err := cum(scale, exact, fast)
		return err == nil && c <= target
	}
	// Largest local epsilon considered: beyond it every bound is the local
	// guarantee, and clients would release their data nearly in the clear.
	maxLocal := 0.0
	for _, b := range base {
		maxLocal = math.Max(maxLocal, b.Epsilon)
	}
	const localCeiling = 1e6
	hiScale := localCeiling / maxLocal
	// bracket returns lo < hi (lo fits, hi does not, or lo == hi ==
	// hiScale when even the ceiling fits), searching geometrically from
	// start by factor f.
	bracket := func(start, f float64, fast bool) (lo, hi float64, err error) {
		if fits(start, false, fast) {
			lo = start
			for s := start * f; ; s *= f {
				if s >= hiScale {
					if fits(hiScale, false, fast) {
						return hiScale, hiScale, nil
					}
					return lo, hiScale, nil
				}
				if !fits(s, false, fast) {
					return lo, s, nil
				}
				lo = s
			}
		}
		hi = start
		for s := start / f; ; s /= f {
			if s*maxLocal < 1e-12 {
				c, err := cum(s, false, fast)
				why := fmt.Sprintf("even local epsilon %.3g spends %.4g", s*maxLocal, c)
				if err != nil {
					why = err.Error()
				}
				return 0, 0, checks.Invalidf("target-epsilon %g is not reachable with %s over %d rounds at delta %g: %s", target, cfg.Protocol, cfg.Rounds, cfg.Delta, why)
			}
			if fits(s, false, fast) {
				return s, hi, nil
			}
			hi = s
		}
	}
	bisect := func(lo, hi float64, fast bool) float64 {
		for hi > lo*(1+targetTolerance) {
			mid := math.Sqrt(lo * hi)
			if fits(mid, false, fast) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	lo, hi, err := bracket(1, 2, true)
	if err != nil {
		return err
	}
	lo = bisect(lo, hi, true)
	if lo < hiScale {
		// The full accountant's scale is at least lo.
		flo, fhi, err := bracket(lo, 1.25, false)
		if err != nil {
			return err
		}
		lo = bisect(flo, fhi, false)
	}
	// Personalized budgets with client sampling: each round's sample has
	// its own statement; shrink until the exact plan meets the target too.
	for i := 0; !fits(lo, true, false); i++ {
		if i == 60 {
			return checks.Invalidf("target-epsilon %g: calibration did not converge for %s", target, cfg.Protocol)
		}
		lo /= 1 + targetTolerance
	}
	p, err := e.buildProtocol(lo)
	if err != nil {
		return err
	}
	e.proto, e.budgets = p, scaled(base, lo)
	e.plan.Scale = lo
	return nil
}

// PrivacyPlan returns the run's pre-flight privacy statement.
func (e *Engine) PrivacyPlan() Plan { return e.plan }

// Accountant returns the run's stateful accountant (nil for non-private
// protocols): every round that happened, composed.
func (e *Engine) Accountant() *account.Accountant { return e.acct }

// Halted returns why the run stopped before its planned rounds ("" if it
// did not).
func (e *Engine) Halted() string { return e.halted }
