package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	var runs []rotatedRun
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
