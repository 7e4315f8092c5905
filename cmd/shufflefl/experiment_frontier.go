package main

import (
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"shufflefl/checks"
	"shufflefl/data"
	"shufflefl/metrics"
	"shufflefl/protocol"
	"shufflefl/runtime"
)

// The frontier experiment: test accuracy against the cumulative central
// epsilon of the whole run, for every private protocol, each point a run
// whose local budgets are calibrated to a target (--target-epsilon), with
// dp-central (noise added by a trusted analyzer) as the reference and
// non-private FedAvg as the ceiling. Every protocol runs with its own
// defaults (runtime.DefaultsFor) unless a flag overrides them, so the
// frontier is also the evidence for those defaults.

func init() {
	registerExperiment(experiment{
		name:    "frontier",
		summary: "accuracy against cumulative central epsilon (delta 1e-6) for every private protocol, each point calibrated with --target-epsilon; dp-central as the trusted-analyzer reference, non-private as the ceiling",
		custom:  runFrontier,
	})
}

// frontierProtocols are the protocols of the frontier by default: every
// registered private protocol, dp-central among them.
func frontierProtocols() []string {
	var ps []string
	for _, name := range protocol.Names() {
		if name == "nonprivate" {
			continue
		}
		// The clustered protocols (ifca, ifca-dp) state d-privacy or
		// nothing, no (epsilon, delta) to calibrate to a target.
		if p, err := protocol.New(name, protocol.Params{Clip: 1, Epsilon: 1}); err == nil {
			if _, clustered := p.(protocol.Clustered); clustered {
				continue
			}
		}
		ps = append(ps, name)
	}
	return ps
}

const frontierUsage = `Usage: shufflefl experiment frontier [flags]

Draws test accuracy against the cumulative central epsilon of the whole run
(at --delta) for every private protocol: one run per protocol and target,
its local budgets calibrated before round 1 so that the run spends at most
the target (shufflefl run --target-epsilon). dp-central, whose Gaussian noise
is added by a trusted analyzer, is the reference a shuffle protocol tries to
approach; non-private FedAvg is the ceiling. Each protocol runs with its own
defaults ('shufflefl protocols NAME' lists them) unless --clients, --rounds,
--local-epochs or --clip override them.

Output (under --out, default out/experiment-frontier-DATASET): frontier.png
(accuracy against cumulative epsilon, log scale), results.md (one row per
run: target, cumulative (epsilon, delta), accuracy, seconds, settings),
run.log, and each run's own outputs in a subdirectory PROTOCOL-eTARGET. A run
the protocol cannot calibrate (a target below what it can reach, say) is a
row saying why; the others still run.

The default size (13 private protocols x 3 targets + the ceiling, 40 runs of
the protocols' defaults on Fashion-MNIST) took 6.5 minutes of wall time on 2
cores shared with other jobs, 10 minutes of CPU time; --protocols,
--targets, --clients and --rounds make it smaller or larger.

Exit status: 0 success, 2 invalid input (a flag, or no run can be
calibrated), 1 failure.

Flags:
`

const frontierExamples = `
Examples:
  shufflefl experiment frontier
  shufflefl experiment frontier --protocols ss-simple,apes,dp-central --targets 1,2,4,8,16
  shufflefl experiment frontier --clients 20000 --rounds 20 --out out/frontier-big
`

// frontierPoint is one run of the frontier.
type frontierPoint struct {
	proto  string
	target float64 // 0 for the non-private ceiling
	cfg    runtime.Config
	// skip says why the run cannot be made (its engine refused the
	// settings); the point is then a row of the table only.
	skip string
	recs []metrics.Record
	sum  runtime.Summary
	done bool // the run has finished
}

func runFrontier(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("experiment frontier", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		dataset   = fs.String("dataset", "fashion-mnist", "dataset `name`: "+strings.Join(data.ClassificationNames(), ", "))
		dataDir   = fs.String("data-dir", "", "`directory` with the dataset's files (see shufflefl run --help)")
		protos    = fs.String("protocols", strings.Join(frontierProtocols(), ","), "comma-separated private `protocols` to draw")
		targets   = fs.String("targets", "8,2,32", "comma-separated target cumulative central `epsilons` (each > 0), in the order the runs are made (every protocol at the first target, then at the next)")
		delta     = fs.Float64("delta", 1e-6, "target central delta of each whole run, in (0, 1)")
		clients   = fs.Int("clients", 0, "clients N of every run (0: each protocol's default)")
		rounds    = fs.Int("rounds", 0, "rounds of every run (0: each protocol's default)")
		epochs    = fs.Int("local-epochs", 0, "local epochs of every run (0: each protocol's default)")
		clip      = fs.Float64("clip", 0, "clipping bound C of every run (0: each protocol's default)")
		ceiling   = fs.Bool("ceiling", true, "also run non-private FedAvg (with its defaults) as the ceiling")
		out       = fs.String("out", "", "output `directory` (default out/experiment-frontier-DATASET); it must be empty or absent unless --overwrite is given")
		seed      = fs.Uint64("seed", 1, "random seed")
		workers   = fs.Int("workers", 0, "worker goroutines; 0 means all cores")
		progress  = fs.String("progress", "log", "per-round progress: log or none (each run's run.log gets the lines either way)")
		overwrite = fs.Bool("overwrite", false, "write into a non-empty --out directory, removing the shufflefl outputs already there first (other files are kept)")
	)
	fs.Usage = func() {
		fmt.Fprint(stdout, frontierUsage)
		printFlags(stdout, fs)
		fmt.Fprint(stdout, frontierExamples)
	}
	var log io.Writer = io.Discard
	fail := func(code int, format string, a ...any) int {
		msg := "shufflefl experiment frontier: " + strings.ReplaceAll(strings.TrimSpace(fmt.Sprintf(format, a...)), "\n", "; ") + "\n"
		fmt.Fprint(stderr, msg)
		fmt.Fprint(log, msg)
		return code
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return fail(2, "%s (see shufflefl experiment frontier --help)", flagError(err))
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	plist, tlist, err := parseFrontierLists(*protos, *targets)
	if err != nil {
		return fail(2, "%v", err)
	}
	set := flagSet(fs)
	for _, c := range []struct {
		name string
		v    int
	}{{"clients", *clients}, {"rounds", *rounds}, {"local-epochs", *epochs}} {
		if set[c.name] {
			if err := checks.IntAtLeast("--"+c.name, c.v, 1); err != nil {
				return fail(2, "%v", err)
			}
		}
	}
	if set["clip"] {
		if err := checks.Positive("--clip", *clip); err != nil {
			return fail(2, "%v", err)
		}
	}
	if err := checks.Delta("--delta", *delta); err != nil {
		return fail(2, "%v", err)
	}
	if err := checkExperimentCommon(*progress, *dataset, out, *overwrite, "experiment-frontier", "the frontier trains"); err != nil {
		return fail(2, "%v", err)
	}
	split, err := data.Load(*dataset, data.Options{DataDir: *dataDir, Seed: *seed})
	if err != nil {
		return fail(2, "%v", err)
	}

	// The settings of one point: the protocol's defaults for what the flags
	// do not give, then the target.
	pointConfig := func(p string, target float64) (runtime.Config, error) {
		cfg := runtime.DefaultConfig()
		cfg.Protocol = p
		cfg.Dataset, cfg.DataDir, cfg.Seed, cfg.Workers = *dataset, *dataDir, *seed, *workers
		given := map[string]bool{}
		if *clients > 0 {
			cfg.Clients, given["clients"] = *clients, true
		}
		if *rounds > 0 {
			cfg.Rounds, given["rounds"] = *rounds, true
		}
		if *epochs > 0 {
			cfg.LocalEpochs, given["local-epochs"] = *epochs, true
		}
		if *clip > 0 {
			cfg.Clip, given["clip"] = *clip, true
		}
		if p != "nonprivate" {
			cfg.Delta, cfg.TargetEpsilon = *delta, target
			given["delta"], given["target-epsilon"] = true, true
		}
		if err := runtime.ApplyDefaults(&cfg, func(k string) bool { return given[k] }); err != nil {
			return cfg, err
		}
		if p == "nonprivate" {
			cfg.Out = filepath.Join(*out, "nonprivate")
		} else {
			cfg.Out = filepath.Join(*out, fmt.Sprintf("%s-e%s", p, strconv.FormatFloat(target, 'g', -1, 64)))
		}
		return cfg, nil
	}

	// Check every point's settings now (cheap); a target a protocol cannot
	// be calibrated to shows when its engine is built, and becomes a row
	// saying why (building every engine twice would double the
	// calibrations, which dominate small runs).
	var points []*frontierPoint
	if *ceiling {
		plist = append([]string{"nonprivate"}, plist...)
	}
	sorted := slices.Sorted(slices.Values(tlist)) // the table's order
	for _, p := range plist {
		ts := sorted
		if p == "nonprivate" {
			ts = []float64{0}
		}
		for _, t := range ts {
			cfg, err := pointConfig(p, t)
			if err != nil {
				return fail(2, "%s: %v", p, err)
			}
			if err := checkRunConfig(cfg); err != nil {
				return fail(2, "%s at target %g: %v", p, t, err)
			}
			points = append(points, &frontierPoint{proto: p, target: t, cfg: cfg})
		}
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

	// Run the points target by target (the ceiling first), so that a
	// frontier stopped early has every protocol at the first targets;
	// results.md and frontier.png are rewritten after every run.
	title := fmt.Sprintf("%s: accuracy against cumulative central ε (δ = %.2g)", *dataset, *delta)
	write := func() error {
		if err := plotFrontier(filepath.Join(*out, "frontier.png"), title, points); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(*out, "results.md"), []byte(frontierMarkdown(*dataset, args, points)), 0o644)
	}
	order := slices.Clone(points)
	slices.SortStableFunc(order, func(a, b *frontierPoint) int {
		return slices.Index(tlist, a.target) - slices.Index(tlist, b.target)
	})
	start := time.Now()
	ran := 0
	for k, pt := range order {
		eta := ""
		if k > 0 {
			left := time.Duration(float64(time.Since(start)) / float64(k) * float64(len(points)-k))
			eta = fmt.Sprintf(", ETA %s", left.Round(time.Second))
		}
		what := "non-private ceiling"
		if pt.target > 0 {
			what = fmt.Sprintf("target epsilon %g", pt.target)
		}
		fmt.Fprintf(stderr, "== run %d of %d%s: %s, %s\n", k+1, len(points), eta, pt.proto, what)
		eng, err := buildRun(pt.cfg, split)
		if err != nil {
			if !runtime.IsUsageError(err) {
				return fail(1, "%s: %v", pt.proto, err)
			}
			pt.skip = oneLine(err)
			fmt.Fprintf(stderr, "frontier: %s at target %g is not run: %s\n", pt.proto, pt.target, pt.skip)
			continue
		}
		if plan := eng.PrivacyPlan(); plan.Approximate {
			fmt.Fprintf(stderr, "frontier: %s's figures are approximate (not proven bounds): its budgets are calibrated to target %g by an approximate statement\n", pt.proto, pt.target)
		}
		pt.recs, pt.sum, err = runOne(pt.cfg, eng, *progress, stderr)
		if err != nil {
			return fail(usageCode(err), "%s: %v", pt.proto, err)
		}
		pt.done = true
		ran++
		if err := write(); err != nil {
			return fail(1, "%v", err)
		}
	}
	if ran == 0 {
		return fail(2, "no run of the frontier can be made with these settings: %s", points[0].skip)
	}
	if err := write(); err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprint(stdout, frontierMarkdown(*dataset, args, points))
	fmt.Fprintf(stderr, "frontier: %d runs (%d not possible) in %s; outputs in %s\n", ran, len(points)-ran, time.Since(start).Round(time.Second), *out)
	if err := lf.Close(); err != nil {
		fmt.Fprintf(stderr, "shufflefl experiment frontier: writing %s: %v\n", runLogFile, err)
		return 1
	}
	return 0
}

// parseFrontierLists parses --protocols and --targets: known private
// protocols without repeats, and finite positive targets without repeats,
// in the order given (the order the runs are made in).
func parseFrontierLists(protos, targets string) ([]string, []float64, error) {
	var ps []string
	for _, p := range strings.Split(protos, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := protocol.Describe(p); err != nil {
			return nil, nil, checks.Invalidf("--protocols: unknown protocol %q (known: %s)", p, protocolList())
		}
		if p == "nonprivate" {
			return nil, nil, checks.Invalidf("--protocols: nonprivate has no epsilon to draw; it is the ceiling (--ceiling)")
		}
		if slices.Contains(ps, p) {
			return nil, nil, checks.Invalidf("--protocols: %s is given twice", p)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, nil, checks.Invalidf("--protocols names no protocol")
	}
	var ts []float64
	for _, s := range strings.Split(targets, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, nil, checks.Invalidf("--targets: %q is not a number", s)
		}
		if err := checks.Epsilon("--targets value", v); err != nil {
			return nil, nil, err
		}
		if slices.Contains(ts, v) {
			return nil, nil, checks.Invalidf("--targets: %g is given twice", v)
		}
		ts = append(ts, v)
	}
	if len(ts) == 0 {
		return nil, nil, checks.Invalidf("--targets names no target")
	}
	return ps, ts, nil
}

// frontierMarkdown is results.md: the command, the table of every point and
// the plot.
func frontierMarkdown(dataset string, args []string, points []*frontierPoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Experiment `frontier` on `%s`\n\nTest accuracy against the cumulative central ε of the whole run; each private run's local budgets are calibrated to its target ε before round 1.\n\n", dataset)
	fmt.Fprintf(&b, "Command: `shufflefl experiment frontier %s`\n\n", strings.Join(args, " "))
	b.WriteString("| protocol | target ε | cumulative ε (δ) | final accuracy | best accuracy | seconds | settings |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, pt := range points {
		target := "–"
		if pt.target > 0 {
			target = strconv.FormatFloat(pt.target, 'g', -1, 64)
		}
		settings := fmt.Sprintf("N = %d, T = %d, %s, C = %g", pt.cfg.Clients, pt.cfg.Rounds, localWork(pt.cfg), pt.cfg.Clip)
		if pt.cfg.ClientsPerRound > 0 {
			settings += fmt.Sprintf(", n = %d per round", pt.cfg.ClientsPerRound)
		}
		if len(pt.cfg.Options) > 0 {
			settings += ", " + runtime.OptionString(pt.cfg.Options)
		}
		if pt.skip != "" {
			fmt.Fprintf(&b, "| %s | %s | not run: %s | | | | %s |\n", pt.proto, target, strings.ReplaceAll(pt.skip, "|", "/"), settings)
			continue
		}
		if !pt.done {
			fmt.Fprintf(&b, "| %s | %s | (not run yet) | | | | %s |\n", pt.proto, target, settings)
			continue
		}
		last := pt.recs[len(pt.recs)-1]
		eps := "∞ (not private)"
		if last.CumulativeEpsilon != nil {
			eps = fmt.Sprintf("%.4g (%.2g)", *last.CumulativeEpsilon, last.CumulativeDelta)
			if approximate(last) {
				eps += ", approximate: not a proven bound"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.4f | %.4f | %.1f | %s |\n", pt.proto, target, eps, pt.sum.FinalAccuracy, pt.sum.BestAccuracy, pt.sum.Seconds, settings)
	}
	b.WriteString("\n![frontier](frontier.png)\n")
	return b.String()
}

// approximate reports whether a record's cumulative figure is an
// approximation rather than a proven bound (S-APES).
func approximate(r metrics.Record) bool { return r.CumulativeApproximate || r.Approximate }

// localWork describes a run's local training: "E = 10, lr 0.2".
func localWork(c runtime.Config) string {
	if c.LocalSteps > 0 {
		return fmt.Sprintf("%d local steps, lr %g", c.LocalSteps, c.LR)
	}
	return fmt.Sprintf("E = %d, lr %g", c.LocalEpochs, c.LR)
}

// frontierColors are distinct colours for up to 14 protocols (Tableau 10
// and four more); the non-private ceiling is black.
var frontierColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 128, 255}, {128, 128, 0, 255},
	{0, 128, 128, 255}, {128, 0, 0, 255},
}

// plotFrontier writes frontier.png: one line with markers per private
// protocol (final accuracy against the cumulative epsilon it reached, log
// x axis), dp-central drawn thicker as the reference, and the non-private
// accuracy as a dashed horizontal line. The legend is right of the data.
func plotFrontier(path, title string, points []*frontierPoint) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "cumulative central ε of the run (log scale)"
	p.Y.Label.Text = "final test accuracy"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = epsTicks{}
	p.Add(plotter.NewGrid())

	type series struct {
		name   string
		xy     plotter.XYs
		approx bool
	}
	var ss []series
	ceiling := math.NaN()
	loX, hiX, loY, hiY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, pt := range points {
		if pt.skip != "" || len(pt.recs) == 0 {
			continue
		}
		acc := pt.sum.FinalAccuracy
		loY, hiY = math.Min(loY, acc), math.Max(hiY, acc)
		if pt.proto == "nonprivate" {
			ceiling = acc
			continue
		}
		last := pt.recs[len(pt.recs)-1]
		if last.CumulativeEpsilon == nil || *last.CumulativeEpsilon <= 0 {
			continue
		}
		x := *last.CumulativeEpsilon
		loX, hiX = math.Min(loX, x), math.Max(hiX, x)
		if n := len(ss); n == 0 || ss[n-1].name != pt.proto {
			ss = append(ss, series{name: pt.proto})
		}
		ss[len(ss)-1].xy = append(ss[len(ss)-1].xy, plotter.XY{X: x, Y: acc})
		ss[len(ss)-1].approx = ss[len(ss)-1].approx || approximate(last)
	}
	if math.IsInf(loX, 1) {
		loX, hiX = 1, 10
	}
	if math.IsInf(loY, 1) {
		loY, hiY = 0, 1
	}
	p.X.Min, p.X.Max = loX/1.5, hiX*1.5
	span := math.Max(hiY-loY, 0.05)
	p.Y.Min, p.Y.Max = math.Max(0, loY-0.05*span), math.Min(1, hiY+0.05*span)

	leg := metrics.NewLegend()
	if !math.IsNaN(ceiling) {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: ceiling}, {X: p.X.Max, Y: ceiling}})
		if err != nil {
			return err
		}
		l.Color = color.Black
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(l)
		leg.Add(fmt.Sprintf("nonprivate (ceiling, %.3f)", ceiling), l)
	}
	glyphs := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	for i, s := range ss {
		lp, pts, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return err
		}
		c := frontierColors[i%len(frontierColors)]
		lp.Color, pts.Color = c, c
		lp.Width = vg.Points(1.2)
		pts.Shape = glyphs[i%len(glyphs)]
		pts.Radius = vg.Points(3.5)
		name := s.name
		if s.name == "dp-central" {
			lp.Width = vg.Points(2.5)
			name = "dp-central (trusted analyzer)"
		}
		if s.approx {
			lp.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			name += " (approximate ε, not a proven bound)"
		}
		p.Add(lp, pts)
		leg.Add(name, lp, pts)
	}

	return metrics.SavePNG(path, p, leg, 6.5*vg.Inch, 4.5*vg.Inch)
}

// epsTicks labels a log axis of epsilons at 1, 2 and 5 times the powers of
// ten, with unlabelled minor ticks at the other integer multiples.
type epsTicks struct{}

// Ticks implements plot.Ticker.
func (epsTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo || v > hi {
				continue
			}
			label := ""
			if m == 1 || m == 2 || m == 5 {
				label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, plot.Tick{Value: v, Label: label})
		}
	}
	return ts
}
