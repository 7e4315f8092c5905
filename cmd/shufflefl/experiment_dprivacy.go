package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"shufflefl/experiment"
	"shufflefl/fl"
)

// isDPrivExperiment reports whether name is one of the group-privacy
// paper's experiments (main.go dispatches them to runDPrivExperiment).
func isDPrivExperiment(name string) bool {
	_, ok := experiment.LookupDPrivacy(name)
	return ok
}

// runDPrivExperiment runs dprivacy-synthetic, -regression or -rotated.
func runDPrivExperiment(name string, args []string, stdout, stderr io.Writer) int {
	e, _ := experiment.LookupDPrivacy(name)
	c := newExpCmd(name, fmt.Sprintf("Usage: shufflefl experiment %s [flags]\n\n%s.\n\n%s", name, e.Summary, experiment.DPrivacyHelp), "", stdout, stderr)
	fs := c.fs
	o := experiment.DPrivacyOptions{Rotated: experiment.DefaultRotated}
	var nus, ks string
	fs.StringVar(&c.out, "out", filepath.Join("out", "experiment-"+name), "output `directory`; it must be empty or absent unless --overwrite is given")
	fs.Uint64Var(&o.Seed, "seed", 1, "first random seed; seeds seed..seed+seeds-1 are run")
	fs.IntVar(&o.Seeds, "seeds", e.Seeds, "number of seeds (>= 1)")
	fs.IntVar(&o.Workers, "workers", 0, "worker goroutines; 0 means all cores (results do not depend on it)")
	fs.IntVar(&o.MaxRounds, "max-rounds", 500, "upper bound on the rounds of each run (>= 1); early stopping usually ends runs sooner")
	if e.Nus != "" {
		fs.StringVar(&nus, "nus", e.Nus, "comma-separated noise multipliers (0 = no sanitization)")
		fs.StringVar(&ks, "ks", e.Ks, "comma-separated numbers of hypotheses")
	}
	if name == "dprivacy-rotated" {
		rotatedFlags(fs, &o.Rotated)
	}
	fs.BoolVar(&c.overwrite, "overwrite", false, "write into a non-empty --out directory")
	if done, code := c.parse(args); done {
		return code
	}
	var err error
	if o.Nus, o.Ks, err = experiment.ParseGrid(nus, ks); err == nil {
		if err = e.Check(o); err == nil {
			err = checkOutDir(c.out, c.overwrite)
		}
	}
	if err != nil {
		return c.fail(2, err)
	}
	return c.run(args, func(out experiment.Output) (string, error) { return experiment.RunDPrivacy(e, o, out) })
}

// rotatedFlags defines the flags of dprivacy-rotated's own settings.
func rotatedFlags(fs *flag.FlagSet, ro *experiment.RotatedOptions) {
	d := experiment.DefaultRotated
	fs.StringVar(&ro.Dataset, "dataset", d.Dataset, "dataset `name` (fashion-mnist, mnist-10k, mnist-dir, fashion-mnist-sample)")
	fs.StringVar(&ro.DataDir, "data-dir", "", "data `directory` (see shufflefl run --help)")
	fs.StringVar(&ro.Model, "model", d.Model, "model `name`: "+strings.Join(fl.Models(), ", "))
	fs.IntVar(&ro.Groups, "groups", d.Groups, "rotation groups: 2 is the paper's Bernoulli(0.5) 90° rotation, 4 IFCA's four rotations")
	fs.IntVar(&ro.Clients, "clients", d.Clients, "clients")
	fs.IntVar(&ro.PerRound, "clients-per-round", d.PerRound, "clients per round (U)")
	fs.IntVar(&ro.Samples, "samples-per-client", d.Samples, "training images per client")
	fs.IntVar(&ro.Rounds, "rounds", d.Rounds, "rounds per run")
	fs.IntVar(&ro.Epochs, "local-epochs", d.Epochs, "local epochs (E)")
	fs.Float64Var(&ro.LR, "lr", d.LR, "local learning rate (s)")
	fs.IntVar(&ro.Holdout, "holdout-clients", 0, "validation clients held out for early stopping (0: none; the paper holds out clients and validates every 5 rounds with patience 5)")
	fs.IntVar(&ro.Every, "validate-every", 0, "validate every this many rounds (needs --holdout-clients); --rounds is then the upper bound")
	fs.IntVar(&ro.Patience, "patience", 0, "stop after this many validations without a lower validation loss; the reported accuracy is then the test accuracy at the best validation round")
}
