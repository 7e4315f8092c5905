package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExperimentRuns(t *testing.T) {
	out := filepath.Join(t.TempDir(), "exp")
	code, stdout, stderr := runCLI("experiment", "flame", "--dataset", "fashion-mnist-sample", "--rounds", "1",
		"--only", "NP-FL,SS-Double", "--out", out, "--progress", "none")
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	for _, want := range []string{"| NP-FL | nonprivate |", "| SS-Double | ss-double |", "flame-ss-double"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("results lack %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"results.md", "accuracy-t1.png", "t1-NP-FL/metrics.jsonl", "t1-SS-Double/summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestExperimentErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"experiment"}, "name an experiment"},
		{[]string{"experiment", "nope"}, `unknown experiment "nope"`},
		{[]string{"experiment", "flame", "--only", "XYZ", "--dataset", "fashion-mnist-sample", "--out", t.TempDir()}, "matches no run"},
		{[]string{"experiment", "flame", "--rounds", "x"}, "invalid value"},
		{[]string{"experiment", "flame", "--dataset", "nope"}, `unknown dataset "nope"`},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: status %d, stderr %q (want 2 and %q)", tc.args, code, stderr, tc.want)
		}
	}
	if code, _, stderr := runCLI("experiment", "--help"); code != 0 || !strings.Contains(stderr, "flame") {
		t.Errorf("experiment --help: status %d\n%s", code, stderr)
	}
}
