package mechanism

import (
	"math/rand/v2"

	"shufflefl/checks"
)

// Laplace is the Laplace mechanism (Dwork et al. 2006; survey Section 2.3,
// the LDP-FL and PLDP baselines, E-APES Algorithm 2): it adds independent
// Laplace(0, Scale) noise to every coordinate.
//
// Guarantee: with Scale = Δ1/ε, where Δ1 bounds the L1 distance between the
// vectors of any two neighbouring inputs (for local DP: any two inputs the
// client could hold, e.g. Δ1 = 2C·d for d coordinates clipped to [-C, C]),
// releasing x + noise is ε-DP. Per-coordinate budgets are the caller's
// business: pass the sensitivity and epsilon of the whole perturbed vector.
//
// Floating-point safety (Mironov 2012): with Secure false the output is
// x + λ·S·E computed in float64, whose set of reachable values depends on x;
// an attacker who sees the low bits can tell inputs apart. Use it for
// simulation only. With Secure true (NewSecureLaplace) the output is snapped
// to a power-of-two grid g in (λ·2^-12, λ·2^-11] that depends on λ alone:
// round((x + noise)/g)·g. Rounding after adding is post-processing, so in
// exact arithmetic the guarantee is exactly ε with no sensitivity inflation
// (unlike rounding the input first, which inflates the L1 sensitivity by g
// per coordinate); the floating-point errors only move each grid cell's
// boundaries by τ <= λ·2^-41 + |x|·2^-53, which changes each cell's
// probability by a relative 4τ/g at most. The mechanism is then ε'-DP with
// ε' <= ε + 2^-27 + (|x|/λ)·2^-39 (e.g. ε + 1e-8 for |x| <= 1000λ); inputs far
// larger than the noise scale are outside the intended use. Deployment (real
// clients, rng.NewCrypto) must use the secure variant.
type Laplace struct {
	Scale  float64 // λ = Δ1/ε
	Secure bool    // snap outputs to the power-of-two grid (Mironov 2012)
}

// NewLaplace returns the plain (simulation) Laplace mechanism with
// Scale = sensitivity/epsilon. It rejects epsilon or sensitivity that is not
// a positive finite number.
func NewLaplace(epsilon, sensitivity float64) (Laplace, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return Laplace{}, err
	}
	if err := checks.Positive("sensitivity", sensitivity); err != nil {
		return Laplace{}, err
	}
	s := sensitivity / epsilon
	if err := checkScale("laplace scale", s); err != nil {
		return Laplace{}, err
	}
	return Laplace{Scale: s}, nil
}

// NewSecureLaplace is NewLaplace with Secure set: the floating-point-safe
// variant that every deployed client must use.
func NewSecureLaplace(epsilon, sensitivity float64) (Laplace, error) {
	m, err := NewLaplace(epsilon, sensitivity)
	m.Secure = err == nil
	return m, err
}

// Sample returns one noise draw. In the secure variant it is snapped to the
// grid, which makes it a safe dummy/padding value on its own; to perturb a
// value use Randomize or Perturb (x + Sample(r) is not safe: the sum must be
// snapped).
func (m Laplace) Sample(r *rand.Rand) float64 {
	n := m.Scale * signedExp(r)
	if m.Secure {
		return snapScalar(n, m.Scale)
	}
	return n
}

// Randomize returns x plus noise (snapped to the grid if Secure).
func (m Laplace) Randomize(r *rand.Rand, x float64) float64 {
	y := x + m.Scale*signedExp(r)
	if m.Secure {
		return snapScalar(y, m.Scale)
	}
	return y
}

// Perturb adds noise to every entry of x in place, without allocating.
func (m Laplace) Perturb(r *rand.Rand, x []float64) {
	s := m.Scale
	if !m.Secure {
		for i := range x {
			x[i] += s * signedExp(r)
		}
		return
	}
	g := gridFor(s)
	inv := 1 / g
	for i := range x {
		x[i] = snap(x[i]+s*signedExp(r), g, inv)
	}
}

// Variance returns the variance of one coordinate's noise, 2λ² (plus at most
// g²/12 < 2^-26·λ² from snapping in the secure variant).
func (m Laplace) Variance() float64 { return 2 * m.Scale * m.Scale }
