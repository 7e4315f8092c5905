package round

import "github.com/shufflefl/shufflefl/protocol"

// Worst returns a client with the largest epsilon's budget (the first such
// client; among equal epsilons the largest delta) and whether every client
// has the same budget: what a lower bound on the run's true epsilon takes
// (protocol.LowerBoundRound). ok is false without clients.
func (c ClientBudgets) Worst() (b protocol.Budget, uniform, ok bool) {
	if c.n == 0 {
		return protocol.Budget{}, false, false
	}
	if c.per == nil {
		return c.uniform, true, true
	}
	b = c.per[0]
	for _, x := range c.per[1:] {
		if x.Epsilon > b.Epsilon || (x.Epsilon == b.Epsilon && x.Delta > b.Delta) {
			b = x
		}
	}
	return b, false, true
}
