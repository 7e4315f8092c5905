package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/research/audit"
)

// auditCommands maps a subcommand to its implementation.
var auditCommands = map[string]func(args []string, stdout, stderr io.Writer) int{}

// runAudit implements `shufflefl audit SUBCOMMAND`.
func runAudit(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, audit.Help)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, audit.Help)
		return 0
	}
	cmd, ok := auditCommands[args[0]]
	if !ok {
		names := make([]string, 0, len(auditCommands))
		for n := range auditCommands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(stderr, "shufflefl audit: unknown subcommand %q (known: %s)\n", args[0], strings.Join(names, ", "))
		return 2
	}
	return cmd(args[1:], stdout, stderr)
}

// auditFlags are the flags every audit subcommand shares.
type auditFlags struct {
	out       string
	overwrite bool
	json      bool
	seed      uint64
	workers   int
	quiet     bool
}

func (f *auditFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "out", "", "directory for audit.md, audit.json and images (default: print only)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace the audit outputs of a non-empty --out directory")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON instead of markdown")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed of the audit")
	fs.IntVar(&f.workers, "workers", 0, "parallel workers (0: all cores)")
	fs.BoolVar(&f.quiet, "quiet", false, "do not show progress on stderr")
}

// auditCmd is the common driver of a subcommand: flag parsing, --help,
// output directory checks, error mapping.
type auditCmd struct {
	name           string
	usage          string
	fs             *flag.FlagSet
	common         auditFlags
	stdout, stderr io.Writer
}

func newAuditCmd(name, usage string, stdout, stderr io.Writer) *auditCmd {
	c := &auditCmd{name: name, usage: usage, stdout: stdout, stderr: stderr}
	c.fs = flag.NewFlagSet("audit "+name, flag.ContinueOnError)
	c.fs.SetOutput(io.Discard)
	c.common.register(c.fs)
	return c
}

// parse parses args; it returns (exit, false) when the command must stop
// (help or a flag error).
func (c *auditCmd) parse(args []string) (int, bool) {
	if err := c.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, c.usage)
			fmt.Fprintln(c.stdout, "\nFlags:")
			printFlags(c.stdout, c.fs)
			return 0, false
		}
		return c.fail(checks.Invalidf("%s (see shufflefl audit %s --help)", flagError(err), c.name)), false
	}
	if c.fs.NArg() > 0 {
		return c.fail(checks.Invalidf("unexpected argument %q (see shufflefl audit %s --help)", c.fs.Arg(0), c.name)), false
	}
	if c.common.out != "" {
		if err := rundir.Check(c.common.out, c.common.overwrite); err != nil {
			return c.fail(err), false
		}
	}
	return 0, true
}

// fail prints err on one line and returns 2 for invalid input, 1 otherwise.
func (c *auditCmd) fail(err error) int {
	fmt.Fprintf(c.stderr, "shufflefl audit %s: %s\n", c.name, oneLine(err))
	if errors.Is(err, checks.ErrInvalid) {
		return 2
	}
	return 1
}

// warn prints a warning line.
func (c *auditCmd) warn(format string, a ...any) {
	fmt.Fprintf(c.stderr, "shufflefl audit %s: warning: %s\n", c.name, fmt.Sprintf(format, a...))
}

// context returns a context cancelled by SIGINT.
func (c *auditCmd) context() (context.Context, func()) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// study returns the settings the studies share: the seed, the workers, and
// stderr for their lines and warnings unless --quiet.
func (c *auditCmd) study() audit.Common {
	s := audit.Common{Seed: c.common.seed, Workers: c.common.workers, Warn: c.warn}
	if !c.common.quiet {
		s.Log, s.Progress = c.stderr, c.progress
	}
	return s
}

// progress returns a throttled progress printer for stderr (nil when
// --quiet).
func (c *auditCmd) progress(what string) func(done, total int64) {
	if c.common.quiet {
		return nil
	}
	var mu sync.Mutex
	last := time.Now()
	start := last
	return func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if done < total && now.Sub(last) < 500*time.Millisecond {
			return
		}
		last = now
		fmt.Fprintf(c.stderr, "shufflefl audit %s: %s %d/%d (%.0f%%, %.1fs)\n", c.name, what, done, total, 100*float64(done)/float64(total), now.Sub(start).Seconds())
	}
}

// emit prints the report (markdown, or JSON with --json) and, with --out,
// writes it (audit.WriteReport).
func (c *auditCmd) emit(md string, v any, images map[string]func(io.Writer) error) int {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return c.fail(fmt.Errorf("encoding the report: %w", err))
	}
	js = append(js, '\n')
	if c.common.json {
		c.stdout.Write(js)
	} else {
		fmt.Fprint(c.stdout, md)
	}
	if c.common.out == "" {
		return 0
	}
	if err := audit.WriteReport(c.common.out, c.common.overwrite, md, js, images); err != nil {
		return c.fail(err)
	}
	return 0
}
