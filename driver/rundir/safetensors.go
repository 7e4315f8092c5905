package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shufflefl/shufflefl/learning/fl"
)

// SafetensorsFile is the global model in the safetensors format, written
// beside model.json: one float32 tensor per layer of package fl's layout,
// named and shaped as Model.Layers gives them.
const SafetensorsFile = "model.safetensors"

// ModelTensors rebuilds m's architecture and splits its weights into the
// layers' float32 tensors. An architecture that cannot be rebuilt, or
// weights of the wrong length, is an error wrapping checks.ErrInvalid.
func ModelTensors(m Model) ([]fl.Tensor, error) {
	arch, err := fl.NewModel(m.Model, m.Features, m.Classes)
	if err != nil {
		return nil, err
	}
	return fl.Tensors(arch, m.Weights)
}

// ModelMetadata is the "__metadata__" of an exported model: its
// architecture, data set, input and output sizes and round.
func ModelMetadata(m Model) map[string]string {
	return map[string]string{
		"model":    m.Model,
		"dataset":  m.Dataset,
		"features": fmt.Sprint(m.Features),
		"classes":  fmt.Sprint(m.Classes),
		"round":    fmt.Sprint(m.Round),
		"format":   "shufflefl",
	}
}

// writeSafetensorsFile writes m as dir's model.safetensors.
func writeSafetensorsFile(dir string, m Model) error {
	ts, err := ModelTensors(m)
	if err != nil {
		return fmt.Errorf("writing %s: %w", SafetensorsFile, err)
	}
	var b bytes.Buffer
	if err := fl.WriteSafetensors(&b, ts, ModelMetadata(m)); err != nil {
		return fmt.Errorf("writing %s: %w", SafetensorsFile, err)
	}
	if err := WriteAtomic(filepath.Join(dir, SafetensorsFile), b.Bytes()); err != nil {
		return fmt.Errorf("writing %s: %w", SafetensorsFile, err)
	}
	return nil
}

// ReadModelFile reads dir's model.json.
func ReadModelFile(dir string) (Model, error) {
	path := filepath.Join(dir, ModelFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Model{}, BadFile(path, err)
	}
	var m Model
	if err := json.Unmarshal(b, &m); err != nil {
		return Model{}, BadFile(path, err)
	}
	if len(m.Weights) != m.Dim {
		return Model{}, BadFile(path, fmt.Errorf("%d weights for dim %d", len(m.Weights), m.Dim))
	}
	return m, nil
}
