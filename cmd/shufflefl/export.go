package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/driver/rundir"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/learning/onnx"
)

const exportHelp = `Usage: shufflefl export --run DIR --format safetensors|npz|onnx|testset-npz --out FILE

Converts the global model of a run (DIR/model.json, written by 'shufflefl run'
and 'deploy-local') into a file other tools read: one float32 tensor per
layer, named and shaped as the model's layers (e.g. fc1.weight [784, 128],
input-major; conv weights in HWIO order).

  safetensors  the safetensors format (the run already wrote DIR/model.safetensors)
  npz          numpy's .npz: a zip of NAME.npy files, one per tensor
  onnx         an ONNX model (IR 7, opset 13): input "input" [N, features],
               output "probabilities" [N, classes]; the same tensor names,
               conv weights in ONNX's OIHW order; at most 2 GiB (a protobuf
               message), so a model of more than ~536M parameters is refused
  testset-npz  not the model: the run's test set, reloaded from DIR/config.yaml
               (relative data paths are read from the working directory), as
               an .npz of x [n, features] and y [n] (class indices), float32;
               examples/pytorch/load.py evaluates on it

Exit status: 0 success, 2 bad arguments or an unusable run directory, 1 failure.

Flags:
`

// runExport implements 'shufflefl export'.
func runExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	run := fs.String("run", "", "run `directory` holding model.json")
	format := fs.String("format", "safetensors", "output `format`: safetensors, npz, onnx or testset-npz")
	out := fs.String("out", "", "output `file`")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), exportHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return 2
	}
	n, err := exportModel(*run, *format, *out)
	if err != nil {
		fmt.Fprintf(stderr, "shufflefl export: %v\n", err)
		if errors.Is(err, checks.ErrInvalid) {
			return 2
		}
		return 1
	}
	if n.examples > 0 {
		fmt.Fprintf(stdout, "export: test set of %s (%s) to %s: %d examples\n", *run, n.model, *out, n.examples)
		return 0
	}
	fmt.Fprintf(stdout, "export: %s model of %s (%s) to %s: %d tensors\n", *format, *run, n.model, *out, n.tensors)
	return 0
}

type exported struct {
	model    string // the model, or the data set of a test set
	tensors  int
	examples int // of a test set
}

// exportModel writes the model of run dir in format to out.
func exportModel(dir, format, out string) (exported, error) {
	if dir == "" || out == "" {
		return exported{}, checks.Invalidf("--run DIR and --out FILE are required")
	}
	switch format {
	case "safetensors", "npz", "onnx":
	case "testset-npz":
		return exportTestSet(dir, out)
	default:
		return exported{}, checks.Invalidf("unknown --format %q (known formats: safetensors, npz, onnx, testset-npz)", format)
	}
	m, err := rundir.ReadModelFile(dir)
	if err != nil {
		return exported{}, err
	}
	if format == "onnx" {
		return exportONNX(dir, out, m)
	}
	ts, err := rundir.ModelTensors(m)
	if err != nil {
		return exported{}, fmt.Errorf("%s: %w", dir, err)
	}
	var b bytes.Buffer
	if format == "npz" {
		err = fl.WriteNPZ(&b, ts)
	} else {
		err = fl.WriteSafetensors(&b, ts, rundir.ModelMetadata(m))
	}
	if err != nil {
		return exported{}, err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return exported{}, err
	}
	return exported{model: m.Model, tensors: len(ts)}, nil
}

// exportONNX writes the ONNX graph of run dir's model m to out.
func exportONNX(dir, out string, m rundir.Model) (exported, error) {
	arch, err := fl.NewModel(m.Model, m.Features, m.Classes)
	if err != nil {
		return exported{}, fmt.Errorf("%s: %w", dir, err)
	}
	b, err := onnx.Encode(arch, m.Weights, rundir.ModelMetadata(m))
	if err != nil {
		return exported{}, fmt.Errorf("%s: %w", dir, err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return exported{}, err
	}
	return exported{model: m.Model, tensors: len(arch.Layers())}, nil
}

// exportTestSet writes the test set of run dir, loaded as the run loaded
// it from its config.yaml, to out as an .npz of x and y.
func exportTestSet(dir, out string) (exported, error) {
	cfg := round.DefaultConfig()
	if _, _, err := loadConfigFile(filepath.Join(dir, "config.yaml"), &cfg); err != nil {
		return exported{}, fmt.Errorf("%s: %w", dir, err)
	}
	split, err := cfg.LoadData()
	if err != nil {
		return exported{}, fmt.Errorf("%s: the run's data set: %w", dir, err)
	}
	test := split.Test
	if test == nil || test.Len() == 0 || test.IsRegression() {
		return exported{}, checks.Invalidf("%s: data set %s has no classification test set", dir, cfg.Dataset)
	}
	y := make([]float32, test.Len())
	for i, v := range test.Y {
		y[i] = float32(v)
	}
	ts := []fl.Tensor{
		{Name: "x", Shape: []int{test.Len(), test.Features}, Data: test.X},
		{Name: "y", Shape: []int{test.Len()}, Data: y},
	}
	var b bytes.Buffer
	if err := fl.WriteNPZ(&b, ts); err != nil {
		return exported{}, err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return exported{}, err
	}
	return exported{model: cfg.Dataset, examples: test.Len()}, nil
}
