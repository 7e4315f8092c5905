package pld_test

import (
	"fmt"
	"testing"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// BenchmarkSampledGaussian1000Steps: DP-FedAvg accounting, build + 1000-fold
// composition + epsilon (target: under 0.5 s).
func BenchmarkSampledGaussian1000Steps(b *testing.B) {
	for i := 0; i < b.N; i++ {
		p, err := pld.SampledGaussian(0.01, 1, pld.Options{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := p.SelfCompose(1000)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Epsilon(1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShuffleDimsRounds: FLAME SS-Simple accounting, per-coordinate
// shuffle of n = 1000 reports at eps0 = 0.01, composed over d = 7850
// coordinates and 30 rounds (235,500 compositions), epsilon at 1e-6
// (target: under 2 s). Interval 2e-5 keeps the discretisation error of the
// epsilon below 0.1%.
func BenchmarkShuffleDimsRounds(b *testing.B) {
	for i := 0; i < b.N; i++ {
		p, err := pld.ShuffleClones(0.01, 1000, pld.Options{Interval: 2e-5})
		if err != nil {
			b.Fatal(err)
		}
		c, err := p.SelfCompose(7850 * 30)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Epsilon(1e-6); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShuffleDimsRoundsDefaultInterval is the same at the default
// Interval (1e-4; epsilon about 0.8% larger).
func BenchmarkShuffleDimsRoundsDefaultInterval(b *testing.B) {
	for i := 0; i < b.N; i++ {
		p, err := pld.ShuffleClones(0.01, 1000, pld.Options{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := p.SelfCompose(7850 * 30)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Epsilon(1e-6); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSampledGaussianSmallDelta: q = 0.001, sigma = 1, 100 steps,
// delta at eps = 1 (2.27e-14, which needs the tilted bound and a TailMass
// of 1e-30): build + composition + Delta (the tilted view included).
func BenchmarkSampledGaussianSmallDelta(b *testing.B) {
	var d float64
	for b.Loop() {
		p, err := pld.SampledGaussian(0.001, 1, pld.Options{TailMass: 1e-30})
		if err != nil {
			b.Fatal(err)
		}
		c, err := p.SelfCompose(100)
		if err != nil {
			b.Fatal(err)
		}
		d = c.Delta(1)
	}
	b.ReportMetric(d*1e14, "delta/1e-14")
}

// BenchmarkShuffleClones builds the clone pair's PLD at eps0 = 1 (the most
// outcomes per client of the ss-simple calibrations' range) on the grid of
// account.PLDEpsilon's probe (eps0/2^14), for n = 10^4, 10^5 and 10^6
// reporters (about 1.2e6, 1.2e7 and 1.2e8 outcomes of the pair).
func BenchmarkShuffleClones(b *testing.B) {
	const eps0 = 1
	for _, n := range []int{1e4, 1e5, 1e6} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := pld.ShuffleClones(eps0, n, pld.Options{Interval: eps0 / (1 << 14)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
