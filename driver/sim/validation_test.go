package sim

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
)

func validationConfig() round.Config {
	c := smallConfig()
	c.HoldoutClients, c.ValidateEvery, c.Patience, c.Rounds, c.LocalEpochs = 10, 1, 2, 30, 1
	return c
}

// TestValidationConfigErrors: every inconsistent early-stopping setting is
// refused with a message naming it.
func TestValidationConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name             string
		hold, every, pat int
		want             string
	}{
		{"negative holdout", -1, 1, 0, "holdout-clients"},
		{"negative every", 5, -1, 0, "validate-every"},
		{"negative patience", 5, 1, -2, "patience"},
		{"every without holdout", 0, 2, 0, "needs validation clients"},
		{"holdout never used", 5, 0, 0, "never used"},
		{"patience without every", 0, 0, 3, "patience 3 needs validate-every"},
		{"every past the rounds", 5, 31, 1, "more than the run's 30 rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validationConfig()
			c.HoldoutClients, c.ValidateEvery, c.Patience = tc.hold, tc.every, tc.pat
			err := c.Validate()
			if err == nil || !IsUsageError(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
	c := validationConfig()
	c.Clients, c.HoldoutClients = 1990, 20 // 2,010 shards for 2,000 samples
	if _, err := New(c, loadSample(t), nil); err == nil || !strings.Contains(err.Error(), "1990 training + 20 validation clients") {
		t.Fatalf("too many clients with validation clients: %v", err)
	}
}

// holdoutData rebuilds the validation clients' examples independently of
// the engine: the partition of Clients+HoldoutClients shards, the last
// HoldoutClients of them (no rotation: partition iid).
func holdoutData(t *testing.T, cfg round.Config, split data.Split) (train [][]int, val fl.Examples) {
	t.Helper()
	shards, err := data.PartitionIID(rng.Stream(cfg.Seed, rng.LabelPartition), split.Train.Len(), cfg.Clients+cfg.HoldoutClients, cfg.SamplesPerClient)
	if err != nil {
		t.Fatal(err)
	}
	f := split.Train.Features
	val.Features = f
	for _, sh := range shards[cfg.Clients:] {
		for _, i := range sh {
			val.X = append(val.X, split.Train.X[i*f:(i+1)*f]...)
			val.Y = append(val.Y, split.Train.Y[i])
		}
	}
	return shards[:cfg.Clients], val
}

// TestEarlyStopEngine: validation happens on due rounds only, its loss is
// the held-out clients' loss computed independently, the run stops exactly
// where an independent replay of the rule says, the summary reports the
// best round and its test accuracy, and the validation clients never take
// part in training or in the privacy statement's population.
func TestEarlyStopEngine(t *testing.T) {
	split := loadSample(t)
	cfg := validationConfig()
	cfg.Protocol = "ss-simple"
	cfg.Options = map[string]float64{"randomizer": 1}
	cfg.Epsilon = 50
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	train, val := holdoutData(t, cfg, split)
	shards := make([][]int, e.nshards)
	for c := range shards {
		shards[c] = e.part.Shard(c)
	}
	if !slices.EqualFunc(shards, train, slices.Equal) {
		t.Fatal("the training clients' shards are not the first Clients shards of the Clients+HoldoutClients partition")
	}
	var got []round.RoundResult
	for e.Round() < cfg.Rounds && e.Halted() == "" {
		r, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		if r.Validation == nil {
			t.Fatalf("round %d: no validation with validate-every 1", r.Round)
		}
		// A single model: the example-weighted mean of the clients' mean
		// losses is the mean loss over all their examples.
		_, loss, err := fl.Evaluate(e.Model(), e.Weights(), val, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(r.Validation.Loss - loss); d > 1e-9*loss {
			t.Fatalf("round %d: validation loss %v, independent %v", r.Round, r.Validation.Loss, loss)
		}
		if r.Privacy.Bound == "" || r.Validation.Clients != 10 || r.Validation.Examples != len(val.Y) {
			t.Fatalf("round %d: %+v", r.Round, r.Validation)
		}
		got = append(got, r)
	}
	// Independent replay: stop at the first validation that is the
	// patience-th in a row without a strictly lower loss.
	best, bestAt, bad, stopAt := math.Inf(1), 0, 0, 0
	for _, r := range got {
		if r.Validation.Loss < best {
			best, bestAt, bad = r.Validation.Loss, r.Round, 0
		} else if bad++; bad == cfg.Patience {
			stopAt = r.Round
			break
		}
	}
	if stopAt == 0 || stopAt == cfg.Rounds {
		t.Fatalf("test setting does not stop early (stop at %d of %d): change it", stopAt, cfg.Rounds)
	}
	if last := got[len(got)-1].Round; last != stopAt || !strings.Contains(e.Halted(), "early stop after round") {
		t.Fatalf("engine stopped after round %d (%q), replay says %d", last, e.Halted(), stopAt)
	}
	vs := e.validationSummary()
	if vs.BestRound != bestAt || vs.BestLoss != best || vs.TestAccuracyAtBest != got[bestAt-1].TestAccuracy || !vs.Stopped {
		t.Fatalf("summary %+v, want best round %d loss %v accuracy %v", vs, bestAt, best, got[bestAt-1].TestAccuracy)
	}
	// The statement's population is the training clients; the ledger has
	// no entry for a validation client.
	if s := e.shape(1); s.Population != cfg.Clients {
		t.Fatalf("statement population %d, want %d training clients", s.Population, cfg.Clients)
	}
	for c := cfg.Clients; c < cfg.Clients+cfg.HoldoutClients; c++ {
		if sp, _ := e.Ledger().Spent(strconv.Itoa(c)); sp.Epsilon != 0 {
			t.Fatalf("validation client %d was charged %v", c, sp.Epsilon)
		}
	}
	for tt := 1; tt <= 50; tt++ {
		if s := e.Sample(tt); s[len(s)-1] >= cfg.Clients {
			t.Fatalf("round %d samples client %d, a validation client", tt, s[len(s)-1])
		}
	}
}

// TestValidationEveryAndClustered: with validate-every 3 only rounds 3, 6,
// ... validate; in a clustered run each validation client takes its
// lowest-loss model, recomputed here independently.
func TestValidationEveryAndClustered(t *testing.T) {
	split := loadSample(t)
	cfg := clusteredConfig()
	cfg.Clients, cfg.SamplesPerClient = 60, 25
	cfg.HoldoutClients, cfg.ValidateEvery, cfg.Patience, cfg.Rounds, cfg.LocalEpochs = 8, 3, 0, 6, 1
	e, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	for e.Round() < cfg.Rounds {
		r, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		if (r.Validation != nil) != (r.Round%3 == 0) {
			t.Fatalf("round %d: validation %v with validate-every 3", r.Round, r.Validation)
		}
		if r.Validation == nil {
			continue
		}
		var sum float64
		n := 0
		for _, ex := range e.val.clients {
			best := math.Inf(1)
			for _, m := range e.Models() {
				_, l, err := fl.Evaluate(e.Model(), m, ex, 1)
				if err != nil {
					t.Fatal(err)
				}
				best = math.Min(best, l)
			}
			sum += best * float64(len(ex.Y))
			n += len(ex.Y)
		}
		if want := sum / float64(n); math.Abs(r.Validation.Loss-want) > 1e-12*want {
			t.Fatalf("round %d: validation loss %v, independent %v", r.Round, r.Validation.Loss, want)
		}
	}
	if len(e.Models()) != 2 || len(e.ValidationGroups()) != 8 || e.Halted() != "" {
		t.Fatalf("%d models, %d validation groups, halted %q", len(e.Models()), len(e.ValidationGroups()), e.Halted())
	}
}

// TestValidationResume: a run interrupted before its early stop and
// resumed from a JSON snapshot validates and stops exactly as the
// uninterrupted run.
func TestValidationResume(t *testing.T) {
	split := loadSample(t)
	cfg := validationConfig()
	want := runAll(t, cfg, split)
	if len(want) == cfg.Rounds {
		t.Fatal("test setting does not stop early")
	}
	got, _ := runResumed(t, cfg, cfg, 3)
	sameTrajectory(t, want, got)
	for i := range want {
		if *want[i].Validation != *got[i].Validation {
			t.Fatalf("round %d: validation %+v resumed, %+v uninterrupted", i+1, got[i].Validation, want[i].Validation)
		}
	}
	// A snapshot of a run without validation clients does not restore
	// into one with them, and the reverse.
	plain := cfg
	plain.HoldoutClients, plain.ValidateEvery, plain.Patience = 0, 0, 0
	e, err := New(plain, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step(); err != nil {
		t.Fatal(err)
	}
	snap, err := e.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(cfg, split, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(snap); err == nil || !strings.Contains(err.Error(), "validation clients") {
		t.Fatalf("restore without validation state: %v", err)
	}
}
