package mechanism

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// EuclideanLaplace is the Laplace mechanism for d-privacy under the
// Euclidean distance in R^n (Galli et al., "Group privacy for personalized
// federated learning", Lemma 1): the output has density
// K·exp(-ε_u·||y - x||₂) with K = ε_u^n Γ(n/2)/(2π^{n/2} Γ(n)), where ε_u is
// the privacy per unit of L2 distance (Rate). Any two inputs x, x' are
// ε_u·||x - x'||₂-indistinguishable.
//
// Sampling (Section 4.2): radius r ~ Gamma(shape n, rate ε_u), direction
// uniform on the unit sphere (a normalised standard normal vector). The
// noise has E[r] = n/ε_u and per-component variance (n+1)/ε_u² (Lemma 2;
// the lemma and its proof via E[r²] = n(n+1)/ε_u² are correct, see
// TestEuclideanLaplaceMoments). Utility degrades linearly in n (Section 4.4).
//
// This sampler is not floating-point hardened; it is meant for the
// simulations of the group-privacy paper.
type EuclideanLaplace struct {
	Rate float64 // ε_u: privacy loss per unit of L2 distance
}

// NewEuclideanLaplace returns the mechanism that makes inputs at L2 distance
// at most l2Sensitivity epsilon-indistinguishable (Rate = epsilon /
// l2Sensitivity). For the paper's noise-multiplier form use
// NewEuclideanLaplaceMultiplier.
func NewEuclideanLaplace(epsilon, l2Sensitivity float64) (EuclideanLaplace, error) {
	if err := checks.Epsilon("epsilon", epsilon); err != nil {
		return EuclideanLaplace{}, err
	}
	if err := checks.Positive("l2Sensitivity", l2Sensitivity); err != nil {
		return EuclideanLaplace{}, err
	}
	rate := epsilon / l2Sensitivity
	if err := checkScale("euclidean laplace rate", rate); err != nil {
		return EuclideanLaplace{}, err
	}
	return EuclideanLaplace{Rate: rate}, nil
}

// NewEuclideanLaplaceMultiplier returns the mechanism of the paper's
// Section 4.1 heuristic: ε_u = n/(ν·radius), so that points within the
// client's radius-neighbourhood are n/ν-indistinguishable and the expected
// noise norm is ν·radius.
func NewEuclideanLaplaceMultiplier(nu float64, n int, radius float64) (EuclideanLaplace, error) {
	if err := checks.Positive("nu", nu); err != nil {
		return EuclideanLaplace{}, err
	}
	if err := checks.IntAtLeast("n", n, 1); err != nil {
		return EuclideanLaplace{}, err
	}
	return NewEuclideanLaplace(float64(n)/nu, radius)
}

// SampleRadius returns one draw of the noise norm, Gamma(n, Rate).
func (m EuclideanLaplace) SampleRadius(r *rand.Rand, n int) float64 {
	return gammaSample(r, float64(n)) / m.Rate
}

var scratchPool = sync.Pool{New: func() any { return new([]float64) }}

// Perturb adds one n-dimensional Euclidean-Laplace noise vector to x
// (n = len(x)) in place. It uses a pooled scratch buffer, so repeated calls
// do not allocate; PerturbBuf takes the buffer explicitly.
func (m EuclideanLaplace) Perturb(r *rand.Rand, x []float64) {
	p := scratchPool.Get().(*[]float64)
	if cap(*p) < len(x) {
		*p = make([]float64, len(x))
	}
	m.PerturbBuf(r, x, (*p)[:len(x)])
	scratchPool.Put(p)
}

// PerturbBuf is Perturb with a caller-owned scratch buffer of len(x).
func (m EuclideanLaplace) PerturbBuf(r *rand.Rand, x, scratch []float64) {
	n := len(x)
	if n == 0 {
		return
	}
	if len(scratch) < n {
		panic("mechanism: EuclideanLaplace scratch buffer shorter than x")
	}
	z := scratch[:n]
	var norm2 float64
	for {
		norm2 = 0
		for i := range z {
			v := r.NormFloat64()
			z[i] = v
			norm2 += v * v
		}
		if norm2 > 0 {
			break
		}
	}
	f := m.SampleRadius(r, n) / math.Sqrt(norm2)
	for i := range x {
		x[i] += f * z[i]
	}
}

// gammaSample returns Gamma(shape, 1) for shape >= 1 by Marsaglia and Tsang
// (2000), an exact rejection method.
func gammaSample(r *rand.Rand, shape float64) float64 {
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
