package round

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// ClientBudgets is every client's privacy budget for one round, held
// compactly: one budget that every client shares (the default, --epsilon)
// takes no memory per client; only budgets that differ (--eps-dist,
// --eps-file) are kept one per client. The zero value has no clients.
type ClientBudgets struct {
	n       int
	uniform protocol.Budget   // every client's budget when per is nil
	per     []protocol.Budget // one per client, or nil
}

// UniformBudgets returns n clients' budgets, all b.
func UniformBudgets(n int, b protocol.Budget) ClientBudgets {
	return ClientBudgets{n: n, uniform: b}
}

// ListBudgets returns the budgets bs, one per client. When every budget is
// the same, only that one is kept; otherwise bs itself is kept (not
// copied: the caller must not modify it afterwards).
func ListBudgets(bs []protocol.Budget) ClientBudgets {
	for _, b := range bs[min(1, len(bs)):] {
		if !sameBits(b, bs[0]) {
			return ClientBudgets{n: len(bs), per: bs}
		}
	}
	if len(bs) == 0 {
		return ClientBudgets{}
	}
	return UniformBudgets(len(bs), bs[0])
}

// sameBits says whether a and b are the same budget bit for bit (so that
// keeping one of them for both changes no result).
func sameBits(a, b protocol.Budget) bool {
	return math.Float64bits(a.Epsilon) == math.Float64bits(b.Epsilon) && math.Float64bits(a.Delta) == math.Float64bits(b.Delta)
}

// ResolveBudgets is Budgets held compactly: the uniform --epsilon is one
// budget, not one per client. The budgets (and any error) are Budgets's.
func ResolveBudgets(cfg Config, explicit []float64) (ClientBudgets, error) {
	n := cfg.Clients
	scale := cfg.EpsScale
	if scale == 0 {
		scale = 1
	}
	delta := account.RoundDelta(cfg.Delta, cfg.Rounds)
	var eps []float64
	switch {
	case explicit != nil:
		if len(explicit) != n {
			return ClientBudgets{}, checks.Invalidf("the budget file has %d epsilons but there are %d clients", len(explicit), n)
		}
		eps = explicit
	case cfg.EpsDist != "":
		var err error
		eps, err = account.Budgets(cfg.EpsDist, n, rng.Stream(cfg.Seed, rng.LabelBudget))
		if err != nil {
			return ClientBudgets{}, fmt.Errorf("eps-dist: %w", err)
		}
	default:
		e := cfg.Epsilon * scale
		if n > 0 {
			// Every client's epsilon is the same: the first is checked as
			// the list's would be.
			if err := checks.Epsilon("epsilon of client 0", e); err != nil {
				return ClientBudgets{}, err
			}
		}
		return UniformBudgets(n, protocol.Budget{Epsilon: e, Delta: delta}), nil
	}
	out := make([]protocol.Budget, n)
	for i, e := range eps {
		e *= scale
		if err := checks.Epsilon(fmt.Sprintf("epsilon of client %d", i), e); err != nil {
			return ClientBudgets{}, err
		}
		out[i] = protocol.Budget{Epsilon: e, Delta: delta}
	}
	return ListBudgets(out), nil
}

// Len is the number of clients.
func (c ClientBudgets) Len() int { return c.n }

// At is client i's budget (0 <= i < Len).
func (c ClientBudgets) At(i int) protocol.Budget {
	if i < 0 || i >= c.n {
		panic(fmt.Sprintf("round: budget of client %d of %d", i, c.n))
	}
	if c.per != nil {
		return c.per[i]
	}
	return c.uniform
}

// Uniform returns the budget every client shares; ok is false when the
// clients' budgets differ (or there are no clients).
func (c ClientBudgets) Uniform() (b protocol.Budget, ok bool) {
	return c.uniform, c.per == nil && c.n > 0
}

// Slice returns every client's budget, one per client (a new slice).
func (c ClientBudgets) Slice() []protocol.Budget {
	out := make([]protocol.Budget, c.n)
	if c.per != nil {
		copy(out, c.per)
		return out
	}
	for i := range out {
		out[i] = c.uniform
	}
	return out
}

// Of returns the budgets of the clients parts, in their order (a new
// slice: what a protocol's Check and Account take).
func (c ClientBudgets) Of(parts Participants) []protocol.Budget {
	out := make([]protocol.Budget, parts.Len())
	for i := range out {
		out[i] = c.At(parts.At(i))
	}
	return out
}

// Scaled returns the budgets with every epsilon multiplied by scale.
func (c ClientBudgets) Scaled(scale float64) ClientBudgets {
	if c.per == nil {
		return UniformBudgets(c.n, protocol.Budget{Epsilon: c.uniform.Epsilon * scale, Delta: c.uniform.Delta})
	}
	return ClientBudgets{n: c.n, per: scaled(c.per, scale)}
}

// MaxEpsilon is the largest epsilon (0 without clients).
func (c ClientBudgets) MaxEpsilon() float64 {
	if c.per == nil {
		if c.n == 0 {
			return 0
		}
		return c.uniform.Epsilon
	}
	m := 0.0
	for _, b := range c.per {
		m = max(m, b.Epsilon)
	}
	return m
}

// MinEpsilon is the smallest epsilon (+Inf without clients).
func (c ClientBudgets) MinEpsilon() float64 {
	if c.per == nil {
		if c.n == 0 {
			return math.Inf(1)
		}
		return c.uniform.Epsilon
	}
	m := math.Inf(1)
	for _, b := range c.per {
		m = math.Min(m, b.Epsilon)
	}
	return m
}

// UniformEpsilon says whether every client has the same epsilon (true
// without clients).
func (c ClientBudgets) UniformEpsilon() bool {
	for _, b := range c.per {
		if b.Epsilon != c.per[0].Epsilon {
			return false
		}
	}
	return true
}
