package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
)

// resumeFlags are the flags that may change when a run is resumed; every
// other setting comes from the run's config.yaml.
var resumeFlags = map[string]bool{"resume": true, "rounds": true, "workers": true, "progress": true, "cpuprofile": true, "stop-after": true,
	"worker-procs": true, "nats": true, "trainer": true, "trainer-timeout": true}

// resolveResume builds the settings of `shufflefl run --resume DIR`: DIR's
// config.yaml, then the few flags a resumed run may change (--rounds to
// extend it, --workers, --progress, and --trainer or --trainer-timeout to
// point a run that had a trainer at its program again).
func resolveResume(args []string, dir string, stdout io.Writer) (round.Config, runExtras, error) {
	cfg := round.DefaultConfig()
	fromFile, _, err := loadConfigFile(filepath.Join(dir, "config.yaml"), &cfg)
	if err != nil {
		return cfg, fromFile, fmt.Errorf("resume %s: %w", dir, err)
	}
	if len(fromFile.options) > 0 {
		// The file's option key holds the protocol options.
		parsed, err := round.ParseOptions(fromFile.options)
		if err != nil {
			return cfg, fromFile, fmt.Errorf("resume %s: %w", dir, err)
		}
		cfg.Options = parsed
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.CheckpointFile)); err != nil {
		return cfg, fromFile, checks.Invalidf("resume %s: no %s there (only runs of this version write one)", dir, rundir.CheckpointFile)
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
		return cfg, ex, checks.Invalidf("--resume continues the run with its own settings; only --rounds, --stop-after, --workers, --worker-procs, --nats, --progress, --trainer and --trainer-timeout may be given (got %v)", bad)
	}
	cfg.Out = dir
	ex.resume = dir
	return cfg, ex, rundir.CheckRun(cfg)
}

// loadConfigFile reads a --config file or a run's config.yaml into cfg
// (rundir.ReadConfig) and returns the command's own settings it holds.
func loadConfigFile(path string, cfg *round.Config) (runExtras, map[string]bool, error) {
	s, keys, err := rundir.ReadConfig(path, cfg)
	return runExtras{options: s.Options, progress: s.Progress, overwrite: s.Overwrite, cpuprofile: s.CPUProfile,
		trainer: trainerFlags{command: s.Trainer.Command, timeout: s.Trainer.Timeout}}, keys, err
}
