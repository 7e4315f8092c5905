package roletest

import (
	"strings"
	"testing"
)

const sample = `# A comment.
run proto=ss-double clients=3
----
run of ss-double

submit c0 replay
----
c0: refused
second line

# Trailing comment.
`

// TestParseFormat: a script parses into its steps, and formatting it with
// its own outputs gives back its text; other outputs replace them.
func TestParseFormat(t *testing.T) {
	sc, err := Parse("sample", sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Steps) != 2 {
		t.Fatalf("%d steps, want 2", len(sc.Steps))
	}
	s := sc.Steps[1]
	if s.Cmd != "submit" || !s.Has("replay") || s.Args[0] != "c0" || s.Want != "c0: refused\nsecond line" || s.Line != 6 {
		t.Errorf("step 2 = %+v", s)
	}
	if k := sc.Steps[0]; k.Key("clients", "") != "3" || k.Key("rounds", "2") != "2" {
		t.Errorf("keys = %v", k.Keys)
	}
	if got := sc.Format([]string{sc.Steps[0].Want, s.Want}); got != sample {
		t.Errorf("Format with the script's outputs:\n%s\nwant:\n%s", got, sample)
	}
	if got := sc.Format([]string{"x", ""}); !strings.Contains(got, "----\nx\n\nsubmit") || strings.Contains(got, "second line") {
		t.Errorf("Format with new outputs:\n%s", got)
	}
}

// TestParseRejects: malformed scripts are refused with their line.
func TestParseRejects(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"run\nrun\n", "x:1: command \"run\" is not followed"},
		{"run\n", "x:1: command \"run\" is not followed"},
		{"run a=\n----\n", "x:1: malformed argument"},
		{"run a=1 a=2\n----\n", "x:1: argument \"a\" given twice"},
	} {
		if _, err := Parse("x", c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}
