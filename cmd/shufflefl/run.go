package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/driver/sim"
	"github.com/shufflefl/shufflefl/protocol"
)

// runExtras are the settings of `shufflefl run` that are not fields of
// round.Config: they steer the command, not the simulation.
type runExtras struct {
	config     string
	options    []string
	progress   string
	cpuprofile string
	memprofile string
	overwrite  bool
	resume     string // --resume DIR
	stopAfter  int    // --stop-after N

	// remote is --worker-procs and --nats (worker.go).
	remote rundir.Workers
	// trainer is --trainer and --trainer-timeout (trainer.go).
	trainer trainerFlags
}

// newRunFlags binds every setting of cfg and ex to a flag set whose defaults
// are their current values (the progress mode defaults to auto).
func newRunFlags(cfg *round.Config, ex *runExtras, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported on one line by the caller
	fs.Usage = func() { printRunHelp(stdout, fs, cfg.Protocol) }
	if ex.progress == "" {
		ex.progress = "auto"
	}
	fs.StringVar(&ex.config, "config", "", "YAML `file` of settings (keys are these flag names); flags given on the command line override it")
	cfg.RegisterFlags(fs)
	cfg.RegisterDataFlags(fs)
	fs.Func("option", "protocol-specific option `name=value` (repeatable), e.g. k=157 or np=333", func(s string) error {
		ex.options = append(ex.options, s)
		return nil
	})
	fs.StringVar(&ex.progress, "progress", ex.progress, "progress display: auto (a bar on a terminal, log lines otherwise), bar, log, or none (run.log gets the log lines whatever the display)")
	fs.BoolVar(&ex.overwrite, "overwrite", ex.overwrite, "write into a non-empty --out directory, removing the shufflefl outputs already there first (other files are kept)")
	fs.IntVar(&ex.stopAfter, "stop-after", ex.stopAfter, "stop after this round (checkpointed) to resume later with --resume; 0 runs every round")
	fs.StringVar(&ex.resume, "resume", ex.resume, "continue the run in `directory` from its last checkpoint (its config.yaml gives the settings; --rounds may extend it, and the plan then composes the rounds done, as they were accounted, with those that remain: a different statement from a run planned that long from the start)")
	fs.StringVar(&ex.cpuprofile, "cpuprofile", ex.cpuprofile, "write a CPU profile (pprof) to `file`")
	fs.StringVar(&ex.memprofile, "memprofile", ex.memprofile, "write a heap profile (pprof: live and allocated bytes) to `file` when the run ends")
	ex.remote.RegisterFlags(fs)
	ex.trainer.register(fs)
	return fs
}

// runFlagGroups are the headings of 'shufflefl run --help'.
var runFlagGroups = []flagGroup{
	{"Data flags", append([]string{"dataset", "data-dir", "clients", "samples-per-client", "partition", "groups", "alpha", "holdout-clients"}, round.DataFlagNames...)},
	{"Model and training flags", []string{"model", "model-spec", "rounds", "clients-per-round", "local-epochs", "local-steps", "batch", "lr", "server-lr", "mu", "mode",
		"validate-every", "patience", "trainer", "trainer-timeout"}},
	{"Protocol and privacy flags", []string{"protocol", "option", "epsilon", "target-epsilon", "delta", "clip", "eps-dist", "eps-file", "eps-scale",
		"client-cap", "secure-noise"}},
	{"Run flags", []string{"config", "seed", "workers", "faithful", "stop-after", "resume", "cpuprofile", "memprofile", "worker-procs", "nats"}},
	{"Output flags", []string{"out", "overwrite", "progress"}},
}

func protocolList() string {
	return strings.Join(protocol.Names(), ", ")
}

// resolveRunConfig computes the settings from defaults, --config and flags,
// and checks them (runtime's checks and checkRunConfig's). On --help it
// prints the help to stdout and returns flag.ErrHelp.
func resolveRunConfig(args []string, stdout io.Writer) (round.Config, runExtras, error) {
	return resolveConfigFor("run", args, stdout)
}

// resolveConfigFor is resolveRunConfig for command cmd (run or a
// deployment role), whose --help an unknown flag points to.
func resolveConfigFor(cmd string, args []string, stdout io.Writer) (round.Config, runExtras, error) {
	// First pass: find --config and --protocol (and reject bad flags early).
	scratch := round.RunDefaults()
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
	cfg := round.DefaultConfig()
	cfg.Protocol = round.DefaultProtocol
	var fromFile runExtras
	var fileKeys map[string]bool
	if ex.config != "" {
		var err error
		if fromFile, fileKeys, err = loadConfigFile(ex.config, &cfg); err != nil {
			return cfg, ex, err
		}
	}
	if fromFile.trainer.command != "" && cmd != "run" {
		// A run file is the analyzer's to write and every client's to read:
		// it must not choose the program a client executes.
		return cfg, ex, checks.Invalidf("config file %s: trainer is a setting of 'shufflefl run'; %s takes --trainer on its own command line only", ex.config, cmd)
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
		parsed, err := round.ParseOptions(opts)
		if err != nil {
			return cfg, ex2, err
		}
		if cfg.Options == nil {
			cfg.Options = map[string]float64{}
		}
		for k, v := range parsed {
			cfg.Options[k] = v
		}
		if flagOpts, err = round.ParseOptions(ex2.options); err != nil {
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
	given, err := round.ResolveData(&cfg, given)
	if err != nil {
		return cfg, ex2, err
	}
	if err := round.ApplyDefaults(&cfg, given); err != nil {
		return cfg, ex2, err
	}
	switch ex2.progress {
	case "auto", "bar", "log", "none":
	default:
		return cfg, ex2, checks.Invalidf("unknown progress mode %q (known: auto, bar, log, none)", ex2.progress)
	}
	return cfg, ex2, rundir.CheckRun(cfg)
}

// printRunHelp writes 'shufflefl run --help': the flags with the defaults of
// the protocol given before --help (DefaultProtocol's without one), then
// that protocol's options.
func printRunHelp(stdout io.Writer, parsed *flag.FlagSet, protocolName string) {
	d := round.DefaultConfig()
	d.Protocol = protocolName
	given := flagSet(parsed)
	if err := round.ApplyDefaults(&d, func(k string) bool { return given[k] }); err != nil {
		d = round.RunDefaults()
	}
	var ex runExtras
	fs := newRunFlags(&d, &ex, stdout)
	fmt.Fprint(stdout, rundir.Help)
	printFlagGroups(stdout, fs, runFlagGroups)
	round.WriteRunProtocolHelp(stdout, given["protocol"], protocolName)
	fmt.Fprint(stdout, rundir.Examples)
}

func runRun(args []string, stdout, stderr io.Writer) int {
	cfg, ex, err := resolveRunConfig(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && ex.resume != "" {
		cfg, ex, err = resolveResume(args, ex.resume, stdout)
	}
	if err == nil {
		err = ex.trainer.check(cfg, ex.remote.Procs > 0 || ex.remote.NATS != "")
	}
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl run: %s\n", oneLine(err))
		return 2
	}
	// A used output directory, or a population that cannot fit, is
	// refused before any data is loaded.
	if ex.resume == "" {
		if err := rundir.Check(cfg.Out, ex.overwrite); err != nil {
			fmt.Fprintf(stderr, "shufflefl run: %s\n", oneLine(err))
			return 2
		}
	}
	if err := checkRunMemory(cfg); err != nil {
		fmt.Fprintf(stderr, "shufflefl run: %s\n", oneLine(err))
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
	if ex.memprofile != "" {
		f, err := os.Create(ex.memprofile)
		if err != nil {
			fmt.Fprintf(stderr, "shufflefl run: memprofile: %v\n", err)
			return 2
		}
		defer func() {
			runtime.GC() // the profile shows the last completed collection
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fmt.Fprintf(stderr, "shufflefl run: memprofile: %v\n", err)
			}
			f.Close()
		}()
	}
	var log io.Writer = io.Discard
	code := 0
	var trainers *runTrainers // --trainer's processes, once attached
	err = rundir.Execute(cfg, rundir.Options{Resume: ex.resume != "", Overwrite: ex.overwrite, StopAfter: ex.stopAfter, Progress: ex.progress,
		Version: versionString(), Stdout: stdout, Stderr: stderr, Trainer: ex.trainer.setting(),
		Attach: func(eng *sim.Engine) (func(), error) {
			if ex.trainer.command != "" {
				rt, err := ex.trainer.attach(eng, cfg, stderr)
				if err != nil {
					return nil, err
				}
				trainers = rt
				return func() { rt.close(stderr) }, nil
			}
			if exe, err := os.Executable(); err == nil {
				ex.remote.Command = []string{exe, "worker"}
			}
			return ex.remote.Attach(eng, cfg, stderr)
		},
		Finish: func(eng *sim.Engine, sum *round.Summary) error {
			if trainers == nil {
				return nil
			}
			return trainers.finish(eng, sum)
		}}, &log)
	switch {
	case errors.Is(err, rundir.ErrInterrupted):
		code = 130
	case sim.IsUsageError(err):
		code = 2
	case err != nil:
		code = 1
	}
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
