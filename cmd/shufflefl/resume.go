package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"shufflefl/checks"
	"shufflefl/metrics"
	"shufflefl/runtime"
)

// Files of a run that make it resumable (see docs/OUTPUTS.md).
const (
	checkpointFile = "checkpoint.json"
	modelFile      = "model.json"
)

// resumeFlags are the flags that may change when a run is resumed; every
// other setting comes from the run's config.yaml.
var resumeFlags = map[string]bool{"resume": true, "rounds": true, "workers": true, "progress": true, "cpuprofile": true, "stop-after": true}

// resolveResume builds the settings of `shufflefl run --resume DIR`: DIR's
// config.yaml, then the few flags a resumed run may change (--rounds to
// extend it, --workers, --progress).
func resolveResume(args []string, dir string, stdout io.Writer) (runtime.Config, runExtras, error) {
	cfg := runtime.DefaultConfig()
	fromFile, _, err := loadConfigFile(filepath.Join(dir, "config.yaml"), &cfg)
	if err != nil {
		return cfg, fromFile, fmt.Errorf("resume %s: %w", dir, err)
	}
	if len(fromFile.options) > 0 {
		// The file's option key holds the protocol options.
		parsed, err := runtime.ParseOptions(fromFile.options)
		if err != nil {
			return cfg, fromFile, fmt.Errorf("resume %s: %w", dir, err)
		}
		cfg.Options = parsed
	}
	if _, err := os.Stat(filepath.Join(dir, checkpointFile)); err != nil {
		return cfg, fromFile, checks.Invalidf("resume %s: no %s there (only runs of this version write one)", dir, checkpointFile)
	}
	ex := fromFile
	fs := newRunFlags(&cfg, &ex, io.Discard)
	if err := fs.Parse(args); err != nil {
		return cfg, ex, checks.Invalidf("%s", flagError(err))
	}
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		if !resumeFlags[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return cfg, ex, checks.Invalidf("--resume continues the run with its own settings; only --rounds, --stop-after, --workers and --progress may be given (got %v)", bad)
	}
	cfg.Out = dir
	ex.resume = dir
	return cfg, ex, checkRunConfig(cfg)
}

// readRecords reads metrics.jsonl's records.
func readRecords(path string) ([]metrics.Record, error) {
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
			return nil, badFile(path, fmt.Errorf("line %d is not a whole JSON record (%v): the file is truncated or corrupt", len(recs)+1, err))
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return recs, nil
}

// restoreRun loads DIR's checkpoint into eng and returns the records of the
// rounds already done, checked against the checkpoint.
func restoreRun(eng *runtime.Engine, dir string) ([]metrics.Record, error) {
	path := filepath.Join(dir, checkpointFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoint: %w", err)
	}
	var snap runtime.Snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return nil, badFile(path, fmt.Errorf("not valid JSON (%v): the file is truncated or corrupt", err))
	}
	if err := eng.Restore(snap); err != nil {
		if !runtime.IsUsageError(err) {
			return nil, fmt.Errorf("resume: %w", err)
		}
		return nil, badFile(path, fmt.Errorf("does not fit this run: %s", strings.TrimPrefix(err.Error(), checks.ErrInvalid.Error()+": ")))
	}
	mpath := filepath.Join(dir, "metrics.jsonl")
	recs, err := readRecords(mpath)
	if err != nil {
		return nil, err
	}
	// metrics.jsonl is written before the checkpoint: a crash between the
	// two leaves one record more, which the resumed run rewrites.
	if len(recs) < snap.Round {
		return nil, badFile(mpath, fmt.Errorf("has %d rounds but %s is after round %d: the file is truncated", len(recs), checkpointFile, snap.Round))
	}
	return recs[:snap.Round], nil
}

// writeAtomic writes b to path through a temporary file and a rename, so a
// crash leaves the old or the new file, never a torn one.
func writeAtomic(path string, b []byte) error {
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

// writeCheckpoint saves the engine's state after its last round.
func writeCheckpoint(eng *runtime.Engine, dir string) error {
	snap, err := eng.Snapshot()
	if err != nil {
		return err
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, checkpointFile), b); err != nil {
		return fmt.Errorf("writing %s: %w", checkpointFile, err)
	}
	return nil
}

// modelRecord is model.json: the global model's parameters, in the order of
// package fl's layout for the model (docs/OUTPUTS.md).
type modelRecord struct {
	Model    string    `json:"model"`
	Dataset  string    `json:"dataset"`
	Features int       `json:"features"`
	Classes  int       `json:"classes"`
	Dim      int       `json:"dim"`
	Round    int       `json:"round"`
	Weights  []float64 `json:"weights"`
}

// writeModel saves the global model.
func writeModel(eng *runtime.Engine, cfg runtime.Config, features, classes int) error {
	w := eng.Weights()
	b, err := json.Marshal(modelRecord{Model: cfg.Model, Dataset: cfg.Dataset, Features: features, Classes: classes, Dim: len(w), Round: eng.Round(), Weights: w})
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(cfg.Out, modelFile), b); err != nil {
		return fmt.Errorf("writing %s: %w", modelFile, err)
	}
	return nil
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

// badFile reports that the file at path cannot be used, and why.
func badFile(path string, err error) error { return fileError{path, err} }

// errInterrupted reports a run stopped by SIGINT or SIGTERM.
var errInterrupted = errors.New("interrupted")
