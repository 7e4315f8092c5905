package mechanism

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shufflefl/shufflefl/checks"
)

// ErrZeroUpdate reports that SanitizeUpdate was asked to sanitize an update
// (or one layer of it) whose norm ||δ_c|| is zero while no MinRadius floor
// was given: the paper's ε = n/(ν·||δ_c||) is then infinite, i.e. no noise at
// all. It wraps checks.ErrInvalid. The sound reaction of a client is to
// decline the round (release nothing); package ifca does exactly that.
var ErrZeroUpdate = fmt.Errorf("%w: zero-norm update: epsilon = n/(nu*||delta||) is undefined (set a MinRadius floor, or decline the round)", checks.ErrInvalid)

// SanitizeOptions selects the variant of SanitizeUpdate.
type SanitizeOptions struct {
	// Secure selects the floating-point-safe sampler for deployment: the
	// direction and radius are drawn at full precision (normZig, a gamma
	// sampler on normZig and uniformFull) and every released coordinate is
	// snapped to the power-of-two grid g in (σ·2^-12, σ·2^-11], where
	// σ = sqrt(n+1)/ε is the per-coordinate noise standard deviation
	// (Lemma 2). Snapping after adding is post-processing. Caveat: the
	// grid depends on ε and so on ||δ_c||, which the paper's calibration
	// makes data-dependent; the grid reveals only the power-of-two bucket of
	// ν·||δ_c||/sqrt(n), far less than the radius of the noise itself
	// already reveals (see SanitizeUpdate). Unlike Laplace's, no
	// quantitative bound on the residual floating-point leakage is derived
	// for this sampler; it follows the same recipe (full-precision draws,
	// input-independent grid given ε) and passes the statistical privacy
	// test (TestPrivacySanitizeUpdate).
	Secure bool
	// MinRadius, if positive, floors the neighbourhood radius:
	// radius = max(||δ_c||, MinRadius) and ε = n/(ν·radius). Points within
	// the client's ||δ_c||-neighbourhood are then still at most
	// n/ν-indistinguishable (ε·||δ_c|| <= ε·radius = n/ν), and a zero-norm
	// update is sanitized with ε = n/(ν·MinRadius) instead of failing with
	// ErrZeroUpdate. If every update is clipped to norm at most R and
	// MinRadius = R, ε no longer depends on the data and the guarantee is
	// formal: any two vectors at L2 distance d are (n/ν)·(d/R)-
	// indistinguishable.
	MinRadius float64
}

// SanitizeReport describes one sanitized block (the whole vector, or one
// layer): what a client records in its d-privacy ledger.
type SanitizeReport struct {
	N         int     // dimension n of the block
	Norm      float64 // ||δ_c||₂ of the block's update
	Radius    float64 // neighbourhood radius used: max(Norm, MinRadius)
	Rate      float64 // ε = n/(ν·Radius), privacy loss per unit of L2 distance
	Leakage   float64 // ε·Radius = n/ν: the d-privacy level within the neighbourhood
	NoiseNorm float64 // the sampled radius ||ρ||₂ (before snapping)
}

// Layer is one block [Offset, Offset+Len) of a parameter vector, for the
// per-layer variant. Package mechanism does not know models; callers
// translate their layer layout (fl.Model.Layers) into Layers.
type Layer struct {
	Offset, Len int
}

// SanitizeUpdate is Algorithm 2 of Galli et al. ("Group privacy for
// personalized federated learning"): given the hypothesis θ_j̄ the client
// started from (hypothesis) and its locally updated vector θ_j̄,c (theta),
// it computes δ_c = θ_j̄,c − θ_j̄, sets ε = n/(ν·||δ_c||₂), draws ρ from the
// Euclidean Laplace mechanism L_{0,ε} in R^n (Lemma 1; radius
// Gamma(shape n, rate ε), uniform direction, Section 4.2) and replaces theta
// in place by the released vector θ̂ = θ_j̄,c + ρ. hypothesis is not
// modified. Each call costs ε·||δ_c|| = n/ν of d-privacy within the
// client's ||δ_c||-neighbourhood (Section 4.1); account.ComposeDPrivacy adds
// the costs over rounds (Theorem 1).
//
// What is released: the FULL updated vector θ̂_j̄,c, not δ_c (Section 4,
// deviation 4: the client must not reveal which hypothesis it trained, so
// the server cannot subtract θ_j̄ itself). The noise is centred on the
// update's end point; δ_c only sets its scale.
//
// Paper errors and ambiguities (see also docs/DPRIVACY.md):
//   - Algorithm 2 line 3 prints ε = η/(ν·||δ||) and Section 4.1 prints
//     ε = n/(ν·δ) (no norm); both mean n/(ν·||δ_c||₂), which is what gives
//     the stated ε·||δ_c|| = n/ν.
//   - Algorithm 1 calls SanitizeUpdate(θ_j̄,c; ν) but Algorithm 2 also needs
//     θ_j̄ (to form δ_c); this function takes both.
//   - ε depends on the private ||δ_c||, so n/ν is a heuristic level, not a
//     formal guarantee: the noise radius ||ρ|| has mean ν·||δ_c|| and
//     relative standard deviation 1/sqrt(n), and ρ is nearly orthogonal to
//     δ_c, so a server that knows the hypotheses sees
//     ||θ̂ − θ_j̄|| ≈ ||δ_c||·sqrt(ν²+1): for large n the release reveals
//     ||δ_c|| almost exactly
//     (TestSanitizeRevealsUpdateNorm). MinRadius with clipping removes the
//     dependence.
//   - ε is undefined for ||δ_c|| = 0 (the paper is silent): without
//     MinRadius this returns ErrZeroUpdate and leaves theta unchanged.
//
// Bad input (an error wrapping checks.ErrInvalid, theta unchanged): ν not a
// positive finite number, an empty vector, lengths that differ, a NaN or
// infinite entry, a negative or non-finite MinRadius, or a noise scale
// outside the normal floating-point range.
func SanitizeUpdate(r *rand.Rand, theta, hypothesis []float64, nu float64, opt SanitizeOptions) (SanitizeReport, error) {
	if err := sanitizeChecks(theta, hypothesis, nu, opt); err != nil {
		return SanitizeReport{}, err
	}
	rep, err := sanitizeBlock(r, theta, hypothesis, nu, opt)
	if err != nil {
		return SanitizeReport{}, fmt.Errorf("sanitize update: %w", err)
	}
	return rep, nil
}

// SanitizeUpdateLayers is the per-layer variant the paper applies against
// DLG (Section 5.3, after [42]): each layer (block of theta) is sanitized
// separately with its own n_l and ||δ_l||, so ε_l = n_l/(ν·||δ_l||). The
// layers must tile theta exactly, in order (the first starts at 0, each
// starts where the previous ends, the last ends at len(theta)), so that no
// coordinate is released without noise. It returns one report per layer.
//
// Privacy: by Theorem 1 the layers compose to Σ_l n_l/ν = n/ν, the same
// total as the whole-vector variant, but with respect to a different
// neighbourhood: the product of the per-layer balls of radius ||δ_l||
// instead of one ball of radius ||δ||. A layer with zero update norm fails
// with ErrZeroUpdate unless MinRadius is set; on any error theta is
// unchanged.
func SanitizeUpdateLayers(r *rand.Rand, theta, hypothesis []float64, nu float64, layers []Layer, opt SanitizeOptions) ([]SanitizeReport, error) {
	if err := sanitizeChecks(theta, hypothesis, nu, opt); err != nil {
		return nil, err
	}
	if len(layers) == 0 {
		return nil, checks.Invalidf("sanitize layers: no layers given")
	}
	next := 0
	for i, l := range layers {
		if l.Offset != next || l.Len < 1 {
			return nil, checks.Invalidf("sanitize layers: layer %d is [%d, %d+%d), want a non-empty block starting at %d (layers must tile the vector in order)", i, l.Offset, l.Offset, l.Len, next)
		}
		next = l.Offset + l.Len
	}
	if next != len(theta) {
		return nil, checks.Invalidf("sanitize layers: layers cover %d coordinates, the vector has %d", next, len(theta))
	}
	// Check every layer's norm before touching theta, so that an error
	// leaves it unchanged.
	if opt.MinRadius == 0 {
		for i, l := range layers {
			if diffNorm(theta[l.Offset:l.Offset+l.Len], hypothesis[l.Offset:l.Offset+l.Len]) == 0 {
				return nil, fmt.Errorf("sanitize layer %d: %w", i, ErrZeroUpdate)
			}
		}
	}
	reps := make([]SanitizeReport, len(layers))
	for i, l := range layers {
		if _, err := sanitizeParams(l.Len, diffNorm(theta[l.Offset:l.Offset+l.Len], hypothesis[l.Offset:l.Offset+l.Len]), nu, opt); err != nil {
			return nil, fmt.Errorf("sanitize layer %d: %w", i, err)
		}
	}
	for i, l := range layers {
		rep, err := sanitizeBlock(r, theta[l.Offset:l.Offset+l.Len], hypothesis[l.Offset:l.Offset+l.Len], nu, opt)
		if err != nil { // unreachable: the parameters were checked above
			return nil, fmt.Errorf("sanitize layer %d: %w", i, err)
		}
		reps[i] = rep
	}
	return reps, nil
}

func sanitizeChecks(theta, hypothesis []float64, nu float64, opt SanitizeOptions) error {
	if err := checks.Positive("noise multiplier nu", nu); err != nil {
		return fmt.Errorf("sanitize update: %w", err)
	}
	if err := checks.NonNegative("MinRadius", opt.MinRadius); err != nil {
		return fmt.Errorf("sanitize update: %w", err)
	}
	if len(theta) == 0 {
		return checks.Invalidf("sanitize update: empty parameter vector")
	}
	if err := checks.Vector("updated parameters", theta, -1); err != nil {
		return fmt.Errorf("sanitize update: %w", err)
	}
	if err := checks.Vector("hypothesis", hypothesis, len(theta)); err != nil {
		return fmt.Errorf("sanitize update: %w", err)
	}
	return nil
}

// sanitizeParams returns the report (without NoiseNorm) for a block of
// dimension n and update norm norm, or an error.
func sanitizeParams(n int, norm, nu float64, opt SanitizeOptions) (SanitizeReport, error) {
	if math.IsInf(norm, 0) {
		return SanitizeReport{}, checks.Invalidf("update norm overflows float64")
	}
	radius := max(norm, opt.MinRadius)
	if radius == 0 {
		return SanitizeReport{}, ErrZeroUpdate
	}
	fn := float64(n)
	rate := fn / (nu * radius)
	sigma := math.Sqrt(fn+1) / rate
	if err := checkScale("euclidean laplace per-coordinate scale sqrt(n+1)/epsilon", sigma); err != nil {
		return SanitizeReport{}, err
	}
	if err := checkScale("euclidean laplace rate", rate); err != nil {
		return SanitizeReport{}, err
	}
	return SanitizeReport{N: n, Norm: norm, Radius: radius, Rate: rate, Leakage: fn / nu}, nil
}

func diffNorm(a, b []float64) float64 {
	// Two accumulators break the dependency chain; the result is
	// deterministic (fixed order).
	var s0, s1 float64
	i := 0
	for ; i+1 < len(a); i += 2 {
		d0, d1 := a[i]-b[i], a[i+1]-b[i+1]
		s0 += d0 * d0
		s1 += d1 * d1
	}
	if i < len(a) {
		d := a[i] - b[i]
		s0 += d * d
	}
	return math.Sqrt(s0 + s1)
}

// sanitizeBlock sanitizes one checked block in place.
func sanitizeBlock(r *rand.Rand, theta, hypothesis []float64, nu float64, opt SanitizeOptions) (SanitizeReport, error) {
	n := len(theta)
	rep, err := sanitizeParams(n, diffNorm(theta, hypothesis), nu, opt)
	if err != nil {
		return SanitizeReport{}, err
	}
	p := scratchPool.Get().(*[]float64)
	defer scratchPool.Put(p)
	if cap(*p) < n {
		*p = make([]float64, n)
	}
	z := (*p)[:n]
	var norm2 float64
	for norm2 == 0 {
		norm2 = fillNormals(r, z)
	}
	var radius float64
	if opt.Secure {
		radius = gammaSampleSecure(r, float64(n)) / rep.Rate
	} else {
		radius = gammaSample(r, float64(n)) / rep.Rate
	}
	rep.NoiseNorm = radius
	f := radius / math.Sqrt(norm2)
	if !opt.Secure {
		for i := range theta {
			theta[i] += f * z[i]
		}
		return rep, nil
	}
	g := gridFor(math.Sqrt(float64(n)+1) / rep.Rate)
	inv := gridInv(g)
	for i := range theta {
		theta[i] = snap(theta[i]+f*z[i], g, inv)
	}
	return rep, nil
}

// fillNormals fills z with standard normals from normZig (full precision,
// and faster here than rand.NormFloat64) and returns their sum of squares.
func fillNormals(r *rand.Rand, z []float64) float64 {
	var s0, s1 float64
	i := 0
	for ; i+1 < len(z); i += 2 {
		a, b := normZig(r), normZig(r)
		z[i], z[i+1] = a, b
		s0 += a * a
		s1 += b * b
	}
	if i < len(z) {
		a := normZig(r)
		z[i] = a
		s0 += a * a
	}
	return s0 + s1
}

// gammaSampleSecure is gammaSample (Marsaglia and Tsang) on full-precision
// randomness: normals from normZig and the acceptance uniform from
// uniformFull, so that the radius carries no 32-bit granularity.
func gammaSampleSecure(r *rand.Rand, shape float64) float64 {
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := normZig(r)
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := uniformFull(r, r.Uint64(), 64)
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// IsZeroUpdate reports whether err is (or wraps) ErrZeroUpdate.
func IsZeroUpdate(err error) bool { return errors.Is(err, ErrZeroUpdate) }
