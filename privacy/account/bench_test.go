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
// = 100,000 compositions. After the first iteration the clone pair comes
// from the memo clonePairs, as in a run's accounting round after round.
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

// ssSimpleCalibration is the sequence of per-coordinate local epsilons
// eps0 whose d = 7,850 shuffles PLDEpsilon composed while `shufflefl run
// --protocol ss-simple` (default target epsilon 8 at delta 1e-6)
// calibrated its budget with n = 10^5 and 10^6 clients in its one round
// (logged from pld.ShuffleClones, branch h-pld): the full accountant's
// bracket and bisection, then the final check and the run's plan at the
// scale found.
var ssSimpleCalibration = map[int][]float64{
	1e5: {0.7133563948321944, 0.8916954935402429, 1.1146193669253037, 1.3932742086566297,
		1.741592760820787, 2.1769909510259837, 2.72123868878248, 2.4339498764480076,
		2.30188767238502, 2.366997933205416, 2.4002404727605966, 2.3835612511996254,
		2.375265154726526, 2.379409587299091, 2.381484514545288, 2.379409587299091, 2.379409587299091},
	1e6: {1.8945754875978533, 2.3682193594973167, 2.9602741993716455, 3.700342749214557,
		4.625428436518197, 4.137108963646104, 4.374460131881763, 4.25412954935796,
		4.313875300646337, 4.344062098610799, 4.359234618690713, 4.366840739594395,
		4.363036021665286, 4.363036021665286, 4.363036021665286},
}

// BenchmarkPLDEpsilonCalibration: the PLD evaluations of an ss-simple
// calibration at n = 10^5 and 10^6 (ssSimpleCalibration), each
// PLDEpsilon of 7,850 clone pairs at delta 1e-6, from an empty memo of
// clone pairs.
func BenchmarkPLDEpsilonCalibration(b *testing.B) {
	for _, n := range []int{1e5, 1e6} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				resetClonePairs()
				for _, eps0 := range ssSimpleCalibration[n] {
					c := Component{Kind: KindShuffle, Eps0: eps0, Reporters: n, Epsilon: eps0, Count: 7850}
					if _, err := PLDEpsilon([]Component{c}, 1e-6); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
