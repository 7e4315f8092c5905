package experiment

import (
	"flag"
	"strings"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
)

// DirRuns are the Runs of `shufflefl experiment`: `shufflefl run`'s
// checks (rundir.CheckRun), plan line and outputs, config.yaml headed by
// Version.
type DirRuns struct{ Version string }

// Check implements Runs.
func (DirRuns) Check(cfg round.Config) error { return rundir.CheckRun(cfg) }

// PlanLine implements Runs.
func (DirRuns) PlanLine(plan round.Plan) string { return rundir.PlanLine(plan, "") }

// Write implements Runs.
func (r DirRuns) Write(cfg round.Config, recs []metrics.Record, sum round.Summary, log string) error {
	return rundir.WriteOutputs(cfg, recs, sum, log, r.Version)
}

// RegisterFlags binds the settings of the frontier (but for its dataset,
// seed, workers and directory, which every engine experiment shares) to
// the flags of fs; the protocols and targets are bound as the lists
// ParseFrontierLists reads.
func (o *FrontierOptions) RegisterFlags(fs *flag.FlagSet) (protocols, targets *string) {
	protocols = fs.String("protocols", strings.Join(FrontierProtocols(), ","), "comma-separated private `protocols` to draw")
	targets = fs.String("targets", "8,2,32", "comma-separated target cumulative central `epsilons` (each > 0), in the order the runs are made (every protocol at the first target, then at the next)")
	fs.Float64Var(&o.Delta, "delta", 1e-6, "target central delta of each whole run, in (0, 1)")
	fs.IntVar(&o.Clients, "clients", 0, "clients N of every run (0: each protocol's default)")
	fs.IntVar(&o.Rounds, "rounds", 0, "rounds of every run (0: each protocol's default)")
	fs.IntVar(&o.LocalEpochs, "local-epochs", 0, "local epochs of every run (0: each protocol's default)")
	fs.Float64Var(&o.Clip, "clip", 0, "clipping bound C of every run (0: each protocol's default)")
	fs.BoolVar(&o.Ceiling, "ceiling", true, "also run non-private FedAvg (with its defaults) as the ceiling")
	return protocols, targets
}

// RegisterFlags binds the settings of experiment e (but for its output
// directory) to the flags of fs, with e's defaults; the grid (--nus, --ks,
// where e has one) is bound as the lists ParseGrid reads.
func (o *DPrivacyOptions) RegisterFlags(fs *flag.FlagSet, e DPrivacyExperiment) (nus, ks *string) {
	nus, ks = new(string), new(string)
	fs.Uint64Var(&o.Seed, "seed", 1, "first random seed; seeds seed..seed+seeds-1 are run")
	fs.IntVar(&o.Seeds, "seeds", e.Seeds, "number of seeds (>= 1)")
	fs.IntVar(&o.Workers, "workers", 0, "worker goroutines; 0 means all cores (results do not depend on it)")
	fs.IntVar(&o.MaxRounds, "max-rounds", 500, "upper bound on the rounds of each run (>= 1); early stopping usually ends runs sooner")
	if e.Nus != "" {
		fs.StringVar(nus, "nus", e.Nus, "comma-separated noise multipliers (0 = no sanitization)")
		fs.StringVar(ks, "ks", e.Ks, "comma-separated numbers of hypotheses")
	}
	if e.Name == "dprivacy-rotated" {
		o.Rotated.registerFlags(fs)
	}
	return nus, ks
}

// registerFlags binds dprivacy-rotated's own settings, with the defaults
// DefaultRotated.
func (ro *RotatedOptions) registerFlags(fs *flag.FlagSet) {
	d := DefaultRotated
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

// EngineFlags binds the settings every engine experiment shares (dataset,
// data directory, seed, workers) to the flags of fs.
func EngineFlags(fs *flag.FlagSet, dataset, dataDir *string, seed *uint64, workers *int) {
	fs.StringVar(dataset, "dataset", "fashion-mnist", "dataset `name`: "+strings.Join(data.ClassificationNames(), ", "))
	fs.StringVar(dataDir, "data-dir", "", "`directory` with the dataset's files (see shufflefl run --help)")
	fs.Uint64Var(seed, "seed", 1, "random seed")
	fs.IntVar(workers, "workers", 0, "worker goroutines; 0 means all cores")
}
