package pld_test

import (
	"fmt"

	"github.com/shufflefl/shufflefl/privacy/pld"
)

// DP-FedAvg (McMahan et al. 2018): 1% of the clients per round, noise
// multiplier 1, 1000 rounds, at delta = 1e-5.
func ExampleSampledGaussian() {
	step, err := pld.SampledGaussian(0.01, 1, pld.Options{})
	if err != nil {
		panic(err)
	}
	run, err := step.SelfCompose(1000)
	if err != nil {
		panic(err)
	}
	eps, err := run.Epsilon(1e-5)
	if err != nil {
		panic(err)
	}
	fmt.Printf("epsilon = %.2f, delta(2) = %.2e\n", eps, run.Delta(2))
	// Output: epsilon = 1.83, delta(2) = 2.67e-06
}

// Shuffling 1000 reports of a 1-LDP randomizer (Feldman, McMillan and
// Talwar's clone reduction), one release and ten releases.
func ExampleShuffleClones() {
	one, err := pld.ShuffleClones(1, 1000, pld.Options{})
	if err != nil {
		panic(err)
	}
	eps1, _ := one.Epsilon(1e-6)
	var acc pld.Accountant
	if err := acc.Add(one, 10); err != nil {
		panic(err)
	}
	eps10, _ := acc.Epsilon(1e-6)
	fmt.Printf("one release: %.3f, ten releases: %.3f\n", eps1, eps10)
	// Output: one release: 0.182, ten releases: 0.623
}
