package audit

import (
	"context"
	"testing"
)

// BenchmarkMechanismGame times 10^6 trials per input of a scalar mechanism
// (the target: under 10 s on 2 cores).
func BenchmarkMechanismGame(b *testing.B) {
	for _, name := range []string{"laplace", "gaussian", "piecewise", "rr"} {
		b.Run(name+"/trials=1e6", func(b *testing.B) {
			m, err := MechanismFor(name, 1, 1e-5, 1)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				if _, err := MechanismGame(context.Background(), m, 1, GameConfig{Trials: 1_000_000, Seed: uint64(i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
