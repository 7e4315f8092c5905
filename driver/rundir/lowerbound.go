package rundir

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/protocol"
)

// runLowerBound returns the lower bound of summary.json: the protocol's
// (protocol.LowerBoundOf) for the rounds of recs at the run's cumulative
// delta, or nil for a run without a guarantee. The protocols' bounds
// assume the worst user reports in every round, so a run in which some
// round had fewer reporters than clients (sampling, sit-outs, held-out
// clients) or released nothing gets method "none" with the reason, unless
// the protocol samples its clients itself (Poisson: split-mix, whose bound
// covers the sampling); so does a bound that fails (the run's outputs do
// not depend on it).
func runLowerBound(eng *sim.Engine, cfg round.Config, recs []metrics.Record) *round.LowerBound {
	if eng.Accountant() == nil || len(recs) == 0 || recs[len(recs)-1].CumulativeEpsilon == nil {
		return nil
	}
	delta := recs[len(recs)-1].CumulativeDelta
	none := func(format string, a ...any) *round.LowerBound {
		return &round.LowerBound{LowerBound: protocol.LowerBound{Epsilon: math.NaN(), Delta: delta, Method: protocol.MethodNone}, Why: fmt.Sprintf(format, a...)}
	}
	worst, uniform, ok := eng.Budgets().Worst()
	if !ok {
		return none("the run has no clients' budgets")
	}
	// A protocol that samples its clients (Poisson) bounds the sampled
	// mechanism itself, whoever reported.
	ps, poisson := eng.Protocol().(protocol.PoissonSampler)
	poisson = poisson && ps.PoissonSampling()
	rounds := make([]protocol.LowerBoundRound, len(recs))
	for i, r := range recs {
		if r.RoundAloneEpsilon == nil {
			return none("round %d released nothing", r.Round)
		}
		if !poisson && r.Participants != cfg.Clients {
			return none("round %d had %d reporters of %d clients: the lower bounds assume the worst user reports in every round", r.Round, r.Participants, cfg.Clients)
		}
		rounds[i] = protocol.LowerBoundRound{
			Shape:   protocol.Shape{Round: r.Round, Dim: eng.Model().Dim(), Population: cfg.Clients, Participants: max(1, min(r.Participants, cfg.Clients))},
			Worst:   worst,
			Uniform: uniform,
		}
	}
	lb, err := protocol.LowerBoundOf(eng.Protocol(), rounds, delta)
	if err != nil {
		return none("%v", err)
	}
	if lb.Method == protocol.MethodNone {
		return none("no sound lower bound is implemented for %s in this setting", cfg.Protocol)
	}
	return &round.LowerBound{LowerBound: lb}
}
