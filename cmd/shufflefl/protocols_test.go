package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/protocol"
)

// flat joins the words of s with single spaces, so that a wrapped text can
// be looked for in the output.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkMentions fails unless the (unwrapped) output holds every text.
func checkMentions(t *testing.T, what, out string, texts ...string) {
	t.Helper()
	f := flat(out)
	for _, s := range texts {
		if !strings.Contains(f, flat(s)) {
			t.Errorf("%s does not mention %q:\n%s", what, s, out)
		}
	}
}

// checkOptionsTable fails unless out shows a protocol's budgets and, for
// every option, a line with its name and then its meaning, default and
// range.
func checkOptionsTable(t *testing.T, what, out string, info protocol.Info) {
	t.Helper()
	checkMentions(t, what, out, "Budgets: "+info.Budgets)
	for _, o := range info.Options {
		_, entry, ok := strings.Cut(out, "\n  "+o.Name+"\n")
		if !ok {
			t.Errorf("%s has no line for option %s:\n%s", what, o.Name, out)
			continue
		}
		if v, ok := round.DefaultOption(info.Name, o.Name); ok {
			// The defaults table overrides the protocol's own default in
			// the CLI; both are shown.
			checkMentions(t, what, entry, o.Meaning+fmt.Sprintf(" default: %g in shufflefl run", v), o.Default, "valid: "+o.Range)
			continue
		}
		checkMentions(t, what, entry, o.Meaning+" default: "+o.Default+" valid: "+o.Range)
	}
}

// TestProtocolsList: `shufflefl protocols` lists every protocol with its
// summary, paper, budgets and options on stdout.
func TestProtocolsList(t *testing.T) {
	code, stdout, stderr := runCLI("protocols")
	if code != 0 || stderr != "" {
		t.Fatalf("protocols: status %d, stderr %q", code, stderr)
	}
	for _, name := range protocol.Names() {
		info, err := protocol.Describe(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout, "\n"+name+"\n") {
			t.Errorf("protocols does not list %s:\n%s", name, stdout)
		}
		opts := "none"
		if len(info.Options) > 0 {
			opts = strings.Join(info.OptionNames(), ", ")
		}
		checkMentions(t, "protocols", stdout, info.Summary, "paper: "+info.Paper, "budgets: "+info.Budgets, "options: "+opts)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if len(line) > round.HelpWidth {
			t.Errorf("line longer than %d columns: %q", round.HelpWidth, line)
		}
	}
}

// TestProtocolsDescribe: `shufflefl protocols NAME` shows the protocol's
// budgets and every option's name, meaning, default and range.
func TestProtocolsDescribe(t *testing.T) {
	for _, name := range protocol.Names() {
		t.Run(name, func(t *testing.T) {
			info, err := protocol.Describe(name)
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI("protocols", name)
			if code != 0 || stderr != "" {
				t.Fatalf("protocols %s: status %d, stderr %q", name, code, stderr)
			}
			checkMentions(t, "protocols "+name, stdout, protocol.Summary(name), "Paper: "+info.Paper)
			checkOptionsTable(t, "protocols "+name, stdout, info)
			if len(info.Options) == 0 && !strings.Contains(stdout, "Options: none") {
				t.Errorf("protocols %s does not say it takes no options:\n%s", name, stdout)
			}
		})
	}
	tests := []struct {
		name string
		want []string
	}{
		{"ldp-min", []string{"min-epsilon", "default: min of the clients' budgets"}},
		{"dp-central", []string{"Budgets: none: --target-epsilon", "Options: none"}},
		{"nonprivate", []string{"Budgets: none", "Options: none"}},
		{"ss-double", []string{"one public --epsilon", "default: round(d/50), at least 1 (157 for d = 7,850)", "valid: integer in [1, d]"}},
		{"s-apes", []string{"--eps-dist", "default: round(0.2 d), at least 1 (1,570 for d = 7,850)"}},
	}
	for _, tt := range tests {
		_, stdout, _ := runCLI("protocols", tt.name)
		checkMentions(t, "protocols "+tt.name, stdout, tt.want...)
	}
}

// TestRunProtocolHelp: `shufflefl run --protocol P --help` appends P's
// options after the flags of run; without --protocol it says where they are.
func TestRunProtocolHelp(t *testing.T) {
	for _, name := range protocol.Names() {
		t.Run(name, func(t *testing.T) {
			info, err := protocol.Describe(name)
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI("run", "--protocol", name, "--help")
			if code != 0 || stderr != "" || strings.Count(stdout, "Usage:") != 1 {
				t.Fatalf("run --protocol %s --help: status %d, stderr %q:\n%s", name, code, stderr, stdout)
			}
			section := "\nProtocol " + name + ": "
			flags, after, ok := strings.Cut(stdout, section)
			if !ok || !strings.Contains(flags, "\n  --workers int\n") || !strings.Contains(after, "Examples:") {
				t.Fatalf("run --protocol %s --help: no %q section between the flags and the examples:\n%s", name, section, stdout)
			}
			checkMentions(t, "run --protocol "+name+" --help", after, "Paper: "+info.Paper)
			checkOptionsTable(t, "run --protocol "+name+" --help", after, info)
		})
	}
	_, plain, _ := runCLI("run", "--help")
	checkMentions(t, "run --help", plain, "'shufflefl protocols NAME'", "'shufflefl run --protocol NAME --help'")
	if strings.Contains(plain, "Options of ") {
		t.Errorf("run --help without --protocol lists a protocol's options:\n%s", plain)
	}
	code, stdout, stderr := runCLI("run", "--protocol", "nope", "--help")
	if code != 0 || stderr != "" || !strings.Contains(stdout, `Protocol "nope": no such protocol (known: apes,`) {
		t.Errorf("run --protocol nope --help: status %d, stderr %q:\n%s", code, stderr, stdout)
	}
}

// TestProtocolsHelpAndErrors: help goes to stdout with status 0; bad
// arguments give status 2 and one line on stderr.
func TestProtocolsHelpAndErrors(t *testing.T) {
	for _, args := range [][]string{{"protocols", "--help"}, {"protocols", "-h"}, {"help", "protocols"}, {"protocols", "apes", "--help"}} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: shufflefl protocols [NAME]") {
			t.Errorf("%v: status %d, stderr %q:\n%s", args, code, stderr, stdout)
		}
	}
	if _, top, _ := runCLI("help"); !strings.Contains(top, "shufflefl protocols [NAME]") {
		t.Errorf("the top-level help does not list protocols:\n%s", top)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown protocol", []string{"nope"}, `unknown protocol "nope" (known: apes,`},
		{"two names", []string{"apes", "ss-topk"}, "expected at most one protocol name, got 2"},
		{"unknown flag", []string{"--all"}, "flag provided but not defined: --all"},
		{"unknown flag after name", []string{"apes", "--x"}, "flag provided but not defined: --x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"protocols"}, tt.args...)...)
			if code != 2 || stdout != "" {
				t.Errorf("status %d (want 2), stdout %q", code, stdout)
			}
			checkOneLine(t, stderr, tt.want)
			if !strings.HasPrefix(stderr, "shufflefl protocols: ") {
				t.Errorf("stderr does not name the command: %q", stderr)
			}
		})
	}
}

// TestProtocolsBaseDefaults: a protocol without defaults of its own states
// the engine's base settings it runs with, not a pointer to another
// command's (different) defaults.
func TestProtocolsBaseDefaults(t *testing.T) {
	code, out, _ := runCLI("protocols", "nonprivate")
	if code != 0 || !strings.Contains(out, "Run defaults: --clients 1000 --rounds 30 --local-epochs 5 --lr 0.1") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
