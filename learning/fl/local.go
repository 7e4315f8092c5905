package fl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// Mode selects what a client computes locally.
type Mode uint8

const (
	// FedAvg runs local SGD and returns the model delta w_local − w_global
	// (McMahan et al., 2017, Algorithm 1). With LocalConfig.Mu > 0 this is
	// FedProx (Li et al., 2020). It is the zero value.
	FedAvg Mode = iota
	// FedSGD returns the gradient of the mean loss at the global model, on
	// the client's whole shard if it holds at most Batch examples and on one
	// minibatch of Batch examples drawn without replacement otherwise. The
	// server applies the learning rate; LocalConfig.LR, Epochs and Steps are
	// ignored.
	FedSGD
)

// String returns "fedavg" or "fedsgd".
func (m Mode) String() string {
	switch m {
	case FedAvg:
		return "fedavg"
	case FedSGD:
		return "fedsgd"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "fedavg" or "fedsgd" (as printed by String).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "fedavg":
		return FedAvg, nil
	case "fedsgd":
		return FedSGD, nil
	}
	return 0, checks.Invalidf("unknown local training mode %q (known modes: fedavg, fedsgd)", s)
}

// LocalConfig is a client's local training configuration.
type LocalConfig struct {
	// Mode is FedAvg (the zero value) or FedSGD.
	Mode Mode
	// Epochs is the number of passes over the shard in FedAvg mode; each
	// epoch visits the shard in a fresh random order in minibatches of Batch
	// examples, the last one smaller if Batch does not divide the shard.
	// Exactly one of Epochs and Steps must be positive in FedAvg mode.
	Epochs int
	// Steps is the number of SGD steps in FedAvg mode when Epochs is 0. Steps
	// walk through the shard as epochs do (reshuffling when it is exhausted),
	// so Steps = ⌈n/Batch⌉ is one epoch.
	Steps int
	// Batch is the minibatch size (≥ 1).
	Batch int
	// LR is the SGD learning rate (> 0 in FedAvg mode).
	LR float64
	// Mu is FedProx's proximal coefficient μ ≥ 0: each step minimises the
	// minibatch loss plus μ/2·‖w − w_global‖². Zero is plain FedAvg.
	Mu float64
}

// Upper bounds on LocalConfig.Epochs and LocalConfig.Steps, far beyond any
// experiment, so that a mistyped value fails fast instead of overflowing.
const (
	MaxEpochs = 1_000_000
	MaxSteps  = 1_000_000_000
)

// Validate reports the first invalid field; errors wrap checks.ErrInvalid.
func (c LocalConfig) Validate() error {
	if c.Mode != FedAvg && c.Mode != FedSGD {
		return checks.Invalidf("local training mode %v is unknown", c.Mode)
	}
	if err := checks.IntAtLeast("batch", c.Batch, 1); err != nil {
		return err
	}
	if err := checks.NonNegative("mu", c.Mu); err != nil {
		return err
	}
	if c.Mode == FedSGD {
		return checks.NonNegative("lr", c.LR)
	}
	if err := checks.Positive("lr", c.LR); err != nil {
		return err
	}
	if err := checks.IntInRange("local epochs", c.Epochs, 0, MaxEpochs); err != nil {
		return err
	}
	if err := checks.IntInRange("local steps", c.Steps, 0, MaxSteps); err != nil {
		return err
	}
	if (c.Epochs > 0) == (c.Steps > 0) {
		return checks.Invalidf("set exactly one of local epochs and local steps, got epochs=%d steps=%d", c.Epochs, c.Steps)
	}
	return nil
}

// ErrDiverged is wrapped by the error LocalUpdate returns when the training
// loss or the parameters stop being finite (typically a learning rate that is
// too large).
var ErrDiverged = errors.New("local training diverged")

// LocalStats describes one LocalUpdate.
type LocalStats struct {
	// Steps is the number of minibatch gradients computed.
	Steps int
	// Loss is the mean over the steps of the minibatch loss, each evaluated
	// at the parameters before its step (the data term only, without the
	// proximal term).
	Loss float64
}

// Trainer runs clients' local updates for one model. It holds the scratch
// buffers of one goroutine, so that LocalUpdate does not allocate once warm;
// it is not safe for concurrent use: give each worker its own Trainer.
type Trainer struct {
	m     Model
	k     kern
	g     []float32 // float32 copy of the global model
	w     []float32 // local model (FedAvg) or gradient (FedSGD)
	grad  []float32 // gradient of minibatches larger than maxChunk (lazy)
	order []int     // the shard, in the order of the current epoch
}

// maxChunk bounds the number of examples the dense kernel processes at once,
// and so the scratch memory of a Trainer; larger minibatches are summed chunk
// by chunk.
const maxChunk = 256

// NewTrainer returns a Trainer for m.
func NewTrainer(m Model) *Trainer {
	return &Trainer{
		m: m,
		k: m.newKernel(),
		g: make([]float32, m.Dim()),
		w: make([]float32, m.Dim()),
	}
}

// Model returns the model the trainer was built for.
func (t *Trainer) Model() Model { return t.m }

// LocalUpdate runs one client's local computation from the global parameters
// on the examples idx of ex and writes the result into dst: the model delta
// w_local − w_global in FedAvg mode, the gradient in FedSGD mode (see Mode).
// Minibatch order is drawn from r only, so the result is reproducible given r.
//
// Training runs on a float32 copy of global; the delta is the difference of
// the float32 local and global models, so it is exactly zero where nothing
// changed. Invalid arguments (wrong lengths, non-finite global parameters, bad
// indices or labels, an invalid cfg) return an error wrapping
// checks.ErrInvalid; a non-finite loss or local model returns an error
// wrapping ErrDiverged. dst is unspecified after an error.
func (t *Trainer) LocalUpdate(dst []float64, r *rand.Rand, global []float64, ex Examples, idx []int, cfg LocalConfig) (LocalStats, error) {
	m := t.m
	if err := cfg.Validate(); err != nil {
		return LocalStats{}, err
	}
	if len(dst) != m.Dim() {
		return LocalStats{}, checks.Invalidf("update buffer has dimension %d, model %s has %d", len(dst), m.Name(), m.Dim())
	}
	if len(global) != m.Dim() {
		return LocalStats{}, checks.Invalidf("global model has dimension %d, model %s has %d", len(global), m.Name(), m.Dim())
	}
	if err := ex.check(m); err != nil {
		return LocalStats{}, err
	}
	if err := ex.checkIndex(m, idx); err != nil {
		return LocalStats{}, err
	}
	if i := toFloat32(t.g, global); i >= 0 {
		return LocalStats{}, checks.Invalidf("global model parameter %d is %v, want a finite number", i, global[i])
	}
	n := len(idx)
	if cap(t.order) < n {
		t.order = make([]int, n)
	}
	order := t.order[:n]
	copy(order, idx)

	if cfg.Mode == FedSGD {
		b := min(cfg.Batch, n)
		if b < n { // partial Fisher–Yates: a uniform b-subset
			for i := range b {
				j := i + r.IntN(n-i)
				order[i], order[j] = order[j], order[i]
			}
		}
		clear(t.w)
		loss := t.gradient(t.w, t.g, ex, order[:b], float32(1/float64(b))) / float64(b)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return LocalStats{}, fmt.Errorf("fl: FedSGD gradient: %w: loss is %v at the global model", ErrDiverged, loss)
		}
		if i := widen(dst, t.w); i >= 0 {
			return LocalStats{}, fmt.Errorf("fl: FedSGD gradient: %w: component %d is %v", ErrDiverged, i, dst[i])
		}
		return LocalStats{Steps: 1, Loss: loss}, nil
	}

	steps := cfg.Steps
	if cfg.Epochs > 0 {
		steps = cfg.Epochs * ((n + cfg.Batch - 1) / cfg.Batch)
	}
	copy(t.w, t.g)
	prox := float32(cfg.LR * cfg.Mu)
	var lossSum float64
	pos := n // start with a shuffle
	for step := range steps {
		if pos >= n {
			for i := n - 1; i > 0; i-- { // Fisher–Yates
				j := r.IntN(i + 1)
				order[i], order[j] = order[j], order[i]
			}
			pos = 0
		}
		e := min(pos+cfg.Batch, n)
		batch := order[pos:e]
		pos = e
		loss, err := t.step(ex, batch, float32(-cfg.LR/float64(len(batch))), prox)
		if err != nil {
			return LocalStats{}, fmt.Errorf("fl: local SGD: %w at step %d", err, step)
		}
		lossSum += loss
	}
	if i := delta(dst, t.w, t.g); i >= 0 {
		return LocalStats{}, fmt.Errorf("fl: local SGD: %w: parameter %d is %v after %d steps", ErrDiverged, i, t.w[i], steps)
	}
	return LocalStats{Steps: steps, Loss: lossSum / float64(steps)}, nil
}

// step runs one SGD step on the local model t.w:
// w ← w − prox·(w − w_global) + s·Σ_b ∇ℓ_b(w), with both terms evaluated at
// the same w, and returns the mean minibatch loss at w.
func (t *Trainer) step(ex Examples, batch []int, s, prox float32) (float64, error) {
	var loss float64
	if len(batch) <= t.k.chunk() {
		// Forward first, then update w in place: accumulate does not read w.
		loss, _ = t.k.forward(t.w, ex, batch, true)
		loss /= float64(len(batch))
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return 0, fmt.Errorf("%w: loss is %v", ErrDiverged, loss)
		}
		if prox != 0 {
			proxStep(t.w, t.g, prox)
		}
		t.k.accumulate(t.w, s)
		return loss, nil
	}
	if t.grad == nil {
		t.grad = make([]float32, t.m.Dim())
	}
	clear(t.grad)
	loss = t.gradient(t.grad, t.w, ex, batch, 1) / float64(len(batch))
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, fmt.Errorf("%w: loss is %v", ErrDiverged, loss)
	}
	if prox != 0 {
		proxStep(t.w, t.g, prox)
	}
	for i, g := range t.grad {
		t.w[i] += s * g
	}
	return loss, nil
}

// gradient adds s·Σ_b ∇ℓ_b(w) to target, which must not alias w, in chunks
// of at most the kernel's chunk size, and returns the summed loss.
func (t *Trainer) gradient(target, w []float32, ex Examples, batch []int, s float32) float64 {
	var loss float64
	c := t.k.chunk()
	for lo := 0; lo < len(batch); lo += c {
		l, _ := t.k.forward(w, ex, batch[lo:min(lo+c, len(batch))], true)
		loss += l
		t.k.accumulate(target, s)
	}
	return loss
}

// toFloat32 converts src into dst and returns the index of the first entry
// that is not finite as a float32 (NaN, ±Inf, or beyond float32's range), or
// −1. dst must be at least as long as src.
func toFloat32(dst []float32, src []float64) int {
	if cvt64to32(dst, src) {
		return -1
	}
	for i, f := range dst[:len(src)] {
		if f-f != 0 {
			return i
		}
	}
	return -1
}

// delta writes dst[i] = a[i] − b[i] in float64 and returns the index of the
// first non-finite result, or −1.
func delta(dst []float64, a, b []float32) int {
	if delta64(dst, a, b) {
		return -1
	}
	return firstNonFinite(dst[:len(a)])
}

// widen writes dst[i] = float64(src[i]) and returns the index of the first
// non-finite entry, or −1.
func widen(dst []float64, src []float32) int {
	if delta64(dst, src, nil) {
		return -1
	}
	return firstNonFinite(dst[:len(src)])
}

// firstNonFinite returns the index of the first NaN or ±Inf in x, or −1.
func firstNonFinite(x []float64) int {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i
		}
	}
	return -1
}
