package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/learning/data"
)

// EngineGame is the round-level distinguishing game run through the
// engine itself (package sim) rather than the protocol API: the real
// data partition, client sampling, local training, clipping inside Encode,
// shuffler and analyzer of the first round of cfg, and the round's central
// claim as the engine's accountant states it (with any sampling credit).
// One participant of round 1 is the canary: its update is replaced
// (Hooks.Update) by -C·1 in world 0 and +C·1 in world 1 (dp-central, DP
// under add/remove: 0, i.e. absence, and C/√d·1). Every trial builds the engine afresh with a new Hooks.NoiseSalt,
// so only the mechanisms' randomness (local randomizers, shuffler, analyzer
// noise) is redrawn while sampling, partition and training stay fixed; the
// adversary scores the sum of the released global model. Each engine runs
// with one worker; the game's workers run engines in parallel.
func EngineGame(ctx context.Context, cfg round.Config, split data.Split, g GameConfig) (ProtocolResult, error) {
	if g.Chunk == 0 {
		g.Chunk = 16 // a trial builds and runs an engine
	}
	g = g.withDefaults()
	if err := checkConf(g.Confidence); err != nil {
		return ProtocolResult{}, err
	}
	cfg.Rounds, cfg.Workers, cfg.Out = 1, 1, ""
	pilot, err := sim.New(cfg, split, nil)
	if err != nil {
		return ProtocolResult{}, err
	}
	parts := pilot.Sample(1)
	if len(parts) == 0 {
		return ProtocolResult{}, checks.Invalidf("round 1 samples no client: nothing to audit")
	}
	canary := parts[0]
	d := pilot.Model().Dim()
	amp, low := cfg.Clip, -cfg.Clip
	if AddRemove(cfg.Protocol) {
		// Add/remove neighbouring: a zero update is absence (fixed
		// denominator; split-mix's absent slot is a zero-update dummy),
		// the neighbour at L2 distance C is C/√d·1.
		amp, low = cfg.Clip/math.Sqrt(float64(d)), 0
	}
	first, err := pilot.Step()
	if err != nil {
		return ProtocolResult{}, err
	}
	priv := first.Privacy
	if !priv.Private || math.IsInf(priv.CentralEpsilon, 1) {
		return ProtocolResult{}, checks.Invalidf("protocol %s claims no central epsilon, so there is nothing to audit", cfg.Protocol)
	}
	eps, delta := priv.CentralEpsilon, priv.CentralDelta
	if err := CheckTrials(g.Trials, eps, delta, g.Confidence); err != nil {
		return ProtocolResult{}, err
	}
	var errOnce sync.Once
	var trialErr error
	fail := func(err error) { errOnce.Do(func() { trialErr = err }) }
	newSampler := func() func(*rand.Rand, int) float64 {
		return func(r *rand.Rand, world int) float64 {
			e, err := sim.New(cfg, split, nil)
			if err != nil {
				fail(err)
				return 0
			}
			v := low + float64(world)*(amp-low)
			e.SetHooks(sim.Hooks{
				Update: func(_, client int, u []float64) {
					if client == canary {
						for j := range u {
							u[j] = v
						}
					}
				},
				NoiseSalt: r.Uint64() | 1,
			})
			if _, err := e.Step(); err != nil {
				fail(err)
				return 0
			}
			var s float64
			for _, v := range e.Weights() {
				s += v
			}
			return s
		}
	}
	lo, hi := pilotRange(newSampler(), rand.New(rand.NewPCG(g.Seed, 0x9170)), 50)
	if trialErr != nil {
		return ProtocolResult{}, fmt.Errorf("engine game: %w", trialErr)
	}
	start := time.Now()
	res, err := runGame(ctx, newSampler, lo, hi, 200, delta, g)
	if err != nil {
		return ProtocolResult{}, err
	}
	if trialErr != nil {
		return ProtocolResult{}, fmt.Errorf("engine game: %w", trialErr)
	}
	res.Name = cfg.Protocol
	res.EpsClaimed, res.Delta, res.Miscalibrate = eps, delta, 1
	res.Inputs = fmt.Sprintf("client %d: %+.3g·1 vs %+.3g·1", canary, low, amp)
	res.Violation = res.EpsLower > eps
	res.Seconds = time.Since(start).Seconds()
	var local *float64
	if l := priv.LocalEpsilon.Max; !math.IsInf(l, 0) && !math.IsNaN(l) {
		local = &l
	}
	return ProtocolResult{GameResult: res, Protocol: cfg.Protocol, Mode: pilot.Protocol().Mode().String(), Dim: d,
		Clients: first.Participants, LocalEps: local, Bound: priv.Bound,
		Observable: "sum of the global model after round 1 (engine, fresh NoiseSalt per trial)"}, nil
}
