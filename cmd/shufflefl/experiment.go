package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/research/experiment"
)

// `shufflefl experiment`: flags and printing; package experiment runs the
// experiments and writes their outputs.

// expCmd is one experiment command: its flags, the settings every engine
// experiment shares, and its failure report ("shufflefl experiment[ NAME]:
// ...", on stderr and in run.log).
type expCmd struct {
	name           string // "" for the paper tables
	fs             *flag.FlagSet
	stdout, stderr io.Writer
	log            io.Writer // run.log, once open
	out, progress  string
	overwrite      bool
}

func newExpCmd(name, usage, examples string, stdout, stderr io.Writer) *expCmd {
	c := &expCmd{name: name, fs: flag.NewFlagSet("experiment "+name, flag.ContinueOnError), stdout: stdout, stderr: stderr, log: io.Discard}
	c.fs.SetOutput(io.Discard)
	c.fs.Usage = func() {
		fmt.Fprint(stdout, usage+"\nFlags:\n")
		printFlags(stdout, c.fs)
		fmt.Fprint(stdout, examples)
	}
	return c
}

// engineFlags defines the flags the engine experiments share.
func (c *expCmd) engineFlags(dataset, dataDir *string, seed *uint64, workers *int, outDefault string) {
	experiment.EngineFlags(c.fs, dataset, dataDir, seed, workers)
	c.fs.StringVar(&c.out, "out", "", "output `directory` (default "+outDefault+"); it must be empty or absent unless --overwrite is given")
	c.fs.StringVar(&c.progress, "progress", "log", "per-round progress: log or none (each run's run.log gets the lines either way)")
	c.fs.BoolVar(&c.overwrite, "overwrite", false, "write into a non-empty --out directory, removing the shufflefl outputs already there first (other files are kept)")
}

// fail reports err on one line and returns code, or 2 for invalid input.
func (c *expCmd) fail(code int, err error) int {
	msg := strings.TrimSpace("shufflefl experiment "+c.name) + ": " + oneLine(err) + "\n"
	fmt.Fprint(c.stderr, msg)
	fmt.Fprint(c.log, msg)
	if sim.IsUsageError(err) {
		return 2
	}
	return code
}

// parse parses the flags; done is set after --help (status 0) or an error
// (its status).
func (c *expCmd) parse(args []string) (done bool, code int) {
	if err := c.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) { // Parse has printed the help (fs.Usage)
			return true, 0
		}
		return true, c.fail(2, fmt.Errorf("%s (see %s --help)", flagError(err), strings.TrimSpace("shufflefl experiment "+c.name)))
	}
	if c.fs.NArg() > 0 {
		return true, c.fail(2, fmt.Errorf("unexpected argument %q (flags start with --; one experiment per command)", c.fs.Arg(0)))
	}
	return false, 0
}

// checkCommon checks the settings every engine experiment shares: the
// progress mode and the output directory, by default
// out/experiment-NAME-DATASET. (Every run is checked as `shufflefl run`
// checks it, a regression dataset included, when it is planned.)
func (c *expCmd) checkCommon(dataset, name string) error {
	if c.progress != "log" && c.progress != "none" {
		return fmt.Errorf("unknown progress mode %q (known: log, none)", c.progress)
	}
	if c.out == "" {
		c.out = filepath.Join("out", "experiment-"+name+"-"+dataset)
	}
	return rundir.Check(c.out, c.overwrite)
}

// run prepares the output directory and run.log, runs the experiment with
// every line tee'd to run.log, and prints its results.
func (c *expCmd) run(args []string, run func(experiment.Output) (experiment.Result, error)) int {
	if err := rundir.Prepare(c.out, c.overwrite); err != nil {
		return c.fail(2, err)
	}
	lf, err := os.Create(filepath.Join(c.out, rundir.LogFile))
	if err != nil {
		return c.fail(1, fmt.Errorf("writing %s: %w", rundir.LogFile, err))
	}
	defer lf.Close()
	c.log, c.stdout, c.stderr = lf, rundir.Tee{Term: c.stdout, Log: lf}, rundir.Tee{Term: c.stderr, Log: lf}
	start := time.Now()
	res, err := run(experiment.Output{Dir: c.out, Log: c.stderr, Progress: c.progress == "log", Command: strings.Join(args, " "), Runs: experiment.DirRuns{Version: versionString()}})
	if err != nil {
		return c.fail(1, err)
	}
	fmt.Fprint(c.stdout, res.Markdown)
	fmt.Fprintf(c.stderr, "%s: done in %s\n", strings.TrimSpace("experiment "+c.name), time.Since(start).Round(time.Millisecond))
	if err := lf.Close(); err != nil {
		c.log = io.Discard
		return c.fail(1, fmt.Errorf("writing %s: %w", rundir.LogFile, err))
	}
	return 0
}

func runExperiment(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		c := newPaperCmd(stdout, stderr, new(experiment.TablesOptions), new(string))
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			c.fs.Usage()
			return 0
		}
		return c.fail(2, fmt.Errorf("name an experiment (%s); see shufflefl experiment --help", strings.Join(experiment.Names(), ", ")))
	}
	switch name := args[0]; {
	case name == "frontier":
		return runFrontier(args, stdout, stderr)
	case isDPrivExperiment(name):
		return runDPrivExperiment(name, args[1:], stdout, stderr)
	case experiment.Summary(name) == "":
		c := newExpCmd("", "", "", stdout, stderr)
		return c.fail(2, fmt.Errorf("unknown experiment %q (known: %s)", name, strings.Join(experiment.Names(), ", ")))
	}
	return runPaper(args, stdout, stderr)
}

func newPaperCmd(stdout, stderr io.Writer, o *experiment.TablesOptions, only *string) *expCmd {
	var list strings.Builder
	for _, n := range experiment.Names() {
		fmt.Fprintf(&list, "  %-8s %s\n", n, experiment.Summary(n))
	}
	usage := "Usage: shufflefl experiment NAME [flags]\n\n" + experiment.TablesHelp + "\nExperiments:\n" + list.String()
	c := newExpCmd("", usage, experiment.TablesExamples, stdout, stderr)
	c.engineFlags(&o.Dataset, &o.DataDir, &o.Seed, &o.Workers, "out/experiment-NAME-DATASET")
	c.fs.IntVar(&o.Rounds, "rounds", 0, "rounds per run, >= 1 (default: the experiment's own)")
	c.fs.StringVar(only, "only", "", "comma-separated run `labels` to run (default all)")
	return c
}

// runPaper runs a paper's tables (flame, apes, eapes).
func runPaper(args []string, stdout, stderr io.Writer) int {
	var o experiment.TablesOptions
	var only string
	c := newPaperCmd(stdout, stderr, &o, &only)
	if done, code := c.parse(args[1:]); done {
		return code
	}
	if flagSet(c.fs)["rounds"] && o.Rounds < 1 {
		return c.fail(2, fmt.Errorf("invalid parameter: rounds must be >= 1, got %d", o.Rounds))
	}
	if err := c.checkCommon(o.Dataset, args[0]); err != nil {
		return c.fail(2, err)
	}
	for _, l := range strings.Split(only, ",") {
		if l = strings.TrimSpace(l); l != "" {
			o.Only = append(o.Only, l)
		}
	}
	o.Dir = c.out
	split, err := data.Load(o.Dataset, data.Options{DataDir: o.DataDir, Seed: o.Seed})
	if err != nil {
		return c.fail(2, err)
	}
	paper, _ := experiment.LookupPaper(args[0])
	plan, err := experiment.PlanTables(paper, o, split, experiment.DirRuns{Version: versionString()})
	if err != nil {
		return c.fail(1, err)
	}
	return c.run(args, func(out experiment.Output) (experiment.Result, error) {
		fmt.Fprintf(out.Log, "%s: %d runs checked (settings, engines and privacy plans) in %s\n", args[0], plan.Runs(), plan.Checked.Round(time.Millisecond))
		return plan.Run(out)
	})
}

func runFrontier(args []string, stdout, stderr io.Writer) int {
	c := newExpCmd("frontier", "Usage: shufflefl experiment frontier [flags]\n\n"+experiment.FrontierHelp, experiment.FrontierExamples, stdout, stderr)
	fs := c.fs
	var o experiment.FrontierOptions
	c.engineFlags(&o.Dataset, &o.DataDir, &o.Seed, &o.Workers, "out/experiment-frontier-DATASET")
	protos, targets := o.RegisterFlags(fs)
	if done, code := c.parse(args[1:]); done {
		return code
	}
	var err error
	if o.Protocols, o.Targets, err = experiment.ParseFrontierLists(*protos, *targets); err != nil {
		return c.fail(2, err)
	}
	if err := c.checkCommon(o.Dataset, "frontier"); err != nil {
		return c.fail(2, err)
	}
	o.Dir = c.out
	f, err := experiment.PlanFrontier(o, experiment.DirRuns{Version: versionString()})
	if err != nil {
		return c.fail(2, err)
	}
	split, err := data.Load(o.Dataset, data.Options{DataDir: o.DataDir, Seed: o.Seed})
	if err != nil {
		return c.fail(2, err)
	}
	return c.run(args[1:], func(out experiment.Output) (experiment.Result, error) { return f.Run(split, out) })
}

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
	fs.StringVar(&c.out, "out", filepath.Join("out", "experiment-"+name), "output `directory`; it must be empty or absent unless --overwrite is given")
	nus, ks := o.RegisterFlags(fs, e)
	fs.BoolVar(&c.overwrite, "overwrite", false, "write into a non-empty --out directory")
	if done, code := c.parse(args); done {
		return code
	}
	var err error
	if o.Nus, o.Ks, err = experiment.ParseGrid(*nus, *ks); err == nil {
		if err = e.Check(o); err == nil {
			err = rundir.Check(c.out, c.overwrite)
		}
	}
	if err != nil {
		return c.fail(2, err)
	}
	return c.run(args, func(out experiment.Output) (experiment.Result, error) { return experiment.RunDPrivacy(e, o, out) })
}
