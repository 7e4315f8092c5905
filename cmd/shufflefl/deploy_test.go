package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeployLocalMatchesRun: deploy-local in test mode writes run's outputs,
// and its model.json equals `run --secure-noise --faithful` with the same
// flags.
func TestDeployLocalMatchesRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"apes at a given epsilon", []string{"--protocol", "apes", "--epsilon", "4", "--clip", "0.5"}},
		// No --epsilon: the protocol's default target (8, 1e-6) calibrates
		// the local budget before round 1, in both.
		{"ss-simple at its default target", []string{"--protocol", "ss-simple"}},
	} {
		t.Run(tc.name, func(t *testing.T) { deployMatchesRun(t, tc.flags) })
	}
}

func deployMatchesRun(t *testing.T, extra []string) {
	flags := append([]string{"--clients", "12", "--rounds", "2", "--dataset", "blobs", "--model", "logreg",
		"--local-epochs", "1", "--seed", "3", "--progress", "none"}, extra...)
	dir := t.TempDir()
	dl, rn := filepath.Join(dir, "deploy"), filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	if code := realMain(append(append([]string{"deploy-local"}, flags...), "--out", dl), &out, &errb); code != 0 {
		t.Fatalf("deploy-local exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "TEST MODE") {
		t.Errorf("deploy-local --seed did not warn about test mode: %q", errb.String())
	}
	if code := realMain(append(append([]string{"run"}, flags...), "--out", rn, "--secure-noise", "--faithful"), &out, &errb); code != 0 {
		t.Fatalf("run exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"metrics.jsonl", "summary.json", "config.yaml", "model.json"} {
		if _, err := os.Stat(filepath.Join(dl, f)); err != nil {
			t.Errorf("deploy-local did not write %s: %v", f, err)
		}
	}
	read := func(p string) modelRecord {
		b, err := os.ReadFile(filepath.Join(p, "model.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m modelRecord
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := read(dl), read(rn)
	if a.Dim != b.Dim || a.Round != b.Round || len(a.Weights) != len(b.Weights) {
		t.Fatalf("model.json differ in shape: %d/%d/%d vs %d/%d/%d", a.Dim, a.Round, len(a.Weights), b.Dim, b.Round, len(b.Weights))
	}
	for j := range a.Weights {
		if d := a.Weights[j] - b.Weights[j]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("weight %d: deploy-local %v, run %v", j, a.Weights[j], b.Weights[j])
		}
	}
}

// TestDeployCommandsRefuse: bad deployment arguments exit with status 2.
func TestDeployCommandsRefuse(t *testing.T) {
	for _, args := range [][]string{
		{"analyzer", "--dataset", "blobs"}, // no --certs etc.
		{"shuffler", "--dataset", "blobs", "--certs", "x", "--listen", "10.0.0.1:1", "--control-listen", "127.0.0.1:1", "--analyzer", "127.0.0.1:2", "--db", "x"},
		{"client", "--dataset", "blobs", "--id", "nobody"},
		{"deploy-local", "--dataset", "blobs", "--protocol", "ss-double", "--eps-dist", "uniform2", "--clients", "10", "--out", t.TempDir()},
	} {
		var out, errb bytes.Buffer
		if code := realMain(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}
