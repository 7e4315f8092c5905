package main

import (
	"encoding/json"
	"github.com/shufflefl/shufflefl/research/audit"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestAuditBadInput(t *testing.T) {
	dir := t.TempDir()
	used := filepath.Join(dir, "used")
	if err := os.MkdirAll(used, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(used, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "nope"}, "unknown subcommand"},
		{[]string{"audit", "mechanism", "--epsilon", "1"}, "--mechanism is required"},
		{[]string{"audit", "mechanism", "--mechanism", "nope", "--epsilon", "1"}, "unknown mechanism"},
		{[]string{"audit", "mechanism", "--mechanism", "laplace", "--epsilon", "8", "--trials", "1000"}, "use --trials 21998 or more"},
		{[]string{"audit", "mechanism", "--mechanism", "laplace", "--epsilon", "1", "--miscalibrate", "0.5"}, "miscalibrate"},
		{[]string{"audit", "mechanism", "--mechanism", "gaussian", "--epsilon", "1", "--delta", "0"}, "delta"},
		{[]string{"audit", "mechanism", "--mechanism", "laplace", "--epsilon", "1", "--bogus"}, "--bogus"},
		{[]string{"audit", "mechanism", "--mechanism", "laplace", "--epsilon", "1", "--out", used}, "--overwrite"},
		{[]string{"audit", "protocol", "--protocol", "nonprivate"}, "nothing to audit"},
		{[]string{"audit", "protocol", "--protocol", "all", "--tight-trials", "-1"}, "--tight-trials"},
		{[]string{"audit", "accountant"}, "--run is required"},
		{[]string{"audit", "accountant", "--run", "/nonexistent"}, "config file"},
		{[]string{"audit", "inversion", "--dataset", "blobs"}, "not made of images"},
		{[]string{"audit", "inversion", "--model", "cnn"}, "does not apply to model cnn"},
		{[]string{"audit", "inversion", "--model", "resnet"}, "unknown model"},
		{[]string{"audit", "topk", "--nu", "1e9"}, "nu"},
		{[]string{"audit", "canary", "--canaries", "1000", "--clients", "100"}, "exceed"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line mentioning %q", c.args, code, stderr, c.want)
		}
	}
}

func TestAuditMechanismCLI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runCLI("audit", "mechanism", "--mechanism", "laplace", "--epsilon", "1", "--miscalibrate", "2",
		"--trials", "200000", "--json", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep audit.MechanismReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	if len(rep.Results) != 1 || !rep.Results[0].Violation {
		t.Fatalf("noise 2x too small not reported as a violation: %+v", rep)
	}
	for _, f := range []string{"audit.md", "audit.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatalf("missing %s: %v", f, err)
		}
	}
	// Again into the same directory: refused, then accepted with --overwrite.
	if code, _, _ := runCLI("audit", "mechanism", "--mechanism", "rr", "--epsilon", "1", "--trials", "20000", "--out", out, "--quiet"); code != 2 {
		t.Fatalf("non-empty --out accepted without --overwrite (exit %d)", code)
	}
	if code, _, stderr := runCLI("audit", "mechanism", "--mechanism", "rr", "--epsilon", "1", "--trials", "20000", "--out", out, "--overwrite", "--quiet"); code != 0 {
		t.Fatalf("--overwrite: exit %d: %s", code, stderr)
	}
}

func TestAuditInversionCLI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "inv")
	code, stdout, stderr := runCLI("audit", "inversion", "--protocols", "nonprivate,ldp-laplace", "--epsilons", "1", "--nus", "0,10",
		"--targets", "2", "--dlg-steps", "50", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "| nonprivate |") || !strings.Contains(stdout, "nu=10") {
		t.Fatalf("report:\n%s", stdout)
	}
	for _, f := range []string{"inversion-protocols.png", "inversion-nu.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Fatalf("missing %s: %v", f, err)
		}
	}
}

func TestAuditHelp(t *testing.T) {
	for _, sub := range []string{"mechanism", "protocol", "canary", "inversion", "mia", "topk", "accountant"} {
		code, stdout, _ := runCLI("audit", sub, "--help")
		if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "--out") {
			t.Errorf("audit %s --help: exit %d\n%s", sub, code, stdout)
		}
	}
	if code, stdout, _ := runCLI("help", "audit"); code != 0 || !strings.Contains(stdout, "Subcommands:") {
		t.Errorf("help audit: exit %d\n%s", code, stdout)
	}
}

// TestAuditProtocolTightGame: `audit protocol --protocol all` plays the
// tight game (n = 2, d = 1) after the main table, and it catches a halved
// Laplace scale that the main game (n = 10) misses for the shuffled
// protocols; without the fault it finds no violation.
func TestAuditProtocolTightGame(t *testing.T) {
	run := func(mis string) audit.ProtocolReport {
		t.Helper()
		code, stdout, stderr := runCLI("audit", "protocol", "--protocol", "all", "--trials", "3000", "--tight-trials", "16000",
			"--miscalibrate", mis, "--json", "--quiet")
		if code != 0 {
			t.Fatalf("--miscalibrate %s: exit %d: %s", mis, code, stderr)
		}
		var rep audit.ProtocolReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
		}
		if len(rep.Tight) < 10 || rep.TightConfidence <= 0.95 {
			t.Fatalf("--miscalibrate %s: tight game: %d results at confidence %v", mis, len(rep.Tight), rep.TightConfidence)
		}
		return rep
	}
	caught := map[string]bool{}
	for _, r := range run("2").Tight {
		if r.Dim != 1 || r.Clients != 2 {
			t.Fatalf("tight game of %s at d = %d, n = %d", r.Protocol, r.Dim, r.Clients)
		}
		caught[r.Protocol] = r.Violation
	}
	for _, n := range []string{"ldp-laplace", "pldp", "ldp-min", "ss-simple", "apes"} {
		if !caught[n] {
			t.Errorf("%s: the tight game missed a halved noise scale", n)
		}
	}
	if testing.Short() {
		return
	}
	for _, r := range run("1").Tight {
		if r.Violation {
			t.Errorf("%s: tight game reports a violation of a correct protocol: eps_lower %.3f > %.3f", r.Protocol, r.EpsLower, r.EpsClaimed)
		}
	}
}

// TestAuditAccountantCLI: `audit accountant` checks a finished run's
// statements against the lower bounds, passes a correct one, and exits 3
// with a VIOLATION line when a statement is lowered below its bound (an
// accountant that forgot a round, say).
func TestAuditAccountantCLI(t *testing.T) {
	run := filepath.Join(t.TempDir(), "pldp")
	if code, _, stderr := runCLI("run", "--protocol", "pldp", "--dataset", "fashion-mnist-sample", "--epsilon", "1",
		"--clients", "20", "--rounds", "2", "--delta", "1e-5", "--out", run); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI("audit", "accountant", "--run", run, "--json")
	if code != 0 {
		t.Fatalf("audit of a correct run: exit %d: %s", code, stderr)
	}
	var rep audit.AccountantReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	// Two bounds per statement: the optimal composition of the pure
	// releases and the count statistic of the run's own Laplace mechanism.
	if len(rep.Checks) != 4 || rep.Violations != 0 || rep.Checks[2].Lower <= 0 || rep.Checks[2].Lower > rep.Checks[2].Claimed ||
		rep.Checks[3].Lower <= 0 || rep.Checks[3].Lower > rep.Checks[2].Lower {
		t.Fatalf("report %+v", rep)
	}
	// The last round's statement lowered just below its optimal
	// composition (and above its own mechanism's bound: one violation).
	lowered := strconv.FormatFloat(0.5*(rep.Checks[2].Lower+max(rep.Checks[3].Lower, 0.999*rep.Checks[2].Lower)), 'g', -1, 64)
	for _, name := range []string{"metrics.jsonl", "summary.json"} {
		p := filepath.Join(run, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		claimed := strconv.FormatFloat(rep.Checks[2].Claimed, 'g', -1, 64)
		if !strings.Contains(string(b), claimed) {
			t.Fatalf("%s does not state %s", name, claimed)
		}
		writeFile(t, p, strings.ReplaceAll(string(b), claimed, lowered))
	}
	code, _, stderr = runCLI("audit", "accountant", "--run", run)
	if code != exitViolation || !strings.Contains(stderr, "VIOLATION: after round 2") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("lowered statement: exit %d, stderr %q; want %d and one VIOLATION line", code, stderr, exitViolation)
	}
	if code, _, stderr := runCLI("audit", "accountant", "--run", filepath.Join(run, "nope")); code != 2 || !strings.Contains(stderr, "config") {
		t.Fatalf("missing run: exit %d, %q", code, stderr)
	}
}
