package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"shufflefl/checks"
	"shufflefl/fl"
	"shufflefl/ifca/ifcaref"
	"shufflefl/ifca/regress"
	"shufflefl/runtime"
)

// The group-privacy paper's experiments (Galli et al., seed 004) run on
// small regression models through ifcaref.Simulate, not through the engine,
// so they have their own driver: main.go dispatches "experiment
// dprivacy-*" here. They are also registered with registerExperiment (with
// no engine tables) so that `shufflefl experiment --help` lists them.

type dprivExperiment struct {
	summary string
	run     func(o dprivOpts, stdout, stderr io.Writer) error
}

var dprivExperiments = map[string]dprivExperiment{
	"dprivacy-synthetic": {
		summary: "group-privacy paper §5.1: IFCA with d-private releases on 2-D linear data (Figures 1, 2)",
		run:     runDPrivSynthetic,
	},
	"dprivacy-regression": {
		summary: "group-privacy paper §5.2 on a SYNTHETIC stand-in for the hospital-charge data (Figure 4, Table 3)",
		run:     runDPrivRegression,
	},
	"dprivacy-rotated": {
		summary: "group-privacy paper §5.3 (Table 4) on rotated Fashion-MNIST / MNIST-10k: ifca-dp through the engine, 1 vs several hypotheses across nu",
		run:     runDPrivRotated,
	},
}

func init() {
	for name, e := range dprivExperiments {
		registerExperiment(experiment{name: name, summary: e.summary + " (own driver)", base: func(*runtime.Config, int) {}})
	}
}

// isDPrivExperiment reports whether name is one of this file's experiments
// (main.go dispatches them to runDPrivExperiment).
func isDPrivExperiment(name string) bool {
	_, ok := dprivExperiments[name]
	return ok
}

type dprivOpts struct {
	out       string
	seed      uint64
	seeds     int
	workers   int
	maxRounds int
	nus, ks   string
	nuList    []float64
	kList     []int
	rotated   rotatedOpts
}

const dprivUsage = `Usage: shufflefl experiment %s [flags]

%s.

Writes under --out: results.md (tables beside the paper's numbers),
results.json (every run's summary and the first seed's per-round records),
PNG plots, and run.log. See docs/DPRIVACY.md.

Flags:
`

func runDPrivExperiment(name string, args []string, stdout, stderr io.Writer) int {
	e := dprivExperiments[name]
	fs := flag.NewFlagSet("experiment "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o dprivOpts
	defSeeds := 10
	if name == "dprivacy-rotated" {
		defSeeds = 3 // the three seeds; each run trains an image model
	}
	fs.StringVar(&o.out, "out", filepath.Join("out", "experiment-"+name), "output `directory`; it must be empty or absent unless --overwrite is given")
	fs.Uint64Var(&o.seed, "seed", 1, "first random seed; seeds seed..seed+seeds-1 are run")
	fs.IntVar(&o.seeds, "seeds", defSeeds, "number of seeds (>= 1)")
	fs.IntVar(&o.workers, "workers", 0, "worker goroutines; 0 means all cores (results do not depend on it)")
	fs.IntVar(&o.maxRounds, "max-rounds", 500, "upper bound on the rounds of each run (>= 1); early stopping usually ends runs sooner")
	if name == "dprivacy-regression" {
		fs.StringVar(&o.nus, "nus", "0,0.1,1,2,3,5", "comma-separated noise multipliers (0 = no sanitization)")
		fs.StringVar(&o.ks, "ks", "1,3,5,7", "comma-separated numbers of hypotheses")
	}
	if name == "dprivacy-rotated" {
		ro := &o.rotated
		fs.StringVar(&o.nus, "nus", "0,0.001,0.01,0.1,1,3,5,10,15", "comma-separated noise multipliers (Table 4's; 0 = no sanitization)")
		fs.StringVar(&o.ks, "ks", "1,2", "comma-separated numbers of hypotheses")
		fs.StringVar(&ro.dataset, "dataset", "fashion-mnist", "dataset `name` (fashion-mnist, mnist-10k, mnist-dir, fashion-mnist-sample)")
		fs.StringVar(&ro.dataDir, "data-dir", "", "data `directory` (see shufflefl run --help)")
		fs.StringVar(&ro.model, "model", "mlp", "model `name`: "+strings.Join(fl.Models(), ", "))
		fs.IntVar(&ro.groups, "groups", 2, "rotation groups: 2 is the paper's Bernoulli(0.5) 90° rotation, 4 IFCA's four rotations")
		fs.IntVar(&ro.clients, "clients", 200, "clients")
		fs.IntVar(&ro.perRound, "clients-per-round", 50, "clients per round (U)")
		fs.IntVar(&ro.samples, "samples-per-client", 50, "training images per client")
		fs.IntVar(&ro.rounds, "rounds", 20, "rounds per run")
		fs.IntVar(&ro.epochs, "local-epochs", 1, "local epochs (E)")
		fs.Float64Var(&ro.lr, "lr", 0.05, "local learning rate (s)")
		fs.IntVar(&ro.holdout, "holdout-clients", 0, "validation clients held out for early stopping (0: none; the paper holds out clients and validates every 5 rounds with patience 5)")
		fs.IntVar(&ro.every, "validate-every", 0, "validate every this many rounds (needs --holdout-clients); --rounds is then the upper bound")
		fs.IntVar(&ro.patience, "patience", 0, "stop after this many validations without a lower validation loss; the reported accuracy is then the test accuracy at the best validation round")
	}
	overwrite := fs.Bool("overwrite", false, "write into a non-empty --out directory")
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "shufflefl experiment %s: %s\n", name, fmt.Sprintf(format, a...))
		return code
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, dprivUsage, name, e.summary)
			printFlags(stdout, fs)
			return 0
		}
		return fail(2, "%s (see --help)", flagError(err))
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	if o.seeds < 1 || o.maxRounds < 1 || o.workers < 0 {
		return fail(2, "invalid parameter: --seeds and --max-rounds must be >= 1 and --workers >= 0")
	}
	if o.nus != "" || o.ks != "" {
		var err error
		if o.nuList, err = parseFloats("--nus", o.nus); err != nil {
			return fail(2, "%v", err)
		}
		for _, v := range o.nuList {
			if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return fail(2, "invalid parameter: --nus: bad noise multiplier %v (want a finite number >= 0)", v)
			}
		}
		if o.kList, err = parseInts(o.ks); err != nil {
			return fail(2, "%v", err)
		}
		for _, k := range o.kList {
			if k > regU && name == "dprivacy-regression" {
				return fail(2, "invalid parameter: k = %d hypotheses is larger than the %d clients per round", k, regU)
			}
		}
	}
	if name == "dprivacy-rotated" {
		if err := checkRotated(o); err != nil {
			return fail(2, "%v", err)
		}
	}
	if err := checkOutDir(o.out, *overwrite); err != nil {
		return fail(2, "%v", err)
	}
	if err := prepareOutDir(o.out, *overwrite); err != nil {
		return fail(1, "%v", err)
	}
	lf, err := os.Create(filepath.Join(o.out, runLogFile))
	if err != nil {
		return fail(1, "%v", err)
	}
	defer lf.Close()
	start := time.Now()
	if err := e.run(o, teeWriter{stdout, lf}, teeWriter{stderr, lf}); err != nil {
		code := 1
		if errors.Is(err, checks.ErrInvalid) {
			code = 2
		}
		return fail(code, "%v", err)
	}
	fmt.Fprintf(teeWriter{stderr, lf}, "%s: done in %s\n", name, time.Since(start).Round(time.Millisecond))
	return 0
}

// dprivRun is the JSON summary of one simulated run.
type dprivRun struct {
	Variant       string      `json:"variant"`
	K             int         `json:"k"`
	Nu            float64     `json:"nu"`
	Seed          uint64      `json:"seed"`
	Rounds        int         `json:"rounds"`
	Stopped       bool        `json:"stopped_early"`
	BestRound     int         `json:"best_round"`
	BestValLoss   float64     `json:"best_validation_loss"`
	TestRMSE      float64     `json:"test_rmse"`
	Hypotheses    [][]float64 `json:"best_hypotheses"`
	MaxLeakage    *float64    `json:"max_leakage"`    // null: unbounded (no sanitization)
	MedianLeakage *float64    `json:"median_leakage"` // null: unbounded
	PerRound      *float64    `json:"leakage_per_participation"`
	Seconds       float64     `json:"seconds"`
}

// dprivRound is the JSON record of one round (first seed only).
type dprivRound struct {
	Round           int         `json:"round"`
	ValLoss         *float64    `json:"validation_loss"`
	Hypotheses      [][]float64 `json:"hypotheses"`
	Released        int         `json:"released"`
	Declined        int         `json:"declined"`
	MaxLeakage      *float64    `json:"max_leakage"`
	MedianLeakage   *float64    `json:"median_leakage"`
	GroupMaxLeakage []*float64  `json:"group_max_leakage"`
	GroupMedian     []*float64  `json:"group_median_leakage"`
}

func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

func toRound(r ifcaref.Round) dprivRound {
	d := dprivRound{Round: r.Round, ValLoss: finite(r.ValLoss), Hypotheses: r.Hypotheses, Released: r.Released,
		MaxLeakage: finite(r.MaxLeakage), MedianLeakage: finite(r.MedianLeakage)}
	for _, n := range r.Declined {
		d.Declined += n
	}
	for g := range r.GroupMaxLeakage {
		d.GroupMaxLeakage = append(d.GroupMaxLeakage, finite(r.GroupMaxLeakage[g]))
		d.GroupMedian = append(d.GroupMedian, finite(r.GroupMedianLeakage[g]))
	}
	return d
}

func asClients(cs []*regress.Client) []ifcaref.Client {
	out := make([]ifcaref.Client, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// meanSD returns the mean and the sample standard deviation (0 for one
// value) of vs.
func meanSD(vs []float64) (mean, sd float64) {
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	if len(vs) < 2 {
		return mean, 0
	}
	for _, v := range vs {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(vs)-1))
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, checks.Invalidf("bad number of hypotheses %q (want an integer >= 1)", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func fmtLeak(v *float64) string {
	if v == nil {
		return "∞"
	}
	return fmt.Sprintf("%.4g", *v)
}
