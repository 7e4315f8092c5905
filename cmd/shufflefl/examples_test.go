package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/research/bound"
	"github.com/shufflefl/shufflefl/research/experiment"
)

// helpText is one help text of the command and the examples it lists.
type helpText struct {
	args     []string // the command line that prints it
	examples [][]string
}

// helpTexts prints every help text of shufflefl (the top-level usage, every
// command's --help and every subcommand's) and extracts the command lines of
// its "Examples:" section: the indented lines that start with "shufflefl ",
// without the program name and any trailing "# comment". Help texts whose
// examples are all those of an earlier one are left out.
func helpTexts(t *testing.T) []helpText {
	t.Helper()
	calls := [][]string{{"help"}}
	for _, c := range []string{"run", "experiment", "bound", "protocols", "certs", "audit", "partition", "export",
		"deploy-local", "analyzer", "shuffler", "client", "worker", "opener", "shuffler-shard"} {
		calls = append(calls, []string{c, "--help"})
	}
	for _, e := range experiment.Names() {
		calls = append(calls, []string{"experiment", e, "--help"})
	}
	for _, b := range bound.Commands() {
		calls = append(calls, []string{"bound", b, "--help"})
	}
	subs := make([]string, 0, len(auditCommands))
	for a := range auditCommands {
		subs = append(subs, a)
	}
	slices.Sort(subs)
	for _, a := range subs {
		calls = append(calls, []string{"audit", a, "--help"})
	}
	var texts []helpText
	seen := map[string]bool{}
	for _, args := range calls {
		var out, errb bytes.Buffer
		if code := realMain(args, &out, &errb); code != 0 {
			t.Fatalf("shufflefl %s: exit %d, stderr %q", strings.Join(args, " "), code, errb.String())
		}
		h := helpText{args: args}
		key := ""
		in := false
		for _, line := range strings.Split(out.String(), "\n") {
			switch {
			case strings.TrimSpace(line) == "Examples:":
				in = true
				continue
			case in && !strings.HasPrefix(line, "  "):
				in = false
			}
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "shufflefl ")
			if !in || !ok {
				continue
			}
			if i := strings.Index(rest, "#"); i >= 0 {
				rest = rest[:i]
			}
			h.examples = append(h.examples, strings.Fields(rest))
			key += rest + "\n"
		}
		if len(h.examples) > 0 && !seen[key] {
			seen[key] = true
			texts = append(texts, h)
		}
	}
	return texts
}

// TestHelpExamplesParse checks that every example of every help text names
// only flags its command defines, with values of the right syntax: it runs
// each example with --help appended, which parses all of its flags and then
// prints the help instead of running (exit 0). The long tests also run each
// one (TestHelpExamplesAccepted).
func TestHelpExamplesParse(t *testing.T) {
	texts := helpTexts(t)
	n := 0
	for _, h := range texts {
		for _, ex := range h.examples {
			n++
			var out, errb bytes.Buffer
			args := append(slices.Clone(ex), "--help")
			if code := realMain(args, &out, &errb); code != 0 {
				t.Errorf("example of 'shufflefl %s': shufflefl %s: exit %d, stderr %q",
					strings.Join(h.args, " "), strings.Join(ex, " "), code, errb.String())
			}
		}
	}
	if n < 40 {
		t.Errorf("found %d examples in %d help texts; the extraction is broken (expected more than 40)", n, len(texts))
	}
}

// exampleGrace is how long an example may run before it counts as accepted:
// every command checks its settings before any long work and writes nothing
// until they have passed (a refused example exits with status 2 at once).
const exampleGrace = 6 * time.Second

// TestHelpExamplesAccepted runs every example of every help text (in order,
// in one directory per help text, as a user pasting them would) as a child
// process and fails on any that exits non-zero: refused settings, or a file
// an earlier example should have written. An example still running after
// exampleGrace has passed validation and is stopped, unless a later example
// of the same text reads its --out directory (--config, --run, --resume),
// in which case it runs to the end.
func TestHelpExamplesAccepted(t *testing.T) {
	if !longtest.Enabled() {
		t.Skipf("runs every help example for up to %v each; set %s=1", exampleGrace, longtest.Env)
	}
	data, err := filepath.Abs(filepath.Join("..", "..", "datasets"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range helpTexts(t) {
		t.Run(strings.Join(h.args, "_"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for i, ex := range h.examples {
				runExample(t, dir, data, ex, readsLater(ex, h.examples[i+1:]))
			}
		})
	}
}

// readsLater reports whether one of the later examples reads a file under
// ex's --out directory.
func readsLater(ex []string, later [][]string) bool {
	out := flagValue(ex, "out")
	if out == "" {
		return false
	}
	for _, l := range later {
		for _, f := range []string{"config", "run", "resume"} {
			if v := flagValue(l, f); v != "" && (v == out || strings.HasPrefix(v, out+"/")) {
				return true
			}
		}
	}
	return false
}

// flagValue is the value of --name (or -name) in args, "" if absent.
func flagValue(args []string, name string) string {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) && strings.HasPrefix(args[i], "-") {
			return args[i+1]
		}
	}
	return ""
}

// runExample runs `shufflefl EX` in dir as a child process of the test
// binary; to the end when toEnd is set, else for at most exampleGrace.
func runExample(t *testing.T, dir, data string, ex []string, toEnd bool) {
	t.Helper()
	limit := exampleGrace
	if toEnd {
		limit = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], ex...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asCLIEnv+"=1", "SHUFFLEFL_DATA="+data)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil && !toEnd:
		// Still running: its settings passed.
	case errors.As(err, &ee):
		t.Errorf("shufflefl %s: exit %d:\n%s", strings.Join(ex, " "), ee.ExitCode(), tail(out.String(), 5))
	default:
		t.Errorf("shufflefl %s: %v\n%s", strings.Join(ex, " "), err, tail(out.String(), 5))
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
