package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/research/audit"
)

// TestRunLowerBound: small runs state a lower bound on their true epsilon
// in summary.json, at most their cumulative epsilon, and print it on the
// final line after the cumulative figure and its delta (the shape .ci/run
// greps); a protocol without a sound bound says "none" and states no
// number; a non-private run states nothing.
func TestRunLowerBound(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		args  []string
		bound bool // a number is expected
	}{
		{"ss-simple", []string{"--protocol", "ss-simple", "--epsilon", "2000"}, true},
		{"ss-double", []string{"--protocol", "ss-double", "--epsilon", "8", "--option", "randomizer=1"}, true},
		{"apes", []string{"--protocol", "apes", "--eps-dist", "uniform2", "--eps-scale", "2000"}, true},
		{"split-mix", []string{"--protocol", "split-mix", "--target-epsilon", "8"}, true},
		{"split-mix sampled", []string{"--protocol", "split-mix", "--target-epsilon", "8", "--clients-per-round", "50"}, true},
		{"apes sampled", []string{"--protocol", "apes", "--epsilon", "2000", "--clients-per-round", "50"}, false},
		{"nonprivate", []string{"--protocol", "nonprivate"}, false},
	} {
		out := filepath.Join(dir, tc.name)
		args := append([]string{"run", "--dataset", "fashion-mnist-sample", "--clients", "100", "--rounds", "2", "--delta", "1e-6",
			"--progress", "none", "--out", out}, tc.args...)
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		var sum map[string]any
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		lb, hasLB := sum["lower_bound_epsilon"].(float64)
		method, _ := sum["lower_bound_method"].(string)
		t.Logf("%s: cumulative %v, lower bound %v (%s; %v)", tc.name, sum["cumulative_epsilon"], sum["lower_bound_epsilon"], method, sum["lower_bound_note"])
		switch {
		case tc.name == "nonprivate":
			if _, ok := sum["lower_bound_method"]; ok || hasLB {
				t.Errorf("nonprivate states a lower bound: %v %v", method, lb)
			}
			continue
		case tc.bound:
			eps := sum["cumulative_epsilon"].(float64)
			if !hasLB || !(lb > 0) || lb > eps || method == "" || method == "none" {
				t.Errorf("%s: lower bound %v (%q), cumulative %v", tc.name, sum["lower_bound_epsilon"], method, eps)
			}
			re := regexp.MustCompile(`cumulative central epsilon [0-9.]* \(delta 1e-06, lower bound ([0-9.]+)\)`)
			m := re.FindStringSubmatch(stdout)
			if m == nil {
				t.Fatalf("%s: final line without the lower bound:\n%s", tc.name, stdout)
			}
			if v, _ := strconv.ParseFloat(m[1], 64); v > lb || v < 0.99*lb {
				t.Errorf("%s: printed %s for %v (3 digits, rounded down)", tc.name, m[1], lb)
			}
		default:
			if hasLB || (method != "none" && method == "") {
				t.Errorf("%s: lower bound %v (%q), want none or a method", tc.name, sum["lower_bound_epsilon"], method)
			}
			if method == "none" && strings.Contains(stdout, "lower bound") {
				t.Errorf("%s: final line states a lower bound without one:\n%s", tc.name, stdout)
			}
		}
	}
}

// TestAuditAccountantPersonalized: `audit accountant` checks an APES run
// with personalized budgets and split-mix runs, with and without Poisson
// sampling (before, it reported them as not checked), and exits 3 when the run's last statement is lowered
// below the lower bound of its own mechanism (the negative control).
func TestAuditAccountantPersonalized(t *testing.T) {
	for _, tc := range []struct {
		name, bound string
		args        []string
	}{
		{"apes", "clip-laplace", []string{"--protocol", "apes", "--eps-dist", "uniform2", "--eps-scale", "2000"}},
		{"split-mix", "skellam", []string{"--protocol", "split-mix", "--target-epsilon", "8"}},
		{"split-mix sampled", "probability 0.5", []string{"--protocol", "split-mix", "--target-epsilon", "8", "--clients-per-round", "50"}},
	} {
		run := filepath.Join(t.TempDir(), tc.name)
		args := append([]string{"run", "--dataset", "fashion-mnist-sample", "--clients", "100", "--rounds", "2", "--delta", "1e-6",
			"--progress", "none", "--out", run}, tc.args...)
		if code, _, stderr := runCLI(args...); code != 0 {
			t.Fatalf("%s: run: exit %d: %s", tc.name, code, stderr)
		}
		code, stdout, stderr := runCLI("audit", "accountant", "--run", run, "--json")
		if code != 0 {
			t.Fatalf("%s: audit of a correct run: exit %d: %s", tc.name, code, stderr)
		}
		var rep audit.AccountantReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%s: stdout is not the JSON report: %v\n%s", tc.name, err, stdout)
		}
		if rep.NotChecked != "" || len(rep.Checks) != 2 || rep.Violations != 0 {
			t.Fatalf("%s: report %+v", tc.name, rep)
		}
		last := rep.Checks[1]
		if last.Error != "" || !(last.Lower > 0) || last.Lower > last.Claimed || !strings.Contains(last.Bound, tc.bound) {
			t.Fatalf("%s: last check %+v", tc.name, last)
		}
		lowered := strconv.FormatFloat(0.5*last.Lower, 'g', -1, 64)
		claimed := strconv.FormatFloat(last.Claimed, 'g', -1, 64)
		for _, name := range []string{"metrics.jsonl", "summary.json"} {
			p := filepath.Join(run, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), claimed) {
				t.Fatalf("%s: %s does not state %s", tc.name, name, claimed)
			}
			writeFile(t, p, strings.ReplaceAll(string(b), claimed, lowered))
		}
		code, _, stderr = runCLI("audit", "accountant", "--run", run)
		if code != exitViolation || !strings.Contains(stderr, "VIOLATION: after round 2") {
			t.Fatalf("%s: lowered statement: exit %d, stderr %q; want %d and a VIOLATION line", tc.name, code, stderr, exitViolation)
		}
	}
}
