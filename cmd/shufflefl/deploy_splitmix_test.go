package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// TestDeployLocalSplitMixMatchesRun: `deploy-local --protocol split-mix
// --seed S` writes exactly the model.json of `run --secure-noise
// --faithful` with the same flags, and the same metrics.jsonl records but
// for the timings, the dummies (the simulation's faithful path counts
// none; the deployment's shuffler reports its (K − n)·m·d) and the
// round-alone figures (a deployment does not compute them for any
// protocol). Long: about 80,000 sealed shares a round.
func TestDeployLocalSplitMixMatchesRun(t *testing.T) {
	longtest.Skip(t)
	flags := []string{"--protocol", "split-mix", "--target-epsilon", "4", "--clients", "24", "--clients-per-round", "12",
		"--option", "sigma-bits=30", "--option", "void-bits=30", "--rounds", "2", "--dataset", "blobs", "--model", "logreg",
		"--local-epochs", "1", "--seed", "7", "--progress", "none"}
	dir := t.TempDir()
	dl, rn := filepath.Join(dir, "deploy"), filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	if code := realMain(append(append([]string{"deploy-local"}, flags...), "--out", dl), &out, &errb); code != 0 {
		t.Fatalf("deploy-local exit %d: %s", code, errb.String())
	}
	if code := realMain(append(append([]string{"run"}, flags...), "--out", rn, "--secure-noise", "--faithful"), &out, &errb); code != 0 {
		t.Fatalf("run exit %d: %s", code, errb.String())
	}
	a, b := readFile(t, filepath.Join(dl, "model.json")), readFile(t, filepath.Join(rn, "model.json"))
	if !bytes.Equal(a, b) {
		t.Fatalf("model.json differ:\n%s\n%s", a, b)
	}
	ma, mb := records(t, dl), records(t, rn)
	if len(ma) != len(mb) || len(ma) == 0 {
		t.Fatalf("%d metrics records, run %d", len(ma), len(mb))
	}
	for i := range ma {
		if ma[i]["dummies"].(float64) == 0 {
			t.Errorf("round %d: the deployed shuffler reports no dummy", i+1)
		}
		for _, k := range []string{"seconds", "timing", "dummies", "round_alone_epsilon", "round_alone_delta"} {
			delete(ma[i], k)
			delete(mb[i], k)
		}
		if !reflect.DeepEqual(ma[i], mb[i]) {
			t.Fatalf("metrics record %d:\ndeploy-local %v\nrun          %v", i+1, ma[i], mb[i])
		}
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// records reads a run directory's metrics.jsonl as generic records.
func records(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, filepath.Join(dir, "metrics.jsonl"))))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
