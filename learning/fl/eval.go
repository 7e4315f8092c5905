package fl

import (
	"sync"
	"sync/atomic"

	"github.com/shufflefl/shufflefl/checks"
)

// evalChunk is the number of examples per unit of evaluation work. Results are
// summed per chunk and the chunks in order, so they do not depend on the
// number of workers.
const evalChunk = 128

// Evaluate returns the accuracy and the mean softmax cross-entropy of model m
// with parameters w on all examples of ex, using up to workers goroutines.
// The result is bit-for-bit the same for every number of workers. The forward
// pass runs in float32, like training; the sums are float64. Invalid
// arguments (wrong dimensions, non-finite parameters, labels outside the
// model's classes, no examples, workers < 1) return an error wrapping
// checks.ErrInvalid.
func Evaluate(m Model, w []float64, ex Examples, workers int) (accuracy, loss float64, err error) {
	if err := checks.IntAtLeast("workers", workers, 1); err != nil {
		return 0, 0, err
	}
	if len(w) != m.Dim() {
		return 0, 0, checks.Invalidf("model has dimension %d, model %s has %d", len(w), m.Name(), m.Dim())
	}
	if err := ex.check(m); err != nil {
		return 0, 0, err
	}
	n := ex.Len()
	if n == 0 {
		return 0, 0, checks.Invalidf("no examples to evaluate on")
	}
	for i, y := range ex.Y {
		if int(y) >= m.Classes() {
			return 0, 0, checks.Invalidf("label of example %d is %d, model has %d classes", i, y, m.Classes())
		}
	}
	w32 := make([]float32, m.Dim())
	if i := toFloat32(w32, w); i >= 0 {
		return 0, 0, checks.Invalidf("model parameter %d is %v, want a finite number", i, w[i])
	}

	chunks := (n + evalChunk - 1) / evalChunk
	losses := make([]float64, chunks)
	correct := make([]int, chunks)
	var next atomic.Int64
	work := func() {
		k := m.newKernel()
		batch := make([]int, evalChunk)
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			lo, hi := c*evalChunk, min((c+1)*evalChunk, n)
			b := batch[:hi-lo]
			for j := range b {
				b[j] = lo + j
			}
			losses[c], correct[c] = k.forward(w32, ex, b, false)
		}
	}
	workers = min(workers, chunks)
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()

	var sumLoss float64
	var sumCorrect int
	for c := range chunks {
		sumLoss += losses[c]
		sumCorrect += correct[c]
	}
	return float64(sumCorrect) / float64(n), sumLoss / float64(n), nil
}
