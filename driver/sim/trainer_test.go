package sim

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// goTrainer is an external Trainer that runs the in-process trainer, or
// fails for one client.
type goTrainer struct {
	t     *fl.Trainer
	calls *atomic.Int64
	fail  int // client that fails (-1: none)
}

func (g goTrainer) Train(dst []float64, j TrainJob) error {
	g.calls.Add(1)
	if j.Client == g.fail {
		return fmt.Errorf("%w: the process exited", ErrTrainer)
	}
	_, err := g.t.LocalUpdate(dst, j.Rand, j.Global, j.Examples, j.Shard, j.Local)
	return err
}

func TestSetTrainers(t *testing.T) {
	split := loadSample(t)
	for _, proto := range []string{"nonprivate", "ss-simple"} {
		cfg := smallConfig()
		cfg.Protocol = proto
		if err := round.ApplyDefaults(&cfg, func(string) bool { return false }); err != nil {
			t.Fatal(err)
		}
		want := runAll(t, cfg, split)
		e, err := New(cfg, split, nil)
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		made := 0
		if err := e.SetTrainers(func(int) (Trainer, error) {
			made++
			return goTrainer{t: fl.NewTrainer(e.Model()), calls: &calls, fail: -1}, nil
		}); err != nil {
			t.Fatal(err)
		}
		var got []round.RoundResult
		if _, err := e.Run(func(r round.RoundResult) { got = append(got, r) }); err != nil {
			t.Fatal(err)
		}
		sameTrajectory(t, want, got)
		if made != e.Workers() || calls.Load() == 0 {
			t.Errorf("%s: %d trainers for %d workers, %d calls", proto, made, e.Workers(), calls.Load())
		}
	}
}

func TestSetTrainersFailure(t *testing.T) {
	split := loadSample(t)
	cfg := smallConfig()
	cfg.ClientsPerRound = cfg.Clients // every client takes part in round 1
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	if err := e.SetTrainers(func(int) (Trainer, error) {
		return goTrainer{t: fl.NewTrainer(e.Model()), calls: &calls, fail: 7}, nil
	}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Step()
	if !errors.Is(err, ErrTrainer) || IsUsageError(err) || !strings.Contains(err.Error(), "round 1: client 7: local update: ") {
		t.Errorf("got %v, want round 1, client 7's ErrTrainer (not a usage error)", err)
	}
	if err := e.SetTrainers(func(int) (Trainer, error) { return nil, errors.New("no program") }); err == nil || !strings.Contains(err.Error(), "worker 0's trainer: no program") {
		t.Errorf("a failing factory: %v", err)
	}
}
