package round

import (
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// Budgets resolves the clients' privacy budgets from the configuration: a
// named distribution (EpsDist), an explicit list (one per client, e.g. read
// from EpsFile by the caller), or the uniform Epsilon. Every epsilon is user
// level (a whole update in one round); every budget's delta is the round's
// share account.RoundDelta(Delta, Rounds) of the run's target delta (the
// local delta of approximate mechanisms such as ldp-gaussian and e-apes).
func Budgets(cfg Config, explicit []float64) ([]protocol.Budget, error) {
	n := cfg.Clients
	var eps []float64
	switch {
	case explicit != nil:
		if len(explicit) != n {
			return nil, checks.Invalidf("the budget file has %d epsilons but there are %d clients", len(explicit), n)
		}
		eps = explicit
	case cfg.EpsDist != "":
		var err error
		eps, err = account.Budgets(cfg.EpsDist, n, rng.Stream(cfg.Seed, rng.LabelBudget))
		if err != nil {
			return nil, fmt.Errorf("eps-dist: %w", err)
		}
	default:
		eps = make([]float64, n)
		for i := range eps {
			eps[i] = cfg.Epsilon
		}
	}
	scale := cfg.EpsScale
	if scale == 0 {
		scale = 1
	}
	out := make([]protocol.Budget, n)
	for i, e := range eps {
		e *= scale
		if err := checks.Epsilon(fmt.Sprintf("epsilon of client %d", i), e); err != nil {
			return nil, err
		}
		out[i] = protocol.Budget{Epsilon: e, Delta: account.RoundDelta(cfg.Delta, cfg.Rounds)}
	}
	return out, nil
}

// CentralTarget reports whether protocol name calibrates its noise to the
// run's target central epsilon itself (Params.Epsilon is then the target).
func CentralTarget(name string) bool { return name == "dp-central" || name == "split-mix" }
