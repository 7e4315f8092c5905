package amplify

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// phi is the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// GDPDelta returns delta(eps) of a mu-GDP mechanism (Dong, Roth and Su
// 2022; E-APES Fact 2): Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
// The mechanism is (eps, delta(eps))-DP for every eps >= 0; the conversion is
// exact (no loss). It is account.GDPToDelta (one implementation, in log
// space), under the name E-APES's code uses.
func GDPDelta(mu, eps float64) (float64, error) { return account.GDPToDelta(mu, eps) }

// GDPEpsilon returns the smallest eps >= 0 such that a mu-GDP mechanism is
// (eps, delta)-DP: the inverse of GDPDelta (account.GDPToEpsilon, relative
// precision 1e-12, the guaranteed side kept).
func GDPEpsilon(mu, delta float64) (float64, error) { return account.GDPToEpsilon(mu, delta) }

// GDPMu returns the largest mu such that mu-GDP implies (eps, delta)-DP,
// i.e. GDPDelta(mu, eps) <= delta (account.GDPMu).
func GDPMu(eps, delta float64) (float64, error) { return account.GDPMu(eps, delta) }

// EAPESMu returns the mu of E-APES (Chen, Cao and Ge 2023, Theorem 2 /
// Theorem 3 without its Berry–Esseen term): with
// p_i = 2(1 - delta_i)/(1 + e^eps_i) for every user,
//
//	mu = 2 / sqrt(sum over the n-1 non-differing users of p_i).
//
// The differing user is taken to be the one with the largest p_i (the worst
// case for the others' sum). eps_i = 0 is allowed (p_i = 1 - delta_i).
// deltas may be nil (all delta_i = 0) or have one entry per user in [0, 1).
//
// IMPORTANT: the Gaussian step is a central-limit APPROXIMATION of the
// clone-count distribution, not an upper bound; results derived from mu are
// labelled as approximations and never selected by Best.
func EAPESMu(eps, deltas []float64) (float64, error) {
	if err := validateBudgets(eps, true); err != nil {
		return 0, fmt.Errorf("E-APES mu: %w", err)
	}
	if deltas != nil && len(deltas) != len(eps) {
		return 0, fmt.Errorf("E-APES mu: %w", checks.Invalidf("got %d local deltas for %d budgets", len(deltas), len(eps)))
	}
	sum, pmax := 0.0, 0.0
	for i, e := range eps {
		d := 0.0
		if deltas != nil {
			d = deltas[i]
			if err := checks.DeltaOrZero(fmt.Sprintf("delta[%d]", i), d); err != nil {
				return 0, fmt.Errorf("E-APES mu: %w", err)
			}
		}
		// 2/(1+e^eps) = 1 - tanh(eps/2), stable for large eps.
		p := (1 - d) * (1 - math.Tanh(e/2))
		sum += p
		pmax = math.Max(pmax, p)
	}
	s := sum - pmax
	if !(s > 0) {
		return 0, fmt.Errorf("E-APES mu: %w", checks.Invalidf("sum of p_i over the other users is %v; the budgets are too large for any amplification", s))
	}
	return 2 / math.Sqrt(s), nil
}

// EAPES returns E-APES's central (eps, delta) for the given budgets and
// target delta via EAPESMu and the exact GDP conversion (GDPEpsilon). The
// result is labelled as an approximation (central-limit step).
func EAPES(eps, deltas []float64, delta float64) (Bound, float64, error) {
	mu, err := EAPESMu(eps, deltas)
	if err != nil {
		return Bound{}, 0, err
	}
	e, err := GDPEpsilon(mu, delta)
	if err != nil {
		return Bound{}, 0, fmt.Errorf("E-APES: %w", err)
	}
	return Bound{Name: "eapes-gdp", Epsilon: e, Delta: delta, Approximation: true,
		Note: fmt.Sprintf("E-APES mu-GDP, mu = %.6g; central-limit approximation, not an upper bound", mu)}, mu, nil
}

// EAPESTVDistance evaluates the distance used by E-APES Lemma 3 / Eq. (15)
// for m other users with common (eps0, delta0): the largest absolute
// difference, over count pairs (k0, k1), between the probability that
// (xi_0, xi_1) of Multinomial(m; p/2, p/2, 1-p), p = 2(1-delta0)/(1+e^eps0),
// equals (k0, k1) and the mass that the bivariate normal with the same mean
// and covariance puts on the unit cell [k0-1/2, k0+1/2] x [k1-1/2, k1+1/2]
// (8x8 Gauss–Legendre). This is the sensible reading of Eq. (15): for
// eps0 = 0.1, delta0 = 1/50 and m = 49 it gives 0.0031. The paper's 0.0206
// comes from the cell as printed (EAPESTVDistanceAsPrinted). Neither is a
// total-variation distance (a sup over points, not a sum over sets), so
// neither turns the Gaussian step into an upper bound.
func EAPESTVDistance(m int, eps0, delta0 float64) (float64, error) {
	return eapesTV(m, eps0, delta0, false)
}

// EAPESTVDistanceAsPrinted is EAPESTVDistance with the normal mass taken over
// the quarter cell [k0, k0+1/2] x [k1, k1+1/2] exactly as E-APES Eq. (15)
// prints it. With eps0 = 0.1, delta0 = 1/n and m = n-1 others for n = 50 it
// gives 0.0206, the paper's example (which does not state n); the value is
// dominated by the missing three quarters of each cell's mass.
func EAPESTVDistanceAsPrinted(m int, eps0, delta0 float64) (float64, error) {
	return eapesTV(m, eps0, delta0, true)
}

func eapesTV(m int, eps0, delta0 float64, printed bool) (float64, error) {
	if err := checks.IntAtLeast("m", m, 1); err != nil {
		return 0, fmt.Errorf("E-APES Berry–Esseen distance: %w", err)
	}
	if err := checks.EpsilonOrZero("eps0", eps0); err != nil {
		return 0, fmt.Errorf("E-APES Berry–Esseen distance: %w", err)
	}
	if err := checks.DeltaOrZero("delta0", delta0); err != nil {
		return 0, fmt.Errorf("E-APES Berry–Esseen distance: %w", err)
	}
	p := (1 - delta0) * (1 - math.Tanh(eps0/2))
	h := p / 2
	mf := float64(m)
	mu := mf * h
	v := mf * h * (1 - h) // variance of each count
	cv := -mf * h * h     // covariance
	rho := cv / v
	sd := math.Sqrt(v)
	// Gauss–Legendre nodes on [-1/2, 1/2] (8 points) for the cell integral.
	gx := []float64{-0.9602898564975363, -0.7966664774136267, -0.5255324099163290, -0.1834346424956498, 0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363}
	gw := []float64{0.1012285362903763, 0.2223810344533745, 0.3137066458778873, 0.3626837833783620, 0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763}
	dens := func(x, y float64) float64 {
		u, w := (x-mu)/sd, (y-mu)/sd
		q := (u*u - 2*rho*u*w + w*w) / (1 - rho*rho)
		return math.Exp(-q/2) / (2 * math.Pi * v * math.Sqrt(1-rho*rho))
	}
	lf := func(k int) float64 { l, _ := math.Lgamma(float64(k) + 1); return l }
	best := 0.0
	for k0 := 0; k0 <= m; k0++ {
		for k1 := 0; k0+k1 <= m; k1++ {
			lp := lf(m) - lf(k0) - lf(k1) - lf(m-k0-k1) + float64(k0+k1)*math.Log(h)
			if m-k0-k1 > 0 {
				lp += float64(m-k0-k1) * math.Log1p(-p)
			}
			pm := math.Exp(lp)
			g := 0.0
			for i, xi := range gx {
				for j, yj := range gx {
					if printed {
						g += gw[i] * gw[j] * dens(float64(k0)+0.25+xi/4, float64(k1)+0.25+yj/4)
					} else {
						g += gw[i] * gw[j] * dens(float64(k0)+xi/2, float64(k1)+yj/2)
					}
				}
			}
			if printed {
				g /= 16
			} else {
				g /= 4
			}
			best = math.Max(best, math.Abs(pm-g))
		}
	}
	return best, nil
}

// gmu is the Gaussian trade-off function G_mu(x) = Phi(Phi^-1(1-x) - mu) on
// [0, 1] (0 beyond 1).
func gmu(mu, x float64) float64 {
	switch {
	case x >= 1:
		return 0
	case x <= 0:
		return 1
	}
	// Phi^-1(1-x) = sqrt2 erfcinv(2x).
	return phi(math.Sqrt2*math.Erfcinv(2*x) - mu)
}

// EAPESCorrectedDelta returns delta(eps) of the trade-off function that
// E-APES Theorem 3 states after its Berry–Esseen correction,
//
//	f(alpha) = deltaMax (1 - alpha) + (1 - deltaMax) max(0, G_mu(alpha + tau) - tau),
//
// i.e. delta(eps) = sup_alpha [1 - e^eps alpha - f(alpha)] (the (eps, delta)
// curve of a symmetric trade-off function, Dong, Roth and Su 2022). tau is
// the distance C/sqrt(n-1) of the theorem; the paper gives no C, so tau must
// be supplied (e.g. from EAPESTVDistance). With tau = 0 and deltaMax = 0 this
// is GDPDelta. Since delta(eps) >= (1 - deltaMax) tau for every eps, the
// correction makes the statement vacuous for delta below tau. The result is
// still an APPROXIMATION: tau is not a proven total-variation bound.
func EAPESCorrectedDelta(mu, tau, deltaMax, eps float64) (float64, error) {
	if err := checks.Positive("mu", mu); err != nil {
		return 0, fmt.Errorf("E-APES corrected delta: %w", err)
	}
	if err := checks.Probability("tau", tau); err != nil {
		return 0, fmt.Errorf("E-APES corrected delta: %w", err)
	}
	if err := checks.DeltaOrZero("delta_max", deltaMax); err != nil {
		return 0, fmt.Errorf("E-APES corrected delta: %w", err)
	}
	if err := checks.EpsilonOrZero("eps", eps); err != nil {
		return 0, fmt.Errorf("E-APES corrected delta: %w", err)
	}
	return eapesCorrectedDelta(mu, tau, deltaMax, eps), nil
}

func eapesCorrectedDelta(mu, tau, deltaMax, eps float64) float64 {
	ee := math.Exp(eps)
	obj := func(a float64) float64 {
		f := deltaMax*(1-a) + (1-deltaMax)*math.Max(0, gmu(mu, a+tau)-tau)
		return 1 - ee*a - f
	}
	// obj is concave (f is convex), so a ternary search finds its maximum.
	lo, hi := 0.0, 1.0
	for i := 0; i < 200 && hi-lo > 1e-15; i++ {
		m1 := lo + (hi-lo)/3
		m2 := hi - (hi-lo)/3
		if obj(m1) < obj(m2) {
			lo = m1
		} else {
			hi = m2
		}
	}
	best := math.Max(obj(0), math.Max(obj(lo), obj(hi)))
	return math.Min(1, math.Max(0, best))
}

// EAPESCorrectedEpsilon returns the smallest eps with EAPESCorrectedDelta <=
// delta, or an error when even eps -> infinity cannot reach delta (delta
// below about (1 - deltaMax) tau). An APPROXIMATION, like EAPES.
func EAPESCorrectedEpsilon(mu, tau, deltaMax, delta float64) (float64, error) {
	if _, err := EAPESCorrectedDelta(mu, tau, deltaMax, 0); err != nil {
		return 0, err
	}
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("E-APES corrected epsilon: %w", err)
	}
	f := func(e float64) float64 { return eapesCorrectedDelta(mu, tau, deltaMax, e) }
	if f(0) <= delta {
		return 0, nil
	}
	hi := 1.0
	for f(hi) > delta {
		hi *= 2
		if hi > 700 {
			return 0, fmt.Errorf("E-APES corrected epsilon: %w", checks.Invalidf(
				"delta = %v is below what the corrected trade-off allows (about (1-delta_max) tau = %.3g): the Berry–Esseen correction makes the bound vacuous here", delta, (1-deltaMax)*tau))
		}
	}
	return searchSmallest(f, delta, hi, 1e-9), nil
}
