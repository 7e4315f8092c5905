package runtime

import (
	"fmt"
	"math"
	"slices"

	"shufflefl/checks"
	"shufflefl/protocol"
	"shufflefl/rng"
	"shufflefl/role"
)

// trialRound is the last step of the pre-flight check: it runs round 1's
// mechanisms once, on zero updates, so that a parameter that passes the
// protocol's Check and Account but fails only when noise is drawn (a
// Laplace or Gaussian scale outside what the samplers represent, a
// blanket or padding distribution that cannot be sampled, an estimate
// that overflows) fails before anything is written, not in round 1 with
// partial outputs behind it.
//
// It trains one participant once (trialUpdate), encodes one zero update
// for each of up to three budgets of round 1's participants (the smallest,
// the median and the largest epsilon: every noise scale is monotone in
// it) and absorbs each as many times as its share of the participants (a
// sparse protocol encodes every participant's zero update instead: its
// padding depends on the coordinates they chose), lets the shuffler pad
// the round and the analyzer estimate it, and checks that the model would
// stay usable. The round's
// accounting is planRounds's. Every draw comes from streams of round 0,
// which no real round uses, and nothing of the engine changes: the run's
// results are those it would give without the trial.
func (e *Engine) trialRound() error {
	const t = 1
	s := e.shape(t)
	parts := e.Sample(t)
	budgets := make([]protocol.Budget, len(parts))
	for i, c := range parts {
		budgets[i] = e.budgets[c]
	}
	if !e.poisson {
		s.Sampled = len(parts)
		if len(parts) > 0 {
			s.Participants = len(parts)
		}
	}
	if len(budgets) == 0 {
		budgets = e.budgets // a Poisson round with nobody sampled
	}
	if err := e.trialUpdate(parts); err != nil {
		return err
	}
	picked, shares := trialBudgets(budgets, len(parts))
	d := s.Dim
	agg := protocol.NewAggregate(d)
	if e.clustered != nil {
		agg.KeepVectors()
	}
	update := make([]float64, d)
	var rep protocol.Report
	encode := func(i int, b protocol.Budget) error {
		clear(update)
		r := rng.Stream(e.cfg.Seed, rng.LabelNoise, 0, uint64(i))
		var err error
		if e.clustered != nil {
			err = e.clustered.EncodeModel(r, s, e.models[0], update, b, &rep)
		} else {
			err = e.proto.Encode(r, s, update, b, &rep)
		}
		if err != nil {
			return fmt.Errorf("encoding a report at local epsilon %.4g: %w", b.Epsilon, err)
		}
		return nil
	}
	for i, b := range picked {
		if err := encode(i, b); err != nil {
			return err
		}
		if rep.Coords != nil {
			break // sparse: every participant encodes, below
		}
		if err := addTimes(agg, &rep, shares[i]); err != nil {
			return fmt.Errorf("the report at local epsilon %.4g: %w", b.Epsilon, err)
		}
	}
	if rep.Coords != nil {
		// A sparse report's coordinates are the client's random choice,
		// and the padding depends on their counts: encode every
		// participant's zero update (time O(n·d) at most, the clipping).
		agg.Reset()
		for i, c := range parts {
			if err := encode(i, e.budgets[c]); err != nil {
				return err
			}
			if err := agg.AddReport(&rep); err != nil {
				return fmt.Errorf("the report of client %d: %w", c, err)
			}
		}
	}
	sh, err := role.NewShuffler[role.Plain](e.proto, s, e.minReports())
	if err != nil {
		return err
	}
	if err := sh.CloseCounts(rng.Stream(e.cfg.Seed, rng.LabelShuffle, 0, 0), len(parts), slices.Clone(agg.Count), agg.AddValue); err != nil {
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
	if err := e.proto.Estimate(ra, s, agg, est); err != nil {
		return fmt.Errorf("estimating the mean update: %w", err)
	}
	for j, v := range est {
		est[j] = e.w[j] + e.scale*v
	}
	return finiteModel("the global model", est)
}

// trialUpdate trains round 1's first participant (client 0 when nobody is
// sampled) once on the initial model, from a training stream of round 0,
// and checks that its update, applied as the analyzer would apply a mean
// update, leaves a model the engine can evaluate: a learning rate or
// server learning rate far out of range fails here.
func (e *Engine) trialUpdate(parts []int) error {
	c := 0
	if len(parts) > 0 {
		c = parts[0]
	}
	w := <-e.trainers
	defer func() { e.trainers <- w }()
	base := e.w
	if e.clustered != nil {
		base = e.models[0]
	}
	if _, err := w.trainer.LocalUpdate(w.update, rng.Stream(e.cfg.Seed, rng.LabelTraining, 0, uint64(c)), base, e.trainEx, e.shards[c], e.local); err != nil {
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

// trialBudgets picks the budgets of the trial round from the participants'
// (n of them; n = 0 under Poisson sampling with nobody sampled): the
// smallest, the median and the largest epsilon (one budget when they are
// all equal), each with its share of the n reports.
func trialBudgets(budgets []protocol.Budget, n int) ([]protocol.Budget, []int) {
	sorted := slices.Clone(budgets)
	slices.SortStableFunc(sorted, func(a, b protocol.Budget) int {
		switch {
		case a.Epsilon < b.Epsilon:
			return -1
		case a.Epsilon > b.Epsilon:
			return 1
		}
		return 0
	})
	var picked []protocol.Budget
	for _, b := range []protocol.Budget{sorted[0], sorted[len(sorted)/2], sorted[len(sorted)-1]} {
		if len(picked) == 0 || picked[len(picked)-1] != b {
			picked = append(picked, b)
		}
	}
	shares := make([]int, len(picked))
	for i := range shares {
		shares[i] = n / len(picked)
	}
	shares[0] += n - n/len(picked)*len(picked)
	return picked, shares
}

// addTimes absorbs rep into agg as c identical reports would be, in time
// proportional to the report's length; a clustered protocol's aggregate
// keeps its vector once (its k-means only needs to run).
func addTimes(agg *protocol.Aggregate, rep *protocol.Report, c int) error {
	if err := agg.CheckReport(rep); err != nil {
		return err
	}
	if c == 0 {
		return nil
	}
	if agg.KeepsVectors() && rep.Coords == nil {
		agg.Vectors = append(agg.Vectors, slices.Clone(rep.Values))
	}
	k, n := float64(c), int64(c)
	if rep.Coords == nil {
		for j, v := range rep.Values {
			agg.Sum[j] += k * v
			agg.Count[j] += n
		}
	} else {
		for i, j := range rep.Coords {
			agg.Sum[j] += k * rep.Values[i]
			agg.Count[j] += n
		}
	}
	for range c {
		agg.Meta = append(agg.Meta, rep.Meta...)
	}
	agg.Reports += n
	return nil
}
