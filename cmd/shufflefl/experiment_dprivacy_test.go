package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/research/experiment"
)

func TestDPrivExperiments(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		files []string
	}{
		{"dprivacy-synthetic", []string{"--seeds", "2", "--max-rounds", "8"},
			[]string{"results.md", "results.json", "run.log", "fig1-sanitized.png", "fig1-unsanitized.png", "fig1-one-hypothesis.png", "fig1-validation-loss.png", "fig2-leakage.png"}},
		{"dprivacy-regression", []string{"--seeds", "3", "--max-rounds", "5", "--nus", "0,3", "--ks", "1,5"},
			[]string{"results.md", "results.json", "run.log", "rmse.png", "fig3-leakage-histogram.png"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := runCLI(append([]string{"experiment", tc.name, "--out", out}, tc.args...)...)
			if code != 0 {
				t.Fatalf("status %d\n%s", code, stderr)
			}
			for _, f := range tc.files {
				if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
			}
			if !strings.Contains(stdout, "| ") {
				t.Errorf("no table printed:\n%s", stdout)
			}
			b, err := os.ReadFile(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Runs []experiment.DPrivacyRun `json:"runs"`
			}
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Runs) == 0 {
				t.Fatal("no runs in results.json")
			}
			for _, r := range res.Runs {
				if r.Nu > 0 && (r.PerRound == nil || r.MaxLeakage == nil) {
					t.Errorf("%s: sanitized run without a finite leakage", r.Variant)
				}
				if r.Nu == 0 && r.MaxLeakage != nil {
					t.Errorf("%s: unsanitized run with finite leakage %v", r.Variant, *r.MaxLeakage)
				}
			}
			if tc.name == "dprivacy-regression" && !strings.Contains(stdout, "SYNTHETIC STAND-IN") {
				t.Errorf("the regression results do not say they are a stand-in")
			}
			// The same command again refuses the used directory.
			if code, _, stderr := runCLI(append([]string{"experiment", tc.name, "--out", out}, tc.args...)...); code != 2 || !strings.Contains(stderr, "--overwrite") {
				t.Errorf("reused --out: status %d, %s", code, stderr)
			}
		})
	}
}

func TestDPrivExperimentBadInput(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "fresh")
	for _, args := range [][]string{
		{"experiment", "dprivacy-synthetic", "--seeds", "0", "--out", fresh},
		{"experiment", "dprivacy-synthetic", "--max-rounds", "0", "--out", fresh},
		{"experiment", "dprivacy-synthetic", "extra", "--out", fresh},
		{"experiment", "dprivacy-synthetic", "--nus", "1"},
		{"experiment", "dprivacy-regression", "--nus", "-1", "--out", fresh},
		{"experiment", "dprivacy-regression", "--ks", "0", "--out", fresh},
		{"experiment", "dprivacy-regression", "--ks", "200", "--out", fresh},
	} {
		if code, _, stderr := runCLI(args...); code != 2 {
			t.Errorf("%v: status %d, want 2\n%s", args, code, stderr)
		}
		if _, err := os.Stat(fresh); err == nil {
			t.Fatalf("%v: a rejected experiment created its output directory", args)
		}
	}
	if code, stdout, _ := runCLI("experiment", "dprivacy-regression", "--help"); code != 0 || !strings.Contains(stdout, "--nus") {
		t.Errorf("--help: status %d\n%s", code, stdout)
	}
	if code, stdout, _ := runCLI("experiment", "--help"); code != 0 || !strings.Contains(stdout, "dprivacy-synthetic") {
		t.Errorf("experiment --help does not list dprivacy-synthetic:\n%s", stdout)
	}
}
