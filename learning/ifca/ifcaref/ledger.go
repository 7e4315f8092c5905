package ifcaref

import (
	"fmt"
	"math"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// Ledger is the per-client d-privacy ledger of Algorithm 1: each
// participation adds its level (n/ν) to the client's total, the independent
// composition of Theorem 1 (account.ComposeDPrivacy). A client without
// sanitization has an infinite total. The zero value is not usable; use
// NewLedger. Memory: two words per client.
type Ledger struct {
	spent []float64
	count []int
}

// NewLedger returns an empty ledger for clients 0..clients-1.
func NewLedger(clients int) (*Ledger, error) {
	if err := checks.IntAtLeast("clients", clients, 1); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &Ledger{spent: make([]float64, clients), count: make([]int, clients)}, nil
}

// Charge adds one participation of cost (a d-privacy level >= 0, or +Inf
// for an unsanitized release) to client's total.
func (l *Ledger) Charge(client int, cost float64) error {
	if client < 0 || client >= len(l.spent) {
		return checks.Invalidf("ledger: client %d out of range [0, %d)", client, len(l.spent))
	}
	if math.IsNaN(cost) || cost < 0 {
		return checks.Invalidf("ledger: cost must be >= 0, got %v", cost)
	}
	if math.IsInf(cost, 1) || math.IsInf(l.spent[client], 1) {
		l.spent[client] = math.Inf(1)
	} else {
		s, err := account.ComposeDPrivacy(l.spent[client], cost)
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		l.spent[client] = s
	}
	l.count[client]++
	return nil
}

// Spent returns client's composed leakage so far.
func (l *Ledger) Spent(client int) float64 { return l.spent[client] }

// Participations returns how many times client was charged.
func (l *Ledger) Participations(client int) int { return l.count[client] }

// Clients returns the number of clients in the ledger.
func (l *Ledger) Clients() int { return len(l.spent) }

// LeakageStats returns the maximum and the median composed leakage of the
// given clients (all clients if members is nil), and 0, 0 for an empty
// non-nil list. The median of an even count is the mean of the two middle
// values (+Inf if either is).
func (l *Ledger) LeakageStats(members []int) (maxLeak, median float64) {
	var v []float64
	if members == nil {
		v = slices.Clone(l.spent)
	} else {
		for _, c := range members {
			v = append(v, l.spent[c])
		}
	}
	if len(v) == 0 {
		return 0, 0
	}
	slices.Sort(v)
	m := len(v) / 2
	median = v[m]
	if len(v)%2 == 0 {
		a, b := v[m-1], v[m]
		if math.IsInf(a, 1) || math.IsInf(b, 1) {
			median = math.Inf(1)
		} else {
			median = (a + b) / 2
		}
	}
	return v[len(v)-1], median
}
