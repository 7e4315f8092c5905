package main

import (
	"os"
	"path/filepath"
	"slices"
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
	for _, want := range []string{"| NP-FL | nonprivate |", "| SS-Double | ss-double |", "ss-double-sound"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("results lack %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"== run 1 of 2: ", "== run 2 of 2, ETA "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, f := range []string{"results.md", "accuracy-t1.png", "run.log", "t1-NP-FL/metrics.jsonl", "t1-NP-FL/run.log", "t1-SS-Double/summary.json", "t1-SS-Double/config.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "run.log")); !strings.Contains(string(b), "== run 2 of 2") || !strings.Contains(string(b), "| NP-FL |") {
		t.Errorf("run.log does not hold what the experiment printed:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "t1-NP-FL", "run.log")); !strings.Contains(string(b), "round 1/1") {
		t.Errorf("the run's run.log lacks its rounds:\n%s", b)
	}

	// The directory is used now: refused without --overwrite, replaced with it.
	again := []string{"experiment", "flame", "--dataset", "fashion-mnist-sample", "--rounds", "1", "--only", "NP-FL", "--out", out, "--progress", "none"}
	code, _, stderr = runCLI(again...)
	if code != 2 {
		t.Fatalf("used --out: status %d, want 2", code)
	}
	checkOneLine(t, stderr, "--overwrite")
	if code, _, stderr := runCLI(append(again, "--overwrite")...); code != 0 {
		t.Fatalf("--overwrite: status %d\n%s", code, stderr)
	}
	entries, _ := os.ReadDir(out)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if want := []string{"accuracy-t1.png", "results.md", "run.log", "t1-NP-FL"}; !slices.Equal(got, want) {
		t.Fatalf("after --overwrite: %v, want %v (the SS-Double run of before removed)", got, want)
	}
}

func TestExperimentErrors(t *testing.T) {
	used := t.TempDir()
	writeFile(t, filepath.Join(used, "results.md"), "old")
	fresh := filepath.Join(t.TempDir(), "fresh")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no name", []string{"experiment"}, "name an experiment"},
		{"unknown", []string{"experiment", "nope"}, `unknown experiment "nope"`},
		{"only matches nothing", []string{"experiment", "flame", "--only", "XYZ", "--dataset", "fashion-mnist-sample", "--out", fresh}, "matches no run"},
		{"bad number", []string{"experiment", "flame", "--rounds", "x"}, `invalid value "x" for flag --rounds`},
		{"rounds negative", []string{"experiment", "flame", "--rounds", "-1"}, "rounds must be >= 1, got -1"},
		{"rounds zero", []string{"experiment", "flame", "--rounds", "0"}, "rounds must be >= 1, got 0"},
		{"extra argument", []string{"experiment", "flame", "extra"}, `unexpected argument "extra"`},
		{"extra after flags", []string{"experiment", "flame", "--rounds", "1", "apes"}, `unexpected argument "apes"`},
		{"unknown dataset", []string{"experiment", "flame", "--dataset", "nope"}, `unknown dataset "nope"`},
		{"regression dataset", []string{"experiment", "flame", "--dataset", "synthetic-clusters"}, "synthetic-clusters is a regression set"},
		{"used out", []string{"experiment", "flame", "--dataset", "fashion-mnist-sample", "--out", used}, "pass --overwrite"},
		{"negative workers", []string{"experiment", "flame", "--dataset", "fashion-mnist-sample", "--workers", "-1", "--out", fresh}, "workers must be >= 0"},
		// SS-Double is the 5th run and needs k = 157 <= d = 90: it must
		// fail before the first run starts.
		{"k beyond d", []string{"experiment", "flame", "--dataset", "blobs", "--rounds", "1", "--out", fresh}, "run SS-Double: round 1: ss-double: invalid parameter: k = 157 exceeds the dimension d = 90"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(tc.args...)
			if code != 2 {
				t.Fatalf("status %d, want 2; stderr:\n%s", code, stderr)
			}
			checkOneLine(t, stderr, tc.want)
		})
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a rejected experiment created its output directory")
	}
	code, stdout, stderr := runCLI("experiment", "--help")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "flame") || !strings.Contains(stdout, "  --rounds int") {
		t.Errorf("experiment --help: status %d\n%s%s", code, stdout, stderr)
	}
}
