package account

import (
	"fmt"
	"testing"

	"shufflefl/rng"
)

func BenchmarkSampledGaussianRDP(b *testing.B) {
	orders := DefaultRDPOrders()
	for _, c := range []struct{ q, sigma float64 }{{0.01, 1.1}, {0.1, 0.7}, {0.5, 5}} {
		b.Run(fmt.Sprintf("q=%v/sigma=%v", c.q, c.sigma), func(b *testing.B) {
			for b.Loop() {
				if _, err := SampledGaussianRDP(c.q, c.sigma, orders); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGDPToEpsilon(b *testing.B) {
	for b.Loop() {
		if _, err := GDPToEpsilon(0.7, 1e-6); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBudgets(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("mixgauss2/n=%d", n), func(b *testing.B) {
			r := rng.Stream(1, rng.LabelBudget)
			for b.Loop() {
				if _, err := Budgets("mixgauss2", n, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLedgerCharge(b *testing.B) {
	l := NewLedger(NewMemoryStore())
	if err := l.SetDefaultCap(Cap{Epsilon: 1e18}); err != nil {
		b.Fatal(err)
	}
	round := 0
	for b.Loop() {
		round++
		if err := l.Charge(Release{Client: "c", Round: round, Mechanism: "m", LocalEpsilon: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
