// Package metrics turns the engine's round results into files: one JSON
// object per round (metrics.jsonl), a run summary (summary.json) and PNG plots
// of accuracy and privacy over rounds. Infinite epsilons (no guarantee) are
// written as JSON null.
package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/protocol"
)

// Record is one line of metrics.jsonl. Field names are stable: scripts and
// the CI smoke test read them; docs/OUTPUTS.md documents every one. Every
// epsilon is central (what the analyzer learns) unless named local, and user
// level (a client's whole update) unless named coord (one coordinate).
type Record struct {
	Round        int `json:"round"`
	Participants int `json:"participants"`
	Refused      int `json:"refused"`
	// SatOut and TrainerError: participants whose external trainer failed
	// (they sat the round out uncharged) and the first failure.
	SatOut       int     `json:"sat_out,omitempty"`
	TrainerError string  `json:"trainer_error,omitempty"`
	TestAccuracy float64 `json:"test_accuracy"`
	TestLoss     float64 `json:"test_loss"`
	// Local: each participant's local epsilon for its whole update in this
	// round, and per coordinate, summarised over participants.
	LocalEpsilons
	LocalDelta float64 `json:"local_delta"`
	// Round alone: this round on its own, by the run's accountant at the
	// run's delta, comparable with the cumulative figure (null when the
	// round released nothing or the run has no guarantee).
	RoundAloneEpsilon *float64 `json:"round_alone_epsilon"`
	RoundAloneDelta   float64  `json:"round_alone_delta"`
	// Round: this round's central guarantee by the protocol's own analysis,
	// at the round's share of the run's delta.
	RoundCentralEpsilon      *float64 `json:"round_central_epsilon"`
	RoundCentralDelta        float64  `json:"round_central_delta"`
	RoundCentralCoordEpsilon *float64 `json:"round_central_coord_epsilon"`
	RoundCentralCoordDelta   float64  `json:"round_central_coord_delta"`
	// Cumulative: the rounds so far, composed by the run's accountant.
	CumulativeEpsilon *float64 `json:"cumulative_epsilon"`
	CumulativeDelta   float64  `json:"cumulative_delta"`
	CumulativeMethod  string   `json:"cumulative_method"`
	// CumulativeApproximate: some composed round is an approximation.
	CumulativeApproximate bool         `json:"cumulative_approximate"`
	MaxClientEpsilon      *float64     `json:"max_client_epsilon"`
	Bound                 string       `json:"bound"`
	Approximate           bool         `json:"approximate"`
	Reports               int64        `json:"reports"`
	Dummies               int64        `json:"dummies"`
	Seconds               float64      `json:"seconds"`
	Timing                round.Timing `json:"timing"`
	// DPrivacy: for protocols whose guarantee is d-privacy (ifca-dp), the
	// leakage of one participation (n/nu) and the clients' cumulative
	// leakage (Theorem 1 of the group-privacy paper); absent otherwise.
	DPrivacy *round.DPrivacyRound `json:"d_privacy,omitempty"`
	// Hypotheses: for clustered protocols (ifca, ifca-dp), each model's
	// cluster size, the participants that chose it, its test accuracy and
	// loss per test group, and the largest cumulative leakage of the
	// clients that chose it; absent otherwise.
	Hypotheses []round.Hypothesis `json:"hypotheses,omitempty"`
	// Validation: the round's validation on the held-out clients (runs
	// with --validate-every, on due rounds only); absent otherwise.
	Validation *Validation `json:"validation,omitempty"`
	// ClusterAccuracy: for clustered protocols on the rotated partition,
	// the fraction of participants whose chosen hypothesis matches their
	// true group under the best relabelling; absent otherwise.
	ClusterAccuracy *round.ClusterAccuracy `json:"cluster_accuracy,omitempty"`
}

// Validation is a round's validation on the held-out clients
// (sim.ValidationRound; a non-finite loss is null).
type Validation struct {
	Loss      *float64 `json:"loss"`
	Accuracy  float64  `json:"accuracy"`
	Improved  bool     `json:"improved"`
	BestRound int      `json:"best_round"`
	BestLoss  *float64 `json:"best_loss"`
	Clients   int      `json:"clients"`
	Examples  int      `json:"examples"`
}

// validation converts v (nil stays nil).
func validation(v *round.ValidationRound) *Validation {
	if v == nil {
		return nil
	}
	return &Validation{Loss: finite(v.Loss), Accuracy: v.Accuracy, Improved: v.Improved, BestRound: v.BestRound,
		BestLoss: finite(v.BestLoss), Clients: v.Clients, Examples: v.Examples}
}

// LocalEpsilons summarises the participants' local epsilons of one round:
// user level (a whole update) and per coordinate; JSON null means no local
// guarantee.
type LocalEpsilons struct {
	LocalEpsilonMin         *float64 `json:"local_epsilon_min"`
	LocalEpsilonMedian      *float64 `json:"local_epsilon_median"`
	LocalEpsilonMax         *float64 `json:"local_epsilon_max"`
	LocalCoordEpsilonMin    *float64 `json:"local_coord_epsilon_min"`
	LocalCoordEpsilonMedian *float64 `json:"local_coord_epsilon_median"`
	LocalCoordEpsilonMax    *float64 `json:"local_coord_epsilon_max"`
}

// localEpsilons returns p's local figures.
func localEpsilons(p protocol.Privacy) LocalEpsilons {
	return LocalEpsilons{
		LocalEpsilonMin: finite(p.LocalEpsilon.Min), LocalEpsilonMedian: finite(p.LocalEpsilon.Median), LocalEpsilonMax: finite(p.LocalEpsilon.Max),
		LocalCoordEpsilonMin: finite(p.LocalCoordEpsilon.Min), LocalCoordEpsilonMedian: finite(p.LocalCoordEpsilon.Median), LocalCoordEpsilonMax: finite(p.LocalCoordEpsilon.Max),
	}
}

// finite returns a pointer to v, or nil for ±Inf and NaN (JSON null).
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// alone returns a round's figure at the run's delta, or nil (JSON null)
// when none was stated: no release, no guarantee, or no accountant's
// method (a result not made by the engine's accountant).
func alone(a round.AloneRound) *float64 {
	if a.Method == "" {
		return nil
	}
	return finite(a.Epsilon)
}

// FromResult converts a round result to its record.
func FromResult(r round.RoundResult) Record {
	p := r.Privacy
	return Record{
		Round:                    r.Round,
		Participants:             r.Participants,
		Refused:                  r.Refused,
		SatOut:                   r.SatOut,
		TrainerError:             r.TrainerError,
		TestAccuracy:             r.TestAccuracy,
		TestLoss:                 r.TestLoss,
		LocalEpsilons:            localEpsilons(p),
		LocalDelta:               p.LocalDelta,
		RoundAloneEpsilon:        alone(r.Alone),
		RoundAloneDelta:          r.Alone.Delta,
		RoundCentralEpsilon:      finite(p.CentralEpsilon),
		RoundCentralDelta:        p.CentralDelta,
		RoundCentralCoordEpsilon: finite(p.CentralCoordEpsilon),
		RoundCentralCoordDelta:   p.CentralCoordDelta,
		CumulativeEpsilon:        finite(p.CumulativeEpsilon),
		CumulativeDelta:          p.CumulativeDelta,
		CumulativeMethod:         p.CumulativeMethod,
		CumulativeApproximate:    p.CumulativeApproximate,
		MaxClientEpsilon:         finite(r.MaxClientEpsilon),
		Bound:                    p.Bound,
		Approximate:              p.Approximate,
		Reports:                  r.Reports,
		Dummies:                  r.Dummies,
		Seconds:                  r.Seconds,
		Timing:                   r.Timing,
		DPrivacy:                 r.DPrivacy,
		Hypotheses:               r.Hypotheses,
		Validation:               validation(r.Validation),
		ClusterAccuracy:          r.ClusterAccuracy,
	}
}

// JSONL writes one record per line.
type JSONL struct {
	enc *json.Encoder
}

// NewJSONL returns a writer of records to w.
func NewJSONL(w io.Writer) *JSONL { return &JSONL{enc: json.NewEncoder(w)} }

// Write appends one record.
func (j *JSONL) Write(r Record) error {
	if err := j.enc.Encode(r); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// SummaryRecord is summary.json (documented in docs/OUTPUTS.md).
type SummaryRecord struct {
	Protocol      string  `json:"protocol"`
	Dataset       string  `json:"dataset"`
	Model         string  `json:"model"`
	Rounds        int     `json:"rounds"`
	FinalAccuracy float64 `json:"final_test_accuracy"`
	FinalLoss     float64 `json:"final_test_loss"`
	BestAccuracy  float64 `json:"best_test_accuracy"`
	// The whole run's guarantee, composed; Guarantee says in words what
	// kind of figure it is (a proven upper bound, or approximate).
	CumulativeEpsilon *float64 `json:"cumulative_epsilon"`
	CumulativeDelta   float64  `json:"cumulative_delta"`
	CumulativeMethod  string   `json:"cumulative_method"`
	Guarantee         string   `json:"guarantee"`
	// LowerBound: a proven lower bound on the true epsilon of the run's
	// releases at the cumulative delta, and how it was found; the epsilon
	// is absent and the method "none" when no sound bound is computed (the
	// note says why); both are absent for a run without a guarantee.
	LowerBoundEpsilon *float64 `json:"lower_bound_epsilon,omitempty"`
	LowerBoundMethod  string   `json:"lower_bound_method,omitempty"`
	LowerBoundNote    string   `json:"lower_bound_note,omitempty"`
	// The last round alone, at the run's delta (comparable with the
	// cumulative figure), and by the protocol's own analysis at the
	// round's delta share (not comparable with it).
	RoundAloneEpsilon   *float64 `json:"round_alone_epsilon"`
	RoundAloneDelta     float64  `json:"round_alone_delta"`
	RoundCentralEpsilon *float64 `json:"round_central_epsilon"`
	RoundCentralDelta   float64  `json:"round_central_delta"`
	// Local budgets of the last round (user level and per coordinate).
	LocalEpsilons
	MaxClientEpsilon *float64 `json:"max_client_epsilon"`
	// The pre-flight plan: target, calibration, planned cumulative figures.
	TargetEpsilon  *float64 `json:"target_epsilon"`
	TargetDelta    float64  `json:"target_delta"`
	BudgetScale    float64  `json:"budget_scale"`
	PlannedEpsilon *float64 `json:"planned_epsilon"`
	Halted         string   `json:"halted,omitempty"`
	// Warnings are the pre-flight's warnings, as printed on stderr.
	Warnings []string `json:"warnings,omitempty"`
	Bound    string   `json:"bound"`
	// Approximate: the last round's or the cumulative figure is an
	// approximation rather than a rigorous bound.
	Approximate  bool    `json:"approximate"`
	Dim          int     `json:"dim"`
	Clients      int     `json:"clients"`
	TrainSamples int     `json:"train_samples"`
	TestSamples  int     `json:"test_samples"`
	Workers      int     `json:"workers"`
	Seconds      float64 `json:"seconds"`
	// Validation is the early-stopping outcome of runs with held-out
	// validation clients; absent otherwise.
	Validation *round.ValidationSummary `json:"validation,omitempty"`
	// ClusterAccuracy is the cluster-assignment accuracy of the last round
	// that has one (clustered protocols on the rotated partition); absent
	// otherwise.
	ClusterAccuracy *round.ClusterAccuracy `json:"cluster_accuracy,omitempty"`
	// TrainerEvaluation is the trainer program's evaluation of the final
	// model on the test set, for runs whose trainer evaluates; absent
	// otherwise.
	TrainerEvaluation *round.TrainerEvaluation `json:"trainer_evaluation,omitempty"`
}

// NewSummary builds summary.json's content.
func NewSummary(cfg round.Config, s round.Summary) SummaryRecord {
	p := s.Privacy
	var target *float64
	if cfg.TargetEpsilon > 0 {
		target = finite(cfg.TargetEpsilon)
	}
	rec := SummaryRecord{
		Protocol: cfg.Protocol, Dataset: cfg.Dataset, Model: cfg.Model,
		Rounds: s.Rounds, FinalAccuracy: s.FinalAccuracy, FinalLoss: s.FinalLoss, BestAccuracy: s.BestAccuracy,
		RoundAloneEpsilon: alone(s.Alone), RoundAloneDelta: s.Alone.Delta,
		RoundCentralEpsilon: finite(p.CentralEpsilon), RoundCentralDelta: p.CentralDelta,
		CumulativeEpsilon: finite(p.CumulativeEpsilon), CumulativeDelta: p.CumulativeDelta, CumulativeMethod: p.CumulativeMethod,
		Guarantee:        guarantee(p.CumulativeEpsilon, p.Approximate || p.CumulativeApproximate || s.Plan.Approximate),
		LocalEpsilons:    localEpsilons(p),
		MaxClientEpsilon: finite(s.MaxClientEpsilon),
		TargetEpsilon:    target, TargetDelta: cfg.Delta, BudgetScale: s.Plan.Scale, PlannedEpsilon: finite(s.Plan.Epsilon),
		Halted: s.Halted, Warnings: s.Warnings, Bound: p.Bound, Approximate: p.Approximate || p.CumulativeApproximate,
		Dim: s.Dim, Clients: cfg.Clients, TrainSamples: s.TrainSamples, TestSamples: s.TestSamples,
		Workers: s.Workers, Seconds: s.Seconds, Validation: s.Validation,
		ClusterAccuracy: s.ClusterAccuracy, TrainerEvaluation: s.TrainerEvaluation,
	}
	if !s.Plan.Private {
		rec.TargetDelta = 0
	}
	if lb := s.LowerBound; lb != nil {
		rec.LowerBoundEpsilon, rec.LowerBoundMethod, rec.LowerBoundNote = finite(lb.Epsilon), lb.Method, lb.Why
	}
	return rec
}

// Guarantee words, the values of summary.json's guarantee field.
const (
	GuaranteeBound       = "upper bound"
	GuaranteeApproximate = "approximate: not a proven upper bound"
	GuaranteeNone        = "none"
)

// guarantee says in words what a cumulative epsilon is.
func guarantee(eps float64, approximate bool) string {
	switch {
	case math.IsInf(eps, 0) || math.IsNaN(eps):
		return GuaranteeNone
	case approximate:
		return GuaranteeApproximate
	}
	return GuaranteeBound
}

// Privacy returns the round's privacy statement as recorded: the inverse of
// FromResult for the fields a record keeps (a null epsilon is +Inf, no
// guarantee; components, RDP curves and the d-privacy statement are not
// recorded). A resumed run that runs no further round (it had stopped at
// its target or early) states its privacy from its last record with it.
func (r Record) Privacy() protocol.Privacy {
	inf := func(p *float64) float64 {
		if p == nil {
			return math.Inf(1)
		}
		return *p
	}
	stats := func(lo, med, hi *float64) protocol.Stats {
		return protocol.Stats{Min: inf(lo), Median: inf(med), Max: inf(hi)}
	}
	l := r.LocalEpsilons
	return protocol.Privacy{
		Private:               r.CumulativeEpsilon != nil,
		LocalEpsilon:          stats(l.LocalEpsilonMin, l.LocalEpsilonMedian, l.LocalEpsilonMax),
		LocalCoordEpsilon:     stats(l.LocalCoordEpsilonMin, l.LocalCoordEpsilonMedian, l.LocalCoordEpsilonMax),
		LocalDelta:            r.LocalDelta,
		CentralEpsilon:        inf(r.RoundCentralEpsilon),
		CentralDelta:          r.RoundCentralDelta,
		CentralCoordEpsilon:   inf(r.RoundCentralCoordEpsilon),
		CentralCoordDelta:     r.RoundCentralCoordDelta,
		CumulativeEpsilon:     inf(r.CumulativeEpsilon),
		CumulativeDelta:       r.CumulativeDelta,
		CumulativeMethod:      r.CumulativeMethod,
		CumulativeApproximate: r.CumulativeApproximate,
		Bound:                 r.Bound,
		Approximate:           r.Approximate,
	}
}
