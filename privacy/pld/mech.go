package pld

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// symmetric returns a PLD whose two directions are the same distribution
// (pairs with (Q, P) equivalent to (P, Q) up to relabelling).
func symmetric(h float64, o Options, d dir) *PLD {
	return &PLD{h: h, opt: o, rem: d, add: d}
}

// Gaussian returns the PLD of the Gaussian mechanism with noise standard
// deviation sigma and L2 sensitivity s: the pair (N(s, sigma^2),
// N(0, sigma^2)), whose privacy loss is N(mu, 2 mu) with
// mu = s^2/(2 sigma^2) in both directions. The Chernoff certificate is the
// exact Rényi divergence alpha mu.
func Gaussian(sigma, sensitivity float64, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("Gaussian PLD: %w", err)
	}
	if err := checks.Positive("sigma", sigma); err != nil {
		return nil, fmt.Errorf("Gaussian PLD: %w", err)
	}
	if err := checks.Positive("sensitivity", sensitivity); err != nil {
		return nil, fmt.Errorf("Gaussian PLD: %w", err)
	}
	d, err := gaussianDir(sigma, sensitivity, o.Interval, o.TailMass)
	if err != nil {
		return nil, fmt.Errorf("Gaussian PLD: %w", err)
	}
	return symmetric(o.Interval, o, d), nil
}

func gaussianDir(sigma, s, h, tail float64) (dir, error) {
	r := s / sigma
	mu := r * r / 2
	if math.IsInf(mu, 0) || mu == 0 {
		return dir{}, checks.Invalidf("sensitivity/sigma = %v is out of range", r)
	}
	sd := r // sqrt(2 mu)
	z := gaussTailZ(tail / 2)
	lo, hi := mu-z*sd, mu+z*sd
	b, err := newBuilder(h, lo, hi)
	if err != nil {
		return dir{}, err
	}
	b.rho = 64 * unitRoundoff
	norm := 1 / (sd * math.Sqrt(2*math.Pi))
	f := func(l float64) float64 {
		t := (l - mu) / sd
		return norm * math.Exp(-t*t/2)
	}
	// lower tail below lo: moved up to the grid point ceil(lo/h) h >= lo;
	// upper tail above hi: to +Inf (both pessimistic)
	below := 0.5 * math.Erfc((mu-lo)/(sd*math.Sqrt2))
	b.g[int(math.Ceil(lo/h))-b.off] += below
	b.continuous(f, lo, hi, sd)
	b.inf += 0.5 * math.Erfc((hi-mu)/(sd*math.Sqrt2))
	d := b.finish(tail)
	d.logm = make([]float64, len(chernoffLambdas))
	for j, l := range chernoffLambdas {
		d.logm[j] = l * (l + 1) * mu * (1 + 1e-12)
	}
	return d, nil
}

// Laplace returns the PLD of the Laplace mechanism with scale b and L1
// sensitivity s (pair (Lap(0, b), Lap(s, b)), symmetric): with eps = s/b
// the loss is eps with probability 1/2, -eps with probability e^-eps/2 and
// has density e^{(l-eps)/2}/4 on (-eps, eps). The Chernoff certificate is
// the exact Rényi divergence of Mironov 2017 (Proposition 6).
func Laplace(scale, sensitivity float64, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("Laplace PLD: %w", err)
	}
	if err := checks.Positive("scale", scale); err != nil {
		return nil, fmt.Errorf("Laplace PLD: %w", err)
	}
	if err := checks.Positive("sensitivity", sensitivity); err != nil {
		return nil, fmt.Errorf("Laplace PLD: %w", err)
	}
	eps := sensitivity / scale
	if eps > 700 || eps == 0 {
		return nil, fmt.Errorf("Laplace PLD: %w", checks.Invalidf("sensitivity/scale must be in (0, 700], got %v", eps))
	}
	h := o.Interval
	b, err := newBuilder(h, -eps, eps)
	if err != nil {
		return nil, fmt.Errorf("Laplace PLD: %w", err)
	}
	b.rho = 64 * unitRoundoff
	b.atom(eps, 0.5)
	b.atom(-eps, 0.5*math.Exp(-eps))
	b.continuous(func(l float64) float64 { return 0.25 * math.Exp((l-eps)/2) }, -eps, eps, 2)
	d := b.finish(o.TailMass)
	d.logm = make([]float64, len(chernoffLambdas))
	for j, l := range chernoffLambdas {
		a := l + 1
		// E[e^{lambda L}] = a/(2a-1) e^{lambda eps} + lambda/(2a-1) e^{-a eps}
		v := math.Log(a/(2*a-1)) + l*eps
		w := math.Log(l/(2*a-1)) - a*eps
		d.logm[j] = logAdd(v, w) + 1e-12*(1+math.Abs(v))
	}
	return symmetric(h, o, d), nil
}

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// RandomizedResponse returns the PLD of binary randomized response with
// parameter eps (report the true bit with probability e^eps/(1+e^eps)):
// the loss is eps with probability e^eps/(1+e^eps) and -eps otherwise, in
// both directions. Its pair dominates every pure eps-DP mechanism (Kairouz,
// Oh and Viswanath 2015), so it is also the generic eps-DP PLD.
func RandomizedResponse(eps float64, o Options) (*PLD, error) {
	if err := checks.Epsilon("eps", eps); err != nil {
		return nil, fmt.Errorf("randomized response PLD: %w", err)
	}
	p, err := ApproxDP(eps, 0, o)
	if err != nil {
		return nil, fmt.Errorf("randomized response PLD: %w", err)
	}
	return p, nil
}

// PureDP returns the PLD dominating every eps-DP mechanism; it is
// RandomizedResponse(eps, o).
func PureDP(eps float64, o Options) (*PLD, error) { return RandomizedResponse(eps, o) }

// ApproxDP returns the PLD of the pair dominating every (eps, delta)-DP
// mechanism (Kairouz, Oh and Viswanath 2015; Murtagh and Vadhan 2016):
// P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0) and Q the
// reverse, so the loss is +Inf with probability delta, eps with probability
// (1-delta) e^eps/(1+e^eps) and -eps otherwise, in both directions.
// delta = 0 gives RandomizedResponse.
func ApproxDP(eps, delta float64, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("approximate-DP PLD: %w", err)
	}
	if err := checks.Epsilon("eps", eps); err != nil {
		return nil, fmt.Errorf("approximate-DP PLD: %w", err)
	}
	if err := checks.DeltaOrZero("delta", delta); err != nil {
		return nil, fmt.Errorf("approximate-DP PLD: %w", err)
	}
	if eps > 700 {
		return nil, fmt.Errorf("approximate-DP PLD: %w", checks.Invalidf("eps must be <= 700, got %v", eps))
	}
	// e^eps/(1+e^eps) = 1/(1+e^-eps)
	hiP := (1 - delta) / (1 + math.Exp(-eps))
	loP := (1 - delta) * math.Exp(-eps) / (1 + math.Exp(-eps))
	d, err := atomsDir(o.Interval, o.TailMass, o.TailMass, []float64{eps, -eps}, []float64{hiP, loP}, delta)
	if err != nil {
		return nil, fmt.Errorf("approximate-DP PLD: %w", err)
	}
	return symmetric(o.Interval, o, d), nil
}

// FromPair returns the PLD of two discrete distributions p and q on the
// same finite support (remove: p vs q, add: q vs p). Entries must be
// finite and non-negative and each vector must sum to 1 within 1e-9.
// Outcomes with q = 0 < p put their p-mass at +Inf.
func FromPair(p, q []float64, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("PLD from pair: %w", err)
	}
	if len(p) == 0 || len(p) != len(q) {
		return nil, fmt.Errorf("PLD from pair: %w", checks.Invalidf("p and q must be non-empty and of equal length, got %d and %d", len(p), len(q)))
	}
	for _, v := range [][]float64{p, q} {
		s := 0.0
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return nil, fmt.Errorf("PLD from pair: %w", checks.Invalidf("entry %d must be finite and >= 0, got %v", i, x))
			}
			s += x
		}
		if math.Abs(s-1) > 1e-9 {
			return nil, fmt.Errorf("PLD from pair: %w", checks.Invalidf("a distribution sums to %v, want 1", s))
		}
	}
	mk := func(a, b []float64) (dir, error) {
		var ls, ps []float64
		inf := 0.0
		for i := range a {
			switch {
			case a[i] == 0:
			case b[i] == 0:
				inf += a[i]
			default:
				ls = append(ls, math.Log(a[i])-math.Log(b[i]))
				ps = append(ps, a[i])
			}
		}
		return atomsDir(o.Interval, o.TailMass, o.TailMass, ls, ps, inf)
	}
	rem, err := mk(p, q)
	if err != nil {
		return nil, fmt.Errorf("PLD from pair: %w", err)
	}
	add, err := mk(q, p)
	if err != nil {
		return nil, fmt.Errorf("PLD from pair: %w", err)
	}
	return &PLD{h: o.Interval, opt: o, rem: rem, add: add}, nil
}

// SampledGaussian returns the PLD of the Poisson-subsampled Gaussian
// mechanism (sampling rate q in (0, 1], noise multiplier sigma, L2
// sensitivity 1, add/remove neighbours): remove direction
// (q N(1, sigma^2) + (1-q) N(0, sigma^2) vs N(0, sigma^2)), add direction
// the reverse pair; the two differ. It is Gaussian(sigma, 1) with a tail of
// 1e-30 followed by SubsamplePoisson(q) (Zhu, Dong and Wang 2022), then
// truncated to o.TailMass — the DP-SGD / DP-FedAvg step.
func SampledGaussian(q, sigma float64, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("sampled Gaussian PLD: %w", err)
	}
	if err := checks.Positive("sigma", sigma); err != nil {
		return nil, fmt.Errorf("sampled Gaussian PLD: %w", err)
	}
	if err := checks.Finite("q", q); err != nil || q <= 0 || q > 1 {
		return nil, fmt.Errorf("sampled Gaussian PLD: %w", checks.Invalidf("q must be in (0, 1], got %v", q))
	}
	g, err := gaussianDir(sigma, 1, o.Interval, 1e-30)
	if err != nil {
		return nil, fmt.Errorf("sampled Gaussian PLD: %w", err)
	}
	base := &PLD{h: o.Interval, opt: o, rem: g, add: g}
	if q == 1 {
		base.rem.truncate(o.TailMass)
		base.add = base.rem
		return base, nil
	}
	out, err := base.SubsamplePoisson(q)
	if err != nil {
		return nil, fmt.Errorf("sampled Gaussian PLD: %w", err)
	}
	return out, nil
}

// gaussTailZ returns z >= 0 with P(N(0,1) > z) close to t (t in
// [1e-300, 0.5]), by bisection on the complementary error function. The
// caller uses exact tail masses at grid-aligned points, so only the
// magnitude matters.
func gaussTailZ(t float64) float64 {
	lo, hi := 0.0, 40.0
	for i := 0; i < 200; i++ {
		m := (lo + hi) / 2
		if 0.5*math.Erfc(m/math.Sqrt2) > t {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}
