package mechanism

import (
	"fmt"
	"testing"
	"shufflefl/rng"
)

func BenchmarkClapTmp(b *testing.B) {
	for _, rr := range []float64{0.05, 0.5, 1, 1.5, 2, 2.5, 3, 4} {
		for _, xf := range []float64{0, 0.5, 1} {
			lam, A := 2.0/rr, 1.0
			x := make([]float64, 1000)
			b.Run(fmt.Sprintf("r=%v/x=%v/uni", rr, xf), func(b *testing.B) {
				r := rng.NewSeeded(1)
				for b.Loop() { for i := range x { x[i] = xf }; clapUniformVec(r, x, 1/lam, A, false) }
			})
			b.Run(fmt.Sprintf("r=%v/x=%v/lap", rr, xf), func(b *testing.B) {
				r := rng.NewSeeded(1)
				for b.Loop() { for i := range x { x[i] = clapReject(r, r.ExpFloat64(), xf, lam, 1/lam, A) } }
			})
		}
	}
}
