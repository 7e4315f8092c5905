package pld

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// Default discretisation parameters (used for zero fields of Options).
const (
	// DefaultInterval is the default grid spacing of the privacy loss.
	DefaultInterval = 1e-4
	// DefaultTailMass is the default probability mass truncated from the
	// tails of every distribution (upper tail to the +Inf atom, lower tail
	// moved up); it bounds the smallest delta the FFT representation can
	// resolve, not the Chernoff bound (see docs/PLD.md).
	DefaultTailMass = 1e-15
	// MaxBins is the largest grid (and FFT length) the package allocates;
	// larger requests fail with an error asking for a coarser Interval.
	MaxBins = 1 << 23
)

// Options control discretisation. The zero value means Interval =
// DefaultInterval and TailMass = DefaultTailMass.
type Options struct {
	// Interval is the grid spacing h of the privacy loss: every finite
	// loss is a multiple of h. The discretisation error of one mechanism
	// is of order h^2 per composition (connect-the-dots, see
	// docs/PLD.md), so for k compositions the epsilon error is about
	// (k h^2/12)(1 + z/sigma_K), sigma_K = sqrt(k) sigma_L for a per-step
	// loss standard deviation sigma_L and z about 4 to 5.
	Interval float64
	// TailMass is the probability mass that may be truncated from each
	// distribution at construction and after each composition: the upper
	// part goes to the +Inf atom (counts fully in delta), the lower part
	// is moved up to the lowest kept grid point. Both are pessimistic.
	TailMass float64
}

func (o Options) resolve() (Options, error) {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.TailMass == 0 {
		o.TailMass = DefaultTailMass
	}
	if err := checks.Positive("Options.Interval", o.Interval); err != nil {
		return o, err
	}
	if o.Interval > 1 {
		return o, checks.Invalidf("Options.Interval must be <= 1, got %v", o.Interval)
	}
	if err := checks.Positive("Options.TailMass", o.TailMass); err != nil {
		return o, err
	}
	if o.TailMass > 1e-3 {
		return o, checks.Invalidf("Options.TailMass must be <= 1e-3, got %v", o.TailMass)
	}
	return o, nil
}

// dir is the privacy loss distribution of one direction of a pair (P, Q):
// the law of L = log(P/Q)(X) for X ~ P, on the grid {(off+i) h} plus an
// atom at +Inf (the mass where Q = 0).
//
// The stored values are computed ones. They relate to a reference measure r
// (a pessimistic discretisation of the true PLD: its canonical pair
// dominates the true pair) by pmf = (1+theta) r + e entrywise with
// |theta| <= rho and ||e||_1 <= err, the atom at +Inf included.
type dir struct {
	off int
	pmf []float64
	inf float64
	rho float64
	err float64
	// Chernoff certificate: logm[j] >= log E[e^{lambda_j L}; L < Inf] for
	// a pair that dominates the true pair, with P(L = +Inf) <= cinf.
	logm []float64
	cinf float64
	// src, if set, is the self-composition the direction came from (for
	// the tilted bound at small deltas, see tiltView).
	src *tiltSrc
}

// PLD is a pessimistic discretised privacy loss distribution of a
// dominating pair, holding both directions: remove (the PLD of P vs Q) and
// add (of Q vs P). Delta is the maximum over the two directions. A PLD is
// immutable; methods return new values and are safe for concurrent use.
type PLD struct {
	h        float64
	opt      Options
	rem, add dir
	// subst marks a PLD built for the substitution relation (ShuffleClones)
	// or composed with one; SubsamplePoisson refuses it.
	subst bool
}

// Substitution reports whether the PLD was built for the substitution
// neighbouring relation (ShuffleClones, ShuffleClonesHetero) or composed
// with such a PLD.
func (p *PLD) Substitution() bool { return p.subst }

// Interval returns the grid spacing of the privacy loss.
func (p *PLD) Interval() float64 { return p.h }

// Options returns the discretisation options the PLD was built with.
func (p *PLD) Options() Options { return p.opt }

// Bins returns the number of grid points of the remove and add directions.
func (p *PLD) Bins() (remove, add int) { return len(p.rem.pmf), len(p.add.pmf) }

// InfMass returns the mass of the +Inf atom of each direction (including
// truncated upper tails): the delta at any epsilon is at least this.
func (p *PLD) InfMass() (remove, add float64) { return p.rem.inf, p.add.inf }

// ErrorBound returns the total additive error term on delta included by
// Delta: the larger over the two directions of the l1 bound on the
// deviation of the computed distribution from its pessimistic reference
// (FFT round-off, wrap-around outside the composition window). Delta also
// divides by 1 - RelativeErrorBound() (the rounding of the computed
// masses, which compounds multiplicatively under composition); both are
// part of every Delta and Epsilon value.
func (p *PLD) ErrorBound() float64 { return math.Max(p.rem.err, p.add.err) }

// RelativeErrorBound returns the relative rounding-error bound rho of the
// computed masses (the larger over the two directions): every computed mass
// is within a factor 1 +- rho of its reference value.
func (p *PLD) RelativeErrorBound() float64 { return math.Max(p.rem.rho, p.add.rho) }

// deltaSlack is the relative floating-point slack applied to a computed sum
// of n non-negative terms (recursive summation: gamma_n), doubled.
func deltaSlack(n int) float64 { return 2 * float64(n+8) * unitRoundoff }

// mass returns sum pmf + inf.
func (d *dir) mass() float64 {
	s := neumaier{}
	for _, v := range d.pmf {
		s.add(v)
	}
	return s.sum() + d.inf
}

// maxAbsLoss is max |l_i| over the grid.
func (d *dir) maxAbsLoss(h float64) float64 {
	if len(d.pmf) == 0 {
		return 0
	}
	return math.Max(math.Abs(float64(d.off)*h), math.Abs(float64(d.off+len(d.pmf)-1)*h))
}

// gridDelta returns the delta of the computed measure at eps (no error
// terms), with floating-point slack.
func (d *dir) gridDelta(h, eps float64) float64 {
	s := 0.0
	if len(d.pmf) == 0 || eps/h > float64(d.off+len(d.pmf)) {
		return d.inf
	}
	start := int(math.Floor(eps/h)) - d.off - 1
	if start < 0 {
		start = 0
	}
	cnt := 0
	for i := start; i < len(d.pmf); i++ {
		l := float64(d.off+i) * h
		if l <= eps {
			continue
		}
		s += d.pmf[i] * -math.Expm1(eps-l)
		cnt++
	}
	// rounding of the sum, of exp, and of the grid values l (|error| <= u|l|)
	abs := 4 * unitRoundoff * (d.maxAbsLoss(h) + math.Abs(eps) + 1) * s
	return (d.inf+s)*(1+deltaSlack(cnt)) + abs
}

// fftDelta is the rigorous grid bound (gridDelta with the error terms).
func (d *dir) fftDelta(h, eps float64) float64 {
	g := d.gridDelta(h, eps) + d.err
	return math.Min(1, g/(1-d.rho)*(1+4*unitRoundoff))
}

// chernoffLambdas are the orders lambda = alpha - 1 of the Chernoff (Rényi)
// certificate.
var chernoffLambdas = []float64{0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16,
	20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 128, 192, 256, 384, 512, 1023}

// logCLambda is log max_{x>0} (1 - e^-x) e^{-lambda x}
// = log( (1/(1+lambda)) (lambda/(1+lambda))^lambda ).
func logCLambda(l float64) float64 {
	return -math.Log1p(l) + l*(math.Log(l)-math.Log1p(l))
}

// chernoffDelta is cinf + min_lambda c_lambda E[e^{lambda(L - eps)}; L < Inf].
func (d *dir) chernoffDelta(eps float64) float64 {
	if d.logm == nil {
		return 1
	}
	best := math.Inf(1)
	for j, l := range chernoffLambdas {
		v := d.logm[j] + logCLambda(l) - l*eps
		if v < best {
			best = v
		}
	}
	r := d.cinf + math.Exp(best+1e-9)
	return math.Min(1, r*(1+1e-9))
}

func (d *dir) delta(h, eps float64) float64 {
	v := math.Min(d.fftDelta(h, eps), d.chernoffDelta(eps))
	if d.tiltWorthwhile(v) {
		v = math.Min(v, d.tiltedDelta(h, eps))
	}
	return v
}

// Delta returns a rigorous upper bound on the hockey-stick divergence
// H_{e^eps} of the mechanism, the larger over the remove and add
// directions, including every discretisation, truncation and
// floating-point error term. For each direction it is the smaller of the
// FFT-grid bound and the Chernoff (Rényi) certificate. Negative or NaN eps
// yields 1 (no guarantee claimed).
func (p *PLD) Delta(eps float64) float64 {
	if math.IsNaN(eps) || eps < 0 {
		return 1
	}
	if math.IsInf(eps, 1) {
		return math.Max(math.Min(1, p.rem.inf+p.rem.err), math.Min(1, p.add.inf+p.add.err))
	}
	return math.Max(p.rem.delta(p.h, eps), p.add.delta(p.h, eps))
}

// epsFFT is the smallest eps >= 0 with fftDelta(eps) <= delta (+Inf if none).
func (d *dir) epsFFT(h, delta float64) float64 {
	// fftDelta = min(1, ((inf+s)(1+sl) + abs + err)/(1-rho)(1+4u)); solve
	// for the grid sum s with a conservative slack, then verify.
	n := len(d.pmf)
	sl := deltaSlack(n)
	t := delta*(1-d.rho)/(1+4*unitRoundoff) - d.err
	t = t/(1+sl)/(1+4*unitRoundoff*(d.maxAbsLoss(h)+1)) - d.inf
	if t < 0 {
		return math.Inf(1)
	}
	// Scan the grid downwards keeping A_j = sum_{i>j} p_i and
	// S_j = S(l_j) = sum_{i>j} p_i (1 - e^{l_j - l_i}) (S is the grid sum as
	// a function of eps, non-increasing), S_{j-1} = (1-e^-h) A_{j-1} +
	// e^-h S_j with non-negative terms only. On [l_j, l_{j+1}],
	// S(eps) = A_j - e^{eps - l_j} (A_j - S_j); below the grid this form
	// holds with j = -1 for every eps <= l_0.
	om := -math.Expm1(-h)
	eh := math.Exp(-h)
	A, S := 0.0, 0.0
	for j := n - 1; j >= -1; j-- {
		l := float64(d.off+j) * h
		if S > t || (j == -1 && A > t) {
			e := l + math.Log((A-t)/(A-S))
			return math.Max(e, 0)
		}
		if l <= 0 || j == -1 {
			return 0
		}
		A += d.pmf[j]
		S = om*A + eh*S
	}
	return 0
}

// epsChernoff is the smallest eps >= 0 with chernoffDelta(eps) <= delta.
func (d *dir) epsChernoff(delta float64) float64 {
	if d.logm == nil {
		return math.Inf(1)
	}
	t := delta/(1+1e-9) - d.cinf
	if t <= 0 {
		return math.Inf(1)
	}
	lt := math.Log(t)
	best := math.Inf(1)
	for j, l := range chernoffLambdas {
		e := (d.logm[j] + 1e-9 + logCLambda(l) - lt) / l
		if e < best {
			best = e
		}
	}
	return math.Max(best, 0)
}

// Epsilon returns the smallest epsilon >= 0 with Delta(epsilon) <= delta
// (up to a relative 1e-12, rounded up), or +Inf (and no error) if no finite
// epsilon qualifies. delta must be in (0, 1).
func (p *PLD) Epsilon(delta float64) (float64, error) {
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("PLD epsilon: %w", err)
	}
	// Per direction: the smallest eps of the grid bound, the Chernoff
	// certificate and (when the grid bound's additive error is not
	// negligible) the tilted bound, with the bound that gave it.
	e := 0.0
	var fs []func(float64) float64
	for _, d := range []*dir{&p.rem, &p.add} {
		ed, fd := d.epsFFT(p.h, delta), func(x float64) float64 { return d.fftDelta(p.h, x) }
		if ec := d.epsChernoff(delta); ec < ed {
			ed, fd = ec, d.chernoffDelta
		}
		if d.tiltWorthwhile(delta) && !math.IsInf(ed, 1) {
			if et, ft := d.epsTilted(p.h, delta, ed); ft != nil && et < ed {
				ed, fd = et, ft
			}
		}
		e = math.Max(e, ed)
		fs = append(fs, fd)
	}
	if math.IsInf(e, 1) {
		return e, nil
	}
	// verify each direction's bound at the common eps (guards the
	// inversions against rounding); Delta(e) is at most the larger of them
	step := 1e-12 * (1 + e)
	for _, f := range fs {
		for i := 0; i < 200 && f(e) > delta; i++ {
			e += step
			step *= 2
		}
		if f(e) > delta {
			return math.Inf(1), nil
		}
	}
	return e, nil
}

// validate checks a PLD received as an argument.
func (p *PLD) validate(name string) error {
	if p == nil || p.h == 0 {
		return checks.Invalidf("%s is nil or not built by a constructor of package pld", name)
	}
	return nil
}

// RenyiEpsilon returns the smallest epsilon allowed by the Chernoff (Rényi)
// certificate alone, without the FFT grid: with M_j >= E[e^{lambda_j L}; L
// finite] for the orders alpha_j = 1 + lambda_j of chernoffLambdas (up to
// alpha = 1024), delta(eps) <= P(L = Inf) + min_j M_j e^{-lambda_j eps}
// (1/alpha_j) (1 - 1/alpha_j)^{alpha_j - 1}, the improved RDP conversion of
// Canonne, Kamath and Steinke 2020 (Proposition 12). It is the answer of an
// RDP accountant applied to the same (discretised) dominating pairs, and is
// never smaller than Epsilon. +Inf (no error) if no order qualifies.
func (p *PLD) RenyiEpsilon(delta float64) (float64, error) {
	if err := checks.Delta("delta", delta); err != nil {
		return 0, fmt.Errorf("PLD Rényi epsilon: %w", err)
	}
	return math.Max(p.rem.epsChernoff(delta), p.add.epsChernoff(delta)), nil
}

// LossStdDev returns the standard deviation of the finite part of the
// privacy loss (normalised by its mass), the larger over the remove and add
// directions, 0 if a direction has no finite mass. It describes the
// computed (discretised) distribution and is meant for sizing grids: the
// finite loss of k compositions spreads over about sqrt(k) times it.
func (p *PLD) LossStdDev() float64 {
	return math.Max(p.rem.lossStdDev(p.h), p.add.lossStdDev(p.h))
}

func (d *dir) lossStdDev(h float64) float64 {
	m, s1 := 0.0, 0.0
	for i, v := range d.pmf {
		m += v
		s1 += v * float64(i)
	}
	if m <= 0 {
		return 0
	}
	mean := s1 / m
	s2 := 0.0
	for i, v := range d.pmf {
		x := float64(i) - mean
		s2 += v * x * x
	}
	return math.Sqrt(s2/m) * h
}
