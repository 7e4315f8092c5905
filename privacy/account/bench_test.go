package account

import (
	"fmt"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
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

// BenchmarkAccountantPLDShuffle: the run accountant's plan of a shuffled
// per-coordinate protocol (ss-simple: FMT's clone pair at eps0 = 0.14554,
// n = 1000) over d x rounds compositions, the PLD method included: 7850 x 5
// = 39,250 (the issue-17 run, epsilon 4.771 at delta 1e-6) and 10,000 x 10
// = 100,000 compositions.
func BenchmarkAccountantPLDShuffle(b *testing.B) {
	const eps0 = 1142.5142913437643 / 7850
	for _, c := range []struct{ d, rounds int }{{7850, 5}, {10000, 10}} {
		b.Run(fmt.Sprintf("k=%d", c.d*c.rounds), func(b *testing.B) {
			a, err := NewAccountant(1e-6)
			if err != nil {
				b.Fatal(err)
			}
			s := Statement{SampleRate: 1, Sampled: 1000, Reporters: 1000, Epsilon: eps0 * float64(c.d),
				Components: []Component{{Epsilon: eps0, Count: c.d, Kind: KindShuffle, Eps0: eps0, Reporters: 1000}}}
			var sp Spent
			for b.Loop() {
				if sp, err = a.Plan(s, c.rounds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(sp.Epsilon, "epsilon")
		})
	}
}
