package roletest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// A script is a sequence of steps, each a command line, a line "----" and
// the command's expected output, ended by a blank line (outputs have no
// blank lines). Lines starting with "#" outside a step are comments.
//
//	# a client reports
//	submit c0 round=1
//	----
//	ok: 3 messages stored
//
// A command line is a name followed by words: bare arguments ("c0") and
// key=value pairs ("round=1").

// Step is one command of a script with the output it expects.
type Step struct {
	// Line is the step's line number in its file (for error messages).
	Line int
	// Cmd is the command line's first word; Args the bare words after it;
	// Keys the key=value words.
	Cmd  string
	Args []string
	Keys map[string]string
	// Text is the command line as written; Want the expected output.
	Text string
	Want string
}

// Key returns the value of key, or def when the step does not set it.
func (s Step) Key(key, def string) string {
	if v, ok := s.Keys[key]; ok {
		return v
	}
	return def
}

// Has says whether the bare word w is among the step's arguments.
func (s Step) Has(w string) bool {
	for _, a := range s.Args {
		if a == w {
			return true
		}
	}
	return false
}

// Script is a parsed script file: its steps and, to rewrite it, the text
// between them (comments and blank lines).
type Script struct {
	// Path names the script's file.
	Path  string
	Steps []Step
	// gaps[i] is the text before step i; gaps[len(Steps)] the text after
	// the last.
	gaps []string
}

// ParseFile reads a script.
func ParseFile(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, string(b))
}

// Parse parses a script's text; path names it in errors.
func Parse(path, text string) (*Script, error) {
	sc := &Script{Path: path}
	var gap strings.Builder
	lines := bufio.NewScanner(strings.NewReader(text))
	n := 0
	next := func() (string, bool) {
		if !lines.Scan() {
			return "", false
		}
		n++
		return lines.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			gap.WriteString(l + "\n")
			continue
		}
		st, err := parseCommand(l)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		st.Line = n
		if sep, ok := next(); !ok || sep != "----" {
			return nil, fmt.Errorf("%s:%d: command %q is not followed by a line ----", path, st.Line, l)
		}
		var want []string
		for {
			o, ok := next()
			if !ok || o == "" {
				break
			}
			want = append(want, o)
		}
		st.Want = strings.Join(want, "\n")
		sc.gaps = append(sc.gaps, gap.String())
		gap.Reset()
		sc.Steps = append(sc.Steps, st)
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sc.gaps = append(sc.gaps, gap.String())
	return sc, nil
}

// parseCommand splits a command line into its name, bare arguments and
// key=value pairs.
func parseCommand(l string) (Step, error) {
	f := strings.Fields(l)
	st := Step{Cmd: f[0], Text: strings.TrimSpace(l), Keys: map[string]string{}}
	for _, w := range f[1:] {
		k, v, ok := strings.Cut(w, "=")
		switch {
		case !ok:
			st.Args = append(st.Args, w)
		case k == "" || v == "":
			return st, fmt.Errorf("malformed argument %q (want key=value)", w)
		default:
			if _, dup := st.Keys[k]; dup {
				return st, fmt.Errorf("argument %q given twice", k)
			}
			st.Keys[k] = v
		}
	}
	return st, nil
}

// Format returns the script's text with got[i] as step i's output (the
// -rewrite form).
func (sc *Script) Format(got []string) string {
	var b strings.Builder
	for i, st := range sc.Steps {
		b.WriteString(sc.gaps[i])
		fmt.Fprintf(&b, "%s\n----\n", st.Text)
		if o := strings.TrimRight(got[i], "\n"); o != "" {
			b.WriteString(o + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(sc.gaps[len(sc.Steps)])
	return strings.TrimRight(b.String(), "\n") + "\n"
}
