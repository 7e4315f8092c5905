package deploytest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/role/roletest"
)

// Run runs the script at path against a fresh deployment on drv and
// compares every step's output with the script's. With rewrite, it writes
// the outputs it got into the script instead.
func Run(t *testing.T, drv Driver, path string, rewrite bool) {
	t.Helper()
	sc, err := roletest.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(drv, t.TempDir())
	defer w.stop()
	got := make([]string, len(sc.Steps))
	for i, s := range sc.Steps {
		got[i] = w.step(s)
		if !rewrite && got[i] != s.Want {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, s.Line, s.Text, got[i], s.Want)
		}
	}
	if rewrite {
		if err := os.WriteFile(path, []byte(sc.Format(got)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// step runs one command and returns its output (an error is output too:
// scripts show how the harness fails as they show how the roles refuse).
func (w *world) step(s roletest.Step) string {
	cmds := map[string]func(roletest.Step) (string, error){
		"run": w.runCmd, "register": w.register, "pull": w.pull, "encode": w.encode, "submit": w.submit,
		"report": w.report, "close": w.close, "crash": w.crash, "restart": w.restart,
	}
	f, ok := cmds[s.Cmd]
	if !ok {
		return fmt.Sprintf("error: unknown command %q", s.Cmd)
	}
	out, err := f(s)
	if err != nil {
		out = "error: " + err.Error()
	}
	// An output never holds a blank line (it would end the step).
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = "."
		}
	}
	return strings.Join(lines, "\n")
}
