package sim

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
)

// trialRound is the last step of the pre-flight check: it runs round 1's
// mechanisms once, on zero updates, so that a parameter that passes the
// protocol's Check and Account but fails only when noise is drawn (a
// Laplace or Gaussian scale outside what the samplers represent, a
// blanket or padding distribution that cannot be sampled, an estimate
// that overflows) fails before anything is written, not in round 1 with
// partial outputs behind it.
//
// It trains one participant once (trialUpdate), encodes a zero update for
// every participant of round 1 (each at its own budget), lets the shuffler
// pad the round and the analyzer estimate it, and checks that the model
// would stay usable; the round's accounting is planRounds's. It costs one
// round's encoding and padding. Every draw comes from streams of round 0,
// which no real round uses, and nothing of the engine changes: the run's
// results are those it would give without the trial.
//
// Since every update is zero, the estimate is the noise alone: its root
// mean square over the coordinates is recorded (noiseRMS) for the warning
// that a run's noise drowns any signal (Warnings).
func (e *Engine) trialRound() error {
	const t = 1
	s := e.shape(t)
	parts := e.participants(t)
	if !e.poisson {
		s.Sampled = parts.Len()
		if parts.Len() > 0 {
			s.Participants = parts.Len()
		}
	}
	if err := e.trialUpdate(parts); err != nil {
		return err
	}
	d := s.Dim
	agg, err := e.trialEncode(s, parts)
	if err != nil {
		return err
	}
	sh, err := role.NewShuffler[role.Plain](e.proto, s, e.minReports())
	if err != nil {
		return err
	}
	if err := sh.CloseCounts(rng.Stream(e.cfg.Seed, rng.LabelShuffle, 0, 0), parts.Len(), slices.Clone(agg.Count), agg.AddValue); err != nil {
		return err
	}
	ra := rng.Stream(e.cfg.Seed, rng.LabelAnalyzer, 0)
	if e.clustered != nil {
		models := make([][]float64, len(e.models))
		for i, m := range e.models {
			models[i] = slices.Clone(m)
		}
		if _, err := e.clustered.EstimateModels(ra, s, agg, models); err != nil {
			return fmt.Errorf("estimating the models: %w", err)
		}
		for i, m := range models {
			if err := finiteModel(fmt.Sprintf("model %d", i), m); err != nil {
				return err
			}
		}
		return nil
	}
	est := make([]float64, d)
	estP, err := protocol.Estimating(e.proto)
	if err != nil {
		return err
	}
	if err := estP.Estimate(ra, s, agg, est); err != nil {
		return fmt.Errorf("estimating the mean update: %w", err)
	}
	ss := 0.0
	for _, v := range est {
		ss += v * v
	}
	e.noiseRMS = math.Sqrt(ss / float64(d))
	for j, v := range est {
		est[j] = e.w[j] + e.scale*v
	}
	return finiteModel("the global model", est)
}

// trialBlock is the number of participants whose zero updates one
// trial-round task encodes: blocks are merged in block order, so the trial
// aggregate does not depend on the number of workers.
const trialBlock = 4096

// trialEncode encodes a zero update for every participant of round 1, each
// at its own budget from the noise stream (0, i), on the engine's workers
// in blocks of trialBlock merged in block order, and returns the sum.
func (e *Engine) trialEncode(s protocol.Shape, parts round.Participants) (*protocol.Aggregate, error) {
	agg := protocol.NewAggregate(s.Dim)
	if e.clustered != nil {
		agg.KeepVectors()
	}
	nb := (parts.Len() + trialBlock - 1) / trialBlock
	// One window of e.workers blocks at a time, merged before the next, so
	// that at most e.workers block aggregates (of d values each) exist at
	// once, however many participants the round has.
	w := max(e.workers, 1)
	aggs, errs := make([]*protocol.Aggregate, w), make([]error, w)
	for first := 0; first < nb; first += w {
		n := min(w, nb-first)
		var wg sync.WaitGroup
		for i := range n {
			b := first + i
			wg.Go(func() {
				aggs[i], errs[i] = e.trialEncodeBlock(s, parts, b*trialBlock, min((b+1)*trialBlock, parts.Len()))
			})
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				return nil, errs[i]
			}
			if err := agg.Merge(aggs[i]); err != nil {
				return nil, err
			}
		}
	}
	return agg, nil
}

// trialEncodeBlock encodes the zero updates of participants parts[lo:hi].
func (e *Engine) trialEncodeBlock(s protocol.Shape, parts round.Participants, lo, hi int) (*protocol.Aggregate, error) {
	agg := protocol.NewAggregate(s.Dim)
	if e.clustered != nil {
		agg.KeepVectors()
	}
	update := make([]float64, s.Dim)
	var rep protocol.Report
	for i := lo; i < hi; i++ {
		c := parts.At(i)
		clear(update)
		b := e.budgets.At(c)
		r := rng.Stream(e.cfg.Seed, rng.LabelNoise, 0, uint64(i))
		var err error
		if e.clustered != nil {
			err = e.clustered.EncodeModel(r, s, e.models[0], update, b, &rep)
		} else {
			err = e.proto.Encode(r, s, update, b, &rep)
		}
		if err != nil {
			return nil, fmt.Errorf("encoding client %d's report at local epsilon %.4g: %w", c, b.Epsilon, err)
		}
		if err := agg.AddReport(&rep); err != nil {
			return nil, fmt.Errorf("client %d's report: %w", c, err)
		}
	}
	return agg, nil
}

// trialUpdate trains round 1's first participant (client 0 when nobody is
// sampled) once on the initial model, from a training stream of round 0,
// and checks that its update, applied as the analyzer would apply a mean
// update, leaves a model the engine can evaluate: a learning rate or
// server learning rate far out of range fails here.
func (e *Engine) trialUpdate(parts round.Participants) error {
	c := 0
	if parts.Len() > 0 {
		c = parts.At(0)
	}
	w := <-e.trainers
	defer func() { e.trainers <- w }()
	base := e.w
	if e.clustered != nil {
		base = e.models[0]
	}
	if _, err := w.trainer.LocalUpdate(w.update, rng.Stream(e.cfg.Seed, rng.LabelTraining, 0, uint64(c)), base, e.trainEx, e.part.Shard(c), e.local); err != nil {
		return fmt.Errorf("client %d's local update: %w", c, err)
	}
	next := make([]float64, len(base))
	scale := e.scale
	if e.clustered != nil {
		scale = 1 // a clustered analyzer replaces the model by the released ones
	}
	for j, v := range w.update {
		next[j] = base[j] + scale*v
	}
	if err := representable(next); err != nil {
		return fmt.Errorf("client %d's update applied at server-lr %g: %w (lower --lr or --server-lr)", c, e.cfg.ServerLR, err)
	}
	return nil
}

// finiteModel returns a usage error if m has a parameter the engine cannot
// train or evaluate with: the noise of the trial round alone would make
// the model diverge.
func finiteModel(name string, m []float64) error {
	if err := representable(m); err != nil {
		return fmt.Errorf("the noise alone makes %s unusable: %w: the local budgets, --clip or the noise parameters are out of range", name, err)
	}
	return nil
}

// representable returns a usage error naming the first parameter of m that
// is not finite or out of float32 range (training and evaluation compute
// in float32).
func representable(m []float64) error {
	for j, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
			return checks.Invalidf("model parameter %d would be %.4g, beyond the float32 range the model computes in", j, v)
		}
	}
	return nil
}
