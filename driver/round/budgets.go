package round

import "github.com/shufflefl/shufflefl/protocol"

// Budgets resolves the clients' privacy budgets from the configuration: a
// named distribution (EpsDist), an explicit list (one per client, e.g. read
// from EpsFile by the caller), or the uniform Epsilon. Every epsilon is user
// level (a whole update in one round); every budget's delta is the round's
// share account.RoundDelta(Delta, Rounds) of the run's target delta (the
// local delta of approximate mechanisms such as ldp-gaussian and e-apes).
// It lists one budget per client; ResolveBudgets holds them compactly.
func Budgets(cfg Config, explicit []float64) ([]protocol.Budget, error) {
	b, err := ResolveBudgets(cfg, explicit)
	if err != nil {
		return nil, err
	}
	return b.Slice(), nil
}

// CentralTarget reports whether protocol name calibrates its noise to the
// run's target central epsilon itself (Params.Epsilon is then the target).
func CentralTarget(name string) bool { return name == "dp-central" || name == "split-mix" }
