package amplify

import (
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// The thresholds of the count statistic for the local randomizers of the
// per-coordinate protocols, each on its own input range, with the differing
// user at the two ends of the range and every other user at its middle.
// Every family below is symmetric about the middle input, so at the middle
// threshold an other user's value is counted with probability exactly 1/2
// WHATEVER its noise scale: that threshold gives an exact count statistic
// for heterogeneous (personalized) budgets too (midpoint). With one scale
// for every user, thresholds above the middle are tried as well (by the
// symmetry of the pair, thresholds below it give the same bounds).

// LaplaceCountAttacks returns the count statistic's thresholds for the
// Laplace mechanism with scale 1/eps0 on inputs [0, 1] (FLAME's randomizer;
// the Laplace baselines' Lap(2C/eps0) on [-C, C] after the affine map
// x -> (x+C)/(2C), which the count does not see): the user holds 0 or 1,
// the others 1/2. With midpoint only the threshold 1/2 (the others counted
// with probability 1/2 whatever their scales); otherwise
// flameCountAttacks's grid for others values of scale 1/eps0.
func LaplaceCountAttacks(eps0 float64, others int, midpoint bool) ([]CountAttack, error) {
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return nil, err
	}
	a, err := flameCountAttacks(Randomizer{Mech: Laplace}, eps0, others)
	if err != nil {
		return nil, err
	}
	if midpoint {
		a = a[:1] // s = 0: t = 1/2, POther = 1/2 exactly
		a[0].POther = 0.5
	}
	return a, nil
}

// ClipLaplaceCountAttacks returns the count statistic's thresholds for
// APES's Clip-Laplace mechanism CLap(x, lambda, A) (mechanism.ClipLaplace:
// density e^{-|z-x|/lambda}/(2 lambda S(x)) on [-A, A]) with A = 1 and
// lambda = 2/eps0 (APES: Delta f = 2C, A = C, lambda = 2C/eps0, in units of
// C): the user holds -1 or 1, the others 0. For t in [0, 1) the tails are,
// integrating the density,
//
//	P(z > t | 1)  = (1 - e^{-(1-t)/lambda}) / (1 - e^{-2/lambda})
//	P(z > t | -1) = (e^{-(1+t)/lambda} - e^{-2/lambda}) / (1 - e^{-2/lambda})
//	P(z > t | 0)  = (e^{-t/lambda} - e^{-1/lambda}) / (2 (1 - e^{-1/lambda})),
//
// so at t = 0 the others' is exactly 1/2 and the user's are
// 1/(1+e^{-eps0/2}) and 1/(1+e^{eps0/2}). Every expression is formed with
// expm1 (no cancellation).
func ClipLaplaceCountAttacks(eps0 float64, others int, midpoint bool) ([]CountAttack, error) {
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return nil, err
	}
	lam := 2 / eps0
	den := -math.Expm1(-2 / lam)
	at := func(t float64) CountAttack {
		p1 := -math.Expm1(-(1-t)/lam) / den
		p0 := math.Exp(-(1+t)/lam) * -math.Expm1(-(1-t)/lam) / den
		po := math.Exp(-t/lam) * -math.Expm1(-(1-t)/lam) / (2 * -math.Expm1(-1/lam))
		return CountAttack{Threshold: t, POther: po, P0: p0, P1: p1}
	}
	first := CountAttack{Threshold: 0, POther: 0.5, P0: 1 / (1 + math.Exp(eps0/2)), P1: 1 / (1 + math.Exp(-eps0/2))}
	out := []CountAttack{first}
	if midpoint {
		return out, nil
	}
	// Thresholds t = s lambda up to where fewer than 1e-3 others are
	// expected above t, and below the end of the range (1).
	sMax := math.Log(0.5*float64(max(others, 1))/1e-3) + 1
	tMax := math.Min(sMax*lam, 1)
	const steps = 160
	for i := 1; i < steps; i++ {
		out = append(out, at(tMax*float64(i)/steps))
	}
	return out, nil
}

// GaussianCountAttacks returns the count statistic's thresholds for the
// Gaussian mechanism in units of its standard deviation, projected on one
// direction: the user's value is r or -r plus N(0, 1) (r = C/sigma for an
// update of L2 norm C and noise N(0, sigma^2 I)), the others' 0 plus their
// noise. The tails are P(N(x, 1) > t) = erfc((t-x)/sqrt 2)/2. With midpoint
// only t = 0 (the others counted with probability 1/2 whatever their
// sigmas); otherwise t = s >= 0 up to where fewer than 1e-3 others are
// expected above it.
func GaussianCountAttacks(r float64, others int, midpoint bool) ([]CountAttack, error) {
	if err := checks.Positive("C/sigma", r); err != nil {
		return nil, err
	}
	tail := func(x, t float64) float64 { return 0.5 * math.Erfc((t-x)/math.Sqrt2) }
	out := []CountAttack{{Threshold: 0, POther: 0.5, P0: tail(-r, 0), P1: tail(r, 0)}}
	if midpoint {
		return out, nil
	}
	sMax := math.Sqrt(2*math.Log(float64(max(others, 1))/1e-3)) + 1
	const steps = 160
	for i := 1; i <= steps; i++ {
		t := sMax * float64(i) / steps
		out = append(out, CountAttack{Threshold: t, POther: tail(0, t), P0: tail(-r, t), P1: tail(r, t)})
	}
	return out, nil
}

// RGammaBCountAttacks returns the count statistic's levels L = 1..b for
// FLAME's R_{gamma,b} (gamma = (b+1)/(e^eps0 + b), outputs {0..b}): the
// user holds 0 or 1, the other users 0, so a value >= L >= 1 of another
// user comes from the blanket only, with probability gamma (b+1-L)/(b+1)
// (POther), while a dummy (Unif{0..b}) is counted with probability
// (b+1-L)/(b+1) (returned separately: the two are different classes).
func RGammaBCountAttacks(b int, eps0 float64) (attacks []CountAttack, dummy []float64, err error) {
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return nil, nil, err
	}
	a, err := flameCountAttacks(Randomizer{Mech: RGammaB, K: b}, eps0, 0)
	if err != nil {
		return nil, nil, err
	}
	for L := 1; L <= b; L++ {
		dummy = append(dummy, float64(b+1-L)/float64(b+1))
	}
	return a, dummy, nil
}
