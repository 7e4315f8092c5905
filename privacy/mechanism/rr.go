package mechanism

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// BinaryRR is Warner's randomized response on {0, 1} (survey Eq. (12);
// E-APES Algorithm 3, line 3-5): report the true bit with probability
// p = e^ε/(1+e^ε), the other bit with q = 1/(1+e^ε). It is ε-LDP (p/q = e^ε).
type BinaryRR struct {
	eps, p float64
}

// NewBinaryRR returns randomized response with a positive finite epsilon.
func NewBinaryRR(epsilon float64) (BinaryRR, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return BinaryRR{}, err
	}
	if !(math.Tanh(epsilon/2) > 1e-300) { // p - q = tanh(ε/2): the estimator divides by it
		return BinaryRR{}, checks.Invalidf("epsilon = %v is too small: p - q underflows", epsilon)
	}
	return BinaryRR{eps: epsilon, p: 1 / (1 + math.Exp(-epsilon))}, nil
}

// Epsilon returns ε.
func (m BinaryRR) Epsilon() float64 { return m.eps }

// Keep returns p = e^ε/(1+e^ε), the probability of reporting the true bit.
func (m BinaryRR) Keep() float64 { return m.p }

// Randomize returns the reported bit (0 or 1). It panics unless bit is 0 or 1.
func (m BinaryRR) Randomize(r *rand.Rand, bit int) int {
	if bit != 0 && bit != 1 {
		panic(checks.Invalidf("randomized response input %d is not a bit: encode the attribute as 0 or 1 first", bit))
	}
	if r.Float64() < m.p {
		return bit
	}
	return 1 - bit
}

// Blanket returns a uniform bit, the blanket (padding) distribution of
// binary randomized response.
func (m BinaryRR) Blanket(r *rand.Rand) int { return int(r.Uint64() >> 63) }

// EstimateCount returns the unbiased estimate of the number of ones among n
// real reports from the observed count of ones (survey Section 2.3):
//
//	ĉ = (c·(e^ε+1) - n) / (e^ε - 1) = (c - n·q)/(p - q).
//
// Its variance is n·p·q/(p-q)² = n·e^ε/(e^ε-1)², whatever the true count
// (CountVariance).
func (m BinaryRR) EstimateCount(ones, n int) float64 {
	q := 1 - m.p
	return (float64(ones) - float64(n)*q) / (m.p - q)
}

// CountVariance returns Var(EstimateCount) for n reports.
func (m BinaryRR) CountVariance(n int) float64 {
	q := 1 - m.p
	return float64(n) * m.p * q / ((m.p - q) * (m.p - q))
}

// PersonalizedFrequency is E-APES Algorithm 3 (shuffled personalized-LDP
// frequency estimation): client i reports BinaryRR with its own ε_i, the
// analyzer sees the shuffled reports and the shuffled epsilons and returns
//
//	z = (A - B) / (n - 2B),   A = Σ y_i,  B = Σ 1/(1+e^{ε_i}).
//
// (Algorithm 3 says z ∈ N, but z is a real-valued estimate of the fraction
// of ones, not a count.) Its expectation is Σ x_i(1-2q_i)/(n-2B) with
// q_i = 1/(1+e^{ε_i}); this equals the true fraction c when the budgets are
// equal or, in expectation, when budgets are assigned independently of the
// data, which is the setting of E-APES's experiments; the paper's "z is an
// unbiased estimator of c" needs that assumption. Its variance is
// Σ q_i(1-q_i)/(n-2B)² (PersonalizedFrequencyVariance).
func PersonalizedFrequency(ones int, epsilons []float64) (float64, error) {
	b, err := sumQ(epsilons)
	if err != nil {
		return 0, err
	}
	if ones < 0 || ones > len(epsilons) {
		return 0, checks.Invalidf("ones = %d must be in [0, %d]", ones, len(epsilons))
	}
	return (float64(ones) - b) / (float64(len(epsilons)) - 2*b), nil
}

// PersonalizedFrequencyVariance returns Var(z) of PersonalizedFrequency,
// which does not depend on the data.
func PersonalizedFrequencyVariance(epsilons []float64) (float64, error) {
	b, err := sumQ(epsilons)
	if err != nil {
		return 0, err
	}
	v := 0.0
	for _, e := range epsilons {
		q := 1 / (1 + math.Exp(e))
		v += q * (1 - q)
	}
	d := float64(len(epsilons)) - 2*b
	return v / (d * d), nil
}

func sumQ(epsilons []float64) (float64, error) {
	if len(epsilons) == 0 {
		return 0, checks.Invalidf("epsilons is empty")
	}
	b := 0.0
	for i, e := range epsilons {
		if err := checks.Epsilon(fmt.Sprintf("epsilons[%d]", i), e); err != nil {
			return 0, err
		}
		b += 1 / (1 + math.Exp(e))
	}
	return b, nil
}

// GRR is generalized (k-ary) randomized response (Wang et al., USENIX
// Security 2017; survey Eq. (15)): on the domain {0, ..., k-1}, report the
// true value with probability p = e^ε/(e^ε+k-1) and each of the k-1 other
// values with probability q = 1/(e^ε+k-1). It is ε-LDP (p/q = e^ε).
//
// Survey Eq. (15) prints the second case as "v = 1 - x", copied from the
// binary Eq. (12); for k > 2 it must read "v ≠ x" (each other value), else the
// probabilities do not sum to one (p + q < 1 for k > 2). TestGRREq15Typo
// checks the corrected form sums to one and the literal one does not.
type GRR struct {
	k       int
	eps     float64
	p, q    float64
	pOthers float64 // 1 - p: probability of reporting some other value
}

// NewGRR returns k-ary randomized response; k >= 2, epsilon positive finite.
func NewGRR(epsilon float64, k int) (GRR, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return GRR{}, err
	}
	if err := checks.IntInRange("k", k, 2, 1<<30); err != nil {
		return GRR{}, err
	}
	den := math.Exp(epsilon) + float64(k) - 1
	if math.IsInf(den, 0) {
		return GRR{}, checks.Invalidf("epsilon = %v is too large: e^ε overflows", epsilon)
	}
	p := math.Exp(epsilon) / den
	if !(p-1/den > 1e-300) { // the estimator divides by p - q
		return GRR{}, checks.Invalidf("epsilon = %v is too small: p - q underflows", epsilon)
	}
	return GRR{k: k, eps: epsilon, p: p, q: 1 / den, pOthers: (float64(k) - 1) / den}, nil
}

// K returns the domain size.
func (m GRR) K() int { return m.k }

// Epsilon returns ε.
func (m GRR) Epsilon() float64 { return m.eps }

// P returns the probability of reporting the true value.
func (m GRR) P() float64 { return m.p }

// Q returns the probability of reporting one given other value.
func (m GRR) Q() float64 { return m.q }

// Randomize returns the report for value v in {0, ..., k-1}. It panics if v
// is outside the domain (the caller forgot to encode the value as an index).
func (m GRR) Randomize(r *rand.Rand, v int) int {
	if v < 0 || v >= m.k {
		panic(checks.Invalidf("GRR input %d is outside {0, ..., %d}: encode the value as an index first", v, m.k-1))
	}
	if r.Float64() >= m.pOthers {
		return v
	}
	j := r.IntN(m.k - 1)
	if j >= v {
		j++
	}
	return j
}

// Blanket returns a uniform value in {0, ..., k-1}, the blanket (padding)
// distribution of GRR: GRR(v) is Unif with probability kq and v otherwise.
func (m GRR) Blanket(r *rand.Rand) int { return r.IntN(m.k) }

// EstimateCounts writes into out (length k) the unbiased estimate of how
// many of the n real reports had each value, from counts (length k) of all
// total reports, total-n of which are Blanket dummies:
//
//	ĉ_v = (c_v - n·q - (total-n)/k) / (p - q).
//
// With total = n this is the survey's ĉ_v = (c_v(e^ε+k-1) - n)/(e^ε-1). The
// variance of ĉ_v is (n_v·p(1-p) + (n-n_v)·q(1-q) + (total-n)(1/k)(1-1/k))/(p-q)²
// where n_v is the true count (CountVariance).
func (m GRR) EstimateCounts(counts []int, n, total int, out []float64) error {
	if len(counts) != m.k || len(out) != m.k {
		return checks.Invalidf("counts and out must have length k = %d, got %d and %d", m.k, len(counts), len(out))
	}
	if n < 0 || total < n {
		return checks.Invalidf("need 0 <= n <= total, got n = %d, total = %d", n, total)
	}
	shift := float64(n)*m.q + float64(total-n)/float64(m.k)
	for v, c := range counts {
		out[v] = (float64(c) - shift) / (m.p - m.q)
	}
	return nil
}

// CountVariance returns Var(ĉ_v) for true count trueCount of value v among n
// real reports and total-n dummies.
func (m GRR) CountVariance(trueCount, n, total int) float64 {
	u := 1 / float64(m.k)
	v := float64(trueCount)*m.p*(1-m.p) + float64(n-trueCount)*m.q*(1-m.q) + float64(total-n)*u*(1-u)
	return v / ((m.p - m.q) * (m.p - m.q))
}
