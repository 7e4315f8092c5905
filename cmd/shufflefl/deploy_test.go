package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/rundir"
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
	read := func(p string) rundir.Model {
		b, err := os.ReadFile(filepath.Join(p, "model.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m rundir.Model
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

// TestDeployLocalClusteredMatchesRun: deploy-local runs ifca-dp (k = 2,
// nu = 1) on the rotated partition and writes run's outputs: the same
// model.json (hypothesis 0), and in metrics.jsonl the same d_privacy and
// per-hypothesis cluster sizes and accuracies; its stdout states the
// d-privacy leakage and no (epsilon, delta) guarantee.
func TestDeployLocalClusteredMatchesRun(t *testing.T) {
	flags := []string{"--protocol", "ifca-dp", "--option", "k=2", "--option", "nu=1", "--partition", "rotated", "--groups", "2",
		"--clients", "12", "--clients-per-round", "12", "--rounds", "2", "--dataset", "blobs", "--model", "logreg", "--local-epochs", "1", "--seed", "3", "--progress", "none"}
	dir := t.TempDir()
	dl, rn := filepath.Join(dir, "deploy"), filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	if code := realMain(append(append([]string{"deploy-local"}, flags...), "--out", dl), &out, &errb); code != 0 {
		t.Fatalf("deploy-local exit %d: %s", code, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "d-privacy leakage 90 per participation, at most 180 composed") || !strings.Contains(s, "no (epsilon, delta)-DP guarantee") {
		t.Errorf("deploy-local's output lacks the d-privacy statement: %q", s)
	}
	if code := realMain(append(append([]string{"run"}, flags...), "--out", rn, "--secure-noise", "--faithful"), &out, &errb); code != 0 {
		t.Fatalf("run exit %d: %s", code, errb.String())
	}
	type hyp struct {
		Size     int       `json:"size"`
		Accuracy []float64 `json:"accuracy"`
	}
	type rec struct {
		Round    int             `json:"round"`
		Accuracy float64         `json:"test_accuracy"`
		DPriv    json.RawMessage `json:"d_privacy"`
		Hyps     []hyp           `json:"hypotheses"`
		Bound    string          `json:"bound"`
		CumEps   *float64        `json:"cumulative_epsilon"`
	}
	read := func(p string) []rec {
		b, err := os.ReadFile(filepath.Join(p, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var rs []rec
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r rec
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		return rs
	}
	a, b := read(dl), read(rn)
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("%d and %d rounds in metrics.jsonl, want 2", len(a), len(b))
	}
	for i := range a {
		if string(a[i].DPriv) != string(b[i].DPriv) || a[i].Bound != b[i].Bound || a[i].CumEps != nil {
			t.Errorf("round %d: d_privacy %s bound %q cumulative %v; run: %s %q", i+1, a[i].DPriv, a[i].Bound, a[i].CumEps, b[i].DPriv, b[i].Bound)
		}
		if len(a[i].Hyps) != 2 || len(b[i].Hyps) != 2 {
			t.Fatalf("round %d: %d and %d hypotheses, want 2", i+1, len(a[i].Hyps), len(b[i].Hyps))
		}
		for h := range a[i].Hyps {
			if a[i].Hyps[h].Size != b[i].Hyps[h].Size || len(a[i].Hyps[h].Accuracy) != 2 || a[i].Hyps[h].Accuracy[1] != b[i].Hyps[h].Accuracy[1] {
				t.Errorf("round %d hypothesis %d: %+v, run %+v", i+1, h, a[i].Hyps[h], b[i].Hyps[h])
			}
		}
		if a[i].Accuracy != b[i].Accuracy {
			t.Errorf("round %d: test accuracy %v, run %v", i+1, a[i].Accuracy, b[i].Accuracy)
		}
	}
	readModel := func(p string) rundir.Model {
		b, err := os.ReadFile(filepath.Join(p, "model.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m rundir.Model
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ma, mb := readModel(dl), readModel(rn)
	for j := range mb.Weights {
		if d := ma.Weights[j] - mb.Weights[j]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("weight %d: deploy-local %v, run %v", j, ma.Weights[j], mb.Weights[j])
		}
	}
}
