package mechanism

import (
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// RandomizedRounding is R_{γ,b}, the local randomizer of the privacy blanket
// (Balle et al., CRYPTO 2019) used by FLAME (Liu et al., AAAI 2021,
// Algorithm 1) for SS-Simple, SS-Double and SS-Topk:
//
//	x̄ = ⌊x·b⌋ + Ber(x·b - ⌊x·b⌋)          (unbiased rounding of x in [0, 1])
//	y = x̄ with probability 1-γ, otherwise Unif([b]).
//
// The domain [b]. Step 1 produces values in {0, 1, ..., b} (b+1 values: x = 0
// gives 0 and x = 1 gives b), and Eq. (1) subtracts nγ/2, the mean of
// Unif{0, ..., b} divided by b, so [b] must be {0, ..., b} (Balle et al.'s
// convention). FLAME's Algorithm 1 writes the blanket as Unif({1, ..., b}),
// which is not private at all (output 0 is impossible for x = 1 but has
// probability ≥ 1-γ for x = 0) and makes Eq. (1) biased; and its
// γ = b/(e^ε + b - 1) is the k-RR blanket weight for b outputs: with b+1
// outputs it gives local privacy ln(1 + (b+1)(e^ε-1)/b) > ε. This type uses
// the blanket Unif{0, ..., b} and γ = (b+1)/(e^ε + b), which is exactly ε-LDP
// (the worst ratio is P(y=0 | x=0)/P(y=0 | x=1) = 1 + (b+1)(1-γ)/γ = e^ε).
// TestRoundingPaperVariants runs the statistical privacy test on both of
// FLAME's literal variants and shows they fail it.
//
// Amplification: Balle et al.'s bound is stated in γ directly (Theorem 3.1
// of the blanket paper, ε_c = sqrt(14·k·log(2/δ)/((n-1)γ)) with k = b), so
// accountants should use Gamma(); FLAME's Lemma 1 substitutes γ's formula.
type RandomizedRounding struct {
	b     int
	gamma float64
	eps   float64
}

// NewRandomizedRounding returns R_{γ,b} with γ = (b+1)/(e^ε + b), the
// blanket weight that makes it exactly ε-LDP on {0, ..., b}. It requires
// b >= 2 (b = 1 is binary randomized response; use BinaryRR) and a positive
// finite epsilon.
func NewRandomizedRounding(epsilon float64, b int) (RandomizedRounding, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return RandomizedRounding{}, err
	}
	if err := checks.IntInRange("b", b, 2, 1<<30); err != nil {
		return RandomizedRounding{}, err
	}
	gamma := float64(b+1) / (math.Exp(epsilon) + float64(b))
	if !(gamma > 0) { // e^ε overflowed: γ = 0 means no blanket at all
		return RandomizedRounding{}, checks.Invalidf("epsilon = %v is too large: γ underflows to 0", epsilon)
	}
	if !(gamma < 1) { // e^ε rounded to 1: Debias would divide by 1-γ = 0
		return RandomizedRounding{}, checks.Invalidf("epsilon = %v is too small: γ rounds to 1", epsilon)
	}
	return RandomizedRounding{b: b, gamma: gamma, eps: epsilon}, nil
}

// NewRandomizedRoundingGamma returns R_{γ,b} with a blanket weight chosen
// directly (Balle et al. set γ from the central target, e.g.
// γ = max{14·b·log(2/δ)/((n-1)ε²), 27b/((n-1)ε)}). Its local guarantee is
// Epsilon() = ln(1 + (b+1)(1-γ)/γ).
func NewRandomizedRoundingGamma(gamma float64, b int) (RandomizedRounding, error) {
	if err := checks.IntInRange("b", b, 2, 1<<30); err != nil {
		return RandomizedRounding{}, err
	}
	if err := checks.Finite("gamma", gamma); err != nil {
		return RandomizedRounding{}, err
	}
	if gamma <= 0 || gamma >= 1 {
		return RandomizedRounding{}, checks.Invalidf("gamma must be in (0, 1), got %v", gamma)
	}
	eps := math.Log1p(float64(b+1) * (1 - gamma) / gamma)
	return RandomizedRounding{b: b, gamma: gamma, eps: eps}, nil
}

// FLAMEGamma is the paper's γ = b/(e^ε + b - 1) (FLAME Algorithm 1 and
// Lemma 1). It is NOT the blanket weight of this type; see the type doc.
func FLAMEGamma(epsilon float64, b int) float64 {
	return float64(b) / (math.Exp(epsilon) + float64(b) - 1)
}

// B returns b: outputs lie in {0, ..., b}.
func (m RandomizedRounding) B() int { return m.b }

// Gamma returns γ, the probability that a report is drawn from the blanket.
func (m RandomizedRounding) Gamma() float64 { return m.gamma }

// Epsilon returns the local privacy ε = ln(1 + (b+1)(1-γ)/γ).
func (m RandomizedRounding) Epsilon() float64 { return m.eps }

// Randomize returns R_{γ,b}(x) in {0, ..., b}. It panics if x is outside
// [0, 1] or NaN: the caller forgot to clip and rescale the coordinate to
// [0, 1] (FLAME maps [-C, C] to [0, 1] first).
func (m RandomizedRounding) Randomize(r *rand.Rand, x float64) int {
	if !(x >= 0 && x <= 1) {
		panic(checks.Invalidf("randomized rounding input %v is outside [0, 1]: clip to [-C, C] and map to (x+C)/(2C) first", x))
	}
	if r.Float64() < m.gamma {
		return r.IntN(m.b + 1)
	}
	xb := x * float64(m.b)
	f := math.Floor(xb)
	if r.Float64() < xb-f {
		f++
	}
	return int(f)
}

// RandomizeAll writes R_{γ,b}(x[i]) to out[i] for every i. It returns an
// error (and writes nothing) if an input is outside [0, 1] or the lengths
// differ.
func (m RandomizedRounding) RandomizeAll(r *rand.Rand, x []float64, out []int) error {
	if len(out) != len(x) {
		return checks.Invalidf("out has length %d, want %d", len(out), len(x))
	}
	if err := checks.InRange("randomized rounding input", x, 0, 1, "clip to [-C, C] and map to (x+C)/(2C) first"); err != nil {
		return err
	}
	for i, v := range x {
		out[i] = m.Randomize(r, v)
	}
	return nil
}

// Blanket returns one draw of the blanket distribution ω = Unif{0, ..., b}:
// the dummy padding of SS-Double (FLAME Algorithm 3) and SS-Topk.
func (m RandomizedRounding) Blanket(r *rand.Rand) int { return r.IntN(m.b + 1) }

// Debias estimates the mean of the n real inputs (in [0, 1]) from the sum of
// all total = n + n_n outputs, n_n of which are blanket dummies (SS-Double
// pads every coordinate to n_p = total reports). It generalises FLAME Eq. (1),
// z = (ẑ - nγ/2)/(1-γ) with ẑ = sum/b, which estimates the SUM of the inputs
// when no dummies are present, by also removing the dummies' mean n_n/2:
//
//	mean = (sum/b - nγ/2 - (total-n)/2) / ((1-γ)·n).
//
// Each real report has E[y] = (1-γ)·b·x + γ·b/2 and each dummy E[y] = b/2,
// so the estimate is unbiased. Its variance is
// (Σ_i Var(y_i) + (total-n)·BlanketVariance()) / (b(1-γ)n)², see
// OutputVariance. It panics if n < 1 or total < n.
func (m RandomizedRounding) Debias(sum float64, n, total int) float64 {
	if n < 1 || total < n {
		panic(checks.Invalidf("debias needs 1 <= n <= total, got n = %d, total = %d", n, total))
	}
	fn, fb := float64(n), float64(m.b)
	return (sum/fb - fn*m.gamma/2 - float64(total-n)/2) / ((1 - m.gamma) * fn)
}

// OutputVariance returns Var(R_{γ,b}(x)) for a real report of input x.
func (m RandomizedRounding) OutputVariance(x float64) float64 {
	fb := float64(m.b)
	xb := x * fb
	f := xb - math.Floor(xb)
	second := (1-m.gamma)*(xb*xb+f*(1-f)) + m.gamma*fb*(2*fb+1)/6
	mean := (1-m.gamma)*xb + m.gamma*fb/2
	return second - mean*mean
}

// BlanketVariance returns Var(Unif{0, ..., b}) = b(b+2)/12.
func (m RandomizedRounding) BlanketVariance() float64 {
	fb := float64(m.b)
	return fb * (fb + 2) / 12
}
