package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterAccuracyInOutputs: an ifca run on the rotated partition writes
// cluster_accuracy in every metrics.jsonl line and in summary.json, and a
// resume of the early-stopped run, which runs no round, keeps the summary's
// figure (the last round's).
func TestClusterAccuracyInOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := runCLI("run", "--protocol", "ifca", "--option", "k=2", "--dataset", "fashion-mnist-sample",
		"--partition", "rotated", "--groups", "2", "--clients", "40", "--clients-per-round", "10", "--samples-per-client", "30", "--local-epochs", "1",
		"--rounds", "60", "--holdout-clients", "10", "--validate-every", "1", "--patience", "1", "--progress", "none", "--out", dir)
	if code != 0 || !strings.Contains(errs, "early stop after round") {
		t.Fatalf("first run: %d %s %s", code, out, errs)
	}
	type ca struct {
		Accuracy     *float64 `json:"accuracy"`
		Participants int      `json:"participants"`
		Relabel      []int    `json:"relabel"`
	}
	var lastLine struct {
		ClusterAccuracy *ca `json:"cluster_accuracy"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		lastLine.ClusterAccuracy = nil
		if err := json.Unmarshal([]byte(line), &lastLine); err != nil {
			t.Fatal(err)
		}
		c := lastLine.ClusterAccuracy
		if c == nil || c.Accuracy == nil || *c.Accuracy < 0.5 || *c.Accuracy > 1 || c.Participants != 10 || len(c.Relabel) != 2 {
			t.Fatalf("round %d: cluster_accuracy %+v", i+1, c)
		}
	}
	summary := func() *ca {
		var s struct {
			ClusterAccuracy *ca `json:"cluster_accuracy"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.ClusterAccuracy
	}
	before := summary()
	if before == nil || *before.Accuracy != *lastLine.ClusterAccuracy.Accuracy {
		t.Fatalf("summary %+v, last round %+v", before, lastLine.ClusterAccuracy)
	}
	if code, _, errs := runCLI("run", "--resume", dir, "--progress", "none"); code != 0 {
		t.Fatalf("resume: %d %s", code, errs)
	}
	if after := summary(); after == nil || *after.Accuracy != *before.Accuracy {
		t.Fatalf("summary after a resume that ran no round: %+v, before %+v", after, before)
	}
}
