package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/research/experiment"
)

func TestDPrivRotated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runCLI("experiment", "dprivacy-rotated", "--dataset", "fashion-mnist-sample", "--model", "logreg",
		"--clients", "40", "--clients-per-round", "10", "--samples-per-client", "40", "--rounds", "3",
		"--nus", "0,1", "--ks", "1,2", "--seeds", "2", "--out", out)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	for _, f := range []string{"results.md", "results.json", "accuracy.png", "run.log"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(stdout, "| 1 |") || !strings.Contains(stdout, "| 0 |") {
		t.Errorf("table lacks the nu rows:\n%s", stdout)
	}
	var runs []experiment.RotatedRun
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2*2*2 {
		t.Fatalf("%d runs, want 8", len(runs))
	}
	for _, r := range runs {
		switch {
		case r.Nu == 0 && (r.Protocol != "ifca" || r.MaxLeakage != nil):
			t.Errorf("nu = 0 should run ifca with unbounded leakage: %+v", r)
		case r.Nu == 1 && (r.Protocol != "ifca-dp" || r.Level == nil || *r.Level != 7850):
			t.Errorf("nu = 1 should run ifca-dp leaking n/nu = 7850 per participation: %+v", r)
		case len(r.GroupAccuracy) != 2 || len(r.ClusterSizes) != r.K:
			t.Errorf("run %+v lacks per-group accuracy or cluster sizes", r)
		}
	}
}

func TestDPrivRotatedBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--ks", "11", "--clients-per-round", "10"},
		{"--ks", "0"},
		{"--nus", "-1"},
		{"--groups", "1"},
		{"--clients", "5", "--clients-per-round", "10"},
		{"--model", "resnet"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runCLI(append([]string{"experiment", "dprivacy-rotated", "--dataset", "fashion-mnist-sample", "--out", out}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: status %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
}

// TestDPrivRotatedEarlyStop: with held-out clients the runs stop on their
// validation loss, and the reported accuracy is the test accuracy at the
// best validation round (checked against each run's own metrics by
// rerunning one of them with `run`).
func TestDPrivRotatedEarlyStop(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "exp")
	args := []string{"--dataset", "fashion-mnist-sample", "--model", "logreg", "--clients", "60", "--clients-per-round", "20",
		"--samples-per-client", "25", "--holdout-clients", "10", "--validate-every", "2", "--patience", "2"}
	code, stdout, stderr := runCLI(append([]string{"experiment", "dprivacy-rotated", "--rounds", "60", "--nus", "1", "--ks", "2", "--seeds", "1", "--out", out}, args...)...)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "Early stopping as in the paper") {
		t.Errorf("results.md does not describe the early stopping:\n%s", stdout)
	}
	var runs []experiment.RotatedRun
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &runs); err != nil || len(runs) != 1 {
		t.Fatalf("%v: %d runs", err, len(runs))
	}
	r := runs[0]
	if !r.Stopped || r.Rounds >= 60 || r.BestValidationRound < 2 || r.BestValidationRound > r.Rounds {
		t.Fatalf("run did not stop early as expected: %+v", r)
	}
	// The same run through `run`: its metrics at the best validation round.
	runOut := filepath.Join(dir, "run")
	code, _, stderr = runCLI(append([]string{"run", "--protocol", "ifca-dp", "--option", "k=2", "--option", "nu=1", "--partition", "rotated",
		"--groups", "2", "--rounds", "60", "--local-epochs", "1", "--lr", "0.05", "--batch", "10", "--client-cap", "0",
		"--progress", "none", "--out", runOut}, args...)...)
	if code != 0 {
		t.Fatalf("run: status %d\n%s", code, stderr)
	}
	var sum struct {
		Rounds     int `json:"rounds"`
		Validation struct {
			BestRound          int     `json:"best_round"`
			TestAccuracyAtBest float64 `json:"test_accuracy_at_best"`
			Stopped            bool    `json:"stopped"`
		} `json:"validation"`
	}
	b, err = os.ReadFile(filepath.Join(runOut, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Rounds != r.Rounds || sum.Validation.BestRound != r.BestValidationRound || sum.Validation.TestAccuracyAtBest != r.FinalAccuracy || !sum.Validation.Stopped {
		t.Fatalf("run's summary %+v does not match the experiment's run %+v", sum, r)
	}
	if _, err := os.Stat(filepath.Join(runOut, "validation.png")); err != nil {
		t.Errorf("run wrote no validation.png: %v", err)
	}
}
