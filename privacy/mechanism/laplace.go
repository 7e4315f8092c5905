package mechanism

import (
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
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
// x + λ·S·E computed in float64 (E from the ziggurat rand.ExpFloat64, which
// has 32 random bits per draw), whose set of reachable values depends on x;
// an attacker who sees the low bits can tell inputs apart. Use it for
// simulation only. With Secure true (NewSecureLaplace) the output is snapped
// to a power-of-two grid g in (λ·2^-12, λ·2^-11] that depends on λ alone:
// round((x + noise)/g)·g. Rounding after adding is post-processing, so in
// exact arithmetic the guarantee is exactly ε with no sensitivity inflation
// (unlike rounding the input first, which inflates the L1 sensitivity by g
// per coordinate). The noise is λ·S·E with E from expZig, a ziggurat on
// full 64-bit words: within each layer E is uniform on a grid of spacing
// below 2^-49, so each grid cell (width > 2^-12 in units of λ) gets its
// exact mass up to a relative 2^-37; the floating-point errors move each
// cell's boundaries by τ <= λ·2^-41 + |x|·2^-53, which changes each cell's
// probability by a relative 2τ/g at most. The mechanism is then (ε', δ')-DP
// with ε' <= ε + 2^-36 + 4τ/g <= ε + 2^-26 + (|x|/λ)·2^-39 (e.g. ε + 1e-8
// for |x| <= 1000λ) and δ' = 2^-1000 for the tail beyond E = 700 that the
// full-precision uniform of the ziggurat's tail cannot reach; inputs far
// larger than the noise scale are outside the intended use. Deployment
// (real clients, rng.NewCrypto) must use the secure variant.
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
	if m.Secure {
		return snapScalar(m.Scale*signedExpZig(r), m.Scale)
	}
	return m.Scale * fastSignedExp(r)
}

// Randomize returns x plus noise (snapped to the grid if Secure).
func (m Laplace) Randomize(r *rand.Rand, x float64) float64 {
	if m.Secure {
		return snapScalar(x+m.Scale*signedExpZig(r), m.Scale)
	}
	return x + m.Scale*fastSignedExp(r)
}

// Perturb adds noise to every entry of x in place, without allocating.
// The plain variant draws E with the ziggurat (rand.ExpFloat64) and takes
// the signs 64 at a time from one word; the secure variant uses
// signedExpZig (the full-precision ziggurat, sign from the same word) and
// snaps.
func (m Laplace) Perturb(r *rand.Rand, x []float64) {
	s := m.Scale
	if !m.Secure {
		var signs uint64
		for i := range x {
			if i&63 == 0 {
				signs = r.Uint64()
			}
			e := s * r.ExpFloat64()
			x[i] += math.Float64frombits(math.Float64bits(e) | signs<<63)
			signs >>= 1
		}
		return
	}
	g := gridFor(s)
	inv := 1 / g
	for i := range x {
		x[i] = snap(x[i]+s*signedExpZig(r), g, inv)
	}
}

// Variance returns the variance of one coordinate's noise, 2λ² (plus at most
// g²/12 < 2^-26·λ² from snapping in the secure variant).
func (m Laplace) Variance() float64 { return 2 * m.Scale * m.Scale }
