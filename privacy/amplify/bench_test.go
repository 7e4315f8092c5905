package amplify

import (
	"fmt"
	"testing"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/privacy/account"
)

func BenchmarkClonesNumerical(b *testing.B) {
	for _, n := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := ClonesNumerical(4, n, 1e-6); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchBudgets(b *testing.B, n int) []float64 {
	eps, err := account.Budgets("uniform2", n, rng.Stream(1))
	if err != nil {
		b.Fatal(err)
	}
	return eps
}

func BenchmarkEoNNumerical(b *testing.B) {
	for _, n := range []int{10000, 1000000} {
		eps := benchBudgets(b, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := EoNNumerical(eps, 1e-8); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEoNClosedForm(b *testing.B) {
	eps := benchBudgets(b, 1000000)
	b.Run("n=1000000", func(b *testing.B) {
		for b.Loop() {
			if _, err := EoNClosedForm(eps, 1e-8); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEAPES(b *testing.B) {
	eps := benchBudgets(b, 1000000)
	b.Run("n=1000000", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := EAPES(eps, nil, 1e-8); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCompareUniform(b *testing.B) {
	for b.Loop() {
		if _, err := CompareUniform(1, 100000, 1e-6, Randomizer{Mech: Laplace}, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFLAMESSDouble(b *testing.B) {
	amp := BlanketAmplifier(Randomizer{Mech: Laplace}, Bennett)
	for b.Loop() {
		if _, err := SSDouble(78.5, 7850, 157, 1000, 333, 5.011872336272725e-06, amp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFLAMECountLowerBound is the count statistic at FLAME's SS-Double
// setting (2.6 million released values, 161 thresholds).
func BenchmarkFLAMECountLowerBound(b *testing.B) {
	for b.Loop() {
		if _, _, err := FLAMECountLowerBound(Randomizer{Mech: Laplace}, 0.5, 157, 7850*333-157, 5.011872336272725e-06); err != nil {
			b.Fatal(err)
		}
	}
}
