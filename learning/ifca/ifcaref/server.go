package ifcaref

import (
	"fmt"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/cluster"
)

// ServerResult is the outcome of the server's part of a round.
type ServerResult struct {
	// Hypotheses are θ_j^(t+1): the mean of the releases in each k-means
	// cluster; a cluster that received no release keeps its hypothesis.
	Hypotheses [][]float64
	// Assign[i] is the cluster of release i; Sizes the cluster sizes.
	Assign []int
	Sizes  []int
	// Inertia and Iterations are k-means diagnostics (cluster.Result).
	Inertia    float64
	Iterations int
}

// ServerRound is the server side of a round of Algorithm 1 (lines 9-10):
// k-means over the released vectors, initialised at the current hypotheses
// (Lloyd's algorithm to convergence, at most maxIter iterations, 0 meaning
// 100), and the per-cluster average as the new hypotheses. Releases are
// anonymous and unweighted: the server knows neither which hypothesis a
// client trained nor how many samples it holds (Section 4, deviations 2-3).
// The result is deterministic for any workers (package cluster). Neither
// argument is modified.
//
// Bad input (an error wrapping checks.ErrInvalid): no hypotheses, no
// releases, or a release whose dimension differs from the hypotheses'.
// Fewer releases than hypotheses is allowed (clients may decline): the
// clusters left empty keep their hypotheses; configurations with k larger
// than the clients per round are rejected earlier, by Config.Validate.
func ServerRound(releases, hyps [][]float64, maxIter, workers int) (ServerResult, error) {
	if err := checkHypotheses(hyps); err != nil {
		return ServerResult{}, fmt.Errorf("server round: %w", err)
	}
	if len(releases) == 0 {
		return ServerResult{}, checks.Invalidf("server round: no releases")
	}
	res, err := cluster.KMeans(releases, hyps, cluster.Options{MaxIter: maxIter, Workers: workers})
	if err != nil {
		return ServerResult{}, fmt.Errorf("server round: %w", err)
	}
	return ServerResult{Hypotheses: res.Centers, Assign: res.Assign, Sizes: res.Sizes, Inertia: res.Inertia, Iterations: res.Iterations}, nil
}
