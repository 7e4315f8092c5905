package account

import (
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// RDPAccountant accumulates the Rényi DP of a sequence of Poisson-subsampled
// Gaussian steps whose sampling rate and noise multiplier may change from
// round to round (DP-FedAvg with a varying number of clients per round), and
// converts the total to (epsilon, delta) with the improved conversion
// (RDPToEpsilon). Composition is additive at each order (Mironov 2017,
// Proposition 1). It uses DefaultRDPOrders and is safe for concurrent use.
// The zero value is not usable; call NewRDPAccountant. It is a Composer
// (a mechanism-level accountant, see the package documentation).
type RDPAccountant struct {
	mu    sync.Mutex
	rdp   []float64
	steps int
}

// NewRDPAccountant returns an accountant with nothing spent.
func NewRDPAccountant() *RDPAccountant {
	return &RDPAccountant{rdp: make([]float64, len(defaultOrders))}
}

// AddSampledGaussian records steps compositions of the Poisson-subsampled
// Gaussian mechanism with sampling rate q and noise multiplier sigma
// (SampledGaussianRDP). Nothing is recorded on error.
func (a *RDPAccountant) AddSampledGaussian(q, sigma float64, steps int) error {
	if err := validateSGM(q, sigma); err != nil {
		return fmt.Errorf("RDP accountant: %w", err)
	}
	if err := checks.IntAtLeast("steps", steps, 1); err != nil {
		return fmt.Errorf("RDP accountant: %w", err)
	}
	c := defaultCurve(q, sigma)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, v := range c {
		a.rdp[i] += float64(steps) * v
	}
	a.steps += steps
	return nil
}

// Steps returns the number of steps recorded so far.
func (a *RDPAccountant) Steps() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.steps
}

// Epsilon returns the epsilon of everything recorded so far at the given
// delta, and the Rényi order that achieved it. With nothing recorded it is 0.
func (a *RDPAccountant) Epsilon(delta float64) (eps, order float64, err error) {
	if err := checks.Delta("delta", delta); err != nil {
		return 0, 0, fmt.Errorf("RDP accountant: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e, o, _ := rdpToEpsilon(defaultOrders, a.rdp, 1, delta)
	if math.IsInf(e, 1) {
		return 0, 0, fmt.Errorf("RDP accountant: %w", checks.Invalidf("no finite epsilon at any order"))
	}
	return e, o, nil
}

// Curve returns a copy of the accumulated RDP at DefaultRDPOrders, for
// composing with other RDP curves (ComposeRDP).
func (a *RDPAccountant) Curve() []float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]float64, len(a.rdp))
	copy(out, a.rdp)
	return out
}
