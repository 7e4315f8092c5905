package ifcaref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/ifca"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// Client is one participant's local learner: its data stay behind this
// interface. Both the regression models of package ifca/regress and the
// engine's classifiers (package fl, wrapped by the engine) implement it.
type Client interface {
	// Loss returns the local cost F_c(θ; Z_c) at theta (lower is better;
	// Eq. (10) for the regression models). It must not modify theta.
	Loss(theta []float64) float64
	// Train runs epochs local epochs of minibatch SGD from theta, updating
	// theta in place (LocalUpdate, Algorithm 1 line 6), drawing the
	// minibatch order from r.
	Train(r *rand.Rand, theta []float64, epochs int) error
}

// Dimensioned is implemented by clients that know their model's dimension;
// ClientRound and Simulate then reject hypotheses of another dimension.
type Dimensioned interface {
	Dim() int
}

func checkClientDim(c Client, dim int) error {
	if d, ok := c.(Dimensioned); ok && d.Dim() != dim {
		return checks.Invalidf("the client's model has dimension %d, the hypotheses %d", d.Dim(), dim)
	}
	return nil
}

// ClientConfig is the client-side part of Algorithm 1.
type ClientConfig struct {
	// Epochs is E, the local epochs per round (>= 1).
	Epochs int
	// Nu is the noise multiplier ν of SanitizeUpdate; 0 disables
	// sanitization (plain IFCA: the updated vector is released as is and the
	// leakage is +Inf).
	Nu float64
	// Sanitize selects the secure sampler and the radius floor (see
	// mechanism.SanitizeOptions).
	Sanitize mechanism.SanitizeOptions
	// Layers, if non-empty, selects the per-layer variant
	// (mechanism.SanitizeUpdateLayers); the layers must tile the vector.
	Layers []mechanism.Layer
	// Cap, if positive, is the largest total leakage a client accepts: it
	// declines a round whose cost would take its ledger above Cap. The cost
	// n/ν is known before training, so a declining client does no work.
	Cap float64
	// KeepUpdated keeps a copy of the true updated vector in
	// ClientResult.Updated (simulation plots only; it costs one more vector
	// per client).
	KeepUpdated bool
}

// Validate checks the configuration for vectors of dimension dim.
func (c ClientConfig) Validate(dim int) error {
	if err := checks.IntAtLeast("local epochs E", c.Epochs, 1); err != nil {
		return err
	}
	if err := checks.NonNegative("noise multiplier nu", c.Nu); err != nil {
		return err
	}
	if err := checks.NonNegative("leakage cap", c.Cap); err != nil {
		return err
	}
	if c.Nu == 0 && c.Cap > 0 {
		return checks.Invalidf("a leakage cap needs sanitization: with nu = 0 every release leaks without bound")
	}
	if err := checks.NonNegative("MinRadius", c.Sanitize.MinRadius); err != nil {
		return err
	}
	if err := checks.IntAtLeast("dimension", dim, 1); err != nil {
		return err
	}
	if len(c.Layers) > 0 {
		next := 0
		for i, l := range c.Layers {
			if l.Offset != next || l.Len < 1 {
				return checks.Invalidf("layer %d is [%d, %d+%d): layers must tile the vector in order", i, l.Offset, l.Offset, l.Len)
			}
			next += l.Len
		}
		if next != dim {
			return checks.Invalidf("layers cover %d coordinates, the model has %d", next, dim)
		}
	}
	return nil
}

// Cost returns the d-privacy cost of one participation with vectors of
// dimension dim: n/ν (also for the per-layer variant, where the layers add
// up to Σ n_l/ν = n/ν), or +Inf without sanitization.
func (c ClientConfig) Cost(dim int) float64 {
	if c.Nu == 0 {
		return math.Inf(1)
	}
	return float64(dim) / c.Nu
}

// Declined reasons reported in ClientResult.
const (
	DeclineCap        = "cap"         // the round would exceed the leakage cap
	DeclineZeroUpdate = "zero-update" // ||δ_c|| = 0 and no MinRadius: ε undefined
)

// ClientResult is the outcome of one client's round. Only Released leaves
// the client; the other fields are local (the ledger, and the simulation's
// diagnostics).
type ClientResult struct {
	// Released is the sanitized full updated vector θ̂_j̄,c, or nil if the
	// client declined.
	Released []float64
	// Updated is a copy of the client's true updated vector θ_j̄,c before
	// sanitization (never sent; for the paper's plots), kept only with
	// ClientConfig.KeepUpdated and if the client trained.
	Updated []float64
	// Chosen is j̄, the hypothesis the client trained (never sent).
	Chosen int
	// Cost is the d-privacy leakage charged for this round (0 if declined).
	Cost float64
	// UpdateNorm is ||δ_c||₂ (whole vector).
	UpdateNorm float64
	// Declined is "" or one of DeclineCap, DeclineZeroUpdate.
	Declined string
}

// ClientRound runs one client's part of a round of Algorithm 1: it
// evaluates every hypothesis on its data, picks the best, trains a copy for
// E epochs from r, and sanitizes the full updated vector (SanitizeUpdate with
// the chosen hypothesis as θ_j̄) with noise drawn from noise (nil: from r,
// after training). spent is the client's ledger total so far; if
// spent + cost would exceed cfg.Cap the client declines before any work.
// A zero-norm update without a MinRadius floor is declined too (nothing is
// released and nothing charged). hyps is not modified.
//
// Bad input (an error wrapping checks.ErrInvalid): no hypotheses,
// hypotheses of different dimensions or with non-finite entries, an invalid
// cfg; errors from Train are returned wrapped. The choice follows
// ifca.ChooseHypothesis (a NaN or +Inf loss is never chosen).
func ClientRound(r, noise *rand.Rand, c Client, hyps [][]float64, cfg ClientConfig, spent float64) (ClientResult, error) {
	if err := checkHypotheses(hyps); err != nil {
		return ClientResult{}, err
	}
	dim := len(hyps[0])
	if err := cfg.Validate(dim); err != nil {
		return ClientResult{}, fmt.Errorf("client round: %w", err)
	}
	if err := checkClientDim(c, dim); err != nil {
		return ClientResult{}, fmt.Errorf("client round: %w", err)
	}
	cost := cfg.Cost(dim)
	if cfg.Cap > 0 && spent+cost > cfg.Cap {
		return ClientResult{Declined: DeclineCap, Chosen: -1}, nil
	}
	losses := make([]float64, len(hyps))
	for j, h := range hyps {
		losses[j] = c.Loss(h)
	}
	j := ifca.ChooseHypothesis(losses)
	theta := slices.Clone(hyps[j])
	if err := c.Train(r, theta, cfg.Epochs); err != nil {
		return ClientResult{}, fmt.Errorf("client round: local update: %w", err)
	}
	if err := checks.Vector("updated parameters", theta, dim); err != nil {
		return ClientResult{}, fmt.Errorf("client round: local update diverged: %w", err)
	}
	res := ClientResult{Chosen: j, UpdateNorm: dist(theta, hyps[j])}
	if cfg.KeepUpdated {
		res.Updated = slices.Clone(theta)
	}
	if cfg.Nu == 0 {
		res.Released, res.Cost = theta, cost
		return res, nil
	}
	if noise == nil {
		noise = r
	}
	var err error
	if len(cfg.Layers) > 0 {
		_, err = mechanism.SanitizeUpdateLayers(noise, theta, hyps[j], cfg.Nu, cfg.Layers, cfg.Sanitize)
	} else {
		_, err = mechanism.SanitizeUpdate(noise, theta, hyps[j], cfg.Nu, cfg.Sanitize)
	}
	if errors.Is(err, mechanism.ErrZeroUpdate) {
		res.Declined = DeclineZeroUpdate
		return res, nil
	}
	if err != nil {
		return ClientResult{}, fmt.Errorf("client round: %w", err)
	}
	res.Released, res.Cost = theta, cost
	return res, nil
}

func checkHypotheses(hyps [][]float64) error {
	if len(hyps) == 0 {
		return checks.Invalidf("no hypotheses (k must be >= 1)")
	}
	d := len(hyps[0])
	if d == 0 {
		return checks.Invalidf("hypotheses have dimension 0")
	}
	for j, h := range hyps {
		if err := checks.Vector(fmt.Sprintf("hypothesis %d", j), h, d); err != nil {
			return err
		}
	}
	return nil
}

func dist(a, b []float64) float64 {
	var s float64
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}
