package account

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// TestComposers checks the Composer contract on both implementations: 0
// before anything is composed, 1 for a bad eps, a delta that falls with eps,
// and agreement with the implementation's own epsilon at the same delta.
func TestComposers(t *testing.T) {
	rdp := NewRDPAccountant()
	var pa pld.Accountant
	for _, tc := range []struct {
		name    string
		c       Composer
		add     func() error
		epsilon func(delta float64) (float64, error)
	}{
		{"rdp", rdp, func() error { return rdp.AddSampledGaussian(0.01, 1.1, 1000) },
			func(d float64) (float64, error) { e, _, err := rdp.Epsilon(d); return e, err }},
		{"pld", &pa, func() error {
			p, err := pld.SampledGaussian(0.01, 1.1, pld.Options{Interval: 1e-3})
			if err != nil {
				return err
			}
			return pa.Add(p, 1000)
		}, pa.Epsilon},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := tc.c.Delta(1); d != 0 || tc.c.Steps() != 0 {
				t.Fatalf("empty: delta %v, steps %d; want 0, 0", d, tc.c.Steps())
			}
			if err := tc.add(); err != nil {
				t.Fatal(err)
			}
			if tc.c.Steps() != 1000 {
				t.Errorf("steps %d, want 1000", tc.c.Steps())
			}
			for _, bad := range []float64{math.NaN(), -1} {
				if d := tc.c.Delta(bad); d != 1 {
					t.Errorf("Delta(%v) = %v, want 1", bad, d)
				}
			}
			if d1, d2 := tc.c.Delta(1), tc.c.Delta(2); !(d2 < d1 && d1 < 1) {
				t.Errorf("Delta(1) = %v, Delta(2) = %v: want 1 > Delta(1) > Delta(2)", d1, d2)
			}
			e, err := tc.epsilon(1e-5)
			if err != nil {
				t.Fatal(err)
			}
			if d := tc.c.Delta(e); d > 1e-5*(1+1e-6) || d < 1e-5*0.9 {
				t.Errorf("Delta(Epsilon(1e-5) = %v) = %v, want 1e-5 (within 10%% below)", e, d)
			}
		})
	}
}
