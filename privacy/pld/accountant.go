package pld

import (
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// Accountant composes a sequence of PLDs (rounds) and answers epsilon and
// delta queries for the composition so far. The zero value is usable (it
// has composed nothing: Delta is 0 and Epsilon is 0); it is safe for
// concurrent use. All PLDs added must share one Interval. It is one of the
// mechanism-level accountants (account.Composer; account.PLDEpsilon composes
// with it).
type Accountant struct {
	mu    sync.Mutex
	total *PLD
	steps int
}

// Add composes times copies of p (times >= 1) onto the accountant, by
// SelfCompose and Compose. Nothing is recorded on error.
func (a *Accountant) Add(p *PLD, times int) error {
	if err := p.validate("p"); err != nil {
		return fmt.Errorf("PLD accountant: %w", err)
	}
	if err := checks.IntAtLeast("times", times, 1); err != nil {
		return fmt.Errorf("PLD accountant: %w", err)
	}
	k, err := p.SelfCompose(times)
	if err != nil {
		return fmt.Errorf("PLD accountant: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.total == nil {
		a.total = k
	} else {
		t, err := a.total.Compose(k)
		if err != nil {
			return fmt.Errorf("PLD accountant: %w", err)
		}
		a.total = t
	}
	a.steps += times
	return nil
}

// Steps returns the number of mechanisms composed so far.
func (a *Accountant) Steps() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.steps
}

// PLD returns the composed PLD so far (nil if nothing was added).
func (a *Accountant) PLD() *PLD {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

// Epsilon returns the smallest epsilon with Delta(epsilon) <= delta for the
// composition so far (see PLD.Epsilon); 0 if nothing was added.
func (a *Accountant) Epsilon(delta float64) (float64, error) {
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("PLD accountant: %w", err)
	}
	t := a.PLD()
	if t == nil {
		return 0, nil
	}
	return t.Epsilon(delta)
}

// Delta returns a rigorous upper bound on delta at eps for the composition
// so far (see PLD.Delta); 0 if nothing was added (1 for NaN or negative eps).
func (a *Accountant) Delta(eps float64) float64 {
	if math.IsNaN(eps) || eps < 0 {
		return 1
	}
	t := a.PLD()
	if t == nil {
		return 0
	}
	return t.Delta(eps)
}
