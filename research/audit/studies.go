package audit

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/protocol"
)

// The studies that train models with the engine, one per protocol or
// setting, as `shufflefl audit mia|canary|topk` run them: their options,
// bound to the subcommands' flags by RegisterFlags, and the loop that makes
// the report.

// Common are the settings every study shares.
type Common struct {
	Seed    uint64
	Workers int
	// Log receives a line as each training starts (nil: none).
	Log io.Writer
	// Warn reports a result's warning (nil: none).
	Warn func(format string, a ...any)
	// Progress returns a progress reporter for a game (nil: none).
	Progress func(what string) func(done, total int64)
}

// TrainOptions are the engine settings of a study's training runs.
type TrainOptions struct {
	Protocols string // comma-separated protocols, one run each
	Model     string
	Dataset   string
	DataDir   string
	Clients   int
	PerRound  int
	Samples   int // examples per client
	Rounds    int
	Epochs    int
	LR, Clip  float64
	Epsilon   float64 // every client's local epsilon per round (user level)
	Target    float64 // dp-central: central epsilon of the whole run
	Delta     float64
}

// config is the engine's configuration of the run of protocol p.
func (o TrainOptions) config(p string, c Common) round.Config {
	cfg := round.DefaultConfig()
	cfg.Protocol, cfg.Dataset, cfg.Model, cfg.Out = strings.TrimSpace(p), o.Dataset, o.Model, ""
	cfg.Clients, cfg.ClientsPerRound, cfg.SamplesPerClient, cfg.Rounds, cfg.LocalEpochs = o.Clients, o.PerRound, o.Samples, o.Rounds, o.Epochs
	cfg.LR, cfg.Clip, cfg.Epsilon, cfg.Delta, cfg.Seed, cfg.Workers = o.LR, o.Clip, o.Epsilon, o.Delta, c.Seed, c.Workers
	if AddRemove(cfg.Protocol) {
		cfg.TargetEpsilon = o.Target
	}
	if cfg.Protocol == "ldp-min" {
		cfg.Options = map[string]float64{"min-epsilon": o.Epsilon}
	}
	return cfg
}

// load loads the study's dataset.
func (o TrainOptions) load(c Common) (data.Split, error) {
	return data.Load(o.Dataset, data.Options{DataDir: o.DataDir, Seed: c.Seed})
}

// MIAOptions are the settings of `shufflefl audit mia`.
type MIAOptions struct {
	TrainOptions
	References int // reference models of the calibrated attack
}

// RegisterFlags binds o to the flags of `shufflefl audit mia`.
func (o *MIAOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Protocols, "protocols", "nonprivate,dp-central,ldp-laplace,apes,ss-simple", "comma-separated protocols")
	fs.StringVar(&o.Model, "model", "mlp", "model: logreg or mlp")
	fs.StringVar(&o.Dataset, "dataset", "fashion-mnist-sample", "dataset (members from its training set, non-members from its test set)")
	fs.StringVar(&o.DataDir, "data-dir", "", "directory of the data files")
	fs.IntVar(&o.Clients, "clients", 20, "clients (all take part in every round)")
	fs.IntVar(&o.Samples, "samples-per-client", 10, "examples per client")
	fs.IntVar(&o.Rounds, "rounds", 40, "rounds")
	fs.IntVar(&o.Epochs, "local-epochs", 5, "local epochs")
	fs.Float64Var(&o.LR, "lr", 0.1, "client learning rate")
	fs.Float64Var(&o.Clip, "clip", 0.1, "clipping bound C")
	fs.Float64Var(&o.Epsilon, "epsilon", 1, "every client's local epsilon per round (user level)")
	fs.Float64Var(&o.Target, "target-epsilon", 8, "dp-central: central epsilon of the whole run")
	fs.Float64Var(&o.Delta, "delta", 1e-5, "central delta of the run")
	fs.IntVar(&o.References, "references", 2, "reference models for the calibrated attack")
}

// Study runs MembershipInference for every protocol.
func (o MIAOptions) Study(command string, c Common) (MIAReport, error) {
	rep := MIAReport{Command: command, Model: o.Model, Dataset: o.Dataset}
	split, err := o.load(c)
	if err != nil {
		return rep, err
	}
	for _, p := range strings.Split(o.Protocols, ",") {
		cfg := o.config(p, c)
		if c.Log != nil {
			fmt.Fprintf(c.Log, "shufflefl audit mia: training %s (%d rounds, %d reference models)\n", cfg.Protocol, cfg.Rounds, o.References)
		}
		res, err := MembershipInference(MIAConfig{Train: cfg, Pool: split, References: o.References})
		if err != nil {
			return rep, fmt.Errorf("%s: %w", cfg.Protocol, err)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// CanaryOptions are the settings of `shufflefl audit canary`.
type CanaryOptions struct {
	TrainOptions
	Canaries   int     // canary clients M
	Guesses    int     // guesses on each side (0: M/4)
	Scale      float64 // canary size relative to the clip bound
	Confidence float64
}

// RegisterFlags binds o to the flags of `shufflefl audit canary`.
func (o *CanaryOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Protocols, "protocols", "nonprivate,dp-central,ldp-laplace,apes,ss-simple,ss-topk", "comma-separated protocols")
	fs.StringVar(&o.Model, "model", "logreg", "model")
	fs.StringVar(&o.Dataset, "dataset", "fashion-mnist-sample", "dataset")
	fs.StringVar(&o.DataDir, "data-dir", "", "directory of the data files")
	fs.IntVar(&o.Clients, "clients", 200, "clients (population)")
	fs.IntVar(&o.PerRound, "clients-per-round", 0, "clients per round (0: all)")
	fs.IntVar(&o.Samples, "samples-per-client", 10, "examples per client")
	fs.IntVar(&o.Rounds, "rounds", 2, "rounds")
	fs.Float64Var(&o.Epsilon, "epsilon", 1, "every client's local epsilon per round (user level)")
	fs.Float64Var(&o.Target, "target-epsilon", 8, "dp-central: central epsilon of the whole run")
	fs.Float64Var(&o.Delta, "delta", 1e-5, "central delta of the run")
	fs.Float64Var(&o.Clip, "clip", 0.1, "clipping bound C")
	fs.IntVar(&o.Canaries, "canaries", 100, "canary clients M")
	fs.IntVar(&o.Guesses, "guesses", 0, "guesses on each side (0: M/4)")
	fs.Float64Var(&o.Scale, "scale", 1, "canary size relative to the clip bound")
	fs.Float64Var(&o.Confidence, "confidence", 0.95, "confidence of the lower bound")
}

// Study runs OneRun for every protocol.
func (o CanaryOptions) Study(command string, c Common) (CanaryReport, error) {
	rep := CanaryReport{Command: command}
	if o.Canaries > o.Clients {
		return rep, checks.Invalidf("%d canaries exceed the %d clients: raise --clients or lower --canaries", o.Canaries, o.Clients)
	}
	split, err := o.load(c)
	if err != nil {
		return rep, err
	}
	o.LR, o.Epochs = round.DefaultConfig().LR, 1
	for _, p := range strings.Split(o.Protocols, ",") {
		cfg := o.config(p, c)
		if c.Log != nil {
			fmt.Fprintf(c.Log, "shufflefl audit canary: training %s with %d canaries (%d rounds)\n", cfg.Protocol, o.Canaries, cfg.Rounds)
		}
		res, err := OneRun(OneRunConfig{Train: cfg, Split: split, Canaries: o.Canaries, Guesses: o.Guesses, Scale: o.Scale, Confidence: o.Confidence})
		if err != nil {
			return rep, fmt.Errorf("%s: %w", cfg.Protocol, err)
		}
		if res.Warning != "" && c.Warn != nil {
			c.Warn("%s: %s", cfg.Protocol, res.Warning)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// TopkOptions are the settings of `shufflefl audit topk`.
type TopkOptions struct {
	TrainOptions
	K   int    // top-k coordinates per report
	Nus string // comma-separated nu-index privacy targets, one run each
}

// RegisterFlags binds o to the flags of `shufflefl audit topk`.
func (o *TopkOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Model, "model", "logreg", "model")
	fs.StringVar(&o.Dataset, "dataset", "fashion-mnist-sample", "dataset")
	fs.StringVar(&o.DataDir, "data-dir", "", "directory of the data files")
	fs.IntVar(&o.Clients, "clients", 100, "clients")
	fs.IntVar(&o.PerRound, "clients-per-round", 50, "clients per round")
	fs.IntVar(&o.Rounds, "rounds", 5, "rounds")
	fs.Float64Var(&o.Epsilon, "epsilon", 10, "local epsilon per round (user level)")
	fs.IntVar(&o.K, "k", 50, "top-k coordinates per report")
	fs.StringVar(&o.Nus, "nu", "1.5,4,16", "comma-separated nu-index privacy targets (one run each)")
}

// Study runs TopkShuffler at every nu.
func (o TopkOptions) Study(command string, c Common) (TopkReport, error) {
	rep := TopkReport{Command: command}
	split, err := o.load(c)
	if err != nil {
		return rep, err
	}
	nus, err := ParseFloats("--nu", o.Nus)
	if err != nil {
		return rep, err
	}
	d := round.DefaultConfig()
	o.Samples, o.Epochs, o.LR, o.Clip, o.Delta = d.SamplesPerClient, 1, d.LR, d.Clip, d.Delta
	for _, nu := range nus {
		cfg := o.config("ss-topk", c)
		cfg.Options = map[string]float64{"k": float64(o.K), "nu": nu}
		res, err := TopkShuffler(cfg, split)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// ParseFloats parses the comma-separated numbers s of flag name; empty
// items are skipped.
func ParseFloats(name, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, checks.Invalidf("%s: %q is not a number", name, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// InversionOptions are the settings of `shufflefl audit inversion`.
type InversionOptions struct {
	Model, Dataset, DataDir string
	Protocols               string // comma-separated protocols, or all
	Epsilons, Nus           string // comma-separated user-level epsilons and noise multipliers
	Targets, Clients        int
	LR, Clip                float64
	DLG                     DLGConfig
}

// RegisterFlags binds o to the flags of `shufflefl audit inversion`.
func (o *InversionOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Model, "model", "logreg", "model attacked: logreg or mlp (the analytic attack needs a fully connected layer on the input)")
	fs.StringVar(&o.Dataset, "dataset", "fashion-mnist-sample", "image dataset")
	fs.StringVar(&o.DataDir, "data-dir", "", "directory of the data files")
	fs.StringVar(&o.Protocols, "protocols", "all", "comma-separated protocols, or all")
	fs.StringVar(&o.Epsilons, "epsilons", "1,100,10000", "comma-separated user-level epsilons (dp-central: central)")
	fs.StringVar(&o.Nus, "nus", "0,0.001,0.01,0.1,1,10", "comma-separated noise multipliers of the per-layer sanitizer")
	fs.IntVar(&o.Targets, "targets", 4, "images attacked")
	fs.IntVar(&o.Clients, "clients", 10, "clients of a round when the attacker sees only the round's mean")
	fs.Float64Var(&o.LR, "lr", 0.1, "client SGD step size")
	fs.Float64Var(&o.Clip, "clip", 0.1, "protocols' clipping bound C")
	fs.IntVar(&o.DLG.Steps, "dlg-steps", 200, "Adam steps of the optimisation attack")
	fs.Float64Var(&o.DLG.LR, "dlg-lr", 0.05, "Adam step size of the optimisation attack (the mlp does better with 0.01 and 1000 steps)")
}

// settings are the releases attacked: every protocol at every epsilon
// (nonprivate once), and the sanitizer at every nu.
func (o InversionOptions) settings() (protos, sanitized []Setting, err error) {
	epss, err := ParseFloats("--epsilons", o.Epsilons)
	if err != nil {
		return nil, nil, err
	}
	nus, err := ParseFloats("--nus", o.Nus)
	if err != nil {
		return nil, nil, err
	}
	names := strings.Split(o.Protocols, ",")
	if o.Protocols == "all" {
		names = protocol.Names()
	}
	for _, n := range names {
		if n == "nonprivate" {
			protos = append(protos, Setting{Protocol: n})
			continue
		}
		for _, e := range epss {
			protos = append(protos, Setting{Protocol: n, Epsilon: e})
		}
	}
	for _, nu := range nus {
		if nu < 0 {
			return nil, nil, checks.Invalidf("--nus: nu = %v must be >= 0", nu)
		}
		sanitized = append(sanitized, Setting{Nu: nu})
	}
	return protos, sanitized, nil
}

// Study attacks every setting (InversionStudy) from a model initialised
// with the seed, and returns the report with its image grids (file name
// -> PNG writer): inversion-protocols.png and inversion-nu.png.
func (o InversionOptions) Study(command string, c Common) (InversionReport, map[string]func(io.Writer) error, error) {
	rep := InversionReport{Command: command, Model: o.Model, Dataset: o.Dataset, Targets: o.Targets}
	if o.DLG.Steps < 1 || !(o.DLG.LR > 0) {
		return rep, nil, checks.Invalidf("--dlg-steps must be >= 1 and --dlg-lr > 0, got %d and %v", o.DLG.Steps, o.DLG.LR)
	}
	split, err := data.Load(o.Dataset, data.Options{DataDir: o.DataDir})
	if err != nil {
		return rep, nil, err
	}
	m, err := fl.NewModel(o.Model, split.Train.Features, max(2, split.Train.Classes))
	if err != nil {
		return rep, nil, err
	}
	if _, err := InputLayer(m); err != nil {
		return rep, nil, err
	}
	psets, nsets, err := o.settings()
	if err != nil {
		return rep, nil, err
	}
	w := make([]float64, m.Dim())
	m.Init(rng.Stream(c.Seed, rng.LabelInit), w)
	cfg := InversionConfig{Model: m, W: w, Data: split.Train, Targets: o.Targets, LR: o.LR, Clip: o.Clip, Delta: 1e-5,
		Clients: o.Clients, DLG: o.DLG, Seed: c.Seed}
	images := map[string]func(io.Writer) error{}
	for _, part := range []struct {
		file string
		sets []Setting
	}{{"inversion-protocols.png", psets}, {"inversion-nu.png", nsets}} {
		if len(part.sets) == 0 {
			continue
		}
		cfg.Settings = part.sets
		rows, err := InversionStudy(cfg)
		if err != nil {
			return rep, nil, err
		}
		rep.Rows = append(rep.Rows, rows...)
		images[part.file] = InversionGrid(rows, split.Train, o.Targets)
	}
	return rep, images, nil
}

// RegisterFlags binds c to the flags of `shufflefl audit protocol`; the
// values of the repeatable --option (NAME=VALUE) are collected in the list
// returned, for sim.ParseOptions.
func (c *ProtocolAuditConfig) RegisterFlags(fs *flag.FlagSet) *[]string {
	fs.StringVar(&c.Protocol, "protocol", "", "protocol to audit, or all (every private protocol)")
	fs.Float64Var(&c.Epsilon, "epsilon", 2, "every client's local epsilon for its whole update (user level)")
	fs.Float64Var(&c.TargetEpsilon, "target-epsilon", 4, "dp-central: the central epsilon its noise is calibrated to")
	fs.Float64Var(&c.Delta, "delta", 1e-5, "target central delta")
	fs.Float64Var(&c.Clip, "clip", 1, "clipping bound C")
	fs.IntVar(&c.Dim, "dim", 2, "model dimension of the game")
	fs.IntVar(&c.Clients, "clients", 10, "clients in the round")
	fs.Float64Var(&c.Miscalibrate, "miscalibrate", 1, "encode with this many times the budget, claim the budget (negative control)")
	fs.Int64Var(&c.Trials, "trials", 20000, "trials (rounds) per world")
	fs.Int64Var(&c.TightTrials, "tight-trials", 40000, "with --protocol all: trials per world of the tight game (n = 2, d = 1); 0 skips it")
	fs.Float64Var(&c.Confidence, "confidence", 0.95, "confidence of the lower bound")
	fs.BoolVar(&c.Engine, "engine", false, "play the game through the engine (real data, sampling, training; a fresh NoiseSalt per trial) on --dataset/--model instead of the protocol API")
	fs.StringVar(&c.Dataset, "dataset", "fashion-mnist-sample", "--engine: dataset")
	fs.StringVar(&c.Model, "model", "logreg", "--engine: model")
	fs.IntVar(&c.SamplesPerClient, "samples-per-client", 10, "--engine: examples per client")
	var opts []string
	fs.Func("option", "protocol option NAME=VALUE (repeatable; see shufflefl protocols NAME)", func(s string) error {
		opts = append(opts, s)
		return nil
	})
	return &opts
}

// MechanismOptions are the settings of `shufflefl audit mechanism`.
type MechanismOptions struct {
	Mechanism    string // a name of MechanismNames, or all
	Epsilon      float64
	Delta        float64 // approximate mechanisms only
	Miscalibrate float64 // noise this many times too small (negative control; 1: correct)
	Trials       int64   // draws per input
	Confidence   float64
}

// RegisterFlags binds o to the flags of `shufflefl audit mechanism`.
func (o *MechanismOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Mechanism, "mechanism", "", "randomizer to audit (see above), or all")
	fs.Float64Var(&o.Epsilon, "epsilon", 0, "claimed epsilon of one release")
	fs.Float64Var(&o.Delta, "delta", 1e-5, "claimed delta (approximate mechanisms only)")
	fs.Float64Var(&o.Miscalibrate, "miscalibrate", 1, "make the noise this many times too small (negative control)")
	fs.Int64Var(&o.Trials, "trials", 1_000_000, "draws per input (half choose the test, half measure it)")
	fs.Float64Var(&o.Confidence, "confidence", 0.95, "confidence of the lower bound")
}

// Study plays MechanismGame for the mechanism, or every one.
func (o MechanismOptions) Study(ctx context.Context, command string, c Common) (MechanismReport, error) {
	rep := MechanismReport{Command: command}
	if o.Mechanism == "" {
		return rep, checks.Invalidf("--mechanism is required")
	}
	names := []string{o.Mechanism}
	if o.Mechanism == "all" {
		names = MechanismNames()
	}
	for _, n := range names {
		m, err := MechanismFor(n, o.Epsilon, o.Delta, o.Miscalibrate)
		if err != nil {
			return rep, err
		}
		g := GameConfig{Trials: o.Trials, Confidence: o.Confidence, Seed: c.Seed, Workers: c.Workers}
		if c.Progress != nil {
			g.Progress = c.Progress(n + " trials")
		}
		res, err := MechanismGame(ctx, m, o.Miscalibrate, g)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// AccountantStudy checks the statements of the finished run in dir
// (ReadRun, CheckAccountant) and makes the report.
func AccountantStudy(dir, command string) (AccountantReport, error) {
	rep := AccountantReport{Command: command, Run: dir}
	if dir == "" {
		return rep, checks.Invalidf("--run is required")
	}
	facts, err := ReadRun(dir)
	if err != nil {
		return rep, err
	}
	cs, why, err := CheckAccountant(facts)
	if err != nil {
		return rep, err
	}
	rep.Protocol, rep.Dim, rep.Clients, rep.Rounds, rep.Checks, rep.NotChecked = facts.Protocol, facts.Dim, facts.Clients, len(facts.Rounds), cs, why
	for _, ch := range cs {
		if ch.Violation {
			rep.Violations++
		}
	}
	return rep, nil
}
