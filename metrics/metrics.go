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

	"shufflefl/runtime"
)

// Record is one line of metrics.jsonl. Field names are stable: scripts and
// the CI smoke test read them.
type Record struct {
	Round                int            `json:"round"`
	Participants         int            `json:"participants"`
	Refused              int            `json:"refused"`
	TestAccuracy         float64        `json:"test_accuracy"`
	TestLoss             float64        `json:"test_loss"`
	LocalEpsilonMin      *float64       `json:"local_epsilon_min"`
	LocalEpsilonMedian   *float64       `json:"local_epsilon_median"`
	LocalEpsilonMax      *float64       `json:"local_epsilon_max"`
	LocalCoordEpsilonMin *float64       `json:"local_coord_epsilon_min"`
	LocalCoordEpsilon    *float64       `json:"local_coord_epsilon_max"`
	LocalDelta           float64        `json:"local_delta"`
	CentralEpsilon       *float64       `json:"central_epsilon"`
	CentralDelta         float64        `json:"central_delta"`
	CentralCoordEpsilon  *float64       `json:"central_coord_epsilon"`
	CentralCoordDelta    float64        `json:"central_coord_delta"`
	CumulativeEpsilon    *float64       `json:"cumulative_epsilon"`
	CumulativeDelta      float64        `json:"cumulative_delta"`
	MaxClientEpsilon     *float64       `json:"max_client_epsilon"`
	Bound                string         `json:"bound"`
	Approximate          bool           `json:"approximate"`
	Reports              int64          `json:"reports"`
	Dummies              int64          `json:"dummies"`
	Seconds              float64        `json:"seconds"`
	Timing               runtime.Timing `json:"timing"`
}

// finite returns a pointer to v, or nil for ±Inf and NaN (JSON null).
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// FromResult converts a round result to its record.
func FromResult(r runtime.RoundResult) Record {
	p := r.Privacy
	return Record{
		Round:                r.Round,
		Participants:         r.Participants,
		Refused:              r.Refused,
		TestAccuracy:         r.TestAccuracy,
		TestLoss:             r.TestLoss,
		LocalEpsilonMin:      finite(p.LocalEpsilon.Min),
		LocalEpsilonMedian:   finite(p.LocalEpsilon.Median),
		LocalEpsilonMax:      finite(p.LocalEpsilon.Max),
		LocalCoordEpsilonMin: finite(p.LocalCoordEpsilon.Min),
		LocalCoordEpsilon:    finite(p.LocalCoordEpsilon.Max),
		LocalDelta:           p.LocalDelta,
		CentralEpsilon:       finite(p.CentralEpsilon),
		CentralDelta:         p.CentralDelta,
		CentralCoordEpsilon:  finite(p.CentralCoordEpsilon),
		CentralCoordDelta:    p.CentralCoordDelta,
		CumulativeEpsilon:    finite(p.CumulativeEpsilon),
		CumulativeDelta:      p.CumulativeDelta,
		MaxClientEpsilon:     finite(r.MaxClientEpsilon),
		Bound:                p.Bound,
		Approximate:          p.Approximate,
		Reports:              r.Reports,
		Dummies:              r.Dummies,
		Seconds:              r.Seconds,
		Timing:               r.Timing,
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

// SummaryRecord is summary.json.
type SummaryRecord struct {
	Protocol          string   `json:"protocol"`
	Dataset           string   `json:"dataset"`
	Model             string   `json:"model"`
	Rounds            int      `json:"rounds"`
	FinalAccuracy     float64  `json:"final_test_accuracy"`
	FinalLoss         float64  `json:"final_test_loss"`
	BestAccuracy      float64  `json:"best_test_accuracy"`
	CentralEpsilon    *float64 `json:"central_epsilon"`
	CentralDelta      float64  `json:"central_delta"`
	CumulativeEpsilon *float64 `json:"cumulative_epsilon"`
	CumulativeDelta   float64  `json:"cumulative_delta"`
	MaxClientEpsilon  *float64 `json:"max_client_epsilon"`
	Bound             string   `json:"bound"`
	Approximate       bool     `json:"approximate"`
	Dim               int      `json:"dim"`
	Clients           int      `json:"clients"`
	TrainSamples      int      `json:"train_samples"`
	TestSamples       int      `json:"test_samples"`
	Workers           int      `json:"workers"`
	Seconds           float64  `json:"seconds"`
}

// NewSummary builds summary.json's content.
func NewSummary(cfg runtime.Config, s runtime.Summary) SummaryRecord {
	p := s.Privacy
	return SummaryRecord{
		Protocol: cfg.Protocol, Dataset: cfg.Dataset, Model: cfg.Model,
		Rounds: s.Rounds, FinalAccuracy: s.FinalAccuracy, FinalLoss: s.FinalLoss, BestAccuracy: s.BestAccuracy,
		CentralEpsilon: finite(p.CentralEpsilon), CentralDelta: p.CentralDelta,
		CumulativeEpsilon: finite(p.CumulativeEpsilon), CumulativeDelta: p.CumulativeDelta,
		MaxClientEpsilon: finite(s.MaxClientEpsilon), Bound: p.Bound, Approximate: p.Approximate,
		Dim: s.Dim, Clients: cfg.Clients, TrainSamples: s.TrainSamples, TestSamples: s.TestSamples,
		Workers: s.Workers, Seconds: s.Seconds,
	}
}
