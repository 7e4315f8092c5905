package bound

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// TestBoundNonFiniteJSON: finding 7. Non-finite numbers are written as null,
// never as an encoding failure (exit 1 "unsupported value").
func TestBoundNonFiniteJSON(t *testing.T) {
	out := &Result{
		Bound:   amplify.Bound{Name: "x", Epsilon: 1, Delta: 1e-6},
		Extra:   map[string]any{"eps_shuffle": math.Inf(1), "nested": map[string]any{"v": math.NaN()}},
		Inputs:  map[string]any{"eps0": 1.0},
		Compare: []amplify.Candidate{{Bound: amplify.Bound{Name: "y", Epsilon: math.Inf(1)}}},
	}
	var b bytes.Buffer
	if err := out.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b.Bytes(), &obj); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, b.String())
	}
	if v, ok := obj["eps_shuffle"]; !ok || v != nil {
		t.Errorf("eps_shuffle = %v, want null", v)
	}
	if obj["nested"].(map[string]any)["v"] != nil {
		t.Errorf("nested NaN not null: %v", obj["nested"])
	}
	if obj["compare"].([]any)[0].(map[string]any)["epsilon"] != nil {
		t.Errorf("row epsilon not null: %v", obj["compare"])
	}
}

// TestBoundPrintAssumption: the best row of a comparison that needs an
// assumption says so.
func TestBoundPrintAssumption(t *testing.T) {
	out := &Result{
		Bound:   amplify.Bound{Name: "assumed", Epsilon: 0.3, Assumption: "some assumption"},
		Compare: []amplify.Candidate{{Bound: amplify.Bound{Name: "assumed", Epsilon: 0.3, Assumption: "some assumption"}}},
	}
	var b bytes.Buffer
	if err := out.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "best (rigorous): assumed epsilon = 0.3 delta = 0 (only under some assumption)") {
		t.Errorf("output:\n%s", b.String())
	}
}
