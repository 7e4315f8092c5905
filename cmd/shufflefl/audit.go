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
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"shufflefl/checks"
	"shufflefl/rundir"
)

const auditUsage = `Usage: shufflefl audit SUBCOMMAND [flags]

Attacks and privacy auditing: what each mechanism and protocol actually
leaks, measured against its accountant's claim.

Subcommands:
  mechanism   distinguishing game of one local randomizer: eps_lower vs eps_claimed
  protocol    the same game through a whole shuffled round of a protocol
  canary      one-run audit with random canary clients (Steinke et al. 2023; Andrew et al.)
  inversion   gradient inversion of one client's report (analytic and DLG), image grid
  mia         membership inference against the trained global model (loss, calibrated)
  topk        what the SS-Topk shuffler learns about the top-k indexes (FLAME Def. 3)
  accountant  a finished run's statements against independent lower bounds (exit 3 if below)

Every subcommand prints a markdown report (--json: JSON) and, with --out
DIR, writes audit.md, audit.json and any images into DIR (refusing a
non-empty DIR unless --overwrite). Run 'shufflefl audit SUBCOMMAND --help'
for its flags. docs/AUDIT.md explains the methods and shows the results.

Exit status: 0 success, 1 internal failure, 2 bad arguments (an attack
asked of a model it does not apply to, too few trials for the requested
confidence, ...), with one line on stderr; 3 (audit accountant) a stated
figure below a lower bound.

Examples:
  shufflefl audit mechanism --mechanism laplace --epsilon 1 --trials 1000000
  shufflefl audit mechanism --mechanism laplace --epsilon 1 --miscalibrate 2 --trials 1000000 --json
  shufflefl audit protocol --protocol apes --epsilon 50 --trials 20000 --out out/audit-apes
  shufflefl audit inversion --model logreg --out out/inversion
  shufflefl audit accountant --run out/my-run
`

// auditCommands maps a subcommand to its implementation.
var auditCommands = map[string]func(args []string, stdout, stderr io.Writer) int{}

// runAudit implements `shufflefl audit SUBCOMMAND`.
func runAudit(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, auditUsage)
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

// auditOutputs are the files the audits write; --overwrite removes them
// (and nothing else) before writing.
var auditOutputs = []string{"audit.md", "audit.json", "inversion-protocols.png", "inversion-nu.png"}

// emit prints the report (markdown or JSON) and, with --out, writes
// audit.md, audit.json and the images (name -> PNG bytes writer).
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
	dir := c.common.out
	if err := rundir.Prepare(dir, c.common.overwrite); err != nil {
		return c.fail(err)
	}
	if c.common.overwrite {
		for _, n := range auditOutputs {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return c.fail(fmt.Errorf("--overwrite: %w", err))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.md"), []byte(md), 0o644); err != nil {
		return c.fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.json"), js, 0o644); err != nil {
		return c.fail(err)
	}
	for name, write := range images {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return c.fail(err)
		}
		werr := write(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return c.fail(fmt.Errorf("writing %s: %w", name, werr))
		}
	}
	return 0
}

// commandLine is the command that produced a report, for the report.
func commandLine(name string, args []string) string {
	q := make([]string, 0, len(args))
	for _, a := range args {
		if strings.ContainsAny(a, " \t'\"") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q = append(q, a)
	}
	return strings.TrimSpace("shufflefl audit " + name + " " + strings.Join(q, " "))
}
