package audit

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// ProtocolConfig configures the distinguishing game through one whole
// round of a protocol.
type ProtocolConfig struct {
	Protocol string
	// Params are the protocol's parameters at the claimed budget
	// (Params.Epsilon: a client's local epsilon for FLAME, the target
	// central epsilon for dp-central); Rounds and SampleRate default to 1.
	Params protocol.Params
	// Epsilon is every client's user-level local epsilon (ignored by
	// dp-central and nonprivate); Delta of the budgets is the round's share
	// of Params.Delta, as in the engine.
	Epsilon float64
	Dim     int // model dimension d of the game (small: every trial encodes Clients·Dim values)
	Clients int // participants n of the round (the whole population)
	// Miscalibrate builds the clients' (and analyzer's) noise for
	// Miscalibrate times the budget while the claim stays at the budget: a
	// negative control (1: correct).
	Miscalibrate float64
	Game         GameConfig
}

// The tight game's shape. With two clients and one coordinate, client 0's
// report carries its whole budget on one value and only one other client's
// noise blurs the analyzer's view, so a threshold test comes close to the
// claim of the protocols whose claim is tight (the Laplace LDP baselines
// reach it; a halved Laplace scale doubles eps_lower). The default game
// (d = 2, n = 10) measures a realistic round, where the other clients'
// noise hides a halved scale.
const (
	TightDim     = 1
	TightClients = 2
)

// ProtocolResult is the outcome of a protocol game.
type ProtocolResult struct {
	GameResult
	Protocol string `json:"protocol"`
	Mode     string `json:"shuffle"`
	Dim      int    `json:"dim"`
	Clients  int    `json:"clients"`
	// LocalEps is the claimed local epsilon (nil: none, e.g. dp-central).
	LocalEps   *float64 `json:"local_epsilon"`
	Bound      string   `json:"bound"`
	Observable string   `json:"observable"`
}

// ProtocolGame plays the distinguishing game through a whole round of a
// protocol: n clients, of which client 0 holds the update -C·1 (world 0) or
// +C·1 (world 1) — the extreme neighbours of per-coordinate clipping to
// [-C, C] under the replace-one relation of local DP; for dp-central, which
// is DP under add/remove-one-client neighbouring with L2 clipping, 0
// (absence, since its estimator's denominator is fixed) or (C/√d)·1 — and
// every other client
// a fixed update drawn once from the seed. Each trial runs every client's
// Encode, the shuffler (protocol.Shuffle: padding and permutation) and the
// analyzer's Estimate with fresh mechanism randomness; the adversary
// observes the analyzer's estimate and scores it by the sum of its
// coordinates (the direction in which the two worlds differ); without a
// shuffler (LDP baselines) the analyzer holds client 0's own report and
// scores it the same way. The claim is
// the round's CentralEpsilon and CentralDelta from Protocol.Account.
func ProtocolGame(ctx context.Context, cfg ProtocolConfig) (ProtocolResult, error) {
	if cfg.Game.Chunk == 0 {
		cfg.Game.Chunk = 256 // a trial is a whole round
	}
	g := cfg.Game.withDefaults()
	rg, priv, err := newRoundGame(cfg, g)
	if err != nil {
		return ProtocolResult{}, err
	}
	eps, delta := priv.CentralEpsilon, priv.CentralDelta
	observable := "sum of the analyzer's estimate"
	if rg.ownReport {
		observable = "sum of client 0's report (no shuffler: the analyzer sees it with its sender)"
	}
	// Pilot run (its own stream) to place the histogram's bins.
	lo, hi := pilotRange(rg.newSampler(), rng.Stream(g.Seed, 0xa0d17, 0x9170), 500)
	start := time.Now()
	if rg.err != nil {
		return ProtocolResult{}, fmt.Errorf("protocol %s: %w", cfg.Protocol, rg.err)
	}
	res, err := runGame(ctx, rg.newSampler, lo, hi, 400, delta, g)
	if err != nil {
		return ProtocolResult{}, err
	}
	if rg.err != nil {
		return ProtocolResult{}, fmt.Errorf("protocol %s: %w", cfg.Protocol, rg.err)
	}
	res.Name = cfg.Protocol
	res.EpsClaimed, res.Delta, res.Miscalibrate = eps, delta, rg.cfg.Miscalibrate
	res.Inputs = fmt.Sprintf("client 0: %+.3g·1 vs %+.3g·1", rg.lowWorld, rg.target)
	res.Violation = res.EpsLower > eps
	res.Seconds = time.Since(start).Seconds()
	var local *float64
	if l := priv.LocalEpsilon.Max; !math.IsInf(l, 0) && !math.IsNaN(l) {
		local = &l
	}
	return ProtocolResult{GameResult: res, Protocol: cfg.Protocol, Mode: rg.mode.String(), Dim: cfg.Dim,
		Clients: cfg.Clients, LocalEps: local, Bound: priv.Bound,
		Observable: observable}, nil
}

// roundGame is one protocol round set up for the game: the protocol that
// encodes (at the miscalibrated budget), the other clients' fixed updates
// and client 0's two worlds.
type roundGame struct {
	cfg        ProtocolConfig
	shape      protocol.Shape
	mode       protocol.ShuffleMode
	encP       protocol.Protocol
	encBudgets []protocol.Budget
	fixed      [][]float64
	// Client 0's update coordinate in world 0 and world 1.
	lowWorld, target float64
	// ownReport: without a shuffler the analyzer receives client 0's
	// report with its identity, and the adversary scores that report;
	// otherwise it sees only the shuffled batch, and scores the estimate.
	ownReport bool
	// The first error of any trial (none is expected once Check passed)
	// aborts the game after the trials.
	errOnce sync.Once
	err     error
}

// newRoundGame validates cfg, states the round's claim (the protocol's own
// accounting at the claimed budget) and sets up the game.
func newRoundGame(cfg ProtocolConfig, g GameConfig) (*roundGame, protocol.Privacy, error) {
	var none protocol.Privacy
	if err := checkConf(g.Confidence); err != nil {
		return nil, none, err
	}
	if err := checks.IntAtLeast("dim", cfg.Dim, 1); err != nil {
		return nil, none, err
	}
	if err := checks.IntAtLeast("clients", cfg.Clients, 2); err != nil {
		return nil, none, err
	}
	if cfg.Miscalibrate == 0 {
		cfg.Miscalibrate = 1
	}
	if math.IsNaN(cfg.Miscalibrate) || cfg.Miscalibrate < 1 || math.IsInf(cfg.Miscalibrate, 0) {
		return nil, none, checks.Invalidf("miscalibrate must be a finite factor >= 1, got %v", cfg.Miscalibrate)
	}
	params := gameParams(cfg)
	shape := protocol.Shape{Round: 1, Dim: cfg.Dim, Population: cfg.Clients, Participants: cfg.Clients}
	claimP, budgets, err := protocolAt(cfg, params, 1)
	if err != nil {
		return nil, none, err
	}
	if err := claimP.Check(shape, budgets); err != nil {
		return nil, none, err
	}
	priv, err := claimP.Account(shape, budgets)
	if err != nil {
		return nil, none, err
	}
	if !priv.Private || math.IsInf(priv.CentralEpsilon, 1) {
		return nil, none, checks.Invalidf("protocol %s claims no central epsilon, so there is nothing to audit", cfg.Protocol)
	}
	encP, encBudgets, err := protocolAt(cfg, params, cfg.Miscalibrate)
	if err != nil {
		return nil, none, err
	}
	if err := CheckTrials(g.Trials, priv.CentralEpsilon, priv.CentralDelta, g.Confidence); err != nil {
		return nil, none, err
	}
	rg := &roundGame{cfg: cfg, shape: shape, mode: claimP.Mode(), encP: encP, encBudgets: encBudgets, target: params.Clip, lowWorld: -params.Clip,
		ownReport: claimP.Mode() == protocol.NoShuffle && !AddRemove(cfg.Protocol)}
	if AddRemove(cfg.Protocol) {
		// dp-central and split-mix are DP under add/remove-one-client
		// neighbouring with a fixed denominator: a zero update is the same
		// as absence (split-mix pads the round to K slots, and an absent
		// client's slot is a dummy with a noise share and a zero update),
		// and the neighbour at distance C is C/√d·1.
		rg.target = params.Clip / math.Sqrt(float64(cfg.Dim))
		rg.lowWorld = 0
	}
	// Fixed updates of the other clients, uniform in [-target, target].
	rg.fixed = make([][]float64, cfg.Clients)
	fr := rng.Stream(g.Seed, 0xa0d17, 0xf1ed)
	for i := range rg.fixed {
		rg.fixed[i] = make([]float64, cfg.Dim)
		for j := range rg.fixed[i] {
			rg.fixed[i][j] = rg.target * (2*fr.Float64() - 1)
		}
	}
	return rg, priv, nil
}

// gameParams are cfg.Params with the game's defaults filled in.
func gameParams(cfg ProtocolConfig) protocol.Params {
	params := cfg.Params
	if params.Rounds == 0 {
		params.Rounds = 1
	}
	if params.SampleRate == 0 {
		params.SampleRate = 1
	}
	if params.Layers == nil {
		params.Layers = []int{cfg.Dim} // one layer: split-mix sizes its shares from it
	}
	if params.Population == 0 {
		params.Population = cfg.Clients
	}
	return params
}

func (rg *roundGame) fail(err error) { rg.errOnce.Do(func() { rg.err = err }) }

// newSampler returns a trial of the game: one round in the given world,
// scored by the sum of what the adversary observes.
func (rg *roundGame) newSampler() func(*rand.Rand, int) float64 {
	reports := make([]protocol.Report, rg.cfg.Clients)
	buf := make([]float64, rg.cfg.Dim)
	est := make([]float64, rg.cfg.Dim)
	return func(r *rand.Rand, world int) float64 {
		for i := range reports {
			copy(buf, rg.fixed[i])
			if i == 0 {
				for j := range buf {
					buf[j] = rg.lowWorld + float64(world)*(rg.target-rg.lowWorld)
				}
			}
			if err := rg.encP.Encode(r, rg.shape, buf, rg.encBudgets[i], &reports[i]); err != nil {
				rg.fail(err)
				return 0
			}
		}
		if rg.ownReport {
			return sum(reports[0].Values)
		}
		if err := rg.estimate(r, reports, est); err != nil {
			rg.fail(err)
			return 0
		}
		return sum(est)
	}
}

// estimate shuffles the round's reports and writes the analyzer's estimate.
func (rg *roundGame) estimate(r *rand.Rand, reports []protocol.Report, est []float64) error {
	sh, err := protocol.Shuffle(r, r, rg.encP, rg.shape, reports)
	if err != nil {
		return err
	}
	agg, err := sh.Aggregate()
	if err != nil {
		return err
	}
	estP, err := protocol.Estimating(rg.encP)
	if err != nil {
		return err
	}
	return estP.Estimate(r, rg.shape, agg, est)
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

// AddRemove reports whether protocol name states central DP under
// add/remove-one-client neighbouring with noise calibrated to a target
// central epsilon (dp-central, split-mix: round.CentralTarget), rather
// than a local budget under replace-one.
func AddRemove(name string) bool { return round.CentralTarget(name) }

// protocolAt builds the protocol and the clients' budgets with every
// epsilon multiplied by f.
func protocolAt(cfg ProtocolConfig, p protocol.Params, f float64) (protocol.Protocol, []protocol.Budget, error) {
	p.Epsilon *= f
	if p.Extra != nil && f != 1 {
		p.Extra = maps.Clone(p.Extra)
		if v, ok := p.Extra["min-epsilon"]; ok {
			p.Extra["min-epsilon"] = v * f
		}
	}
	pr, err := protocol.New(cfg.Protocol, p)
	if err != nil {
		return nil, nil, err
	}
	eps := cfg.Epsilon * f
	if eps == 0 {
		eps = p.Epsilon
	}
	b := make([]protocol.Budget, cfg.Clients)
	for i := range b {
		b[i] = protocol.Budget{Epsilon: eps, Delta: account.RoundDelta(p.Delta, p.Rounds)}
	}
	return pr, b, nil
}

// pilotRange returns a histogram range covering the scores of n pilot
// trials per world with a margin of half the spread on each side.
func pilotRange(sample func(*rand.Rand, int) float64, r *rand.Rand, n int) (lo, hi float64) {
	xs := make([]float64, 0, 2*n)
	for i := 0; i < n; i++ {
		xs = append(xs, sample(r, 0), sample(r, 1))
	}
	lo, hi = slices.Min(xs), slices.Max(xs)
	m := (hi - lo) / 2
	if !(m > 0) {
		m = math.Max(1, math.Abs(lo))
	}
	return lo - m, hi + m
}
