package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"shufflefl/data"
	"shufflefl/metrics"
	"shufflefl/runtime"
)

// expRun is one row of an experiment: a label and its changes to the base
// configuration.
type expRun struct {
	label string
	mod   func(c *runtime.Config)
}

// experiment reproduces one paper's comparison.
type experiment struct {
	name    string
	summary string
	// base sets the paper's shared settings on top of the defaults; trainLen
	// is the size of the training set (to fit the number of clients to it).
	base func(c *runtime.Config, trainLen int)
	// tables lists the groups of runs; each becomes one markdown table.
	tables []expTable
}

type expTable struct {
	title string
	runs  []expRun
}

var experiments = map[string]experiment{}

func registerExperiment(e experiment) { experiments[e.name] = e }

func experimentNames() []string {
	var names []string
	for n := range experiments {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

const experimentUsage = `Usage: shufflefl experiment NAME [flags]

Runs the comparison of one paper end to end with the same engine as
'shufflefl run', and writes under --out a markdown table per comparison
(results.md), an accuracy plot per table, and each run's own metrics.jsonl,
summary.json, config.yaml and plots in a subdirectory.

Experiments:
%s
Flags:
`

func runExperiment(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		dataset  = fs.String("dataset", "fashion-mnist", "dataset `name`: "+strings.Join(data.Names(), ", "))
		dataDir  = fs.String("data-dir", "", "`directory` with the dataset's files (see shufflefl run --help)")
		rounds   = fs.Int("rounds", 0, "rounds per run (0 = the experiment's default)")
		out      = fs.String("out", "", "output `directory` (default out/experiment-NAME-DATASET)")
		seed     = fs.Uint64("seed", 1, "random seed")
		workers  = fs.Int("workers", 0, "worker goroutines; 0 means all cores")
		only     = fs.String("only", "", "comma-separated run labels to run (default all)")
		progress = fs.String("progress", "log", "per-round progress: log or none")
	)
	var list strings.Builder
	for _, n := range experimentNames() {
		fmt.Fprintf(&list, "  %-8s %s\n", n, experiments[n].summary)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), experimentUsage, list.String())
		fs.PrintDefaults()
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fs.SetOutput(stderr)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "shufflefl experiment: name an experiment (%s); see shufflefl experiment --help\n", strings.Join(experimentNames(), ", "))
		return 2
	}
	name := args[0]
	exp, ok := experiments[name]
	if !ok {
		fmt.Fprintf(stderr, "shufflefl experiment: unknown experiment %q (known: %s)\n", name, strings.Join(experimentNames(), ", "))
		return 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "shufflefl experiment: %v (see shufflefl experiment --help)\n", err)
		return 2
	}
	if *progress != "log" && *progress != "none" {
		fmt.Fprintf(stderr, "shufflefl experiment: unknown progress mode %q (known: log, none)\n", *progress)
		return 2
	}
	if *out == "" {
		*out = filepath.Join("out", "experiment-"+name+"-"+*dataset)
	}
	want := map[string]bool{}
	for _, l := range strings.Split(*only, ",") {
		if l = strings.TrimSpace(l); l != "" {
			want[l] = true
		}
	}
	split, err := data.Load(*dataset, data.Options{DataDir: *dataDir, Seed: *seed})
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl experiment: %v\n", err)
		return 2
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "shufflefl experiment: %v\n", err)
		return 2
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# Experiment `%s` on `%s`\n\n%s\n\nCommand: `shufflefl experiment %s`\n\n",
		name, *dataset, exp.summary, strings.Join(args, " "))
	matched := 0
	for ti, tab := range exp.tables {
		var series []metrics.Series
		var rows []string
		for _, run := range tab.runs {
			if len(want) > 0 && !want[run.label] {
				continue
			}
			matched++
			cfg := runtime.DefaultConfig()
			cfg.Dataset, cfg.DataDir, cfg.Seed, cfg.Workers = *dataset, *dataDir, *seed, *workers
			exp.base(&cfg, split.Train.Len())
			if *rounds > 0 {
				cfg.Rounds = *rounds
			}
			run.mod(&cfg)
			if *rounds > 0 {
				cfg.Rounds = *rounds
			}
			cfg.Out = filepath.Join(*out, fmt.Sprintf("t%d-%s", ti+1, run.label))
			fmt.Fprintf(stderr, "== %s: %s (%s)\n", tab.title, run.label, cfg.Protocol)
			recs, sum, err := runOne(cfg, split, *progress, stderr)
			if err != nil {
				fmt.Fprintf(stderr, "shufflefl experiment: run %s: %v\n", run.label, err)
				if runtime.IsUsageError(err) {
					return 2
				}
				return 1
			}
			series = append(series, metrics.Series{Name: run.label, Records: recs})
			rows = append(rows, tableRow(run.label, cfg, recs, sum))
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&md, "## %s\n\n", tab.title)
		md.WriteString("| run | protocol | local ε per coordinate (min–max) | local ε per user (min–max) | central ε per coordinate, one round | central ε per user, one round (δ) | cumulative ε (δ) | bound | final accuracy | best accuracy | seconds |\n")
		md.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, r := range rows {
			md.WriteString(r)
		}
		plotName := fmt.Sprintf("accuracy-t%d.png", ti+1)
		if err := metrics.PlotCompare(filepath.Join(*out, plotName), fmt.Sprintf("%s: %s", name, tab.title), series); err != nil {
			fmt.Fprintf(stderr, "shufflefl experiment: %v\n", err)
			return 1
		}
		fmt.Fprintf(&md, "\n![accuracy](%s)\n\n", plotName)
	}
	if matched == 0 {
		fmt.Fprintf(stderr, "shufflefl experiment: --only %q matches no run of %s\n", *only, name)
		return 2
	}
	if err := os.WriteFile(filepath.Join(*out, "results.md"), []byte(md.String()), 0o644); err != nil {
		fmt.Fprintf(stderr, "shufflefl experiment: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, md.String())
	return 0
}

// runOne runs one configuration and writes its outputs like `shufflefl run`.
func runOne(cfg runtime.Config, split data.Split, progress string, stderr io.Writer) ([]metrics.Record, runtime.Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, runtime.Summary{}, err
	}
	budgets, err := runtime.Budgets(cfg, nil)
	if err != nil {
		return nil, runtime.Summary{}, err
	}
	eng, err := runtime.New(cfg, split, budgets)
	if err != nil {
		return nil, runtime.Summary{}, err
	}
	var recs []metrics.Record
	sum, err := eng.Run(func(r runtime.RoundResult) {
		rec := metrics.FromResult(r)
		recs = append(recs, rec)
		if progress == "log" {
			fmt.Fprintf(stderr, "round %d/%d  acc %.4f  loss %.4f  %.2fs\n", r.Round, cfg.Rounds, r.TestAccuracy, r.TestLoss, r.Seconds)
		}
	})
	if err != nil {
		return nil, sum, err
	}
	if err := writeRunOutputs(cfg, recs, sum); err != nil {
		return nil, sum, err
	}
	return recs, sum, nil
}

func fmtEps(v *float64) string {
	if v == nil {
		return "∞"
	}
	return fmt.Sprintf("%.4g", *v)
}

func fmtRange(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "∞"
	}
	if *lo == *hi {
		return fmt.Sprintf("%.4g", *lo)
	}
	return fmt.Sprintf("%.4g–%.4g", *lo, *hi)
}

func tableRow(label string, cfg runtime.Config, recs []metrics.Record, sum runtime.Summary) string {
	last := recs[len(recs)-1]
	coordMin := last.LocalCoordEpsilonMin
	delta := func(d float64) string {
		if d == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2g)", d)
	}
	bound := last.Bound
	if last.Approximate {
		bound += " [approximation]"
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s%s | %s%s | %s | %.4f | %.4f | %.1f |\n",
		label, cfg.Protocol, fmtRange(coordMin, last.LocalCoordEpsilon), fmtRange(last.LocalEpsilonMin, last.LocalEpsilonMax),
		fmtEps(last.CentralCoordEpsilon), fmtEps(last.CentralEpsilon), delta(last.CentralDelta),
		fmtEps(last.CumulativeEpsilon), delta(last.CumulativeDelta), bound,
		sum.FinalAccuracy, sum.BestAccuracy, sum.Seconds)
}
