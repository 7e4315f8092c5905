package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// Files of a run's output directory (docs/OUTPUTS.md).
const (
	// LogFile is the log a run (and an experiment) writes beside its outputs.
	LogFile = "run.log"
	// MetricsFile holds one JSON record per round (metrics.Record).
	MetricsFile = "metrics.jsonl"
	// CheckpointFile and ModelFile make a run resumable.
	CheckpointFile = "checkpoint.json"
	ModelFile      = "model.json"
)

// runOutputs are the files `shufflefl run` writes into its --out directory.
var runOutputs = []string{MetricsFile, "summary.json", "config.yaml", "accuracy.png", "privacy.png", LogFile, CheckpointFile, ModelFile, CheckpointFile + ".tmp", ModelFile + ".tmp", SafetensorsFile, SafetensorsFile + ".tmp"}

// experimentOutputs are the files `shufflefl experiment` writes at the top of
// its --out directory besides the per-table plots (expPlotRE) and the run
// directories (expRunDirRE); frontier.png is the frontier's plot.
var experimentOutputs = []string{"results.md", LogFile, "frontier.png"}

var (
	expPlotRE = regexp.MustCompile(`^accuracy-t[0-9]+\.png$`)
	// expRunDirRE matches the run directories of the paper experiments
	// (tN-LABEL) and of the frontier (PROTOCOL-eTARGET, nonprivate); only
	// the run outputs inside them are removed, and the directory if that
	// empties it.
	expRunDirRE = regexp.MustCompile(`^(t[0-9]+-|nonprivate$|[a-z][a-z-]*-e[0-9][0-9.e+-]*$)`)
)

// Check accepts an output directory that is absent or empty, or any
// directory when overwrite is set. A used directory would mix the outputs of
// two runs, so without overwrite it is an error (wrapping checks.ErrInvalid)
// naming --overwrite.
func Check(dir string, overwrite bool) error {
	if dir == "" {
		return checks.Invalidf("--out must name a directory")
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return checks.Invalidf("output directory: %v", err)
	}
	if !st.IsDir() {
		return checks.Invalidf("--out %s is a file, not a directory", dir)
	}
	if overwrite {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return checks.Invalidf("output directory: %v", err)
	}
	if len(entries) == 0 {
		return nil
	}
	names := make([]string, 0, 3)
	for _, e := range entries {
		if len(names) == 3 {
			names = append(names, "...")
			break
		}
		names = append(names, e.Name())
	}
	return checks.Invalidf("output directory %s is not empty (it holds %s): choose another --out, or pass --overwrite to replace the shufflefl outputs in it",
		dir, strings.Join(names, ", "))
}

// Prepare creates dir and, when overwrite is set, first removes the
// shufflefl outputs it holds: the files of a run (runOutputs), those of an
// experiment (experimentOutputs, the accuracy-tN.png plots) and its tN-*
// run directories (their run outputs, then the directory if that left it
// empty). Any other file is kept: it cannot be mistaken for an output of
// the new run.
func Prepare(dir string, overwrite bool) error {
	if overwrite {
		if err := removeOutputs(dir); err != nil {
			return fmt.Errorf("--overwrite: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	return nil
}

// removeOutputs removes the shufflefl outputs of dir (see Prepare).
func removeOutputs(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, n := range append(append([]string{}, runOutputs...), experimentOutputs...) {
		known[n] = true
	}
	for _, e := range entries {
		name, path := e.Name(), filepath.Join(dir, e.Name())
		switch {
		case e.Type().IsRegular() && (known[name] || expPlotRE.MatchString(name)):
			if err := os.Remove(path); err != nil {
				return err
			}
		case e.IsDir() && expRunDirRE.MatchString(name):
			for _, n := range runOutputs {
				if err := os.Remove(filepath.Join(path, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
			if rest, err := os.ReadDir(path); err == nil && len(rest) == 0 {
				if err := os.Remove(path); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
