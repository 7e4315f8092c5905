package protocol

import (
	"math"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// TestSplitMixSecureNoise: with Params.Secure a slot's noise share comes
// from the integer-only mechanism.SkellamExact, with mean 0 and variance
// at least slotVar (within 5 standard errors), and the analyzer's output is
// still the exact sum of the rounded updates and the noise shares; without
// Secure the shares are the floating-point Skellam draws, as before.
func TestSplitMixSecureNoise(t *testing.T) {
	const d, slots, n = 8, 19, 10
	p := smParams(d, slots, 24, 256, 1, 1, nil)
	plain := mustSplitMix(t, p)
	p.Secure = true
	sec := mustSplitMix(t, p)
	if plain.exact != nil || sec.exact == nil {
		t.Fatalf("exact sampler: plain %v, secure %v", plain.exact != nil, sec.exact != nil)
	}
	r1, r2 := rng.Stream(9), rng.Stream(9)
	for range 100 {
		if a, b := plain.skellam(r1), mechanism.Skellam(r2, plain.slotVar); a != b {
			t.Fatalf("plain share %d, the float Skellam draws %d", a, b)
		}
	}
	const draws = 20_000
	r := rng.Stream(10)
	var sum, sq float64
	for range draws {
		x := float64(sec.skellam(r))
		sum += x
		sq += x * x
	}
	v := sec.slotVar
	mean := sum / draws
	vr := sq/draws - mean*mean
	if se := math.Sqrt(v / draws); math.Abs(mean) > 5*se {
		t.Errorf("secure share mean %.3f, want 0 ± %.3f", mean, 5*se)
	}
	if se := math.Sqrt((v + 2*v*v) / draws); math.Abs(vr-v) > 5*se {
		t.Errorf("secure share variance %.1f, want %.1f ± %.1f", vr, v, 5*se)
	}
	updates := randomUpdates(rng.Stream(5), n, d, 1)
	for seed := uint64(1); seed <= 5; seed++ {
		got, void, _ := smRound(t, sec, seed, updates)
		if void {
			t.Fatal("void round")
		}
		want := trueSum(sec, seed, updates)
		for j := range want {
			if got[j] != signedMod(want[j], sec.mod) {
				t.Fatalf("seed %d coordinate %d: analyzer %d, true sum %d", seed, j, got[j], signedMod(want[j], sec.mod))
			}
		}
	}
}
