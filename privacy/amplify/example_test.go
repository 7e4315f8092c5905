package amplify_test

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/privacy/amplify"
)

// The authors' example of Feldman, McMillan and Talwar 2022: 100,000
// reports of a 4-LDP randomizer.
func ExampleClonesNumerical() {
	eps, err := amplify.ClonesNumerical(4, 100000, 1e-6)
	if err != nil {
		panic(err)
	}
	closed, _ := amplify.ClonesClosedForm(4, 100000, 1e-6)
	fmt.Printf("numerical %.4f, closed form %.4f\n", eps, closed)
	// Output: numerical 0.1698, closed form 0.5378
}

// FLAME's SS-Simple on MNIST (d = 7850, n = 1000, eps_l = 78.5) with the
// corrected privacy-blanket Bennett bound for the Laplace mechanism.
func ExampleSSSimple() {
	deltaC := 0.01 / math.Pow(1000, 1.1)
	amp := amplify.BlanketAmplifier(amplify.Randomizer{Mech: amplify.Laplace}, amplify.Bennett)
	r, err := amplify.SSSimple(78.5, 7850, 1000, deltaC, amp)
	if err != nil {
		panic(err)
	}
	fmt.Printf("eps_c = %.3f, delta_c = %.2e\n", r.Epsilon, r.Delta)
	// Output: eps_c = 0.928, delta_c = 5.01e-06
}

// Personalized budgets: EoN's numerical bound with exact clone counts.
func ExampleEoNNumerical() {
	eps := make([]float64, 10000)
	for i := range eps {
		eps[i] = 0.05 + 0.95*float64(i)/float64(len(eps)-1) // spread over [0.05, 1]
	}
	b, err := amplify.EoNNumerical(eps, 1e-8)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %.3f\n", b.Name, b.Epsilon)
	// Output: eon-numerical: 0.057
}

// Best names the tightest rigorous bound.
func ExampleBestUniform() {
	b, err := amplify.BestUniform(4, 100000, 1e-6, amplify.Randomizer{Mech: amplify.Generic})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %.4f\n", b.Name, b.Epsilon)
	// Output: clones-numerical 0.1698
}

// E-APES's Gaussian bound is an approximation and says so.
func ExampleEAPES() {
	eps := make([]float64, 10000)
	for i := range eps {
		eps[i] = 0.05 + 0.95*float64(i)/float64(len(eps)-1)
	}
	b, mu, err := amplify.EAPES(eps, nil, 1e-8)
	if err != nil {
		panic(err)
	}
	fmt.Printf("mu = %.4f, eps = %.3f, approximation = %v\n", mu, b.Epsilon, b.Approximation)
	// Output: mu = 0.0231, eps = 0.107, approximation = true
}

// FLAME Theorem 5: the strongest index privacy SS-Topk allows with
// n = 1000 users padded to n_p = 333 reports per dimension and beta = 1/50.
func ExampleFLAMEIndexNu() {
	nu, l, err := amplify.FLAMEIndexNu(1000, 333, 0.02)
	if err != nil {
		panic(err)
	}
	fmt.Printf("nu = %.3f with l = %d\n", nu, l)
	// Output: nu = 3.125 with l = 16
}

// The inverse question: the largest local epsilon whose shuffled
// guarantee (FMT numerical bound, 10^5 users) is at most 0.5.
func ExampleInverseEps0() {
	e0, err := amplify.InverseEps0(amplify.ClonesNumerical, 0.5, 100000, 1e-6, 20)
	if err != nil {
		panic(err)
	}
	e, _ := amplify.ClonesNumerical(e0, 100000, 1e-6)
	fmt.Printf("eps0 = %.3f gives central eps %.4f <= 0.5\n", e0, e)
	// Output: eps0 = 5.917 gives central eps 0.5000 <= 0.5
}
