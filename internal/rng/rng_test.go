package rng

import (
	"testing"
)

func TestStreamReproducible(t *testing.T) {
	a := Stream(42, LabelNoise, 3, 7)
	b := Stream(42, LabelNoise, 3, 7)
	for i := 0; i < 100; i++ {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d: %d != %d", i, x, y)
		}
	}
}

func TestStreamsDiffer(t *testing.T) {
	tests := []struct {
		name string
		a, b []uint64
	}{
		{"label", []uint64{LabelNoise, 1, 1}, []uint64{LabelTraining, 1, 1}},
		{"round", []uint64{LabelNoise, 1, 1}, []uint64{LabelNoise, 2, 1}},
		{"client", []uint64{LabelNoise, 1, 1}, []uint64{LabelNoise, 1, 2}},
		{"swapped", []uint64{LabelNoise, 1, 2}, []uint64{LabelNoise, 2, 1}},
		{"prefix", []uint64{LabelNoise, 1}, []uint64{LabelNoise, 1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if Stream(1, tc.a...).Uint64() == Stream(1, tc.b...).Uint64() {
				t.Fatalf("streams %v and %v coincide", tc.a, tc.b)
			}
		})
	}
}

func TestCryptoSourcesDiffer(t *testing.T) {
	if NewCrypto().Uint64() == NewCrypto().Uint64() {
		t.Fatal("two crypto generators produced the same first word")
	}
	if NewCryptoDirect().Uint64() == NewCryptoDirect().Uint64() {
		t.Fatal("crypto/rand produced the same word twice")
	}
}

func TestUniformMean(t *testing.T) {
	// The mean of 1e5 uniforms has standard deviation 1/sqrt(12e5) ~ 9.1e-4;
	// 6 sigma gives a false-failure rate below 1e-8.
	for name, r := range map[string]interface{ Float64() float64 }{
		"pcg": NewSeeded(9), "chacha8": NewCrypto(),
	} {
		s := 0.0
		const n = 100000
		for i := 0; i < n; i++ {
			s += r.Float64()
		}
		if m := s / n; m < 0.5-6*9.2e-4 || m > 0.5+6*9.2e-4 {
			t.Errorf("%s: mean %v", name, m)
		}
	}
}
