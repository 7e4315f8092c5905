package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the command line in-process and returns exit status and output.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("protocol: nonprivate\nepsilonn: 3\n"), 0o644)
	corrupt := filepath.Join(dir, "corrupt")
	os.MkdirAll(corrupt, 0o755)
	for _, f := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		os.WriteFile(filepath.Join(corrupt, f), []byte("not an idx file"), 0o644)
	}
	epsFile := filepath.Join(dir, "eps.txt")
	os.WriteFile(epsFile, []byte("1\nNaN\n"), 0o644)
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
		{"unknown flag", []string{"--epsilonn", "1"}, "flag provided but not defined"},
		{"bad number", []string{"--rounds", "x"}, "invalid value"},
		{"unknown config key", []string{"--config", badYAML}, "field epsilonn not found"},
		{"missing config", []string{"--config", filepath.Join(dir, "none.yaml")}, "config file"},
		{"corrupt data", []string{"--dataset", "mnist-dir", "--data-dir", corrupt}, "train-images-idx3-ubyte"},
		{"missing data dir", []string{"--dataset", "mnist-dir", "--data-dir", filepath.Join(dir, "nothing")}, "nothing"},
		{"bad option", []string{"--option", "k"}, "name=value"},
		{"unused option", []string{"--option", "k=3"}, `option "k" is not used`},
		{"nan budget file", []string{"--eps-file", epsFile}, "line 2"},
		{"positional", []string{"extra"}, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(append(append([]string{}, base...), tc.args...)...)
			if code != 2 {
				t.Fatalf("exit status %d, want 2; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr does not mention %q:\n%s", tc.want, stderr)
			}
			if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine 1 [") {
				t.Fatalf("stderr shows a panic:\n%s", stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI("--help")
	if code != 0 || !strings.Contains(out, "shufflefl run") || !strings.Contains(out, "shufflefl bound") {
		t.Fatalf("--help: status %d, output:\n%s", code, out)
	}
	code, _, stderr := runCLI("run", "--help")
	if code != 0 {
		t.Fatalf("run --help: status %d", code)
	}
	for _, flag := range []string{"-protocol", "-dataset", "-model", "-clients", "-rounds", "-local-epochs", "-batch", "-lr", "-clip", "-epsilon", "-delta", "-seed", "-out", "-config"} {
		if !strings.Contains(stderr, flag) {
			t.Errorf("run --help does not explain %s", flag)
		}
	}
	if code, _, _ := runCLI("frobnicate"); code != 2 {
		t.Fatalf("unknown command: status %d, want 2", code)
	}
}

// TestRunOutputs runs a tiny experiment and checks every output file.
func TestRunOutputs(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfgFile, []byte("protocol: ldp-laplace\nepsilon: 30\nrounds: 5\n"), 0o644)
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
	for sc.Scan() {
		lines++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		for _, k := range []string{"round", "test_accuracy", "test_loss", "local_epsilon_min", "local_epsilon_median", "local_epsilon_max", "central_epsilon", "central_delta", "seconds"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("line %d lacks %s", lines, k)
			}
		}
		if m["local_epsilon_max"].(float64) != 30 {
			t.Fatalf("local epsilon %v, want 30 (flags override the file? the file said 30)", m["local_epsilon_max"])
		}
	}
	if lines != 2 {
		t.Fatalf("%d lines, want 2 (the flag --rounds 2 overrides the file's 5)", lines)
	}
	cfg, _ := os.ReadFile(filepath.Join(out, "config.yaml"))
	if !strings.Contains(string(cfg), "protocol: ldp-laplace") || !strings.Contains(string(cfg), "rounds: 2") {
		t.Fatalf("config.yaml does not hold the resolved settings:\n%s", cfg)
	}
}
