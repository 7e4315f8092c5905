package audit

import (
	"fmt"
	"math"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// MIAConfig configures membership inference against a trained global
// model. Train is the engine configuration (protocol, model, rounds, ...);
// its Clients·SamplesPerClient members are drawn from Pool.Train, the same
// number of held-out non-members from Pool.Test, and each of the
// References reference models is trained the same way on a disjoint set of
// other Pool.Train examples (never the audited ones).
type MIAConfig struct {
	Train      round.Config
	Pool       data.Split
	References int
	// Hooks, if set, are installed on the target run's engine.
	Hooks *sim.Hooks
}

// MIAResult is the outcome for one trained model.
type MIAResult struct {
	Protocol string  `json:"protocol"`
	Epsilon  float64 `json:"epsilon"`
	// EpsClaimed is the run's cumulative central epsilon (nil: none).
	EpsClaimed *float64 `json:"eps_claimed"`
	Delta      float64  `json:"delta"`
	TrainAcc   float64  `json:"train_accuracy"`
	TestAcc    float64  `json:"test_accuracy"`
	Loss       ROC      `json:"loss_attack"`
	Calibrated ROC      `json:"calibrated_attack"`
	// AUCBound is MaxAUC at the claimed user-level epsilon and delta: no
	// attack can beat it if the claim holds (a client's examples are a
	// group inside its update, so example-level privacy is at least as
	// strong). 1 without a claim.
	AUCBound   float64 `json:"auc_bound"`
	References int     `json:"references"`
	Seconds    float64 `json:"seconds"`
}

// MembershipInference trains the target model and the reference models
// and runs the loss-threshold attack (Yeom et al. 2018: a member has a
// lower loss) and its per-example difficulty calibration (Watson et al.
// 2022: the target's loss minus the mean loss of the example under
// reference models trained without it), on members against held-out
// non-members.
func MembershipInference(cfg MIAConfig) (MIAResult, error) {
	tc := cfg.Train
	n := tc.Clients * tc.SamplesPerClient
	if tc.SamplesPerClient <= 0 {
		return MIAResult{}, checks.Invalidf("membership inference needs samples-per-client > 0 (the members are clients x samples)")
	}
	need := n * (1 + cfg.References)
	if need > cfg.Pool.Train.Len() {
		return MIAResult{}, checks.Invalidf("%d members and %d reference sets of %d need %d training examples, the dataset has %d: use fewer clients, samples or references",
			n, cfg.References, n, need, cfg.Pool.Train.Len())
	}
	if n > cfg.Pool.Test.Len() {
		return MIAResult{}, checks.Invalidf("%d members need as many held-out non-members, the test set has %d", n, cfg.Pool.Test.Len())
	}
	perm := rng.Stream(tc.Seed, 0x313a).Perm(cfg.Pool.Train.Len())
	members := cfg.Pool.Train.Subset(perm[:n])
	nonIdx := rng.Stream(tc.Seed, 0x313b).Perm(cfg.Pool.Test.Len())[:n]
	non := cfg.Pool.Test.Subset(nonIdx)
	train := func(c round.Config, set *data.Dataset, hooks *sim.Hooks) (fl.Model, []float64, round.Summary, error) {
		e, err := sim.New(c, data.Split{Train: set, Test: non}, nil)
		if err != nil {
			return nil, nil, round.Summary{}, err
		}
		if hooks != nil {
			e.SetHooks(*hooks)
		}
		sum, err := e.Run(nil)
		if err != nil {
			return nil, nil, sum, err
		}
		return e.Model(), slices.Clone(e.Weights()), sum, nil
	}
	m, w, sum, err := train(tc, members, cfg.Hooks)
	if err != nil {
		return MIAResult{}, fmt.Errorf("training the target model: %w", err)
	}
	memEx := examples(members)
	nonEx := examples(non)
	lm, ln := losses(m, w, memEx), losses(m, w, nonEx)
	res := MIAResult{Protocol: tc.Protocol, Epsilon: tc.Epsilon, Delta: tc.Delta,
		TestAcc: sum.FinalAccuracy, References: cfg.References, Seconds: sum.Seconds}
	if acc, _, err := fl.Evaluate(m, w, memEx, 1); err == nil {
		res.TrainAcc = acc
	}
	res.Loss = NewROC(neg(lm), neg(ln))
	if cfg.References > 0 {
		refM := make([]float64, n)
		refN := make([]float64, n)
		for k := 0; k < cfg.References; k++ {
			rc := tc
			rc.Seed = tc.Seed + uint64(k) + 1
			set := cfg.Pool.Train.Subset(perm[n*(k+1) : n*(k+2)])
			rm, rw, _, err := train(rc, set, nil)
			if err != nil {
				return MIAResult{}, fmt.Errorf("training reference model %d: %w", k+1, err)
			}
			for i, l := range losses(rm, rw, memEx) {
				refM[i] += l / float64(cfg.References)
			}
			for i, l := range losses(rm, rw, nonEx) {
				refN[i] += l / float64(cfg.References)
			}
		}
		cm := make([]float64, n)
		cn := make([]float64, n)
		for i := range cm {
			cm[i] = refM[i] - lm[i]
			cn[i] = refN[i] - ln[i]
		}
		res.Calibrated = NewROC(cm, cn)
	}
	if e := sum.Privacy.CumulativeEpsilon; !math.IsInf(e, 0) && !math.IsNaN(e) {
		res.EpsClaimed = &e
		res.AUCBound = MaxAUC(e, sum.Privacy.CumulativeDelta)
	} else {
		res.AUCBound = 1
	}
	return res, nil
}

func examples(d *data.Dataset) fl.Examples {
	return fl.Examples{X: d.X, Y: d.Y, Features: d.Features}
}

// losses returns the per-example loss of every example of ex.
func losses(m fl.Model, w []float64, ex fl.Examples) []float64 {
	out := make([]float64, ex.Len())
	idx := []int{0}
	for i := range out {
		idx[0] = i
		out[i] = m.Loss(w, ex, idx)
	}
	return out
}

func neg(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = -v
	}
	return out
}
