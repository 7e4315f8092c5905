package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/learning/data"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/learning/onnx"
)

// TestExport writes a run's model.json (which also writes
// model.safetensors), exports it in the three formats and checks the exit
// statuses of bad invocations.
func TestExport(t *testing.T) {
	dir := t.TempDir()
	w := make([]float64, 2*3+3)
	for i := range w {
		w[i] = float64(i) - 2.5
	}
	m := rundir.Model{Model: "logreg", Dataset: "test", Features: 2, Classes: 3, Dim: len(w), Round: 4, Weights: w}
	if err := rundir.WriteModelFile(dir, m); err != nil {
		t.Fatal(err)
	}
	beside, err := os.ReadFile(filepath.Join(dir, rundir.SafetensorsFile))
	if err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "m.safetensors")
	var out, errb bytes.Buffer
	if rc := realMain([]string{"export", "--run", dir, "--format", "safetensors", "--out", st}, &out, &errb); rc != 0 {
		t.Fatalf("export safetensors: rc %d: %s", rc, errb.String())
	}
	got, err := os.ReadFile(st)
	if err != nil || !bytes.Equal(got, beside) {
		t.Errorf("exported safetensors differs from the run's model.safetensors (%v)", err)
	}
	n := binary.LittleEndian.Uint64(got)
	if h := string(got[8 : 8+n]); !strings.Contains(h, `"fc1.weight":{"dtype":"F32","shape":[2,3]`) || !strings.Contains(h, `"round":"4"`) {
		t.Errorf("header %s", h)
	}
	if len(got) != int(8+n)+4*len(w) {
		t.Errorf("%d bytes, want %d", len(got), 8+n+uint64(4*len(w)))
	}
	npz := filepath.Join(t.TempDir(), "m.npz")
	if rc := realMain([]string{"export", "--run", dir, "--format", "npz", "--out", npz}, &out, &errb); rc != 0 {
		t.Fatalf("export npz: rc %d: %s", rc, errb.String())
	}
	if b, err := os.ReadFile(npz); err != nil || !bytes.HasPrefix(b, []byte("PK")) {
		t.Errorf("npz: %v", err)
	}
	onx := filepath.Join(t.TempDir(), "m.onnx")
	out.Reset()
	if rc := realMain([]string{"export", "--run", dir, "--format", "onnx", "--out", onx}, &out, &errb); rc != 0 {
		t.Fatalf("export onnx: rc %d: %s", rc, errb.String())
	}
	arch, err := fl.NewModel(m.Model, m.Features, m.Classes)
	if err != nil {
		t.Fatal(err)
	}
	want, err := onnx.Encode(arch, w, rundir.ModelMetadata(m))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(onx); err != nil || !bytes.Equal(b, want) {
		t.Errorf("onnx export differs from onnx.Encode of the run's model (%v)", err)
	}
	if !strings.Contains(out.String(), "export: onnx model of") {
		t.Errorf("export onnx printed %q", out.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--run", dir, "--format", "tflite", "--out", npz}, "unknown --format"},
		{[]string{"--run", dir}, "required"},
		{[]string{"--run", filepath.Join(dir, "none"), "--out", npz}, "model.json"},
	} {
		errb.Reset()
		if rc := realMain(append([]string{"export"}, tc.args...), &out, &errb); rc != 2 || !strings.Contains(errb.String(), tc.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("export %v: rc %d, stderr %q; want 2 and one line mentioning %q", tc.args, rc, errb.String(), tc.want)
		}
	}
	// A model.json that does not fit its architecture is refused.
	bad := t.TempDir()
	m.Model = "mlp"
	if err := rundir.WriteModelFile(bad, m); err == nil {
		t.Error("WriteModelFile wrote mlp weights of logreg's length")
	}
}

// TestRunModelSpec runs a model given by a YAML specification, checks that
// config.yaml records it and that --config reruns it to the same model,
// and that a specification that does not fit the data is refused before
// round 1 with one line and status 2.
func TestRunModelSpec(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte("- {type: dense, units: 8}\n- {type: tanh}\n- {type: dense, units: 10}\n- {type: softmax}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if code, _, stderr := tinyRun("--model-spec", spec, "--out", a); code != 0 {
		t.Fatalf("--model-spec: status %d\n%s", code, stderr)
	}
	cfg, err := os.ReadFile(filepath.Join(a, "config.yaml"))
	if err != nil || !strings.Contains(string(cfg), "model: dense=8,tanh,dense=10,softmax\n") {
		t.Fatalf("config.yaml does not record the spec (%v):\n%s", err, cfg)
	}
	if code, _, stderr := runCLI("run", "--config", filepath.Join(a, "config.yaml"), "--out", b); code != 0 {
		t.Fatalf("--config rerun: status %d\n%s", code, stderr)
	}
	for _, f := range []string{"model.json", "model.safetensors"} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil || len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs on the --config rerun (%v)", f, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "dense=5,softmax"}, "5 units but the data has 10 classes"},
		{[]string{"--model", "cnn", "--dataset", "synthetic-fedprox", "--partition", "iid"}, "not a square"},
		{[]string{"--model", "mlp:0"}, "hidden width"},
		{[]string{"--model-spec", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
	} {
		code, stdout, stderr := tinyRun(append(tc.args, "--out", filepath.Join(dir, "bad"))...)
		if code != 2 || strings.Contains(stdout, "round 1") {
			t.Errorf("%v: status %d, stdout %q; want 2 before round 1", tc.args, code, stdout)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q, want one line mentioning %q", tc.args, stderr, tc.want)
		}
	}
}

// torchPython returns a Python interpreter with PyTorch and NumPy, or
// skips the test saying what to install (fails it under CI=true).
func torchPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import torch, numpy").Run() == nil {
			return path
		}
	}
	const msg = "no python3 with PyTorch and NumPy: install Debian's python3-torch and python3-numpy (scripts/setup.sh --with-torch) to run examples/pytorch/load.py"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI installs them")
	}
	t.Skip(msg)
	return ""
}

// TestLoadPy runs tiny runs of three models and checks that
// examples/pytorch/load.py, evaluating each run's model.safetensors in
// PyTorch on the run's test set (written by export --format testset-npz,
// with this test binary as the shufflefl it calls), prints the run's
// final_test_accuracy exactly, as summary.json writes it.
func TestLoadPy(t *testing.T) {
	longtest.Skip(t) // three runs and PyTorch evaluations
	py := torchPython(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"logreg", "mlp:32,16", "cnn"} {
		t.Run(model, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if code, _, stderr := tinyRun("--model", model, "--local-epochs", "1", "--out", dir); code != 0 {
				t.Fatalf("run: status %d\n%s", code, stderr)
			}
			b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var sum struct {
				Acc json.RawMessage `json:"final_test_accuracy"`
			}
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, filepath.Join("..", "..", "examples", "pytorch", "load.py"), dir)
			cmd.Env = append(os.Environ(), "SHUFFLEFL_BIN="+exe, asCLIEnv+"=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("load.py: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if want := "test accuracy " + string(sum.Acc); lines[len(lines)-1] != want {
				t.Errorf("load.py's last line is %q, want %q (summary.json)\n%s", lines[len(lines)-1], want, out)
			}
		})
	}
}

// TestExportTestSet writes a tiny run's test set as an .npz and checks its
// arrays' shapes and labels, and that a directory without config.yaml is
// refused with status 2.
func TestExportTestSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := tinyRun("--out", dir); code != 0 {
		t.Fatalf("run: status %d\n%s", code, stderr)
	}
	f := filepath.Join(t.TempDir(), "test.npz")
	code, stdout, stderr := runCLI("export", "--run", dir, "--format", "testset-npz", "--out", f)
	if code != 0 || !strings.Contains(stdout, "500 examples") {
		t.Fatalf("export testset-npz: status %d, stdout %q\n%s", code, stdout, stderr)
	}
	z, err := zip.OpenReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	want := map[string]string{"x.npy": "'shape': (500, 784)", "y.npy": "'shape': (500,)"}
	split, err := data.Load("fashion-mnist-sample", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range z.File {
		r, err := m.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b[:128], []byte(want[m.Name])) {
			t.Errorf("%s: header %q, want %s", m.Name, b[:128], want[m.Name])
		}
		delete(want, m.Name)
		if m.Name == "y.npy" {
			for i, y := range split.Test.Y {
				if v := math.Float32frombits(binary.LittleEndian.Uint32(b[128+4*i:])); v != float32(y) {
					t.Fatalf("y[%d] = %v, want %d", i, v, y)
				}
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("missing members %v", want)
	}
	code, _, stderr = runCLI("export", "--run", t.TempDir(), "--format", "testset-npz", "--out", f)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "config.yaml") {
		t.Errorf("a directory without config.yaml: status %d, stderr %q; want 2 and one line naming config.yaml", code, stderr)
	}
}
