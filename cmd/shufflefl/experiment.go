package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

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
	// custom, if set, runs an experiment that is not a list of tables (the
	// frontier): it gets the arguments after the experiment's name and
	// returns the exit status.
	custom func(args []string, stdout, stderr io.Writer) int
}

type expTable struct {
	// title heads the table in results.md and titles its plot; "{n}" and
	// "{d}" stand for the runs' number of clients and model dimension
	// (tableTitle fills them in).
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
(results.md), an accuracy plot per table (accuracy-tN.png), run.log (all it
printed), and each run's own metrics.jsonl, summary.json, config.yaml, run.log
and plots in a subdirectory tN-LABEL. Every run's settings are checked, and
its engine built, before the first run starts. The --out directory must be
empty or absent unless --overwrite is given (see shufflefl run --help).

Experiments:
%s
Flags:
`

const experimentExamples = `
Examples:
  shufflefl experiment flame --dataset mnist-10k --out out/flame-mnist
  shufflefl experiment apes --rounds 3 --only APES,UniS --out out/apes-quick
  shufflefl experiment eapes --dataset fashion-mnist --overwrite
  shufflefl experiment frontier --protocols ss-simple,apes,dp-central --targets 2,8
`

// plannedRun is one run of an experiment, checked and ready to start.
type plannedRun struct {
	ti           int // index of its table in experiment.tables
	table, label string
	cfg          runtime.Config
	dim          int // the model's dimension
}

func runExperiment(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		dataset   = fs.String("dataset", "fashion-mnist", "dataset `name`: "+strings.Join(data.ClassificationNames(), ", "))
		dataDir   = fs.String("data-dir", "", "`directory` with the dataset's files (see shufflefl run --help)")
		rounds    = fs.Int("rounds", 0, "rounds per run, >= 1 (default: the experiment's own)")
		out       = fs.String("out", "", "output `directory` (default out/experiment-NAME-DATASET); it must be empty or absent unless --overwrite is given")
		seed      = fs.Uint64("seed", 1, "random seed")
		workers   = fs.Int("workers", 0, "worker goroutines; 0 means all cores")
		only      = fs.String("only", "", "comma-separated run `labels` to run (default all)")
		progress  = fs.String("progress", "log", "per-round progress: log or none (each run's run.log gets the lines either way)")
		overwrite = fs.Bool("overwrite", false, "write into a non-empty --out directory, removing the shufflefl outputs already there first (other files are kept)")
	)
	var list strings.Builder
	for _, n := range experimentNames() {
		fmt.Fprintf(&list, "  %-8s %s\n", n, experiments[n].summary)
	}
	fs.Usage = func() {
		fmt.Fprintf(stdout, experimentUsage, list.String())
		printFlags(stdout, fs)
		fmt.Fprint(stdout, experimentExamples)
	}
	var log io.Writer = io.Discard
	fail := func(code int, format string, a ...any) int {
		msg := strings.ReplaceAll(strings.TrimSpace(fmt.Sprintf(format, a...)), "\n", "; ")
		msg = "shufflefl experiment: " + msg + "\n"
		fmt.Fprint(stderr, msg)
		fmt.Fprint(log, msg)
		return code
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fs.Usage()
			return 0
		}
		return fail(2, "name an experiment (%s); see shufflefl experiment --help", strings.Join(experimentNames(), ", "))
	}
	name := args[0]
	exp, ok := experiments[name]
	if !ok {
		return fail(2, "unknown experiment %q (known: %s)", name, strings.Join(experimentNames(), ", "))
	}
	if exp.custom != nil {
		return exp.custom(args[1:], stdout, stderr)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) { // Parse has printed the help
			return 0
		}
		return fail(2, "%s (see shufflefl experiment --help)", flagError(err))
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q (flags start with --; one experiment per command)", fs.Arg(0))
	}
	if flagSet(fs)["rounds"] && *rounds < 1 {
		return fail(2, "invalid parameter: rounds must be >= 1, got %d", *rounds)
	}
	if err := checkExperimentCommon(*progress, *dataset, out, *overwrite, "experiment-"+name, "the experiments train"); err != nil {
		return fail(2, "%v", err)
	}
	want := map[string]bool{}
	for _, l := range strings.Split(*only, ",") {
		if l = strings.TrimSpace(l); l != "" {
			want[l] = true
		}
	}
	split, err := data.Load(*dataset, data.Options{DataDir: *dataDir, Seed: *seed})
	if err != nil {
		return fail(2, "%v", err)
	}

	// Plan every run and build its engine once, so that a setting no run
	// can honour fails now, not after hours of the runs before it. The
	// engines are not kept (a planned APES engine holds tens of MB; the
	// experiment's 18 would be held at once): each run builds its own again.
	checkStart := time.Now()
	var plan []plannedRun
	for ti, tab := range exp.tables {
		for _, run := range tab.runs {
			if len(want) > 0 && !want[run.label] {
				continue
			}
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
			if cfg.Protocol == "nonprivate" {
				// The base's budgets mean nothing without privacy; clear
				// them so that the run's config.yaml reruns as it is.
				cfg.EpsDist, cfg.EpsFile, cfg.EpsScale = "", "", 0
			}
			cfg.Out = filepath.Join(*out, fmt.Sprintf("t%d-%s", ti+1, run.label))
			eng, err := buildRun(cfg, split)
			if err != nil {
				return fail(usageCode(err), "run %s: %v", run.label, err)
			}
			plan = append(plan, plannedRun{ti: ti, table: tab.title, label: run.label, cfg: cfg, dim: eng.Model().Dim()})
		}
	}
	titles := make([]string, len(exp.tables))
	for ti, tab := range exp.tables {
		titles[ti] = tableTitle(tab.title, ti, plan)
	}
	for k := range plan {
		plan[k].table = titles[plan[k].ti]
	}
	if len(plan) == 0 {
		return fail(2, "--only %q matches no run of %s", *only, name)
	}

	if err := prepareOutDir(*out, *overwrite); err != nil {
		return fail(2, "%v", err)
	}
	lf, err := os.Create(filepath.Join(*out, runLogFile))
	if err != nil {
		return fail(1, "writing %s: %v", runLogFile, err)
	}
	defer lf.Close()
	log = lf
	stdout, stderr = teeWriter{stdout, lf}, teeWriter{stderr, lf}
	fmt.Fprintf(stderr, "%s: %d runs checked (settings, engines and privacy plans) in %s\n", name, len(plan), time.Since(checkStart).Round(time.Millisecond))

	var md strings.Builder
	fmt.Fprintf(&md, "# Experiment `%s` on `%s`\n\n%s\n\nCommand: `shufflefl experiment %s`\n\n",
		name, *dataset, exp.summary, strings.Join(args, " "))
	start := time.Now()
	k := 0
	for ti := range exp.tables {
		var series []metrics.Series
		var rows []string
		for ; k < len(plan) && plan[k].ti == ti; k++ {
			pr := plan[k]
			eta := ""
			if k > 0 {
				left := time.Duration(float64(time.Since(start)) / float64(k) * float64(len(plan)-k))
				eta = fmt.Sprintf(", ETA %s", left.Round(time.Second))
			}
			fmt.Fprintf(stderr, "== run %d of %d%s: %s: %s (%s)\n", k+1, len(plan), eta, pr.table, pr.label, pr.cfg.Protocol)
			eng, err := buildRun(pr.cfg, split)
			if err != nil {
				return fail(usageCode(err), "run %s: %v", pr.label, err)
			}
			recs, sum, err := runOne(pr.cfg, eng, *progress, stderr)
			if err != nil {
				return fail(usageCode(err), "run %s: %v", pr.label, err)
			}
			series = append(series, metrics.Series{Name: pr.label, Records: recs})
			rows = append(rows, tableRow(pr.label, pr.cfg, recs, sum))
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&md, "## %s\n\n", titles[ti])
		md.WriteString("| run | protocol | local ε per coordinate (min–max) | local ε per user (min–max) | central ε per coordinate, one round | central ε per user, one round (δ) | cumulative ε (δ) | bound | final accuracy | best accuracy | seconds |\n")
		md.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, r := range rows {
			md.WriteString(r)
		}
		plotName := fmt.Sprintf("accuracy-t%d.png", ti+1)
		if err := metrics.PlotCompare(filepath.Join(*out, plotName), fmt.Sprintf("%s: %s", name, titles[ti]), series); err != nil {
			return fail(1, "%v", err)
		}
		fmt.Fprintf(&md, "\n![accuracy](%s)\n\n", plotName)
	}
	if err := os.WriteFile(filepath.Join(*out, "results.md"), []byte(md.String()), 0o644); err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprint(stdout, md.String())
	if err := lf.Close(); err != nil {
		fmt.Fprintf(stderr, "shufflefl experiment: writing %s: %v\n", runLogFile, err)
		return 1
	}
	return 0
}

// tableTitle fills the placeholders of the title of table ti: "{n}" with
// its planned runs' number of clients and "{d}" with their model dimension
// (a range when the runs differ), written with thousands separators.
func tableTitle(title string, ti int, plan []plannedRun) string {
	nLo, nHi, dLo, dHi := -1, -1, -1, -1
	for _, pr := range plan {
		if pr.ti != ti {
			continue
		}
		if nLo < 0 {
			nLo, nHi, dLo, dHi = pr.cfg.Clients, pr.cfg.Clients, pr.dim, pr.dim
		}
		nLo, nHi = min(nLo, pr.cfg.Clients), max(nHi, pr.cfg.Clients)
		dLo, dHi = min(dLo, pr.dim), max(dHi, pr.dim)
	}
	if nLo < 0 {
		return title
	}
	span := func(lo, hi int) string {
		if lo == hi {
			return groupDigits(lo)
		}
		return groupDigits(lo) + "–" + groupDigits(hi)
	}
	return strings.NewReplacer("{n}", span(nLo, nHi), "{d}", span(dLo, dHi)).Replace(title)
}

// groupDigits writes v with thousands separators: 10,000.
func groupDigits(v int) string {
	s := strconv.Itoa(v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// usageCode is the exit status of err: 2 for invalid input, else 1.
func usageCode(err error) int {
	if runtime.IsUsageError(err) {
		return 2
	}
	return 1
}

// buildRun checks one run's settings as `shufflefl run` does and builds its
// engine, whose pre-flight validates the protocol against the first round
// (FLAME's k <= d, say) and plans the privacy of every round.
func buildRun(cfg runtime.Config, split data.Split) (*runtime.Engine, error) {
	if err := checkRunConfig(cfg); err != nil {
		return nil, err
	}
	budgets, err := runtime.Budgets(cfg, nil)
	if err != nil {
		return nil, err
	}
	return runtime.New(cfg, split, budgets)
}

// runOne runs one planned configuration and writes its outputs like
// `shufflefl run` into cfg.Out.
func runOne(cfg runtime.Config, eng *runtime.Engine, progress string, stderr io.Writer) ([]metrics.Record, runtime.Summary, error) {
	var log strings.Builder
	fmt.Fprintf(&log, "shufflefl: %s on %s, model %s (d=%d), %d clients, %d rounds, %d workers\n",
		cfg.Protocol, cfg.Dataset, cfg.Model, eng.Model().Dim(), cfg.Clients, cfg.Rounds, eng.Workers())
	if plan := eng.PrivacyPlan(); plan.Private {
		fmt.Fprintf(&log, "privacy plan: %s\n", planLine(plan, ""))
	}
	for _, w := range eng.Warnings() {
		fmt.Fprintf(&log, "warning: %s\n", w)
	}
	var recs []metrics.Record
	sum, err := eng.Run(func(r runtime.RoundResult) {
		rec := metrics.FromResult(r)
		recs = append(recs, rec)
		line := fmt.Sprintf("round %d/%d  acc %.4f  loss %.4f  %.2fs\n", r.Round, cfg.Rounds, r.TestAccuracy, r.TestLoss, r.Seconds)
		log.WriteString(line)
		if progress == "log" {
			fmt.Fprint(stderr, line)
		}
	})
	if err != nil {
		return nil, sum, err
	}
	if sum.Halted != "" {
		fmt.Fprintf(&log, "shufflefl: %s\n", sum.Halted)
		fmt.Fprintf(stderr, "shufflefl: %s\n", sum.Halted)
	}
	if err := writeRunOutputs(cfg, recs, sum, log.String()); err != nil {
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
		label, cfg.Protocol, fmtRange(coordMin, last.LocalCoordEpsilonMax), fmtRange(last.LocalEpsilonMin, last.LocalEpsilonMax),
		fmtEps(last.RoundCentralCoordEpsilon), fmtEps(last.RoundCentralEpsilon), delta(last.RoundCentralDelta),
		fmtEps(last.CumulativeEpsilon), delta(last.CumulativeDelta), bound,
		sum.FinalAccuracy, sum.BestAccuracy, sum.Seconds)
}

// checkExperimentCommon checks the settings every experiment command
// shares (progress mode, a classification dataset, the output directory)
// and fills the default output directory out/<outName>-<dataset>; who
// says who trains in the dataset error ("the experiments train").
func checkExperimentCommon(progress, dataset string, out *string, overwrite bool, outName, who string) error {
	if progress != "log" && progress != "none" {
		return fmt.Errorf("unknown progress mode %q (known: log, none)", progress)
	}
	if data.IsRegression(dataset) {
		return fmt.Errorf("invalid parameter: dataset %s is a regression set; %s classifiers: choose one of %s",
			dataset, who, strings.Join(data.ClassificationNames(), ", "))
	}
	if *out == "" {
		*out = filepath.Join("out", outName+"-"+dataset)
	}
	return checkOutDir(*out, overwrite)
}
