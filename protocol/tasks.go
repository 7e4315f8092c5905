package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/amplify"
	"github.com/shufflefl/shufflefl/privacy/mechanism"
)

// This file holds the two small tasks of E-APES Section 4.2 as complete
// encode–shuffle–analyze runs: the shuffled personalized mean (Algorithm 2)
// and the shuffled personalized frequency estimate (Algorithm 3). They take
// the generator as a parameter: seeded streams for simulation, rng.NewCrypto
// for anything real (the Laplace noise here is the plain, simulation
// variant).

// ShuffledMeanResult is the outcome of ShuffledMean.
type ShuffledMeanResult struct {
	// Estimate is z = (1/n) Σ y_pi(i), the analyzer's estimate of the mean of
	// the (clipped) inputs.
	Estimate float64
	// Variance is Var(z) = Σ_i 2 (Δf/eps_i)² / n², which does not depend on
	// the data.
	Variance float64
	// Reports are the noisy values in the shuffled order the analyzer sees.
	Reports []float64
	// Epsilons are the budgets, shuffled independently of Reports.
	Epsilons []float64
	// Mu is E-APES Corollary 1's mu = sqrt(2 / Σ_{i<n} 1/(1+e^eps_i)) (with
	// the largest-p user taken as the differing one, amplify.EAPESMu): an
	// approximate mu-GDP level, not a bound. +Inf when n < 2 (no shuffle
	// amplification is possible).
	Mu float64
}

// ShuffledMean runs E-APES Algorithm 2 ("shuffled noisy average satisfies
// personalized-LDP") end to end: every user i clips its value x_i to
// [lo, hi] (the range that fixes the sensitivity Δf = hi - lo; Algorithm 2
// leaves it implicit, E-APES's experiment clips N(50, σ²) data to [20, 80]),
// releases y_i = x_i + Lap(Δf/eps_i), which is eps_i-LDP; the shuffler
// permutes the y_i and, separately, the budgets; the analyzer returns
// z = (1/n) Σ y_i. Laplace noise has mean zero, so z is unbiased for the
// mean of the clipped inputs whatever the budgets, with variance
// Σ 2(Δf/eps_i)²/n².
func ShuffledMean(r *rand.Rand, x, eps []float64, lo, hi float64) (ShuffledMeanResult, error) {
	n := len(x)
	if err := tasksCheck(n, eps); err != nil {
		return ShuffledMeanResult{}, fmt.Errorf("shuffled mean (E-APES Algorithm 2): %w", err)
	}
	if err := checks.Finite("lo", lo); err != nil {
		return ShuffledMeanResult{}, fmt.Errorf("shuffled mean: %w", err)
	}
	if err := checks.Finite("hi", hi); err != nil {
		return ShuffledMeanResult{}, fmt.Errorf("shuffled mean: %w", err)
	}
	if !(hi > lo) {
		return ShuffledMeanResult{}, checks.Invalidf("shuffled mean: need lo < hi for the sensitivity hi - lo, got [%v, %v]", lo, hi)
	}
	if err := checks.Vector("values", x, n); err != nil {
		return ShuffledMeanResult{}, fmt.Errorf("shuffled mean: %w", err)
	}
	sens := hi - lo
	res := ShuffledMeanResult{Reports: make([]float64, n), Epsilons: append([]float64(nil), eps...)}
	// Client role: clip and randomize.
	for i, v := range x {
		lap, err := mechanism.NewLaplace(eps[i], sens)
		if err != nil {
			return ShuffledMeanResult{}, fmt.Errorf("shuffled mean: user %d: %w", i, err)
		}
		res.Reports[i] = lap.Randomize(r, math.Min(hi, math.Max(lo, v)))
		res.Variance += lap.Variance()
	}
	res.Variance /= float64(n) * float64(n)
	// Shuffler role: two independent permutations.
	r.Shuffle(n, func(a, b int) { res.Reports[a], res.Reports[b] = res.Reports[b], res.Reports[a] })
	r.Shuffle(n, func(a, b int) { res.Epsilons[a], res.Epsilons[b] = res.Epsilons[b], res.Epsilons[a] })
	// Analyzer role.
	for _, y := range res.Reports {
		res.Estimate += y
	}
	res.Estimate /= float64(n)
	res.Mu = tasksMu(res.Epsilons)
	return res, nil
}

// ShuffledFrequencyResult is the outcome of ShuffledFrequency.
type ShuffledFrequencyResult struct {
	// Estimate is z = (A - B)/(n - 2B), the estimated fraction of ones.
	Estimate float64
	// Variance is Var(z) = Σ q_i(1-q_i)/(n-2B)², q_i = 1/(1+e^eps_i),
	// independent of the data.
	Variance float64
	// Reports are the randomized bits in the shuffled order.
	Reports []int
	// Epsilons are the budgets, shuffled independently of Reports.
	Epsilons []float64
	// Mu is E-APES Corollary 2's approximate mu-GDP level (see
	// ShuffledMeanResult.Mu).
	Mu float64
}

// ShuffledFrequency runs E-APES Algorithm 3 ("shuffled personalized-LDP
// frequency estimation") end to end: user i reports its bit through binary
// randomized response with its own eps_i (keep with probability
// e^eps_i/(1+e^eps_i): eps_i-LDP); the shuffler permutes the bits and,
// separately, the budgets; the analyzer computes A = Σ y, B = Σ 1/(1+e^eps)
// from the shuffled lists and returns z = (A - B)/(n - 2B)
// (mechanism.PersonalizedFrequency). Algorithm 3 says z is in N; it is a
// real-valued estimate of the FRACTION of ones. Its expectation is
// Σ x_i(1-2q_i)/(n-2B), which equals the true fraction when the budgets are
// equal or, in expectation, when budgets are assigned independently of the
// bits (E-APES's setting); "z is an unbiased estimator of c" needs that
// assumption (TestShuffledFrequencyBiasWhenBudgetsCorrelate).
func ShuffledFrequency(r *rand.Rand, bits []int, eps []float64) (ShuffledFrequencyResult, error) {
	n := len(bits)
	if err := tasksCheck(n, eps); err != nil {
		return ShuffledFrequencyResult{}, fmt.Errorf("shuffled frequency (E-APES Algorithm 3): %w", err)
	}
	for i, b := range bits {
		if b != 0 && b != 1 {
			return ShuffledFrequencyResult{}, checks.Invalidf("shuffled frequency: bit of user %d is %d, want 0 or 1", i, b)
		}
	}
	res := ShuffledFrequencyResult{Reports: make([]int, n), Epsilons: append([]float64(nil), eps...)}
	for i, b := range bits {
		rr, err := mechanism.NewBinaryRR(eps[i])
		if err != nil {
			return ShuffledFrequencyResult{}, fmt.Errorf("shuffled frequency: user %d: %w", i, err)
		}
		res.Reports[i] = rr.Randomize(r, b)
	}
	r.Shuffle(n, func(a, b int) { res.Reports[a], res.Reports[b] = res.Reports[b], res.Reports[a] })
	r.Shuffle(n, func(a, b int) { res.Epsilons[a], res.Epsilons[b] = res.Epsilons[b], res.Epsilons[a] })
	ones := 0
	for _, y := range res.Reports {
		ones += y
	}
	z, err := mechanism.PersonalizedFrequency(ones, res.Epsilons)
	if err != nil {
		return ShuffledFrequencyResult{}, fmt.Errorf("shuffled frequency: %w", err)
	}
	v, err := mechanism.PersonalizedFrequencyVariance(res.Epsilons)
	if err != nil {
		return ShuffledFrequencyResult{}, fmt.Errorf("shuffled frequency: %w", err)
	}
	res.Estimate, res.Variance = z, v
	res.Mu = tasksMu(res.Epsilons)
	return res, nil
}

// tasksCheck validates the number of users and their budgets.
func tasksCheck(n int, eps []float64) error {
	if n < 1 {
		return checks.Invalidf("need at least one user")
	}
	if len(eps) != n {
		return checks.Invalidf("got %d budgets for %d users: every user needs its own eps_i", len(eps), n)
	}
	for i, e := range eps {
		if err := checks.Epsilon(fmt.Sprintf("eps_%d", i), e); err != nil {
			return err
		}
	}
	return nil
}

// tasksMu is E-APES Corollaries 1–2's mu, +Inf when it is undefined (n < 2).
func tasksMu(eps []float64) float64 {
	mu, err := amplify.EAPESMu(eps, nil)
	if err != nil {
		return math.Inf(1)
	}
	return mu
}
