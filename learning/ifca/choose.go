package ifca

import "math"

// ChooseHypothesis is a clustered-FL client's private choice (Algorithm 1
// line 5): the index of the lowest of losses, one per hypothesis, ties to
// the lowest index. A NaN or +Inf loss (a diverged hypothesis) is never
// chosen; when no loss is finite, or there is none, the choice is 0. This
// is the rule the engine applies (round.ChooseHypothesis computes the
// losses on the client's shard) and the reference simulation (package
// ifcaref) follows.
func ChooseHypothesis(losses []float64) int {
	best, low := 0, math.Inf(1)
	for j, l := range losses {
		if l < low { // false for NaN and +Inf
			best, low = j, l
		}
	}
	return best
}
