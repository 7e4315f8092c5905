package audit

import (
	"context"
	"errors"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/protocol"
)

// ProtocolAuditConfig configures ProtocolAudit: the games of `shufflefl
// audit protocol` for one protocol or all private ones.
type ProtocolAuditConfig struct {
	// Protocol names the protocol, or "all" (every private protocol).
	Protocol string
	// Epsilon is every client's user-level local epsilon; TargetEpsilon
	// the central epsilon of the add/remove protocols (dp-central,
	// split-mix).
	Epsilon, TargetEpsilon, Delta, Clip float64
	Dim, Clients                        int
	// Miscalibrate encodes with this many times the budget and claims the
	// budget (a negative control; 1: correct).
	Miscalibrate float64
	// Trials per world of the game; TightTrials of the tight game (played
	// with Protocol "all" only; 0 skips it).
	Trials, TightTrials int64
	Confidence          float64
	// Options are the protocols' options (NAME=VALUE, parsed).
	Options map[string]float64
	Seed    uint64
	Workers int
	// Engine plays the game through the engine's first round of a run on
	// Dataset (Split, loaded by the caller) and Model, with
	// SamplesPerClient examples per client.
	Engine           bool
	Dataset, Model   string
	SamplesPerClient int
	Split            data.Split
	// Progress returns a progress reporter for a game (nil: none).
	Progress func(what string) func(done, total int64)
	// Warn reports a protocol skipped under "all" (nil: silent).
	Warn func(protocol string, err error)
}

// ProtocolAudit plays the distinguishing game of every protocol cfg names
// (ProtocolGame, or EngineGame with cfg.Engine) and, for "all", the tight
// game at the joint (Bonferroni) confidence over the protocols. Under "all"
// a protocol whose game cannot be played is listed as skipped; the report's
// Command is left to the caller.
func ProtocolAudit(ctx context.Context, cfg ProtocolAuditConfig) (ProtocolReport, error) {
	if cfg.TightTrials < 0 {
		return ProtocolReport{}, checks.Invalidf("--tight-trials must be >= 0, got %d", cfg.TightTrials)
	}
	names := []string{cfg.Protocol}
	if cfg.Protocol == "all" {
		names = nil
		for _, n := range protocol.Names() {
			if n != "nonprivate" {
				names = append(names, n)
			}
		}
	}
	progress := func(what string) func(done, total int64) {
		if cfg.Progress == nil {
			return nil
		}
		return cfg.Progress(what)
	}
	rep := ProtocolReport{Skipped: map[string]string{}}
	for _, n := range names {
		game := GameConfig{Trials: cfg.Trials, Confidence: cfg.Confidence, Seed: cfg.Seed, Workers: cfg.Workers, Progress: progress(n + " trials")}
		res, err := cfg.game(ctx, n, game)
		if err != nil {
			if len(names) > 1 {
				rep.Skipped[n] = oneLine(err)
				if cfg.Warn != nil {
					cfg.Warn(n, err)
				}
				continue
			}
			return rep, err
		}
		rep.Results = append(rep.Results, res)
	}
	if cfg.Protocol == "all" && !cfg.Engine && cfg.TightTrials > 0 {
		rep.TightSkipped = map[string]string{}
		rep.TightConfidence = 1 - (1-cfg.Confidence)/float64(len(names))
		for _, n := range names {
			game := GameConfig{Trials: cfg.TightTrials, Confidence: rep.TightConfidence, Seed: cfg.Seed,
				Workers: cfg.Workers, Progress: progress(n + " tight-game trials")}
			res, err := ProtocolGame(ctx, ProtocolConfig{Protocol: n, Params: cfg.params(n), Epsilon: cfg.Epsilon,
				Dim: TightDim, Clients: TightClients, Miscalibrate: cfg.Miscalibrate, Game: game})
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return rep, err
				}
				rep.TightSkipped[n] = oneLine(err)
				continue
			}
			rep.Tight = append(rep.Tight, res)
		}
	}
	return rep, nil
}

// game plays the game of protocol n, through the protocol API or the engine.
func (cfg ProtocolAuditConfig) game(ctx context.Context, n string, game GameConfig) (ProtocolResult, error) {
	if !cfg.Engine {
		return ProtocolGame(ctx, ProtocolConfig{Protocol: n, Params: cfg.params(n), Epsilon: cfg.Epsilon, Dim: cfg.Dim, Clients: cfg.Clients,
			Miscalibrate: cfg.Miscalibrate, Game: game})
	}
	if cfg.Miscalibrate != 1 {
		return ProtocolResult{}, checks.Invalidf("--miscalibrate is not available with --engine (the engine's claim and noise come from the same budget)")
	}
	rc := round.DefaultConfig()
	rc.Protocol, rc.Dataset, rc.Model, rc.Clients, rc.SamplesPerClient, rc.LocalEpochs = n, cfg.Dataset, cfg.Model, cfg.Clients, cfg.SamplesPerClient, 1
	rc.Clip, rc.Delta, rc.Epsilon, rc.Seed, rc.Options = cfg.Clip, cfg.Delta, cfg.Epsilon, cfg.Seed, cfg.Options
	if AddRemove(n) {
		rc.TargetEpsilon = cfg.TargetEpsilon
	}
	if n == "ldp-min" {
		rc.Options = map[string]float64{"min-epsilon": cfg.Epsilon}
	}
	return EngineGame(ctx, rc, cfg.Split, game)
}

// params are protocol n's parameters in the game.
func (cfg ProtocolAuditConfig) params(n string) protocol.Params {
	p := protocol.Params{Clip: cfg.Clip, Delta: cfg.Delta, Epsilon: cfg.Epsilon, Rounds: 1, SampleRate: 1, Extra: cfg.Options}
	if AddRemove(n) {
		p.Epsilon = cfg.TargetEpsilon
	}
	if n == "split-mix" && len(cfg.Options) == 0 {
		// The split-and-mix theorem needs at least 19 honest slots; the
		// fast path (one noisy value per coordinate) releases the same sum
		// bit for bit, far faster per trial.
		p.Extra = map[string]float64{"slots": 20, "fast": 1}
	}
	if n == "ldp-min" {
		p.Extra = map[string]float64{"min-epsilon": cfg.Epsilon}
	}
	return p
}
