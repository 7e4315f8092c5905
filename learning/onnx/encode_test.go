package onnx_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/learning/onnx"
)

func TestEncodeRefuses(t *testing.T) {
	huge, err := fl.NewModel("mlp:8192,65536", 784, 10) // 544 million parameters, 2.2 GB of float32
	if err != nil {
		t.Fatal(err)
	}
	small, err := fl.NewModel(fl.LogReg, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	nan := make([]float64, small.Dim())
	nan[5] = math.NaN()
	for _, c := range []struct {
		name string
		m    fl.Model
		w    []float64
		want string
	}{
		{"over 2 GiB", huge, nil, "limited to 2 GiB"},
		{"short weights", small, make([]float64, small.Dim()-1), "has 15 parameters, got 14 weights"},
		{"NaN weight", small, nan, "weight 5 of model logreg is NaN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := onnx.Encode(c.m, c.w, nil)
			if !errors.Is(err, checks.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Encode: %v, want an invalid-input error containing %q", err, c.want)
			}
		})
	}
}

// python returns a Python interpreter that imports module, or skips the
// test saying what to install (fails it under CI=true, where setup.sh
// --with-torch installs the package).
func python(t *testing.T, module, pkg string) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import "+module).Run() == nil {
			return path
		}
	}
	msg := fmt.Sprintf("no python3 with %s: install Debian's %s (scripts/setup.sh --with-torch) to run this test", module, pkg)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI installs it")
	}
	t.Skip(msg)
	return ""
}

// TestONNXChecker runs onnx.checker, with shape inference, on the export
// of each kind of model.
func TestONNXChecker(t *testing.T) {
	py := python(t, "onnx", "python3-onnx")
	s := sample(t)
	dir := t.TempDir()
	for _, spec := range []string{fl.LogReg, "mlp:64,32", "dense=48,tanh,dense=10,softmax", fl.CNN} {
		m, w := trained(t, spec, s.Train, 2)
		b, err := onnx.Encode(m, w, map[string]string{"model": m.Name()})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, strings.NewReplacer(":", "_", ",", "_", "=", "_").Replace(spec)+".onnx")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		script := `import sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
out = m.graph.output[0].type.tensor_type.shape.dim
print(m.opset_import[0].version, [d.dim_param or d.dim_value for d in out], {p.key: p.value for p in m.metadata_props})`
		out, err := exec.Command(py, "-c", script, path).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: onnx.checker: %v\n%s", spec, err, out)
		}
		want := "13 ['N', 10] {'model': '" + m.Name() + "'}"
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s: python printed %q, want %q", spec, got, want)
		}
	}
}
