package sim

import (
	"fmt"
	"math"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// Early stopping on held-out clients (the group-privacy paper, Sections
// 5.1–5.3; Config.HoldoutClients, ValidateEvery, Patience). The validation
// clients get shards from the same partition as the training clients (the
// last HoldoutClients of Clients+HoldoutClients shards, rotation groups
// drawn over all of them) and take no part in training: they are never
// sampled, charged, or counted in the population of the privacy statement.
// Every ValidateEvery rounds each of them evaluates every model on its shard
// and keeps the lowest loss (in a clustered run, the model it would choose,
// as a participant does); the validation loss and accuracy are the
// example-weighted means. After Patience validations without a lower loss
// the run stops (Halted says so).
//
// What the privacy statement does not cover: the validation clients' losses
// are computed without noise and decide when the run stops, so the
// validation clients' data is used like a validation set the analyzer owns.
// The statement covers the Clients training clients only.

// ValidationState is the early-stopping state a checkpoint keeps
// (Snapshot.Validation).
type ValidationState struct {
	Stop               fl.EarlyStop `json:"stop"`
	TestAccuracyAtBest float64      `json:"test_accuracy_at_best"`
	Stopped            bool         `json:"stopped"`
}

// validation is the engine's validation clients and early-stopping state.
type validation struct {
	clients []fl.Examples // one per validation client (copies of its rows)
	groups  []int         // rotation group of each (partition "rotated")
	state   ValidationState
}

// splitHoldout moves the last cfg.HoldoutClients shards (and groups) out
// of the training population into the validation clients, copying their
// (already transformed) rows from trainEx.
func (e *Engine) splitHoldout() error {
	h, n := e.cfg.HoldoutClients, e.cfg.Clients
	if h == 0 {
		return nil
	}
	if e.nshards != n+h {
		return fmt.Errorf("partition gave %d shards for %d clients and %d validation clients", e.nshards, n, h)
	}
	v := &validation{state: ValidationState{Stop: fl.EarlyStop{Every: e.cfg.ValidateEvery, Patience: e.cfg.Patience}}}
	f := e.trainEx.Features
	for c := range h {
		shard := e.part.Shard(n + c)
		if len(shard) == 0 {
			return checks.Invalidf("validation client %d has no examples (too few training samples for %d+%d clients)", c, n, h)
		}
		ex := fl.Examples{Features: f, X: make([]float32, 0, len(shard)*f), Y: make([]uint8, 0, len(shard))}
		for _, i := range shard {
			ex.X = append(ex.X, e.trainEx.X[i*f:(i+1)*f]...)
			ex.Y = append(ex.Y, e.trainEx.Y[i])
		}
		v.clients = append(v.clients, ex)
	}
	e.nshards = n
	if e.groups != nil {
		v.groups = e.groups[n:]
		e.groups = e.groups[:n:n]
	}
	e.val = v
	return nil
}

// validate runs round t's validation if it is due and updates the
// early-stopping state; it sets e.halted when the run should stop.
func (e *Engine) validate(t int, res *round.RoundResult) error {
	v := e.val
	if v == nil || !v.state.Stop.Due(t) {
		return nil
	}
	models := e.Models()
	type out struct {
		loss, correct float64
		err           error
	}
	outs := make([]out, len(v.clients))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(e.workers, len(v.clients)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				best, bacc := math.Inf(1), 0.0
				for _, m := range models {
					acc, loss, err := fl.Evaluate(e.model, m, v.clients[c], 1)
					if err != nil {
						outs[c].err = err
						break
					}
					if loss < best {
						best, bacc = loss, acc
					}
				}
				n := float64(len(v.clients[c].Y))
				outs[c].loss, outs[c].correct = best*n, bacc*n
			}
		}()
	}
	for c := range v.clients {
		next <- c
	}
	close(next)
	wg.Wait()
	vr := &round.ValidationRound{Clients: len(v.clients)}
	for c, o := range outs {
		if o.err != nil {
			return fmt.Errorf("validation client %d: %w", c, o.err)
		}
		vr.Loss += o.loss
		vr.Accuracy += o.correct
		vr.Examples += len(v.clients[c].Y)
	}
	vr.Loss /= float64(vr.Examples)
	vr.Accuracy /= float64(vr.Examples)
	improved, stop := v.state.Stop.Observe(t, vr.Loss)
	if improved {
		v.state.TestAccuracyAtBest = res.TestAccuracy
	}
	vr.Improved = improved
	vr.BestLoss, vr.BestRound = v.state.Stop.Best()
	res.Validation = vr
	if stop {
		v.state.Stopped = true
		if e.halted == "" {
			e.halted = fmt.Sprintf("early stop after round %d: the validation loss has not improved for %d validations (best %.4g at round %d, test accuracy %.4f there)",
				t, v.state.Stop.Patience, vr.BestLoss, vr.BestRound, v.state.TestAccuracyAtBest)
		}
	}
	return nil
}

// validationSummary returns the run's early-stopping outcome (nil without
// validation clients).
func (e *Engine) validationSummary() *round.ValidationSummary {
	if e.val == nil {
		return nil
	}
	st := e.val.state
	return &round.ValidationSummary{HoldoutClients: len(e.val.clients), Every: st.Stop.Every, Patience: st.Stop.Patience,
		BestRound: st.Stop.BestRound, BestLoss: st.Stop.BestLoss, TestAccuracyAtBest: st.TestAccuracyAtBest, Stopped: st.Stopped}
}

// ValidationGroups returns the rotation group of each validation client
// (nil without validation clients or outside the "rotated" partition).
func (e *Engine) ValidationGroups() []int {
	if e.val == nil {
		return nil
	}
	return e.val.groups
}
