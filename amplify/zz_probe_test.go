package amplify

import ("testing";"time")

func TestProbeExtremes(t *testing.T) {
	for _, e0 := range []float64{1e-9, 1e-3, 30, 200} {
		for _, n := range []int{1000000, 1000000000} {
			s := time.Now()
			ClonesNumerical(e0, n, 1e-6)
			t.Log("clones", e0, n, time.Since(s))
			for _, m := range []Mechanism{Laplace, KRR, Generic} {
				for _, v := range []BlanketVariant{Bennett, Hoeffding, BennettLegacyFLAME} {
					if n == 1000000000 && v == BennettLegacyFLAME { continue }
					s := time.Now()
					BlanketEpsilon(Randomizer{Mech: m, K: 3}, v, e0, n, 1e-6)
					if d := time.Since(s); d > 50*time.Millisecond { t.Log("blanket", m, v, e0, n, d) }
				}
			}
		}
	}
}
