package account

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

type vectors struct {
	SampledGaussianRDP []struct {
		Source         string
		Q, Sigma       float64
		Steps          int
		Orders, RDP    []float64
		AbsTol, RelTol float64 `json:",omitempty"`
	} `json:"sampled_gaussian_rdp"`
	AdvancedComposition []struct {
		Source     string
		Eps, Delta float64
		K          int
		DeltaPrime float64 `json:"delta_prime"`
		WantEps    float64 `json:"want_eps"`
		RelTol     float64 `json:"rel_tol"`
	} `json:"advanced_composition"`
	DPrivacyComposition []struct {
		Source string
		Eps    []float64
		Want   float64
	} `json:"dprivacy_composition"`
}

// TestVectors runs the published numbers in testdata/published.json.
func TestVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/published.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.SampledGaussianRDP) == 0 || len(v.AdvancedComposition) == 0 || len(v.DPrivacyComposition) == 0 {
		t.Fatal("testdata/published.json lost its vectors")
	}
	for _, c := range v.SampledGaussianRDP {
		got, err := SampledGaussianRDP(c.Q, c.Sigma, c.Orders)
		if err != nil {
			t.Fatalf("%s: %v", c.Source, err)
		}
		for i := range got {
			g := got[i] * float64(c.Steps)
			if c.AbsTol > 0 && math.Abs(g-c.RDP[i]) > c.AbsTol {
				t.Errorf("%s: order %v: %v, want %v", c.Source, c.Orders[i], g, c.RDP[i])
			}
			if c.RelTol > 0 && !approx(g, c.RDP[i], c.RelTol) {
				t.Errorf("%s: order %v: %v, want %v", c.Source, c.Orders[i], g, c.RDP[i])
			}
		}
	}
	for _, c := range v.AdvancedComposition {
		e, _, err := ComposeAdvanced(c.Eps, c.Delta, c.K, c.DeltaPrime)
		if err != nil || !approx(e, c.WantEps, c.RelTol) {
			t.Errorf("%s: got %v (%v), want %v", c.Source, e, err, c.WantEps)
		}
	}
	for _, c := range v.DPrivacyComposition {
		e, err := ComposeDPrivacy(c.Eps...)
		if err != nil || !approx(e, c.Want, 1e-12) {
			t.Errorf("%s: got %v (%v), want %v", c.Source, e, err, c.Want)
		}
	}
}
