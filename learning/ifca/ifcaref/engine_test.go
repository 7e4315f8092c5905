package ifcaref_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/learning/ifca/ifcaref"
)

// flClient is an engine client seen through the reference's Client
// interface: the engine's model on one client's shard, trained with the
// engine's local configuration.
type flClient struct {
	model fl.Model
	ex    fl.Examples // the run's training examples (rotated per group)
	shard []int
	local fl.LocalConfig
}

func (c flClient) Dim() int { return c.model.Dim() }

// Loss is the mean loss on the shard, computed as the engine's
// round.ChooseHypothesis does.
func (c flClient) Loss(theta []float64) float64 {
	f := c.ex.Features
	sub := fl.Examples{Features: f}
	for _, i := range c.shard {
		sub.X = append(sub.X, c.ex.X[i*f:(i+1)*f]...)
		sub.Y = append(sub.Y, c.ex.Y[i])
	}
	_, l, err := fl.Evaluate(c.model, theta, sub, 1)
	if err != nil {
		return math.NaN()
	}
	return l
}

// Train adds the engine's local update (fl.Trainer.LocalUpdate) to theta.
func (c flClient) Train(r *rand.Rand, theta []float64, epochs int) error {
	local := c.local
	local.Epochs = epochs
	upd := make([]float64, len(theta))
	if _, err := fl.NewTrainer(c.model).LocalUpdate(upd, r, theta, c.ex, c.shard, local); err != nil {
		return err
	}
	for j := range theta {
		theta[j] += upd[j]
	}
	return nil
}

// engineRound is what the test keeps of one engine round.
type engineRound struct {
	res    round.RoundResult
	models [][]float64
}

// TestEngineMatchesReference runs clustered FL on the engine (protocols
// ifca and ifca-dp, the path every experiment and `shufflefl run` take)
// and on the naive reference Simulate with the same participants, the same
// initial hypotheses, the same training streams and, for ifca-dp, the
// same noise streams (the reference's Sample and Noise hooks: by default
// it samples from one stream over the run and draws noise after training,
// so only the hooks make a per-round comparison possible). Every round
// must agree: the hypotheses the clients chose and the k-means cluster
// sizes and the clients' composed d-privacy leakage exactly, and the
// models bit for bit under the engine's streaming collection (both end in
// cluster.KMeans, which sums a cluster's vectors in the order given, and
// streaming hands the analyzer the releases in participant order, as the
// reference's server gets them) or to 1e-12 under the faithful shuffler,
// which permutes them (the sums differ in the last bits: 3e-17 here).
// Without the Noise hook the sanitized cases fail: the test can tell the
// two apart.
func TestEngineMatchesReference(t *testing.T) {
	split, err := data.Load("fashion-mnist-sample", data.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		nu       float64
		k        int
		faithful bool
	}{
		{"ifca", 0, 2, false},
		{"ifca-dp", 5, 2, false},
		{"ifca-dp", 0.5, 3, false},
		{"ifca-dp", 5, 2, true},
	} {
		t.Run(fmt.Sprintf("%s/nu=%g/k=%d/faithful=%v", tc.name, tc.nu, tc.k, tc.faithful), func(t *testing.T) {
			cfg := clusteredConfig(tc.name, tc.k, tc.nu)
			cfg.Faithful = tc.faithful
			eng, err := sim.New(cfg, split, nil)
			if err != nil {
				t.Fatal(err)
			}
			init := cloneModels(eng.Models())
			var rounds []engineRound
			for range cfg.Rounds {
				res, err := eng.Step()
				if err != nil {
					t.Fatal(err)
				}
				rounds = append(rounds, engineRound{res, cloneModels(eng.Models())})
			}
			part, err := round.PartitionData(cfg, split)
			if err != nil {
				t.Fatal(err)
			}
			train := make([]ifcaref.Client, cfg.Clients)
			local := fl.LocalConfig{Epochs: cfg.LocalEpochs, Batch: cfg.Batch, LR: cfg.LR}
			for c := range train {
				train[c] = flClient{model: eng.Model(), ex: part.Train, shard: part.Shards[c], local: local}
			}
			ref := ifcaref.Config{K: tc.k, PerRound: cfg.ClientsPerRound, MaxRounds: cfg.Rounds, Seed: cfg.Seed, Workers: 2,
				Client: ifcaref.ClientConfig{Epochs: cfg.LocalEpochs, Nu: tc.nu},
				Sample: eng.Sample,
				Noise: func(r, c int) *rand.Rand {
					return rng.Stream(cfg.Seed, rng.LabelNoise, uint64(r), uint64(c))
				}}
			ref.Client.Sanitize.MinRadius = 1e-6 // ifca-dp's default min-radius
			var got []ifcaref.Round
			if _, err := ifcaref.Simulate(ref, init, train, nil, part.Groups, func(r ifcaref.Round) { got = append(got, r) }); err != nil {
				t.Fatal(err)
			}
			for i, want := range rounds {
				tol := 0.0 // streaming: releases in participant order, bit for bit
				if tc.faithful {
					// The faithful shuffler permutes the releases, so each
					// cluster mean sums in another order.
					tol = 1e-12
				}
				compareRound(t, got[i], want, tc.nu > 0, tol)
			}
		})
	}
}

// clusteredConfig is a small rotated-partition run of protocol name.
func clusteredConfig(name string, k int, nu float64) round.Config {
	cfg := round.DefaultConfig()
	cfg.Dataset, cfg.Model, cfg.Protocol = "fashion-mnist-sample", "logreg", name
	cfg.Options = map[string]float64{"k": float64(k)}
	if nu > 0 {
		cfg.Options["nu"] = nu
	}
	cfg.Partition, cfg.Groups = "rotated", 2
	cfg.Clients, cfg.ClientsPerRound, cfg.SamplesPerClient = 40, 12, 30
	cfg.Rounds, cfg.LocalEpochs, cfg.LR, cfg.Batch = 4, 1, 0.05, 10
	cfg.Mode, cfg.ServerLR, cfg.Mu = "fedavg", 1, 0
	cfg.EpsDist, cfg.EpsFile, cfg.TargetEpsilon, cfg.ClientCap = "", "", 0, 0
	cfg.Seed, cfg.Workers, cfg.Out = 3, 2, ""
	return cfg
}

func compareRound(t *testing.T, ref ifcaref.Round, eng engineRound, sanitized bool, tol float64) {
	t.Helper()
	r := eng.res
	for h, hy := range r.Hypotheses {
		chosen := 0
		for _, c := range ref.Chosen {
			if c == h {
				chosen++
			}
		}
		if hy.Chosen != chosen || hy.Size != ref.Sizes[h] {
			t.Errorf("round %d, hypothesis %d: engine chosen %d size %d, reference chosen %d size %d",
				r.Round, h, hy.Chosen, hy.Size, chosen, ref.Sizes[h])
		}
	}
	var diff float64
	for h := range eng.models {
		for j, v := range eng.models[h] {
			diff = max(diff, math.Abs(v-ref.Hypotheses[h][j]))
		}
	}
	if !(diff <= tol) {
		t.Errorf("round %d: models differ by up to %g (tolerance %g)", r.Round, diff, tol)
	}
	if !sanitized {
		// ifca releases in the clear: the engine keeps no d-privacy ledger,
		// the reference's is infinite.
		if r.DPrivacy != nil || !math.IsInf(ref.MaxLeakage, 1) {
			t.Errorf("round %d: unsanitized run with engine leakage %+v, reference %v", r.Round, r.DPrivacy, ref.MaxLeakage)
		}
		return
	}
	if r.DPrivacy == nil {
		t.Fatalf("round %d: no d-privacy accounting", r.Round)
	}
	if r.DPrivacy.MaxCumulative != ref.MaxLeakage || r.DPrivacy.MedianCumulative != ref.MedianLeakage || math.IsInf(ref.MaxLeakage, 1) {
		t.Errorf("round %d: engine leakage max %v median %v, reference %v %v", r.Round,
			r.DPrivacy.MaxCumulative, r.DPrivacy.MedianCumulative, ref.MaxLeakage, ref.MedianLeakage)
	}
}

func cloneModels(ms [][]float64) [][]float64 {
	out := make([][]float64, len(ms))
	for i, m := range ms {
		out[i] = slices.Clone(m)
	}
	return out
}
