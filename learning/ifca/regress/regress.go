// Package regress holds the small regression models of the group-privacy
// paper's experiments (Galli et al., Sections 5.1 and 5.2) and a client that
// trains them, implementing ifcaref.Client: linear regression y = x^T θ (no
// intercept, n = input dimension: the paper's n = 2 for the synthetic task)
// and a fully connected 2-layer ReLU network (3 inputs, 2 hidden units, 1
// output: 3·2 + 2 + 2 + 1 = 11 parameters, the paper's stated size).
//
// Loss: Client.Loss reports the RMSE of Eq. (10) (used to choose the
// hypothesis and to validate). Training runs minibatch SGD (step s, batch
// B) on the batch MSE, or on the batch RMSE (Client.RMSE), which the paper
// says it minimizes: the RMSE's gradient is the MSE's divided by 2·RMSE, so
// its steps have length about s far from the optimum, which keeps ||δ_c||
// and hence the sanitization noise ν·||δ_c|| bounded.
package regress

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// Model is a scalar regression model with a flat parameter vector.
type Model interface {
	// Dim is the number of parameters n.
	Dim() int
	// Inputs is the input dimension.
	Inputs() int
	// Predict returns f(x, θ).
	Predict(theta, x []float64) float64
	// AddGrad adds scale·∇_θ f(x, θ) to grad and returns f(x, θ).
	AddGrad(grad, theta, x []float64, scale float64) float64
}

// Linear is y = x^T θ with θ in R^In.
type Linear struct{ In int }

// Dim returns In.
func (m Linear) Dim() int { return m.In }

// Inputs returns In.
func (m Linear) Inputs() int { return m.In }

// Predict returns x^T θ.
func (m Linear) Predict(theta, x []float64) float64 {
	var s float64
	for i, v := range x {
		s += v * theta[i]
	}
	return s
}

// AddGrad adds scale·x to grad.
func (m Linear) AddGrad(grad, theta, x []float64, scale float64) float64 {
	for i, v := range x {
		grad[i] += scale * v
	}
	return m.Predict(theta, x)
}

// ReLUNet is f(x) = w2^T ReLU(W1 x + b1) + b2 with In inputs and Hidden
// hidden units. Layout of θ: W1 (Hidden x In, row-major: the weights into
// hidden unit h are contiguous), b1 (Hidden), w2 (Hidden), b2 (1).
// ReLUNet{In: 3, Hidden: 2} has the paper's 11 parameters.
type ReLUNet struct{ In, Hidden int }

// Dim returns Hidden·In + 2·Hidden + 1.
func (m ReLUNet) Dim() int { return m.Hidden*m.In + 2*m.Hidden + 1 }

// Inputs returns In.
func (m ReLUNet) Inputs() int { return m.In }

// Layers returns the offsets and lengths of the two layers (weights and
// biases together): layer 1 is W1 and b1, layer 2 is w2 and b2.
func (m ReLUNet) Layers() [][2]int {
	l1 := m.Hidden*m.In + m.Hidden
	return [][2]int{{0, l1}, {l1, m.Hidden + 1}}
}

func (m ReLUNet) hidden(theta, x []float64, h int) float64 {
	w := theta[h*m.In : (h+1)*m.In]
	z := theta[m.Hidden*m.In+h]
	for i, v := range x {
		z += w[i] * v
	}
	return z
}

// Predict returns f(x, θ).
func (m ReLUNet) Predict(theta, x []float64) float64 {
	o2 := m.Hidden*m.In + m.Hidden
	y := theta[o2+m.Hidden]
	for h := range m.Hidden {
		if z := m.hidden(theta, x, h); z > 0 {
			y += theta[o2+h] * z
		}
	}
	return y
}

// AddGrad adds scale·∇_θ f(x, θ) to grad and returns f(x, θ). At z = 0 the
// ReLU's derivative is taken as 0.
func (m ReLUNet) AddGrad(grad, theta, x []float64, scale float64) float64 {
	ob1 := m.Hidden * m.In
	o2 := ob1 + m.Hidden
	y := theta[o2+m.Hidden]
	grad[o2+m.Hidden] += scale
	for h := range m.Hidden {
		z := m.hidden(theta, x, h)
		if z <= 0 {
			continue
		}
		w2 := theta[o2+h]
		y += w2 * z
		grad[o2+h] += scale * z
		g := scale * w2
		grad[ob1+h] += g
		for i, v := range x {
			grad[h*m.In+i] += g * v
		}
	}
	return y
}

// Client holds one client's regression data and its SGD settings; it
// implements ifcaref.Client.
type Client struct {
	Model Model
	X     [][]float64 // inputs, each of length Model.Inputs()
	Y     []float64   // targets
	Step  float64     // s, the local step size
	Batch int         // B, the minibatch size (the last batch of an epoch may be smaller)
	// RMSE selects SGD on the batch RMSE (Eq. (10), the paper's stated
	// objective) instead of the batch MSE: the gradient is the MSE's
	// divided by 2·RMSE_b, so a step has length about s whatever the error.
	RMSE bool
}

// NewClient checks and returns a client.
func NewClient(m Model, x [][]float64, y []float64, step float64, batch int) (*Client, error) {
	if m == nil || m.Dim() < 1 {
		return nil, checks.Invalidf("regression client: no model")
	}
	if len(x) == 0 || len(x) != len(y) {
		return nil, checks.Invalidf("regression client: %d inputs and %d targets (need at least one of each, as many)", len(x), len(y))
	}
	for i := range x {
		if err := checks.Vector(fmt.Sprintf("input %d", i), x[i], m.Inputs()); err != nil {
			return nil, fmt.Errorf("regression client: %w", err)
		}
		if err := checks.Finite(fmt.Sprintf("target %d", i), y[i]); err != nil {
			return nil, fmt.Errorf("regression client: %w", err)
		}
	}
	if err := checks.Positive("step size", step); err != nil {
		return nil, fmt.Errorf("regression client: %w", err)
	}
	if err := checks.IntAtLeast("batch size", batch, 1); err != nil {
		return nil, fmt.Errorf("regression client: %w", err)
	}
	return &Client{Model: m, X: x, Y: y, Step: step, Batch: batch}, nil
}

// Dim returns the model's dimension (ifca.Dimensioned).
func (c *Client) Dim() int { return c.Model.Dim() }

// Loss returns the RMSE of Eq. (10): sqrt(mean (y − f(x, θ))²). A theta of
// the wrong dimension gives +Inf... no: it panics, as a programming error
// the caller (ifcaref.ClientRound) rules out by checking dimensions.
func (c *Client) Loss(theta []float64) float64 {
	return math.Sqrt(c.MSE(theta))
}

// MSE returns the mean squared error at theta.
func (c *Client) MSE(theta []float64) float64 {
	var s float64
	for i, x := range c.X {
		d := c.Y[i] - c.Model.Predict(theta, x)
		s += d * d
	}
	return s / float64(len(c.X))
}

// Train runs epochs epochs of minibatch SGD from theta, in place: each
// epoch visits the samples in an order drawn from r, in batches of Batch,
// with θ ← θ − s·∇L_b, L_b = (1/|b|) Σ_{i∈b} (f(x_i, θ) − y_i)² (the MSE),
// or L_b = sqrt of it if RMSE is set (a batch with zero error is a zero
// step).
func (c *Client) Train(r *rand.Rand, theta []float64, epochs int) error {
	if len(theta) != c.Model.Dim() {
		return checks.Invalidf("regression client: parameters have dimension %d, the model %d", len(theta), c.Model.Dim())
	}
	if epochs < 1 {
		return checks.Invalidf("regression client: epochs must be >= 1, got %d", epochs)
	}
	order := make([]int, len(c.X))
	for i := range order {
		order[i] = i
	}
	grad := make([]float64, len(theta))
	for range epochs {
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for b0 := 0; b0 < len(order); b0 += c.Batch {
			b1 := min(b0+c.Batch, len(order))
			clear(grad)
			// ∇ (1/|b|) Σ (f − y)² = (2/|b|) Σ (f − y) ∇f: accumulate
			// ∇f scaled by 2(f − y)/|b| (f needs θ, so two passes).
			inv := 2 / float64(b1-b0)
			var sq float64
			for _, i := range order[b0:b1] {
				f := c.Model.Predict(theta, c.X[i])
				c.Model.AddGrad(grad, theta, c.X[i], inv*(f-c.Y[i]))
				sq += (f - c.Y[i]) * (f - c.Y[i])
			}
			step := c.Step
			if c.RMSE {
				rmse := math.Sqrt(sq / float64(b1-b0))
				if rmse == 0 {
					continue
				}
				step /= 2 * rmse
			}
			for k := range theta {
				theta[k] -= step * grad[k]
			}
		}
	}
	return nil
}
