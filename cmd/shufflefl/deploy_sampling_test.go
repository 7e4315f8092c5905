package main

import (
	"bytes"
	"encoding/json"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"os"
	"path/filepath"
	"testing"

	"github.com/shufflefl/shufflefl/driver/rundir"
)

// TestDeployLocalSampledMatchesRun: `deploy-local --seed S` with client
// sampling by the shuffler (--clients-per-round), and with personalized
// APES budgets (--eps-dist), writes exactly the model of `run --secure-noise
// --faithful` with the same flags (difference 0), and the same per-round
// privacy figures in metrics.jsonl.
func TestDeployLocalSampledMatchesRun(t *testing.T) {
	longtest.Skip(t) // a whole deployment against a run
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"ss-double sampled", []string{"--protocol", "ss-double", "--epsilon", "4", "--clip", "0.5", "--clients", "60", "--clients-per-round", "20"}},
		{"apes personalized sampled", []string{"--protocol", "apes", "--eps-dist", "uniform2", "--eps-scale", "20", "--clip", "0.5", "--clients", "60", "--clients-per-round", "20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := append([]string{"--rounds", "3", "--dataset", "blobs", "--model", "logreg",
				"--local-epochs", "1", "--seed", "7", "--progress", "none"}, tc.flags...)
			dir := t.TempDir()
			dl, rn := filepath.Join(dir, "deploy"), filepath.Join(dir, "run")
			var out, errb bytes.Buffer
			if code := realMain(append(append([]string{"deploy-local"}, flags...), "--out", dl), &out, &errb); code != 0 {
				t.Fatalf("deploy-local exit %d: %s", code, errb.String())
			}
			if code := realMain(append(append([]string{"run"}, flags...), "--out", rn, "--secure-noise", "--faithful"), &out, &errb); code != 0 {
				t.Fatalf("run exit %d: %s", code, errb.String())
			}
			var a, b rundir.Model
			for p, m := range map[string]*rundir.Model{dl: &a, rn: &b} {
				raw, err := os.ReadFile(filepath.Join(p, "model.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(raw, m); err != nil {
					t.Fatal(err)
				}
			}
			if len(a.Weights) != len(b.Weights) || a.Round != b.Round {
				t.Fatalf("models differ in shape: %d weights at round %d, run %d at %d", len(a.Weights), a.Round, len(b.Weights), b.Round)
			}
			for j := range a.Weights {
				if a.Weights[j] != b.Weights[j] {
					t.Fatalf("weight %d: deploy-local %v, run %v", j, a.Weights[j], b.Weights[j])
				}
			}
			type priv struct {
				Round             int     `json:"round"`
				Participants      int     `json:"participants"`
				Reports           int64   `json:"reports"`
				CentralEpsilon    float64 `json:"round_central_epsilon"`
				CentralDelta      float64 `json:"round_central_delta"`
				CumulativeEpsilon float64 `json:"cumulative_epsilon"`
				CumulativeDelta   float64 `json:"cumulative_delta"`
				LocalMax          float64 `json:"local_epsilon_max"`
				TestAccuracy      float64 `json:"test_accuracy"`
			}
			read := func(p string) []priv {
				raw, err := os.ReadFile(filepath.Join(p, "metrics.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				var out []priv
				dec := json.NewDecoder(bytes.NewReader(raw))
				for dec.More() {
					var r priv
					if err := dec.Decode(&r); err != nil {
						t.Fatal(err)
					}
					out = append(out, r)
				}
				return out
			}
			pa, pb := read(dl), read(rn)
			if len(pa) != len(pb) || len(pa) == 0 {
				t.Fatalf("%d metrics records, run %d", len(pa), len(pb))
			}
			for i := range pa {
				if pa[i] != pb[i] {
					t.Fatalf("metrics record %d: deploy-local %+v, run %+v", i, pa[i], pb[i])
				}
			}
			t.Logf("%s: %d weights equal; round %d central eps %v, cumulative %v", tc.name, len(a.Weights), pa[len(pa)-1].Round,
				pa[len(pa)-1].CentralEpsilon, pa[len(pa)-1].CumulativeEpsilon)
		})
	}
}
