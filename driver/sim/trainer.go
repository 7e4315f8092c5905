package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// A Trainer computes one client's local update in place of the engine's
// in-process fl.Trainer (SetTrainers): cmd/shufflefl's --trainer runs it
// in the user's trainer process. It receives what the in-process trainer
// receives and must write the same quantity into dst (len(dst) is the
// model's dimension): the model delta w_local − w_global in FedAvg mode,
// the gradient in FedSGD mode (fl.Mode). The engine clips, randomizes and
// aggregates dst afterwards; a Trainer never sees noise or another
// client's update. Each worker has its own Trainer, so a Trainer need not
// be safe for concurrent use.
type Trainer interface {
	Train(dst []float64, job TrainJob) error
}

// TrainJob is one client's local training in a round.
type TrainJob struct {
	Round, Client int
	// Rand is the client's training stream of the round (the in-process
	// trainer draws its minibatch order from it).
	Rand *rand.Rand
	// Global is the model the client trains from (read only).
	Global []float64
	// Examples are the engine's training examples (TrainingExamples) and
	// Shard the client's rows of them (read only).
	Examples fl.Examples
	Shard    []int
	// Local is the local training configuration.
	Local fl.LocalConfig
}

// ErrTrainer is wrapped by the errors of a Trainer set with SetTrainers
// that are the trainer's failure (it crashed, hung, returned a bad update),
// as opposed to the run's input: the run stops with the error, naming the
// round and client.
var ErrTrainer = errors.New("external trainer failed")

// SetTrainers makes each worker i of the engine train its clients with
// newTrainer(i) from the next round on, for i in [0, Workers()). It must not
// be called while a round runs, and not on an engine with a Runner (remote
// workers train in their own processes). The pre-flight's trial update
// (New) stays in process. The caller owns the Trainers (and closes them
// when the run ends).
func (e *Engine) SetTrainers(newTrainer func(worker int) (Trainer, error)) error {
	if e.runner != nil {
		return checks.Invalidf("an external trainer cannot be combined with remote workers")
	}
	ws := make([]*worker, e.workers)
	for i := range ws {
		ws[i] = <-e.trainers
	}
	defer func() {
		for _, w := range ws {
			e.trainers <- w
		}
	}()
	ts := make([]Trainer, len(ws))
	for i := range ws {
		t, err := newTrainer(i)
		if err != nil {
			return fmt.Errorf("worker %d's trainer: %w", i, err)
		}
		ts[i] = t
	}
	for i, w := range ws {
		w.ext = ts[i]
	}
	return nil
}

// TrainingExamples are the examples the clients' shards index (the
// training set, transformed for its groups under partition "rotated").
func (e *Engine) TrainingExamples() fl.Examples { return e.trainEx }

// TestExamples are the examples the model is evaluated on each round
// (the test set, not transformed: clustered protocols evaluate per group).
func (e *Engine) TestExamples() fl.Examples { return e.testEx }

// localUpdate runs client's local update of round t from base into
// w.update, on w's external Trainer if it has one.
func (e *Engine) localUpdate(w *worker, t, client int, r *rand.Rand, base []float64) error {
	if w.ext != nil {
		return w.ext.Train(w.update, TrainJob{Round: t, Client: client, Rand: r, Global: base, Examples: e.trainEx, Shard: e.shard(w, client), Local: e.local})
	}
	_, err := w.trainer.LocalUpdate(w.update, r, base, e.trainEx, e.shard(w, client), e.local)
	return err
}
