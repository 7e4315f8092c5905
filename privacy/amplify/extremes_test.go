package amplify

import (
	"math"
	"testing"
)

// Extreme but legal inputs never produce NaN, Inf or an epsilon above the
// local one; impractical exact evaluations are refused with an error.
func TestExtremeInputsNeverNaN(t *testing.T) {
	for _, e0 := range []float64{1e-9, 1e-3, 30, 200, 800, 1e5} {
		for _, n := range []int{2, 10, 1000000, 1000000000} {
			e, err := ClonesNumerical(e0, n, 1e-6)
			if err == nil && (math.IsNaN(e) || e > e0 || e < 0) {
				t.Errorf("clones eps0=%v n=%d: %v", e0, n, e)
			}
			for _, m := range []Mechanism{Laplace, KRR, Generic} {
				for _, v := range []BlanketVariant{Bennett, Hoeffding, BennettLegacyFLAME} {
					if n == 1000000000 && v == BennettLegacyFLAME {
						continue
					}
					b, _, err := BlanketEpsilon(Randomizer{Mech: m, K: 3}, v, e0, n, 1e-6)
					if err != nil || math.IsNaN(b) || b > e0 || b <= 0 {
						t.Errorf("blanket %v %v eps0=%v n=%d: %v %v", m, v, e0, n, b, err)
					}
				}
			}
		}
	}
	for _, eps := range [][]float64{{1e-9, 1e-9}, {700, 0.1, 0.1}, {1e5, 1e-5, 3}} {
		for _, f := range []PersonalBound{EoNNumerical, EoNClosedForm, EoNWorstCase, UniS, UniSNumerical, BestPersonal} {
			b, err := f(eps, 1e-6)
			if err == nil && (math.IsNaN(b.Epsilon) || math.IsInf(b.Epsilon, 0)) {
				t.Errorf("%v: %v", eps, b)
			}
		}
		b, _, err := EAPES(eps, nil, 1e-6)
		if err == nil && (math.IsNaN(b.Epsilon) || math.IsInf(b.Epsilon, 0)) {
			t.Errorf("eapes %v: %v", eps, b)
		}
	}
	if _, err := ClonesNumerical(1e-3, 1000000000, 1e-6); err == nil {
		t.Error("want an error for an impractically expensive exact evaluation")
	}
}
