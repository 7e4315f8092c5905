package amplify

import "testing"

func TestInverseEps0RoundTrip(t *testing.T) {
	for _, target := range []float64{0.1, 0.5, 1} {
		e0, err := InverseEps0(ClonesNumerical, target, 100000, 1e-6, 20)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := ClonesNumerical(e0, 100000, 1e-6)
		if e > target {
			t.Errorf("target %v: eps0 %v gives %v", target, e0, e)
		}
		e2, _ := ClonesNumerical(e0*(1+1e-4), 100000, 1e-6)
		if e2 <= target {
			t.Errorf("target %v: eps0 %v is not the largest", target, e0)
		}
	}
	wantInvalid(t, func() error { _, err := InverseEps0(ClonesNumerical, 0, 1000, 1e-6, 20); return err }(), "target epsilon must be > 0")
}

func TestInverseScale(t *testing.T) {
	eps := make([]float64, 5000)
	for i := range eps {
		eps[i] = 0.1 + 0.8*float64(i%100)/99
	}
	s, err := InverseScale(EoNNumerical, eps, 1e-6, 0.2, 100)
	if err != nil {
		t.Fatal(err)
	}
	scaled := make([]float64, len(eps))
	for i, e := range eps {
		scaled[i] = s * e
	}
	b, _ := EoNNumerical(scaled, 1e-6)
	if b.Epsilon > 0.2 {
		t.Errorf("scale %v gives %v > 0.2", s, b.Epsilon)
	}
	for i, e := range eps {
		scaled[i] = s * (1 + 1e-4) * e
	}
	b, _ = EoNNumerical(scaled, 1e-6)
	if b.Epsilon <= 0.2 {
		t.Errorf("scale %v is not the largest", s)
	}
}
