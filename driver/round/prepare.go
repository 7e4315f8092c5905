package round

import (
	"fmt"
	"maps"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// Prepared is a run before its first round: the protocol built from the
// configuration and, after Preflight, calibrated to the run's target, the
// clients' budgets, the privacy plan, and what round 1's statement says of
// the clients' guarantee. Both drivers build their run from it, so a
// deployment runs the simulation's protocol.
type Prepared struct {
	// Config is the run's configuration (with ldp-min's derived
	// min-epsilon option).
	Config Config
	// Model is the architecture (its layers parameterize some protocols).
	Model fl.Model
	// PerRound is the number of clients sampled per round.
	PerRound int
	// Poisson says the protocol samples clients independently (rate
	// PerRound/Clients) rather than a fixed-size subset.
	Poisson bool
	// Proto is the protocol; ClientBudgets every client's budget for one
	// round (both scaled by the calibration; Budgets lists them).
	Proto         protocol.Protocol
	ClientBudgets ClientBudgets
	// Plan is the pre-flight privacy statement (after Preflight).
	Plan Plan
	// Charges says clients charge their ledgers (the protocol gives them a
	// local guarantee); LocalDelta says a charge spends the budget's delta.
	Charges, LocalDelta bool
	// DLevel is the d-privacy leakage of one participation (0: none).
	DLevel float64
	// Round1 is round 1's statement as planned.
	Round1 protocol.Privacy
	// Accountant is a fresh run accountant (nil without a guarantee).
	Accountant *account.Accountant
}

// Prepare builds the run's protocol for cfg (validated by the caller) with
// the given budgets, one per client; Preflight then checks and calibrates
// it.
func Prepare(cfg Config, model fl.Model, budgets []protocol.Budget) (*Prepared, error) {
	return PrepareBudgets(cfg, model, ListBudgets(budgets))
}

// PrepareBudgets is Prepare with the budgets held compactly.
func PrepareBudgets(cfg Config, model fl.Model, budgets ClientBudgets) (*Prepared, error) {
	p := &Prepared{Config: cfg, Model: model, PerRound: cfg.ClientsPerRound, ClientBudgets: budgets}
	if p.PerRound == 0 {
		p.PerRound = cfg.Clients
	}
	if cfg.Protocol == "ldp-min" {
		// LDP-Min perturbs every client at the population's minimum budget;
		// unless the option is given, derive it from the budgets.
		if _, ok := cfg.Options["min-epsilon"]; !ok {
			lo := budgets.MinEpsilon()
			opts := maps.Clone(cfg.Options)
			if opts == nil {
				opts = map[string]float64{}
			}
			opts["min-epsilon"] = lo
			p.Config.Options = opts
		}
	}
	var err error
	if p.Proto, err = p.buildProtocol(1); err != nil {
		return nil, err
	}
	if ps, ok := p.Proto.(protocol.PoissonSampler); ok && ps.PoissonSampling() {
		p.Poisson = true
	}
	return p, nil
}

// Shape is round t's shape before sampling: the population and the
// planned participants.
func (pr *Prepared) Shape(t int) protocol.Shape {
	return protocol.Shape{Round: t, Dim: pr.Model.Dim(), Population: pr.Config.Clients, Participants: pr.PerRound}
}

// Sample returns the participants of round t in increasing order: a
// uniform PerRound-subset of the population (SampleFixed), or under
// Poisson sampling each client independently with probability
// PerRound/Clients, from the stream rng.Stream(seed, LabelSampling, t).
func (pr *Prepared) Sample(t int) []int {
	r := rng.Stream(pr.Config.Seed, rng.LabelSampling, uint64(t))
	N, n := pr.Config.Clients, pr.PerRound
	if pr.Poisson {
		return SamplePoisson(r, N, float64(n)/float64(N))
	}
	return SampleFixed(r, N, n)
}

// Participants is Sample held compactly: a round the whole population
// takes part in is the range 0..Clients-1, not a list. That is fixed-size
// sampling of every client, and Poisson sampling at rate 1, where every
// draw of r.Float64() (in [0, 1)) keeps its client.
func (pr *Prepared) Participants(t int) Participants {
	if pr.PerRound >= pr.Config.Clients {
		return AllClients(pr.Config.Clients)
	}
	return ParticipantList(pr.Sample(t))
}

// Budgets returns every client's budget for one round, one per client (a
// new slice; ClientBudgets holds them compactly).
func (pr *Prepared) Budgets() []protocol.Budget { return pr.ClientBudgets.Slice() }

// targetTolerance is the relative precision of the calibration to a target:
// the calibrated scale is within this factor of the largest scale whose
// planned cumulative epsilon is at most the target.
const targetTolerance = 1e-3

// buildProtocol constructs the run's protocol with every local budget
// multiplied by scale (the public eps_l of FLAME, the clients' budgets).
func (pr *Prepared) buildProtocol(scale float64) (protocol.Protocol, error) {
	cfg := pr.Config
	params := protocol.Params{
		Clip: cfg.Clip, Delta: cfg.Delta, Epsilon: cfg.Epsilon * scale, Rounds: cfg.Rounds,
		SampleRate: float64(pr.PerRound) / float64(cfg.Clients), Extra: cfg.Options, Secure: cfg.SecureNoise,
		Population: cfg.Clients,
	}
	for _, l := range pr.Model.Layers() {
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

// roundBudgets returns the budgets of round t's sampled clients (all
// clients if nobody is sampled, so that a statement still exists).
func (pr *Prepared) roundBudgets(t int, budgets ClientBudgets) ([]protocol.Budget, int) {
	parts := pr.Participants(t)
	if parts.Len() == 0 {
		return budgets.Slice(), 0
	}
	return budgets.Of(parts), parts.Len()
}

// planRounds returns the planned cumulative spend of the run's rounds with
// protocol p and the given budgets, if every sampled client reports: the
// plan of a run starting from round 1 (PlanFrom with a fresh accountant).
func (pr *Prepared) planRounds(p protocol.Protocol, budgets ClientBudgets, exact, fast bool) (account.Spent, protocol.Privacy, error) {
	acct, err := account.NewAccountant(pr.Config.Delta)
	if err != nil {
		return account.Spent{}, protocol.Privacy{}, err
	}
	return pr.PlanFromBudgets(acct, 1, p, budgets, exact, fast)
}

// PlanFrom returns what the run will have spent after its last planned
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
func (pr *Prepared) PlanFrom(acct *account.Accountant, first int, p protocol.Protocol, budgets []protocol.Budget, exact, fast bool) (account.Spent, protocol.Privacy, error) {
	return pr.PlanFromBudgets(acct, first, p, ListBudgets(budgets), exact, fast)
}

// PlanFromBudgets is PlanFrom with the budgets held compactly.
func (pr *Prepared) PlanFromBudgets(acct *account.Accountant, first int, p protocol.Protocol, budgets ClientBudgets, exact, fast bool) (account.Spent, protocol.Privacy, error) {
	if fast {
		acct = acct.WithoutPLD()
	}
	uniform := budgets.UniformEpsilon()
	T := pr.Config.Rounds
	one := func(t int) (account.Statement, protocol.Privacy, error) {
		s := pr.Shape(t)
		bs, n := pr.roundBudgets(t, budgets)
		if !pr.Poisson && n > 0 {
			s.Participants = n
		}
		if err := p.Check(s, bs); err != nil {
			return account.Statement{}, protocol.Privacy{}, fmt.Errorf("round %d: %w", t, err)
		}
		priv, err := p.Account(s, bs)
		if err != nil {
			return account.Statement{}, protocol.Privacy{}, fmt.Errorf("round %d: accountant: %w", t, err)
		}
		return role.Statement(s, len(bs), len(bs), true, priv), priv, nil
	}
	st, priv, err := one(first)
	if err != nil {
		return account.Spent{}, priv, err
	}
	if uniform || pr.PerRound == pr.Config.Clients && !pr.Poisson || !exact {
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

// Preflight validates the run's privacy before round 1: the first round's
// statement, calibration to TargetEpsilon (which rebuilds Proto and scales
// Budgets), the planned composition, and that a client cap has a local
// guarantee to cap.
func (pr *Prepared) Preflight() error {
	if err := pr.preflight(); err != nil {
		return err
	}
	if c := pr.Config.ClientCap; c > 0 && !pr.Charges && !(pr.DLevel > 0 && !math.IsInf(pr.DLevel, 1)) {
		return checks.Invalidf("client-cap needs a protocol with a local guarantee; %s gives clients none", pr.Config.Protocol)
	}
	return nil
}

// preflight is Preflight without the client cap's check: the first round's
// statement, calibration to TargetEpsilon, and the planned composition.
func (pr *Prepared) preflight() error {
	cfg := pr.Config
	_, priv, err := pr.planRounds(pr.Proto, pr.ClientBudgets, false, true)
	if err != nil {
		return err
	}
	pr.Plan = Plan{Private: priv.Private, Rounds: cfg.Rounds, Scale: 1, TargetEpsilon: cfg.TargetEpsilon}
	// Only protocols that give clients a local guarantee charge the ledger.
	pr.Charges = priv.Private && !math.IsInf(priv.LocalEpsilon.Max, 1)
	pr.LocalDelta = priv.LocalDelta > 0
	if priv.DPrivacy != nil && !math.IsInf(priv.DPrivacy.Level, 1) {
		pr.DLevel = priv.DPrivacy.Level
	}
	if !priv.Private {
		if cfg.TargetEpsilon > 0 {
			return checks.Invalidf("target-epsilon needs a private protocol; %s gives no guarantee", cfg.Protocol)
		}
		pr.Plan.Epsilon = math.Inf(1)
		return nil
	}
	if pr.Accountant, err = account.NewAccountant(cfg.Delta); err != nil {
		return err
	}
	if cfg.TargetEpsilon > 0 && !CentralTarget(cfg.Protocol) {
		if err := pr.calibrate(); err != nil {
			return err
		}
	}
	sp, priv, err := pr.planRounds(pr.Proto, pr.ClientBudgets, true, false)
	if err != nil {
		return err
	}
	pr.Round1 = priv
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
	pr.Plan.Epsilon, pr.Plan.Delta, pr.Plan.Method, pr.Plan.Approximate = sp.Epsilon, sp.Delta, sp.Method, sp.Approximate
	pr.Plan.LocalEpsilon = pr.ClientBudgets.MaxEpsilon()
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
func (pr *Prepared) calibrate() error {
	c := calibration{pr: pr, base: pr.ClientBudgets, target: pr.Config.TargetEpsilon}
	// Largest local epsilon considered: beyond it every bound is the local
	// guarantee, and clients would release their data nearly in the clear.
	c.maxLocal = c.base.MaxEpsilon()
	const localCeiling = 1e6
	c.hiScale = localCeiling / c.maxLocal
	lo, hi, err := c.bracket(1, 2, true)
	if err != nil {
		return err
	}
	lo = c.bisect(lo, hi, true)
	if lo < c.hiScale {
		// The full accountant's scale is at least lo.
		flo, fhi, err := c.bracket(lo, 1.25, false)
		if err != nil {
			return err
		}
		lo = c.bisect(flo, fhi, false)
	}
	// Personalized budgets with client sampling: each round's sample has
	// its own statement; shrink until the exact plan meets the target too.
	for i := 0; !c.fits(lo, true, false); i++ {
		if i == 60 {
			return checks.Invalidf("target-epsilon %g: calibration did not converge for %s", c.target, pr.Config.Protocol)
		}
		lo /= 1 + targetTolerance
	}
	p, err := pr.buildProtocol(lo)
	if err != nil {
		return err
	}
	pr.Proto, pr.ClientBudgets = p, c.base.Scaled(lo)
	pr.Plan.Scale = lo
	return nil
}

// calibration is calibrate's search state: the unscaled budgets, the
// target, and the largest scale considered.
type calibration struct {
	pr                *Prepared
	base              ClientBudgets
	target            float64
	maxLocal, hiScale float64
}

// cum is the planned cumulative epsilon at scale (+Inf when the plan
// needs more than the run's delta).
func (c *calibration) cum(scale float64, exact, fast bool) (float64, error) {
	p, err := c.pr.buildProtocol(scale)
	if err != nil {
		return math.Inf(1), err
	}
	sp, _, err := c.pr.planRounds(p, c.base.Scaled(scale), exact, fast)
	if err != nil {
		return math.Inf(1), err
	}
	if sp.Delta > c.pr.Config.Delta*(1+1e-12) {
		return math.Inf(1), nil
	}
	return sp.Epsilon, nil
}

// fits says whether the plan at scale meets the target.
func (c *calibration) fits(scale float64, exact, fast bool) bool {
	cum, err := c.cum(scale, exact, fast)
	return err == nil && cum <= c.target
}

// bracket returns lo < hi (lo fits, hi does not, or lo == hi == hiScale
// when even the ceiling fits), searching geometrically from start by
// factor f.
func (c *calibration) bracket(start, f float64, fast bool) (lo, hi float64, err error) {
	if c.fits(start, false, fast) {
		lo = start
		for s := start * f; ; s *= f {
			if s >= c.hiScale {
				if c.fits(c.hiScale, false, fast) {
					return c.hiScale, c.hiScale, nil
				}
				return lo, c.hiScale, nil
			}
			if !c.fits(s, false, fast) {
				return lo, s, nil
			}
			lo = s
		}
	}
	hi = start
	for s := start / f; ; s /= f {
		if s*c.maxLocal < 1e-12 {
			cum, err := c.cum(s, false, fast)
			why := fmt.Sprintf("even local epsilon %.3g spends %.4g", s*c.maxLocal, cum)
			if err != nil {
				why = err.Error()
			}
			cfg := c.pr.Config
			return 0, 0, checks.Invalidf("target-epsilon %g is not reachable with %s over %d rounds at delta %g: %s", c.target, cfg.Protocol, cfg.Rounds, cfg.Delta, why)
		}
		if c.fits(s, false, fast) {
			return s, hi, nil
		}
		hi = s
	}
}

// bisect narrows [lo, hi] geometrically to targetTolerance, keeping lo a
// scale that fits.
func (c *calibration) bisect(lo, hi float64, fast bool) float64 {
	for hi > lo*(1+targetTolerance) {
		mid := math.Sqrt(lo * hi)
		if c.fits(mid, false, fast) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Training returns the clients' local training of cfg and the scale the
// analyzer applies to the mean update: the server learning rate under
// FedAvg, −server-lr·lr under FedSGD (the clients send gradients).
func Training(cfg Config) (fl.LocalConfig, float64) {
	local := fl.LocalConfig{Epochs: cfg.LocalEpochs, Steps: cfg.LocalSteps, Batch: cfg.Batch, LR: cfg.LR, Mu: cfg.Mu, Mode: fl.FedAvg}
	scale := cfg.ServerLR
	if cfg.Mode == "fedsgd" {
		local.Mode = fl.FedSGD
		scale = -cfg.ServerLR * cfg.LR
	}
	return local, scale
}
