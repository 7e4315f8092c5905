package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/protocol"
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

// TestSetTrainersFailure: a client whose external trainer fails sits the
// round out — nothing charged, nothing sent — and the round goes on for
// the others: the analyzer states it from what it opened (one report
// fewer), streaming and faithful alike, and the round's result names the
// failure.
func TestSetTrainersFailure(t *testing.T) {
	split := loadSample(t)
	const n = 200
	for _, faithful := range []bool{false, true} {
		cfg := smallConfig()
		cfg.Protocol = "ss-simple"
		cfg.Faithful = faithful
		if err := round.ApplyDefaults(&cfg, func(string) bool { return false }); err != nil {
			t.Fatal(err)
		}
		cfg.Clients, cfg.ClientsPerRound = n, n // every client takes part in round 1
		cfg.Epsilon, cfg.TargetEpsilon = 2, 0   // a budget the shuffle amplifies
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
		res, err := e.Step()
		if err != nil {
			t.Fatalf("faithful %v: a failed trainer stopped the round: %v", faithful, err)
		}
		if res.SatOut != 1 || !strings.Contains(res.TrainerError, "client 7: local update: ") || res.Participants != cfg.Clients-1 || res.Reports != int64(cfg.Clients-1) {
			t.Fatalf("faithful %v: sat out %d (%q), %d participants, %d reports; want client 7 out of %d", faithful, res.SatOut, res.TrainerError, res.Participants, res.Reports, cfg.Clients)
		}
		// The round is stated for the reports opened (n-1), not for the
		// n the round was opened with.
		stated := func(m int) float64 {
			sh := e.shape(1)
			sh.Participants, sh.Sampled = m, n
			bs := make([]protocol.Budget, m)
			for i := range bs {
				bs[i] = e.budgets.At(i)
			}
			p, err := e.proto.Account(sh, bs)
			if err != nil {
				t.Fatal(err)
			}
			return p.CentralEpsilon
		}
		if all, less := stated(n), stated(n-1); all == less {
			t.Fatalf("the statements for %d and %d reporters are equal (%v): the test would prove nothing", n, n-1, all)
		} else if got := res.Privacy.CentralEpsilon; got != less {
			t.Fatalf("faithful %v: round stated %v; for %d reporters %v, for %d %v", faithful, got, n-1, less, n, all)
		}
		for c := range cfg.Clients {
			es, err := e.Ledger().Entries(strconv.Itoa(c))
			if err != nil {
				t.Fatal(err)
			}
			if want := 1 - btoi(c == 7); len(es) != want {
				t.Errorf("faithful %v: client %d has %d ledger entries, want %d", faithful, c, len(es), want)
			}
		}
	}
	e, err := New(smallConfig(), split, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetTrainers(func(int) (Trainer, error) { return nil, errors.New("no program") }); err == nil || !strings.Contains(err.Error(), "worker 0's trainer: no program") {
		t.Errorf("a failing factory: %v", err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
