package mechanism

import (
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// Duchi is Duchi et al.'s one-dimensional mechanism (NeurIPS 2013; survey
// Eq. (13)): for x in [-1, 1] it outputs ±B, B = (e^ε+1)/(e^ε-1), with
// P(+B) = 1/2 + x·(e^ε-1)/(2e^ε+2). The output is an unbiased estimate of x
// (E = x, Var = B² - x²), so the analyzer's estimator of a mean is the plain
// average of the outputs. It is ε-LDP: P(+B | 1)/P(+B | -1) = e^ε.
type Duchi struct {
	eps, bound, slope float64 // slope = (e^ε-1)/(2e^ε+2)
}

// NewDuchi returns Duchi's mechanism with a positive finite epsilon.
func NewDuchi(epsilon float64) (Duchi, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return Duchi{}, err
	}
	// B = coth(ε/2); slope = tanh(ε/2)/2, both stable for small ε.
	t := math.Tanh(epsilon / 2)
	if !(1/t < 1e300) {
		return Duchi{}, checks.Invalidf("epsilon = %v is too small: the output bound (e^ε+1)/(e^ε-1) overflows", epsilon)
	}
	return Duchi{eps: epsilon, bound: 1 / t, slope: t / 2}, nil
}

// Epsilon returns ε.
func (m Duchi) Epsilon() float64 { return m.eps }

// Bound returns B = (e^ε+1)/(e^ε-1): outputs are ±B.
func (m Duchi) Bound() float64 { return m.bound }

// Randomize returns ±B. It panics if x is outside [-1, 1] or NaN (clip and
// scale the coordinate to [-1, 1] first).
func (m Duchi) Randomize(r *rand.Rand, x float64) float64 {
	if !(x >= -1 && x <= 1) {
		panic(checks.Invalidf("duchi input %v is outside [-1, 1]: clip to [-C, C] and divide by C first", x))
	}
	if r.Float64() < 0.5+m.slope*x {
		return m.bound
	}
	return -m.bound
}

// Perturb replaces each x[i] by Randomize(x[i]) in place (each coordinate
// with the full ε; split the budget before calling if needed). It returns an
// error and leaves x unchanged if an entry is outside [-1, 1].
func (m Duchi) Perturb(r *rand.Rand, x []float64) error {
	if err := checks.InRange("duchi input", x, -1, 1, "clip to [-C, C] and divide by C first"); err != nil {
		return err
	}
	for i, v := range x {
		x[i] = m.Randomize(r, v)
	}
	return nil
}

// Variance returns Var(Randomize(x)) = B² - x².
func (m Duchi) Variance(x float64) float64 { return m.bound*m.bound - x*x }

// Piecewise is the Piecewise Mechanism of Wang et al. (ICDE 2019; survey
// Eq. (14)). With s = e^{ε/2} and C = (s+1)/(s-1), an input x in [-1, 1] is
// mapped to [-C, C] with density p = (e^ε - s)/(2s + 2) on
// [l(x), r(x)] = [(s·x-1)/(s-1), (s·x+1)/(s-1)] and p/e^ε elsewhere. (The
// survey omits the output range [-C, C], without which Eq. (14) is not a
// density.) The output is unbiased for x with
// Var = x²/(s-1) + (s+3)/(3(s-1)²). It is ε-LDP (the two densities differ by
// the factor e^ε at most).
type Piecewise struct {
	eps, s, c, pIn float64 // pIn = s/(s+1): probability of the central piece
}

// NewPiecewise returns the Piecewise Mechanism with a positive finite epsilon.
func NewPiecewise(epsilon float64) (Piecewise, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return Piecewise{}, err
	}
	s := math.Exp(epsilon / 2)
	if math.IsInf(s, 0) {
		return Piecewise{}, checks.Invalidf("epsilon = %v is too large", epsilon)
	}
	sm1 := math.Expm1(epsilon / 2)
	if !((s+1)/sm1 < 1e300) {
		return Piecewise{}, checks.Invalidf("epsilon = %v is too small: the output bound C overflows", epsilon)
	}
	return Piecewise{eps: epsilon, s: s, c: (s + 1) / sm1, pIn: s / (s + 1)}, nil
}

// Epsilon returns ε.
func (m Piecewise) Epsilon() float64 { return m.eps }

// C returns the output bound: outputs lie in [-C, C].
func (m Piecewise) C() float64 { return m.c }

// Randomize returns the perturbed value in [-C, C]. It panics if x is
// outside [-1, 1] or NaN.
func (m Piecewise) Randomize(r *rand.Rand, x float64) float64 {
	if !(x >= -1 && x <= 1) {
		panic(checks.Invalidf("piecewise input %v is outside [-1, 1]: clip to [-C, C] and divide by C first", x))
	}
	c := m.c
	l := (c+1)/2*x - (c-1)/2 // = (s·x-1)/(s-1)
	rr := l + c - 1          // = (s·x+1)/(s-1)
	u := r.Float64()
	if u < m.pIn {
		return l + (c-1)*(u/m.pIn)
	}
	// Uniform on [-C, l) ∪ (r, C], total length C + 1.
	v := (u - m.pIn) / (1 - m.pIn) * (c + 1)
	if v < l+c {
		return -c + v
	}
	return rr + (v - (l + c))
}

// Perturb replaces each x[i] by Randomize(x[i]) in place; error (x
// unchanged) if an entry is outside [-1, 1].
func (m Piecewise) Perturb(r *rand.Rand, x []float64) error {
	if err := checks.InRange("piecewise input", x, -1, 1, "clip to [-C, C] and divide by C first"); err != nil {
		return err
	}
	for i, v := range x {
		x[i] = m.Randomize(r, v)
	}
	return nil
}

// Variance returns Var(Randomize(x)) = x²/(s-1) + (s+3)/(3(s-1)²).
func (m Piecewise) Variance(x float64) float64 {
	sm1 := math.Expm1(m.eps / 2)
	return x*x/sm1 + (m.s+3)/(3*sm1*sm1)
}

// Harmony is the mechanism of Nguyên et al. (2016; survey Section 2.3) for a
// vector x in [-1, 1]^d: sample one coordinate j uniformly, perturb x_j with
// Duchi's mechanism and scale by d, i.e. report (j, ±d·B). The report, read
// as the vector with d·(±B) at j and 0 elsewhere, is an unbiased estimate of
// x with per-coordinate variance d·B² - x_j²; the analyzer averages the
// reports (Accumulate). The whole vector is ε-LDP: j does not depend on x.
// (The survey calls the input a "bit vector"; Harmony takes real vectors in
// [-1, 1]^d, bits being the special case.)
type Harmony struct {
	duchi Duchi
	d     int
}

// NewHarmony returns Harmony for dimension d >= 1.
func NewHarmony(epsilon float64, d int) (Harmony, error) {
	du, err := NewDuchi(epsilon)
	if err != nil {
		return Harmony{}, err
	}
	if err := checks.IntAtLeast("d", d, 1); err != nil {
		return Harmony{}, err
	}
	return Harmony{duchi: du, d: d}, nil
}

// Dim returns d.
func (m Harmony) Dim() int { return m.d }

// Epsilon returns ε.
func (m Harmony) Epsilon() float64 { return m.duchi.eps }

// Randomize returns the report (j, v) with v = ±d·B. It returns an error if
// len(x) != d or an entry is outside [-1, 1].
func (m Harmony) Randomize(r *rand.Rand, x []float64) (j int, v float64, err error) {
	if err := checks.Vector("harmony input", x, m.d); err != nil {
		return 0, 0, err
	}
	if err := checks.InRange("harmony input", x, -1, 1, "clip each coordinate to [-C, C] and divide by C first"); err != nil {
		return 0, 0, err
	}
	j = r.IntN(m.d)
	return j, float64(m.d) * m.duchi.Randomize(r, x[j]), nil
}

// Accumulate adds the report (j, v) to sum; the mean estimate of n reports
// is sum/n.
func (m Harmony) Accumulate(sum []float64, j int, v float64) { sum[j] += v }

// Variance returns the variance of coordinate j of one report for input
// coordinate xj: d·B² - xj².
func (m Harmony) Variance(xj float64) float64 {
	b := m.duchi.bound
	return float64(m.d)*b*b - xj*xj
}
