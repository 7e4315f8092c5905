package round

import (
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
)

// RoundResult is everything observed in one round.
type RoundResult struct {
	Round        int              `json:"round"`
	Participants int              `json:"participants"`
	TestAccuracy float64          `json:"test_accuracy"`
	TestLoss     float64          `json:"test_loss"`
	Privacy      protocol.Privacy `json:"privacy"`
	// MaxClientEpsilon is the largest cumulative local epsilon any client has
	// actually spent so far (its ledger total: it counts only the rounds the
	// client took part in).
	MaxClientEpsilon float64 `json:"max_client_epsilon"`
	// Refused counts sampled clients whose ledger refused the release
	// because it would exceed their cap (they sat the round out).
	Refused int `json:"refused"`
	// SatOut counts participants whose external trainer failed in the
	// round (sim.ErrTrainer): they sat the round out uncharged, and the
	// analyzer stated the round from what it opened. TrainerError is the
	// first such failure, naming the client.
	SatOut       int    `json:"sat_out,omitempty"`
	TrainerError string `json:"trainer_error,omitempty"`
	// Reports and Dummies count what reached the analyzer.
	Reports int64   `json:"reports"`
	Dummies int64   `json:"dummies"`
	Seconds float64 `json:"seconds"`
	Timing  Timing  `json:"timing"`
	// Hypotheses describes each model of a clustered protocol (nil
	// otherwise).
	Hypotheses []Hypothesis `json:"hypotheses,omitempty"`
	// DPrivacy is the round's d-privacy accounting, for protocols whose
	// guarantee is d-privacy (nil otherwise).
	DPrivacy *DPrivacyRound `json:"d_privacy,omitempty"`
	// Validation is the round's validation on the held-out clients (nil
	// when none was due).
	Validation *ValidationRound `json:"validation,omitempty"`
	// ClusterAccuracy scores the participants' choices of hypothesis
	// against their true groups (clustered protocols on the "rotated"
	// partition; nil otherwise).
	ClusterAccuracy *ClusterAccuracy `json:"cluster_accuracy,omitempty"`
	// Alone is this round alone, composed by the run's accountant at the
	// run's delta: the per-round figure comparable with the cumulative one
	// (Privacy.CentralEpsilon is the protocol's own analysis, at the
	// round's delta share).
	Alone AloneRound `json:"alone"`
}

// AloneRound is one round's release on its own, stated the way the run's
// cumulative figure is: by the run's accountant (the tightest of its
// compositions) at the run's target delta. Epsilon is +Inf for a round
// that released nothing or a run without a guarantee.
type AloneRound struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Method  string  `json:"method"`
}

// Hypothesis is one model of a clustered protocol after a round.
type Hypothesis struct {
	// Size is the number of released vectors the analyzer's k-means put in
	// this model's cluster.
	Size int `json:"size"`
	// Chosen is the number of participants that chose this model to train
	// (the clients' private choice: a simulation diagnostic the analyzer
	// of a deployment never learns).
	Chosen int `json:"chosen"`
	// Accuracy and Loss are the model's test accuracy and loss on each test
	// group (one group unless the partition is "rotated").
	Accuracy []float64 `json:"accuracy"`
	Loss     []float64 `json:"loss"`
	// MaxLeakage and MedianLeakage are the largest and the median
	// cumulative d-privacy leakage of the clients that chose this model this
	// round (0 if none did).
	MaxLeakage    float64 `json:"max_leakage"`
	MedianLeakage float64 `json:"median_leakage"`
}

// DPrivacyRound is the d-privacy accounting of one round: the leakage of
// one participation, and the clients' cumulative leakage composed over
// their participations (group-privacy paper, Theorem 1).
type DPrivacyRound struct {
	Level            float64 `json:"level"`
	MaxCumulative    float64 `json:"max_cumulative"`
	MedianCumulative float64 `json:"median_cumulative"`
}

// Timing splits a round's time. Train (local training), Encode (clipping and
// the local randomizer's noise) and Aggregate (folding reports into the
// analyzer's aggregate) are summed over workers (CPU seconds); Clients is the
// wall-clock time of that parallel phase; Shuffle (padding, and permuting in
// the faithful path), Analyze, Evaluate and Accounting are wall-clock.
type Timing struct {
	Train      float64 `json:"train"`
	Encode     float64 `json:"encode"`
	Aggregate  float64 `json:"aggregate"`
	Clients    float64 `json:"clients_wall"`
	Shuffle    float64 `json:"shuffle"`
	Analyze    float64 `json:"analyze"`
	Evaluate   float64 `json:"evaluate"`
	Validate   float64 `json:"validate,omitempty"`
	Accounting float64 `json:"accounting"`
}

// Summary is the outcome of a whole run.
type Summary struct {
	Rounds           int              `json:"rounds"`
	FinalAccuracy    float64          `json:"final_test_accuracy"`
	FinalLoss        float64          `json:"final_test_loss"`
	BestAccuracy     float64          `json:"best_test_accuracy"`
	Privacy          protocol.Privacy `json:"final_privacy"`
	MaxClientEpsilon float64          `json:"max_client_epsilon"`
	Seconds          float64          `json:"seconds"`
	Dim              int              `json:"dim"`
	Workers          int              `json:"workers"`
	TrainSamples     int              `json:"train_samples"`
	TestSamples      int              `json:"test_samples"`
	// Plan is the pre-flight privacy statement (planned rounds, calibration).
	Plan Plan `json:"plan"`
	// Halted says why the run stopped before its planned rounds ("" if not).
	Halted string `json:"halted,omitempty"`
	// Warnings are the pre-flight's warnings (Engine.Warnings).
	Warnings []string `json:"warnings,omitempty"`
	// Alone is the last round alone at the run's delta (RoundResult.Alone).
	Alone AloneRound `json:"alone"`
	// Validation is the early-stopping outcome (nil without validation
	// clients).
	Validation *ValidationSummary `json:"validation,omitempty"`
	// ClusterAccuracy is the cluster-assignment accuracy of the last round
	// that has one (nil if none has).
	ClusterAccuracy *ClusterAccuracy `json:"cluster_accuracy,omitempty"`
	// LowerBound is a proven lower bound on the true epsilon of the run's
	// releases at the cumulative delta (protocol.LowerBounder), or Method
	// protocol.MethodNone with Why; nil for a run without a guarantee (and
	// for runs not made by rundir.Execute). Not encoded: summary.json has
	// it through metrics.SummaryRecord.
	LowerBound *LowerBound `json:"-"`
	// TrainerEvaluation is the trainer program's own evaluation of the
	// final model (nil without a trainer that evaluates).
	TrainerEvaluation *TrainerEvaluation `json:"-"`
}

// TrainerEvaluation is a trainer program's evaluation of the run's final
// model on the test set (docs/TRAINER.md, the evaluate request), beside
// shufflefl's own: the two agree, up to float32 rounding, when the
// trainer reads the parameters in the layout its hello describes.
type TrainerEvaluation struct {
	Round    int     `json:"round"`
	Examples int     `json:"examples"`
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
}

// LowerBound is a run's lower bound (Summary.LowerBound): the protocol's,
// and, without one, why (Why is empty when the bound was computed).
type LowerBound struct {
	protocol.LowerBound
	Why string `json:"why,omitempty"`
}

// ClusterAccuracy is IFCA's cluster-assignment accuracy of one round
// (ifca.AssignmentAccuracy): the fraction of the round's participants whose
// chosen hypothesis is the one matched to their true group, under the
// one-to-one relabelling of hypotheses to groups that agrees with the most
// participants. Only runs whose clients have a known group (partition
// "rotated": the rotation group) have it. It scores the clients' private
// choices, a simulation diagnostic the analyzer of a deployment never
// learns.
type ClusterAccuracy struct {
	Accuracy     float64 `json:"accuracy"`
	Matched      int     `json:"matched"`
	Participants int     `json:"participants"`
	// Relabel[g] is the hypothesis matched to group g (-1: none, when
	// there are more groups than hypotheses).
	Relabel []int `json:"relabel"`
}

// BestPerGroup returns, for every test group, the index of the model with
// the lowest loss on it (ties to the lowest index): the model a group's
// clients would use, as IFCA evaluates. hs must be non-empty, each with one
// loss per group.
func BestPerGroup(hs []Hypothesis) []int {
	best := make([]int, len(hs[0].Loss))
	for g := range best {
		for h := range hs {
			if hs[h].Loss[g] < hs[best[g]].Loss[g] {
				best[g] = h
			}
		}
	}
	return best
}

// ValidationRound is a validation's result (RoundResult.Validation).
type ValidationRound struct {
	// Loss and Accuracy are the validation clients' example-weighted mean
	// loss and accuracy, each with its lowest-loss model.
	Loss     float64 `json:"loss"`
	Accuracy float64 `json:"accuracy"`
	// Improved is true when Loss is the lowest so far; BestRound and
	// BestLoss are the best validation so far (this one if improved).
	Improved  bool    `json:"improved"`
	BestRound int     `json:"best_round"`
	BestLoss  float64 `json:"best_loss"`
	// Clients and Examples are the validation clients and their examples.
	Clients  int `json:"clients"`
	Examples int `json:"examples"`
}

// ValidationSummary is a run's early-stopping outcome (Summary.Validation).
type ValidationSummary struct {
	// HoldoutClients, Every and Patience are the run's settings.
	HoldoutClients int `json:"holdout_clients"`
	Every          int `json:"validate_every"`
	Patience       int `json:"patience"`
	// BestRound and BestLoss are the round with the lowest validation loss
	// and that loss (both 0 before any validation with a finite loss);
	// TestAccuracyAtBest is the test accuracy of the model(s) of that
	// round: the figure to report for an early-stopped run.
	BestRound          int     `json:"best_round"`
	BestLoss           float64 `json:"best_loss"`
	TestAccuracyAtBest float64 `json:"test_accuracy_at_best"`
	// Stopped is true when the run stopped early (Summary.Halted says
	// why).
	Stopped bool `json:"stopped"`
}

// Plan is the privacy statement a run makes before round 1: what its planned
// rounds will spend if every sampled client reports, and how the local
// budgets were calibrated to a target.
type Plan struct {
	// Private is false for protocols without a guarantee.
	Private bool `json:"private"`
	// Rounds is the number of planned rounds.
	Rounds int `json:"rounds"`
	// Done is the number of rounds already run when the plan was made: 0
	// before round 1, the checkpoint's round for a resumed run, whose plan
	// composes the statements those rounds really made (under the plan of
	// the run that made them) with the Rounds-Done rounds that remain.
	Done int `json:"done,omitempty"`
	// Epsilon and Delta are the planned cumulative central guarantee.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Method names the composition behind them.
	Method string `json:"method"`
	// Approximate: some planned or recorded round's statement is an
	// approximation, not a proven bound (S-APES), so the plan is too.
	Approximate bool `json:"approximate,omitempty"`
	// TargetEpsilon is the requested target (0: none).
	TargetEpsilon float64 `json:"target_epsilon,omitempty"`
	// Scale is the factor applied to every local budget to meet the target
	// (1 without a target).
	Scale float64 `json:"scale"`
	// LocalEpsilon is the calibrated uniform local epsilon (user level, one
	// round), or the largest calibrated personalized budget.
	LocalEpsilon float64 `json:"local_epsilon"`
}

// Alone states round st on its own at the run's target delta.
func Alone(target float64, st account.Statement) (AloneRound, error) {
	a, err := account.NewAccountant(target)
	if err != nil {
		return AloneRound{}, err
	}
	sp, err := a.Plan(st, 1)
	if err != nil {
		return AloneRound{}, err
	}
	return AloneRound{Epsilon: sp.Epsilon, Delta: sp.Delta, Method: sp.Method}, nil
}
