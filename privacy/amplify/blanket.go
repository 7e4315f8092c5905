package amplify

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// Mechanism names a local randomizer whose privacy-blanket parameters are
// known (Balle, Bell, Gascón and Nissim 2019, "The privacy blanket of the
// shuffle model", Sections 4-5).
type Mechanism int

const (
	// Laplace is the Laplace mechanism with scale 1/eps0 on inputs in [0, 1]
	// (blanket probability gamma = e^(-eps0/2)); FLAME's experiments use it.
	Laplace Mechanism = iota
	// KRR is k-ary randomized response, gamma = k/(e^eps0 + k - 1).
	KRR
	// RGammaB is Balle et al.'s R_{gamma,b} (FLAME Algorithm 1): randomized
	// response over b buckets with gamma = b/(e^eps0 + b - 1); its blanket
	// parameters are those of KRR with k = b.
	RGammaB
	// Generic is any eps0-LDP randomizer (gamma >= e^-eps0), using the
	// mechanism-free bounds on the privacy amplification random variable.
	Generic
)

// String returns the flag name of the mechanism.
func (m Mechanism) String() string {
	switch m {
	case Laplace:
		return "laplace"
	case KRR:
		return "krr"
	case RGammaB:
		return "rgb"
	case Generic:
		return "generic"
	}
	return fmt.Sprintf("Mechanism(%d)", int(m))
}

// ParseMechanism maps a flag value (laplace, krr, rgb, generic) to a Mechanism.
func ParseMechanism(s string) (Mechanism, error) {
	for _, m := range []Mechanism{Laplace, KRR, RGammaB, Generic} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, checks.Invalidf("mechanism must be one of laplace, krr, rgb, generic, got %q", s)
}

// Randomizer is a local randomizer for the privacy-blanket bounds: the
// mechanism and, for KRR and RGammaB, its domain size K (k or b, >= 2).
type Randomizer struct {
	Mech Mechanism
	K    int
}

func (r Randomizer) validate() error {
	switch r.Mech {
	case Laplace, Generic:
		return nil
	case KRR, RGammaB:
		return checks.IntAtLeast("k (domain size)", r.K, 2)
	}
	return checks.Invalidf("unknown mechanism %d", int(r.Mech))
}

// gamma returns lower and upper bounds on the blanket probability.
func (r Randomizer) gamma(eps0 float64) (lb, ub float64) {
	switch r.Mech {
	case Laplace:
		g := math.Exp(-eps0 / 2)
		return g, g
	case KRR, RGammaB:
		k := float64(r.K)
		g := k / (math.Expm1(eps0) + k)
		return g, g
	}
	return math.Exp(-eps0), 1
}

// gammaComplement returns 1 - gamma for the gamma used by blanketDelta (the
// lower bound of r.gamma), computed without subtracting from 1 (gamma is
// close to 1 for small eps0).
func (r Randomizer) gammaComplement(eps0 float64) float64 {
	switch r.Mech {
	case Laplace:
		return -math.Expm1(-eps0 / 2)
	case KRR, RGammaB:
		// e^eps0 - 1 over e^eps0 + k - 1, as 1/(1 + k/expm1) so that an
		// infinite expm1 gives 1.
		return 1 / (1 + float64(r.K)/math.Expm1(eps0))
	}
	return -math.Expm1(-eps0)
}

// maxL bounds the privacy amplification random variable
// L = (mu_x1(W) - e^eps mu_x1'(W)) / omega(W), W ~ omega, from above.
func (r Randomizer) maxL(eps, eps0 float64) float64 {
	switch r.Mech {
	case Laplace:
		return math.Exp(eps0/2) * -math.Expm1(eps-eps0)
	case KRR, RGammaB:
		// gamma (1 - e^eps) + (1 - gamma) k = k (e^eps0 - e^eps)/(e^eps0 + k - 1)
		// = k (1 - e^(eps-eps0)) / (1 + (k-1) e^-eps0): no cancellation.
		k := float64(r.K)
		return k * -math.Expm1(eps-eps0) / (1 + (k-1)*math.Exp(-eps0))
	}
	_, ub := r.gamma(eps0)
	return ub * math.Exp(eps0) * -math.Expm1(eps-2*eps0)
}

// rangeL bounds max L - min L (Hoeffding).
func (r Randomizer) rangeL(eps, eps0 float64) float64 {
	switch r.Mech {
	case Laplace:
		return (math.Exp(eps) + 1) * 2 * math.Sinh(eps0/2)
	case KRR, RGammaB:
		return r.gammaComplement(eps0) * float64(r.K) * (math.Exp(eps) + 1)
	}
	_, ub := r.gamma(eps0)
	return ub * (math.Exp(eps) + 1) * 2 * math.Sinh(eps0)
}

// secondMomentL bounds E[L^2] (Bennett's variance proxy). Every form is a
// sum of non-negative terms: the textbook expressions subtract two
// quantities that both tend to 2 as eps0 -> 0 (Laplace: (e^(2 eps)+1)/3
// (2 e^(eps0/2) + e^-eps0) - 2 e^eps (2 e^(-eps0/2) - e^-eps0); generic:
// e^eps0 (e^(2 eps)+1) - 2 e^(eps-3 eps0)), which lost about 5e-7 of E[L^2]
// at eps0 = 1e-4. With e^(2 eps)+1 = expm1(eps)^2 + 2 e^eps and
// x = e^(-eps0/2):
//
//	Laplace: expm1(eps)^2 (2 e^(eps0/2) + e^-eps0)/3 + (4/3) e^(eps+eps0/2) (1-x)^2 (1+2x),
//	generic: e^eps0 expm1(eps)^2 + 2 e^(eps+eps0) (1 - e^(-4 eps0)),
//	k-RR:    gamma (2-gamma) expm1(eps)^2 + (1-gamma)^2 k (e^(2 eps)+1).
func (r Randomizer) secondMomentL(eps, eps0 float64) float64 {
	em := math.Expm1(eps)
	switch r.Mech {
	case Laplace:
		omx := -math.Expm1(-eps0 / 2) // 1 - x
		x := math.Exp(-eps0 / 2)
		return em*em*(2*math.Exp(eps0/2)+math.Exp(-eps0))/3 +
			4.0/3*math.Exp(eps+eps0/2)*omx*omx*(1+2*x)
	case KRR, RGammaB:
		g, _ := r.gamma(eps0)
		gc := r.gammaComplement(eps0)
		k := float64(r.K)
		return g*(1+gc)*em*em + gc*gc*k*(math.Exp(2*eps)+1)
	}
	// Generic: gamma in [e^-eps0, 1]; the textbook form is
	// ub (e^eps0 (e^(2 eps)+1) - 2 lb e^(eps-2 eps0)) with ub = 1, lb = e^-eps0.
	return math.Exp(eps0)*em*em + 2*math.Exp(eps+eps0)*-math.Expm1(-4*eps0)
}

// BlanketVariant selects the concentration inequality of the numerical
// privacy-blanket bound.
type BlanketVariant int

const (
	// Bennett is the corrected Bennett bound (Balle et al. 2019, as fixed by
	// its author in July 2020). Default.
	Bennett BlanketVariant = iota
	// Hoeffding is the Hoeffding bound (needs only the range of L).
	Hoeffding
	// BennettLegacyFLAME is the FLAWED pre-July-2020 Bennett computation,
	// in which every term of the binomial expectation carries an extra factor
	// 1/(m (e^eps - 1)). It understates delta, so its epsilons are too
	// optimistic. It exists only to reproduce FLAME's published 0.91 / 0.24 /
	// 20.53; never use it to certify privacy.
	BennettLegacyFLAME
)

// String names the variant.
func (v BlanketVariant) String() string {
	switch v {
	case Bennett:
		return "bennett"
	case Hoeffding:
		return "hoeffding"
	case BennettLegacyFLAME:
		return "bennett-legacy-flame-typo"
	}
	return fmt.Sprintf("BlanketVariant(%d)", int(v))
}

// bennettPhi is phi(u) = (1+u) log(1+u) - u, for u >= 0. Below u = 0.1 it
// sums the series sum_{k>=2} (-u)^k/(k(k-1)) (the closed form loses about
// 2 ulp / u relative there).
func bennettPhi(u float64) float64 {
	if u < 0.1 {
		s, t := 0.0, -u // t = (-u)^k
		for k := 2; k < 40; k++ {
			t *= -u
			term := t / float64(k*(k-1))
			s += term
			if math.Abs(term) < 1e-18*s {
				break
			}
		}
		return math.Max(s, 0)
	}
	return (1+u)*math.Log1p(u) - u
}

// blanketDelta returns the numerical privacy-blanket delta(eps). The caller
// has validated the inputs and ensured 0 < eps < eps0.
//
// Balle et al. 2019 (numerical bounds on the privacy amplification random
// variable L) bound
//
//	delta <= (1/(gamma n)) E_{M ~ Bin(n, gamma)} E[(sum_{i<=M} L_i)_+],
//
// and the inner expectation by integrating a tail bound: Hoeffding with
// the range of L, or Bennett with b = max L and v = E[L^2]
// (E[(S_m)_+] <= e^{-m (v/b^2) phi(b a/v)} b / log(1 + b a / v), a = e^eps - 1).
func blanketDelta(r Randomizer, v BlanketVariant, eps, eps0 float64, n int) float64 {
	g, _ := r.gamma(eps0)
	gc := r.gammaComplement(eps0)
	nf := float64(n)
	a := math.Expm1(eps)
	// nLog1m returns n log(1 - g y) given y and 1 - y, accurate both when
	// g y is small and when it is close to 1 (then 1 - g y = gc + g (1-y)).
	nLog1m := func(y, omy float64) float64 {
		if gy := g * y; gy < 0.5 {
			return nf * math.Log1p(-gy)
		}
		return nf * math.Log(gc+g*omy)
	}
	d := 1.0
	switch v {
	case Hoeffding:
		b := r.rangeL(eps, eps0)
		// (1/(gamma n)) (b^2/(4a)) (1 - gamma (1 - e^{-2a^2/b^2}))^n
		u := 2 * (a / b) * (a / b)
		d = math.Exp(2*math.Log(b) - math.Log(4*a) - math.Log(g*nf) + nLog1m(-math.Expm1(-u), math.Exp(-u)))
	case Bennett, BennettLegacyFLAME:
		b := r.maxL(eps, eps0)
		c := r.secondMomentL(eps, eps0)
		if !(b > 0 && c > 0) {
			return 1
		}
		alpha := (c / b) / b
		beta := a * (b / c)
		expCoef := alpha * bennettPhi(beta) // per-report exponent
		lb := math.Log1p(beta)
		if v == Bennett {
			// sum_{m>=1} Bin(n,g)(m) e^{-m expCoef} = (1-g+g x)^n - (1-g)^n
			// = e^hi (1 - (gc/(gc + g x))^n), hi = n log(gc + g x), and
			// log(gc/(gc + g x)) = -log1p(g x/gc) has no cancellation.
			x := math.Exp(-expCoef)
			hi := nLog1m(-math.Expm1(-expCoef), x)
			s := math.Exp(hi) * -math.Expm1(-nf*math.Log1p(g*x/gc))
			d = s * (b / lb) / (g * nf)
			break
		}
		// Legacy: each term divided by m*a (the July-2020 typo). A window
		// too large to hold gives the trivial delta 1.
		if WindowEntries(n, g, gc) > maxWindowEntries {
			return 1
		}
		w := binomialWindowPQ(n, g, gc)
		s := 0.0
		for i, p := range w.P {
			m := w.Lo + i
			if m == 0 {
				continue
			}
			s += p * math.Exp(-float64(m)*expCoef) / float64(m)
		}
		d = s * (b / lb) / (a * g * nf)
	}
	if !(d >= 0) { // NaN from overflowing intermediates: no information
		return 1
	}
	return d
}

func validateBlanket(r Randomizer, eps0 float64, n int) error {
	if err := r.validate(); err != nil {
		return err
	}
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return err
	}
	return checks.IntAtLeast("n", n, 2)
}

// BlanketDelta returns the delta of the numerical privacy-blanket bound of
// Balle et al. 2019 for target central epsilon eps, local eps0 and n
// reports of randomizer r, with the chosen concentration inequality. eps >=
// eps0 returns 0; the result is capped at 1.
func BlanketDelta(r Randomizer, v BlanketVariant, eps, eps0 float64, n int) (float64, error) {
	if err := validateBlanket(r, eps0, n); err != nil {
		return 0, fmt.Errorf("privacy blanket delta: %w", err)
	}
	if err := checks.Epsilon("eps", eps); err != nil {
		return 0, fmt.Errorf("privacy blanket delta: %w", err)
	}
	if eps >= eps0 {
		return 0, nil
	}
	return math.Min(1, blanketDelta(r, v, eps, eps0, n)), nil
}

// BlanketEpsilon returns the smallest central epsilon (relative precision
// 1e-9, rounded up) whose numerical privacy-blanket delta (Balle et al.
// 2019; BlanketDelta) is at most delta. When no eps < eps0 qualifies it
// returns eps0 and ok = false (no amplification: the shuffled output is
// eps0-DP by post-processing).
func BlanketEpsilon(r Randomizer, v BlanketVariant, eps0 float64, n int, delta float64) (eps float64, ok bool, err error) {
	if err := validateBlanket(r, eps0, n); err != nil {
		return 0, false, fmt.Errorf("privacy blanket: %w", err)
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, false, fmt.Errorf("privacy blanket: %w", err)
	}
	f := func(e float64) float64 {
		if e >= eps0 {
			return 0
		}
		return roundSlack(blanketDelta(r, v, e, eps0, n))
	}
	// delta(eps) is non-increasing; eps0 always satisfies it.
	e := searchSmallest(f, delta, eps0, 1e-9)
	if e >= eps0 {
		return eps0, false, nil
	}
	return e, true, nil
}

// BlanketClosedForm returns the closed-form privacy-blanket bound for
// R_{gamma,b} (Balle et al. 2019, as stated in FLAME Lemma 1):
//
//	eps_c = sqrt(14 log(2/delta) (e^eps0 + b - 1) / (n - 1)),
//
// valid only when eps_c <= 1 (the lower condition
// sqrt(14 log(2/delta)(b-1)/(n-1)) < eps_c always holds); otherwise an error.
// The result is capped at eps0.
func BlanketClosedForm(eps0 float64, b, n int, delta float64) (float64, error) {
	if err := validateUniform(eps0, n, delta); err != nil {
		return 0, fmt.Errorf("privacy blanket closed form (FLAME Lemma 1): %w", err)
	}
	if err := checks.IntAtLeast("b", b, 1); err != nil {
		return 0, fmt.Errorf("privacy blanket closed form (FLAME Lemma 1): %w", err)
	}
	e := math.Sqrt(14 * math.Log(2/delta) * (math.Exp(eps0) + float64(b) - 1) / float64(n-1))
	if !(e <= 1) {
		return 0, fmt.Errorf("privacy blanket closed form (FLAME Lemma 1): %w",
			checks.Invalidf("the bound needs eps_c <= 1, got eps_c = %.6g (increase n or lower eps0)", e))
	}
	// Capped at eps0: shuffling never hurts (post-processing).
	return math.Min(e, eps0), nil
}

// Erlingsson returns the amplification-by-shuffling bound of Erlingsson,
// Feldman, Mironov, Raghunathan, Talwar and Thakurta 2019 (SODA), as used
// in Balle et al. 2019's comparisons: eps = 12 eps0 sqrt(log(1/delta)/n),
// valid for eps0 <= 1/2, n >= 1000 and delta <= 0.01, and only when
// eps <= eps0; otherwise an error names the violated condition.
func Erlingsson(eps0 float64, n int, delta float64) (float64, error) {
	if err := validateUniform(eps0, n, delta); err != nil {
		return 0, fmt.Errorf("Erlingsson et al. 2019: %w", err)
	}
	switch {
	case eps0 > 0.5:
		return 0, fmt.Errorf("Erlingsson et al. 2019: %w", checks.Invalidf("the bound needs eps0 <= 1/2, got %v", eps0))
	case n < 1000:
		return 0, fmt.Errorf("Erlingsson et al. 2019: %w", checks.Invalidf("the bound needs n >= 1000, got %d", n))
	case delta > 0.01:
		return 0, fmt.Errorf("Erlingsson et al. 2019: %w", checks.Invalidf("the bound needs delta <= 0.01, got %v", delta))
	}
	e := 12 * eps0 * math.Sqrt(math.Log(1/delta)/float64(n))
	if e > eps0 {
		return 0, fmt.Errorf("Erlingsson et al. 2019: %w", checks.Invalidf("the bound gives eps = %.6g > eps0 = %v: no amplification (need n > 144 log(1/delta))", e, eps0))
	}
	return e, nil
}
