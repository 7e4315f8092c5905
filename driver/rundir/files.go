package rundir

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
)

// ReadRecords reads metrics.jsonl's records.
func ReadRecords(path string) ([]metrics.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	var recs []metrics.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r metrics.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, BadFile(path, fmt.Errorf("line %d is not a whole JSON record (%v): the file is truncated or corrupt", len(recs)+1, err))
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return recs, nil
}

// Restore loads DIR's checkpoint into eng and returns the records of the
// rounds already done, checked against the checkpoint.
func Restore(eng *sim.Engine, dir string) ([]metrics.Record, error) {
	path := filepath.Join(dir, CheckpointFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoint: %w", err)
	}
	var snap sim.Snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return nil, BadFile(path, fmt.Errorf("not valid JSON (%v): the file is truncated or corrupt", err))
	}
	if err := eng.Restore(snap); err != nil {
		if !sim.IsUsageError(err) {
			return nil, fmt.Errorf("resume: %w", err)
		}
		return nil, BadFile(path, fmt.Errorf("does not fit this run: %s", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": ")))
	}
	mpath := filepath.Join(dir, MetricsFile)
	recs, err := ReadRecords(mpath)
	if err != nil {
		return nil, err
	}
	// metrics.jsonl is written before the checkpoint: a crash between the
	// two leaves one record more, which the resumed run rewrites.
	if len(recs) < snap.Round {
		return nil, BadFile(mpath, fmt.Errorf("has %d rounds but %s is after round %d: the file is truncated", len(recs), CheckpointFile, snap.Round))
	}
	return recs[:snap.Round], nil
}

// WriteAtomic writes b to path through a temporary file and a rename, so a
// crash leaves the old or the new file, never a torn one.
func WriteAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WriteCheckpoint saves the engine's state after its last round.
func WriteCheckpoint(eng *sim.Engine, dir string) error {
	snap, err := eng.Snapshot()
	if err != nil {
		return err
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	if err := WriteAtomic(filepath.Join(dir, CheckpointFile), b); err != nil {
		return fmt.Errorf("writing %s: %w", CheckpointFile, err)
	}
	return nil
}

// Model is model.json: the global model's parameters, in the order of
// package fl's layout for the model (docs/OUTPUTS.md).
type Model struct {
	Model    string    `json:"model"`
	Dataset  string    `json:"dataset"`
	Features int       `json:"features"`
	Classes  int       `json:"classes"`
	Dim      int       `json:"dim"`
	Round    int       `json:"round"`
	Weights  []float64 `json:"weights"`
}

// WriteModel saves the global model.
func WriteModel(eng *sim.Engine, cfg round.Config, features, classes int) error {
	w := eng.Weights()
	return WriteModelFile(cfg.Out, Model{Model: cfg.Model, Dataset: cfg.Dataset, Features: features, Classes: classes, Dim: len(w), Round: eng.Round(), Weights: w})
}

// WriteModelFile saves m as dir's model.json.
func WriteModelFile(dir string, m Model) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := WriteAtomic(filepath.Join(dir, ModelFile), b); err != nil {
		return fmt.Errorf("writing %s: %w", ModelFile, err)
	}
	return writeSafetensorsFile(dir, m)
}

// fileError is a run file that cannot be used: its message names the file
// and what is wrong, and it counts as invalid input (exit status 2).
type fileError struct {
	path string
	err  error
}

func (e fileError) Error() string        { return e.path + ": " + e.err.Error() }
func (e fileError) Unwrap() error        { return e.err }
func (e fileError) Is(target error) bool { return target == checks.ErrInvalid }

// BadFile reports that the file at path cannot be used, and why.
func BadFile(path string, err error) error { return fileError{path, err} }

// WriteSummaryAndPlots writes summary.json, accuracy.png, validation.png
// (runs with validation clients), leakage.png (d-privacy runs) and
// privacy.png (only when some round has a finite cumulative epsilon).
func WriteSummaryAndPlots(cfg round.Config, recs []metrics.Record, sum round.Summary) error {
	sb, err := json.MarshalIndent(metrics.NewSummary(cfg, sum), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, "summary.json"), append(sb, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing summary.json: %w", err)
	}
	title := fmt.Sprintf("%s, %s, %s", cfg.Protocol, cfg.Dataset, cfg.Model)
	if err := metrics.PlotAccuracy(filepath.Join(cfg.Out, "accuracy.png"), title, recs); err != nil {
		return err
	}
	if metrics.HasValidation(recs) {
		if err := metrics.PlotValidation(filepath.Join(cfg.Out, "validation.png"), title, recs); err != nil {
			return err
		}
	}
	if metrics.HasDPrivacy(recs) {
		if err := metrics.PlotLeakage(filepath.Join(cfg.Out, "leakage.png"), title, recs); err != nil {
			return err
		}
	}
	if !metrics.HasCumulativeEpsilon(recs) {
		return nil // non-private: no guarantee to plot
	}
	return metrics.PlotPrivacy(filepath.Join(cfg.Out, "privacy.png"), title, recs)
}

// WriteOutputs writes every output of a finished run into cfg.Out (a
// fresh directory): config.yaml, metrics.jsonl, summary.json, the plots and
// run.log holding logText.
func WriteOutputs(cfg round.Config, recs []metrics.Record, sum round.Summary, logText, version string) error {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	if err := WriteConfig(cfg, version, Trainer{}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, LogFile), []byte(logText), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", LogFile, err)
	}
	f, err := os.Create(filepath.Join(cfg.Out, "metrics.jsonl"))
	if err != nil {
		return fmt.Errorf("writing metrics.jsonl: %w", err)
	}
	jl := metrics.NewJSONL(f)
	for _, r := range recs {
		if err := jl.Write(r); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing metrics.jsonl: %w", err)
	}
	return WriteSummaryAndPlots(cfg, recs, sum)
}
