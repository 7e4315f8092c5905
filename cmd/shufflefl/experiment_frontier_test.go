package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFrontierRuns: a small frontier writes results.md with a row per
// point (a target a protocol cannot reach is a row saying why) and
// frontier.png, and every private point spends at most its target.
func TestFrontierRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "frontier")
	code, stdout, stderr := runCLI("experiment", "frontier", "--dataset", "fashion-mnist-sample", "--protocols", "ss-simple,dp-central",
		"--targets", "4,16", "--clients", "50", "--rounds", "2", "--local-epochs", "1", "--workers", "2", "--progress", "none", "--out", out)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	for _, f := range []string{"results.md", "frontier.png", "run.log", "nonprivate/metrics.jsonl", "ss-simple-e4/config.yaml", "dp-central-e16/summary.json"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty", f)
		}
	}
	for _, want := range []string{"| nonprivate | – | ∞ (not private) |", "| ss-simple | 4 | ", "| ss-simple | 16 | ", "| dp-central | 4 | ", "| dp-central | 16 | ", "![frontier](frontier.png)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("results lack %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "== run 5 of 5, ETA ") {
		t.Errorf("no run k of N with ETA:\n%s", stderr)
	}
	// The cumulative epsilon of a point never exceeds its target.
	checked := 0
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Split(line, "|")
		if len(f) < 5 || strings.TrimSpace(f[2]) == "–" {
			continue
		}
		var target, eps float64
		if _, err := fmtSscan(strings.TrimSpace(f[2]), &target); err != nil {
			continue
		}
		if _, err := fmtSscan(strings.Fields(f[3])[0], &eps); err != nil {
			continue
		}
		checked++
		if eps > target*(1+1e-9) {
			t.Errorf("point spends %v above its target %v: %s", eps, target, line)
		}
	}
	if checked != 4 {
		t.Errorf("checked %d private points against their targets, want 4:\n%s", checked, stdout)
	}
	// --overwrite removes the earlier frontier's outputs, run directories
	// included, and keeps other files.
	writeFile(t, filepath.Join(out, "notes.txt"), "mine\n")
	code, stdout, stderr = runCLI("experiment", "frontier", "--dataset", "fashion-mnist-sample", "--protocols", "ss-simple", "--targets", "4",
		"--ceiling=false", "--clients", "50", "--rounds", "1", "--local-epochs", "1", "--workers", "2", "--progress", "none", "--out", out, "--overwrite")
	if code != 0 {
		t.Fatalf("overwrite: status %d\n%s", code, stderr)
	}
	got := names(t, out)
	want := []string{"frontier.png", "notes.txt", "results.md", "run.log", "ss-simple-e4"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("after --overwrite the directory holds %v, want %v", got, want)
	}
	if strings.Contains(stdout, "dp-central") {
		t.Errorf("the overwritten results mention the old runs:\n%s", stdout)
	}
}

// TestFrontierErrors: bad flags give status 2 and one line, before any run.
func TestFrontierErrors(t *testing.T) {
	dir := t.TempDir()
	used := filepath.Join(dir, "used")
	writeFile(t, filepath.Join(used, "results.md"), "old\n")
	base := []string{"experiment", "frontier", "--dataset", "fashion-mnist-sample", "--out", filepath.Join(dir, "out")}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown protocol", []string{"--protocols", "ss-simple,nope"}, `unknown protocol "nope"`},
		{"nonprivate is the ceiling", []string{"--protocols", "nonprivate"}, "nonprivate has no epsilon"},
		{"repeated protocol", []string{"--protocols", "apes,apes"}, "apes is given twice"},
		{"no protocol", []string{"--protocols", ","}, "names no protocol"},
		{"bad target", []string{"--targets", "2,x"}, `"x" is not a number`},
		{"negative target", []string{"--targets", "-1"}, "must be > 0"},
		{"NaN target", []string{"--targets", "NaN"}, "finite"},
		{"repeated target", []string{"--targets", "2,2"}, "2 is given twice"},
		{"rounds negative", []string{"--rounds", "-1"}, "--rounds must be >= 0"},
		{"clients negative", []string{"--clients", "-5"}, "--clients must be >= 0"},
		{"clip negative", []string{"--clip", "-1"}, "--clip must be >= 0"},
		{"clip NaN", []string{"--clip", "NaN"}, "--clip"},
		{"delta", []string{"--delta", "1"}, "--delta must be in (0, 1)"},
		{"extra argument", []string{"extra"}, `unexpected argument "extra"`},
		{"unknown flag", []string{"--nope"}, "flag provided but not defined: --nope"},
		{"regression set", []string{"--dataset", "synthetic-clusters"}, "regression set"},
		{"used out", []string{"--out", used}, "pass --overwrite"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(append(append([]string{}, base...), tc.args...)...)
			if code != 2 {
				t.Fatalf("status %d, want 2:\n%s", code, stderr)
			}
			checkOneLine(t, stderr, tc.want)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a rejected frontier created its output directory")
	}
	code, stdout, _ := runCLI("experiment", "frontier", "--help")
	if code != 0 || !strings.Contains(stdout, "Usage: shufflefl experiment frontier") || !strings.Contains(stdout, "  --targets epsilons") || !strings.Contains(stdout, "Examples:") {
		t.Errorf("frontier --help: status %d:\n%s", code, stdout)
	}
}

// fmtSscan parses one number.
func fmtSscan(s string, v *float64) (int, error) { return fmt.Sscan(s, v) }

// TestFrontierSaysApproximate: an S-APES point of the frontier is
// labelled approximate in the table and on stderr (its calibration); a
// rigorous protocol's point is not.
func TestFrontierSaysApproximate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "frontier")
	code, stdout, stderr := runCLI("experiment", "frontier", "--dataset", "fashion-mnist-sample", "--protocols", "s-apes,ss-simple",
		"--targets", "8", "--ceiling=false", "--clients", "50", "--rounds", "1", "--local-epochs", "1", "--workers", "2", "--progress", "none", "--out", out)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	var sapes, ss string
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "| s-apes |"):
			sapes = line
		case strings.HasPrefix(line, "| ss-simple |"):
			ss = line
		}
	}
	if !strings.Contains(sapes, "approximate: not a proven bound") || strings.Contains(ss, "approximate") {
		t.Errorf("rows:\n%s\n%s", sapes, ss)
	}
	if !strings.Contains(stderr, "frontier: s-apes's figures are approximate") || strings.Contains(stderr, "ss-simple's figures are approximate") {
		t.Errorf("stderr:\n%s", stderr)
	}
	log, err := os.ReadFile(filepath.Join(out, "s-apes-e8", "run.log"))
	if err != nil || !strings.Contains(string(log), "spend approximately (not a proven bound)") {
		t.Errorf("the S-APES run's run.log lacks its approximate plan (%v):\n%s", err, log)
	}
}
