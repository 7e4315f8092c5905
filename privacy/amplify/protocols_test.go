package amplify

import (
	"math"
	"testing"
)

func TestFLAMEIndexPrivacy(t *testing.T) {
	var tv flameVectors
	loadJSON(t, "flame.json", &tv)
	ip := tv.IndexPrivacy
	nu, l, err := FLAMEIndexNu(ip.N, ip.Np, ip.Beta)
	if err != nil || !near(nu, ip.Nu, 1e-12) || l != ip.L {
		t.Errorf("FLAMEIndexNu = (%v, %d, %v), want (%v, %d)", nu, l, err, ip.Nu, ip.L)
	}
	tests := []struct {
		nu, beta   float64
		lmin, lmax int
	}{
		{1, 0.1, 10, 10}, // strongest: l = ceil(1/beta)
		// nu = 1/beta: Definition 3's second inequality still needs l >= 2
		// (Proposition 2's "l = 1" gives nu = infinity).
		{10, 0.1, 2, 10},
		{3.125, 0.02, 16, 50}, // FLAME's nu with l = 16 valid
		{2, 0.25, 2, 4},
	}
	for _, tc := range tests {
		lmin, lmax, err := FLAMEIndexSlots(tc.nu, tc.beta)
		if err != nil || lmin != tc.lmin || lmax != tc.lmax {
			t.Errorf("FLAMEIndexSlots(%v, %v) = (%d, %d, %v), want (%d, %d)", tc.nu, tc.beta, lmin, lmax, err, tc.lmin, tc.lmax)
		}
		// Definition 3 holds at lmin: Pr[top | reported] = 1/l.
		p := 1 / float64(lmin)
		if p > math.Min(tc.nu*tc.beta, (tc.nu-1+tc.beta)/tc.nu)+1e-12 {
			t.Errorf("nu=%v beta=%v: l = %d violates Definition 3", tc.nu, tc.beta, lmin)
		}
	}
	wantInvalid(t, func() error { _, _, err := FLAMEIndexSlots(20, 0.1); return err }(), "nu must be in [1, 1/beta]")
	wantInvalid(t, func() error { _, _, err := FLAMEIndexNu(1000, 10, 0.1); return err }(), "np = 10 must be >= n beta")
}

func TestProtocolErrors(t *testing.T) {
	amp := BlanketAmplifier(Randomizer{Mech: Laplace}, Bennett)
	tests := []struct {
		name  string
		err   error
		wants string
	}{
		{"padding too small", func() error { _, err := SSDouble(78.5, 7850, 157, 1000, 10, 5e-6, amp); return err }(), "np = 10 must be >="},
		{"k > d", func() error { _, err := SSDouble(78.5, 100, 157, 1000, 333, 5e-6, amp); return err }(), "k must be in [1, 100]"},
		{"eps_l", func() error { _, err := SSSimple(-1, 100, 1000, 5e-6, amp); return err }(), "eps_l must be > 0"},
		{"delta_c", func() error { _, err := SSSimple(1, 100, 1000, 1, amp); return err }(), "delta_c must be in (0, 1)"},
		{"sapes b", func() error { _, err := SAPESUserLevel(0.05, 0, 0, 1e-8); return err }(), "b must be >= 1"},
		{"sapes delta'", func() error { _, err := SAPESUserLevel(0.05, 0, 10, 0); return err }(), "delta' must be in (0, 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantInvalid(t, tc.err, tc.wants) })
	}
}

func TestSSSimpleComposition(t *testing.T) {
	// Independent check of Theorem 1's arithmetic with a constant amplifier.
	amp := func(eps0 float64, n int, delta float64) (float64, error) { return 0.01, nil }
	r, err := SSSimple(10, 100, 1000, 1e-5, amp)
	if err != nil {
		t.Fatal(err)
	}
	dcd := 1e-5 / 101
	adv := 0.01*math.Sqrt(2*100*math.Log(1/dcd)) + 100*0.01*math.Expm1(0.01)
	if want := math.Min(1, adv); !near(r.Epsilon, want, 1e-12) || !near(r.Delta, 1e-5, 1e-18) {
		t.Errorf("SSSimple = %+v, want eps %v", r, want)
	}
}
