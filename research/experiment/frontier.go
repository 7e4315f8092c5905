package experiment

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/driver/sim/metrics"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/protocol"
)

// The frontier: test accuracy against the cumulative central epsilon of the
// whole run, for every private protocol, each point a run whose local
// budgets are calibrated to a target (round.Config.TargetEpsilon), with
// dp-central (noise added by a trusted analyzer) as the reference and
// non-private FedAvg as the ceiling. Every protocol runs with its own
// defaults (round.DefaultsFor) unless an option overrides them, so the
// frontier is also the evidence for those defaults.

// FrontierSummary describes the frontier in the list of experiments.
const FrontierSummary = "accuracy against cumulative central epsilon (delta 1e-6) for every private protocol, each point calibrated with --target-epsilon; dp-central as the trusted-analyzer reference, non-private as the ceiling"

// FrontierProtocols are the protocols of the frontier by default: every
// registered private protocol, dp-central among them.
func FrontierProtocols() []string {
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

// FrontierOptions are the settings of the frontier.
type FrontierOptions struct {
	Dataset, DataDir string
	Protocols        []string  // private protocols (ParseFrontierLists)
	Targets          []float64 // target cumulative epsilons, in the order the runs are made
	Delta            float64   // target central delta of each run
	// Clients, Rounds, LocalEpochs and Clip, if positive, replace every
	// protocol's default (0: the default).
	Clients, Rounds, LocalEpochs int
	Clip                         float64
	Ceiling                      bool // also run non-private FedAvg
	Seed                         uint64
	Workers                      int
	Dir                          string // output directory (each run writes into a subdirectory)
}

// frontierPoint is one run of the frontier.
type frontierPoint struct {
	proto  string
	target float64 // 0 for the non-private ceiling
	cfg    round.Config
	// skip says why the run cannot be made (its engine refused the
	// settings); the point is then a row of the table only.
	skip string
	recs []metrics.Record
	sum  round.Summary
	done bool // the run has finished
}

// Frontier is a planned frontier: every point's settings checked.
type Frontier struct {
	opts   FrontierOptions
	points []*frontierPoint
}

// pointConfig is the settings of one point: the protocol's defaults for
// what the options do not give, then the target.
func (o FrontierOptions) pointConfig(p string, target float64) (round.Config, error) {
	cfg := round.DefaultConfig()
	cfg.Protocol = p
	cfg.Dataset, cfg.DataDir, cfg.Seed, cfg.Workers = o.Dataset, o.DataDir, o.Seed, o.Workers
	given := map[string]bool{}
	if o.Clients > 0 {
		cfg.Clients, given["clients"] = o.Clients, true
	}
	if o.Rounds > 0 {
		cfg.Rounds, given["rounds"] = o.Rounds, true
	}
	if o.LocalEpochs > 0 {
		cfg.LocalEpochs, given["local-epochs"] = o.LocalEpochs, true
	}
	if o.Clip > 0 {
		cfg.Clip, given["clip"] = o.Clip, true
	}
	if p != "nonprivate" {
		cfg.Delta, cfg.TargetEpsilon = o.Delta, target
		given["delta"], given["target-epsilon"] = true, true
	}
	if err := round.ApplyDefaults(&cfg, func(k string) bool { return given[k] }); err != nil {
		return cfg, err
	}
	if p == "nonprivate" {
		cfg.Out = filepath.Join(o.Dir, "nonprivate")
	} else {
		cfg.Out = filepath.Join(o.Dir, fmt.Sprintf("%s-e%s", p, strconv.FormatFloat(target, 'g', -1, 64)))
	}
	return cfg, nil
}

// check checks the options but the lists (ParseFrontierLists) and the
// dataset; the errors name the command's flags.
func (o FrontierOptions) check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"--clients", o.Clients}, {"--rounds", o.Rounds}, {"--local-epochs", o.LocalEpochs}, {"--workers", o.Workers}} {
		if err := checks.IntAtLeast(f.name, f.v, 0); err != nil {
			return err
		}
	}
	if err := checks.NonNegative("--clip", o.Clip); err != nil {
		return err
	}
	if len(o.Protocols) == 0 || len(o.Targets) == 0 {
		return checks.Invalidf("the frontier needs protocols and targets")
	}
	return checks.Delta("--delta", o.Delta)
}

// PlanFrontier checks every point's settings (cheap). A target a protocol
// cannot be calibrated to shows only when its engine is built, in Run, and
// becomes a row saying why (building every engine twice would double the
// calibrations, which dominate small runs).
func PlanFrontier(o FrontierOptions, runs Runs) (*Frontier, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	plist := o.Protocols
	if o.Ceiling {
		plist = append([]string{"nonprivate"}, plist...)
	}
	sorted := slices.Sorted(slices.Values(o.Targets)) // the table's order
	f := &Frontier{opts: o}
	for _, p := range plist {
		ts := sorted
		if p == "nonprivate" {
			ts = []float64{0}
		}
		for _, t := range ts {
			cfg, err := o.pointConfig(p, t)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if err := runs.Check(cfg); err != nil {
				return nil, fmt.Errorf("%s at target %g: %w", p, t, err)
			}
			f.points = append(f.points, &frontierPoint{proto: p, target: t, cfg: cfg})
		}
	}
	return f, nil
}

// Run makes the runs target by target (the ceiling first), so that a
// frontier stopped early has every protocol at the first targets, and
// rewrites results.md and frontier.png after every run. It returns
// results.md and every point, in the table's order. A point the protocol cannot be calibrated to is a row saying
// why; if no point can run, the error wraps checks.ErrInvalid.
func (f *Frontier) Run(split data.Split, out Output) (Result, error) {
	order := slices.Clone(f.points)
	slices.SortStableFunc(order, func(a, b *frontierPoint) int {
		return slices.Index(f.opts.Targets, a.target) - slices.Index(f.opts.Targets, b.target)
	})
	start := time.Now()
	ran := 0
	for k, pt := range order {
		what := "non-private ceiling"
		if pt.target > 0 {
			what = fmt.Sprintf("target epsilon %g", pt.target)
		}
		out.logf("== run %d of %d%s: %s, %s\n", k+1, len(order), eta(k, len(order), time.Since(start)), pt.proto, what)
		if err := f.runPoint(pt, split, out); err != nil {
			return Result{}, err
		}
		if pt.done {
			ran++
			if err := f.write(out); err != nil {
				return Result{}, err
			}
		}
	}
	if ran == 0 {
		return Result{}, checks.Invalidf("no run of the frontier can be made with these settings: %s", f.points[0].skip)
	}
	if err := f.write(out); err != nil {
		return Result{}, err
	}
	out.logf("frontier: %d runs (%d not possible) in %s; outputs in %s\n", ran, len(order)-ran, time.Since(start).Round(time.Second), out.Dir)
	res := Result{Markdown: f.markdown(out.Command)}
	for _, pt := range f.points {
		res.Runs = append(res.Runs, EngineRun{Label: pt.proto, Target: pt.target, Config: pt.cfg, Records: pt.recs, Summary: pt.sum, Skipped: pt.skip})
	}
	return res, nil
}

// runPoint builds and runs one point; a point whose engine refuses its
// settings is marked skipped.
func (f *Frontier) runPoint(pt *frontierPoint, split data.Split, out Output) error {
	eng, err := buildRun(out.Runs, pt.cfg, split)
	if err != nil {
		if !sim.IsUsageError(err) {
			return fmt.Errorf("%s: %w", pt.proto, err)
		}
		pt.skip = strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
		out.logf("frontier: %s at target %g is not run: %s\n", pt.proto, pt.target, pt.skip)
		return nil
	}
	if plan := eng.PrivacyPlan(); plan.Approximate {
		out.logf("frontier: %s's figures are approximate (not proven bounds): its budgets are calibrated to target %g by an approximate statement\n", pt.proto, pt.target)
	}
	if pt.recs, pt.sum, err = out.runOne(pt.cfg, eng); err != nil {
		return fmt.Errorf("%s: %w", pt.proto, err)
	}
	pt.done = true
	return nil
}

// write rewrites frontier.png and results.md.
func (f *Frontier) write(out Output) error {
	title := fmt.Sprintf("%s: accuracy against cumulative central ε (δ = %.2g)", f.opts.Dataset, f.opts.Delta)
	if err := plotFrontier(filepath.Join(out.Dir, "frontier.png"), title, f.points); err != nil {
		return err
	}
	return out.writeFile("results.md", f.markdown(out.Command))
}

// ParseFrontierLists parses --protocols and --targets: known private
// protocols without repeats, and finite positive targets without repeats,
// in the order given (the order the runs are made in).
func ParseFrontierLists(protos, targets string) ([]string, []float64, error) {
	var ps []string
	for _, p := range strings.Split(protos, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := protocol.Describe(p); err != nil {
			return nil, nil, checks.Invalidf("--protocols: unknown protocol %q (known: %s)", p, strings.Join(protocol.Names(), ", "))
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

// markdown is results.md: the command, the table of every point and
// the plot.
func (f *Frontier) markdown(command string) string {
	dataset, points := f.opts.Dataset, f.points
	var b strings.Builder
	fmt.Fprintf(&b, "# Experiment `frontier` on `%s`\n\nTest accuracy against the cumulative central ε of the whole run; each private run's local budgets are calibrated to its target ε before round 1.\n\n", dataset)
	fmt.Fprintf(&b, "Command: `shufflefl experiment frontier %s`\n\n", command)
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
			settings += ", " + round.OptionString(pt.cfg.Options)
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
func localWork(c round.Config) string {
	if c.LocalSteps > 0 {
		return fmt.Sprintf("%d local steps, lr %g", c.LocalSteps, c.LR)
	}
	return fmt.Sprintf("E = %d, lr %g", c.LocalEpochs, c.LR)
}
