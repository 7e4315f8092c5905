package mechanism

import (
	"fmt"
	"math"
	"slices"

	"github.com/shufflefl/shufflefl/checks"
)

// ClipLaplaceCalibrator is the APES analyzer's de-biasing step (APES
// "Analyzing Process" and Eq. (1)). The analyzer sees, per coordinate, the
// average avg of n shuffled Clip-Laplace outputs and the shuffled list of the
// n clients' epsilons, but not which epsilon produced which output. It
// estimates the clean mean ḡ by solving
//
//	F(x) = (1/n)·Σ_i Mean_i(x) = avg,   Mean_i = Eq. (1) with λ_i = Δf/ε_i,
//
// for x in [-A, A]. F is strictly increasing, so the solution is unique;
// when avg lies outside [F(-A), F(A)] (noise can push it there) the answer is
// clamped to -A or A.
//
// This inversion is exact when all clients share the input x; with
// heterogeneous inputs it uses APES's approximation E[avg] ≈ F(ḡ), whose
// error grows with the curvature of Mean (see TestCalibratorHeterogeneous-
// Inputs).
//
// Conditioning: F'(±A) = 0 when the input range equals the output range
// (the APES setting A = C), so near the clip bound the mean is poorly
// determined: the standard error of the estimate is about sd(avg)/F'(x),
// which diverges at ±A (Slope gives F').
//
// Cost: the constructor groups equal epsilons and tabulates F and F' on an
// adaptively refined grid (cubic Hermite interpolation, accurate to 1e-10·A
// in F, typically a few hundred nodes), costing (number of nodes) × (number
// of distinct epsilons) evaluations of Eq. (1), once per population. Invert
// then costs a binary search plus a few safeguarded Newton steps on one
// cubic segment, independent of n. It is safe for concurrent use.
type ClipLaplaceCalibrator struct {
	bound     float64
	lambdas   []float64 // distinct λ
	weights   []float64 // fraction of clients with that λ
	x, f, df  []float64 // nodes (increasing, from -A to A), F and F' there
	lowF, hiF float64
}

// NewClipLaplaceCalibrator builds the calibrator for a population of clients
// whose Clip-Laplace epsilons are given (in any order; the shuffled list is
// fine), all with the same sensitivity Δf and bound A, so that
// λ_i = sensitivity/epsilons[i]. Epsilons, not lambdas, are taken because
// that is what APES clients send to the shuffler.
func NewClipLaplaceCalibrator(epsilons []float64, sensitivity, bound float64) (*ClipLaplaceCalibrator, error) {
	if len(epsilons) == 0 {
		return nil, checks.Invalidf("epsilons is empty: the calibrator needs the clients' epsilons")
	}
	if err := checks.Positive("sensitivity", sensitivity); err != nil {
		return nil, err
	}
	if err := checks.Positive("bound", bound); err != nil {
		return nil, err
	}
	eps := slices.Clone(epsilons)
	for i, e := range eps {
		if err := checks.Epsilon(fmt.Sprintf("epsilons[%d]", i), e); err != nil {
			return nil, err
		}
		if err := checkScale("clip-laplace lambda", sensitivity/e); err != nil {
			return nil, err
		}
	}
	slices.Sort(eps)
	c := &ClipLaplaceCalibrator{bound: bound}
	n := float64(len(eps))
	for i := 0; i < len(eps); {
		j := i
		for j < len(eps) && eps[j] == eps[i] {
			j++
		}
		c.lambdas = append(c.lambdas, sensitivity/eps[i])
		c.weights = append(c.weights, float64(j-i)/n)
		i = j
	}
	// Tabulate F and F' adaptively: start from a uniform grid and split
	// every segment whose cubic Hermite interpolant misses F at the midpoint
	// (where its h^4 error term peaks) by more than calibTol·A. The curvature
	// concentrates near ±A and for small λ, so local refinement needs far
	// fewer evaluations of F (each costing one Eq. (1) per distinct epsilon)
	// than a uniform grid.
	const initial = 33
	type node struct{ x, f, df float64 }
	at := func(x float64) node {
		f, df := c.exact(x)
		return node{x, f, df}
	}
	var nodes []node
	var refine func(a, b node, depth int)
	refine = func(a, b node, depth int) {
		m := at(0.5 * (a.x + b.x))
		h := b.x - a.x
		pred := 0.5*(a.f+b.f) + h*(a.df-b.df)/8 // Hermite at s = 1/2
		if depth < maxCalibDepth && math.Abs(pred-m.f) > calibTol*bound {
			refine(a, m, depth+1)
			refine(m, b, depth+1)
			return
		}
		nodes = append(nodes, m, b)
	}
	prev := at(-bound)
	nodes = append(nodes, prev)
	for i := 1; i < initial; i++ {
		x := -bound + 2*bound*float64(i)/(initial-1)
		if i == initial-1 {
			x = bound
		}
		next := at(x)
		refine(prev, next, 0)
		prev = next
	}
	c.x = make([]float64, len(nodes))
	c.f = make([]float64, len(nodes))
	c.df = make([]float64, len(nodes))
	for i, n := range nodes {
		c.x[i], c.f[i], c.df[i] = n.x, n.f, n.df
	}
	k := len(nodes)
	c.lowF, c.hiF = c.f[0], c.f[k-1]
	return c, nil
}

const (
	calibTol      = 1e-10 // interpolation accuracy in F, relative to A
	maxCalibDepth = 20    // segments are at least 2A/32/2^20 wide
)

// Nodes returns the number of interpolation nodes (for benchmarks).
func (c *ClipLaplaceCalibrator) Nodes() int { return len(c.x) }

// exact returns F(x) and F'(x) by summing over the groups.
func (c *ClipLaplaceCalibrator) exact(x float64) (f, df float64) {
	for g, lam := range c.lambdas {
		m, s := clapMeanSlope(x, lam, c.bound)
		f += c.weights[g] * m
		df += c.weights[g] * s
	}
	return
}

// hermiteD evaluates the cubic Hermite interpolant on segment i at s in
// [0, 1] (x = x_i + s·h), and its derivative in s.
func (c *ClipLaplaceCalibrator) hermiteD(i int, s float64) (v, dv float64) {
	h := c.x[i+1] - c.x[i]
	f0, f1 := c.f[i], c.f[i+1]
	d0, d1 := c.df[i]*h, c.df[i+1]*h
	s2, s3 := s*s, s*s*s
	v = (2*s3-3*s2+1)*f0 + (s3-2*s2+s)*d0 + (-2*s3+3*s2)*f1 + (s3-s2)*d1
	dv = (6*s2-6*s)*f0 + (3*s2-4*s+1)*d0 + (-6*s2+6*s)*f1 + (3*s2-2*s)*d1
	return
}

// Expected returns F(x), the expected average output when every client's
// input is x (exact, cost proportional to the number of distinct epsilons).
func (c *ClipLaplaceCalibrator) Expected(x float64) float64 {
	f, _ := c.exact(x)
	return f
}

// Slope returns F'(x) (exact). The standard error of the calibrated
// estimate is about sd(avg)/F'(x).
func (c *ClipLaplaceCalibrator) Slope(x float64) float64 {
	_, df := c.exact(x)
	return df
}

// Invert returns the x in [-A, A] with F(x) = avg, clamped to -A or A when
// avg is outside [F(-A), F(A)]. NaN gives NaN.
func (c *ClipLaplaceCalibrator) Invert(avg float64) float64 {
	if math.IsNaN(avg) {
		return avg
	}
	if avg <= c.lowF {
		return -c.bound
	}
	if avg >= c.hiF {
		return c.bound
	}
	// Binary search for the segment f[i] <= avg < f[i+1].
	lo, hi := 0, len(c.f)-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if c.f[mid] <= avg {
			lo = mid
		} else {
			hi = mid
		}
	}
	// Solve the cubic Hermite segment for s in [0, 1], x = x_lo + s·h:
	// Newton from the secant guess, bisecting whenever Newton leaves the
	// bracket or the slope vanishes (F' = 0 at ±A).
	sLo, sHi := 0.0, 1.0
	s := (avg - c.f[lo]) / (c.f[hi] - c.f[lo])
	for range 60 {
		v, dv := c.hermiteD(lo, s)
		if v < avg {
			sLo = s
		} else {
			sHi = s
		}
		next := s - (v-avg)/dv
		if !(next > sLo && next < sHi) || dv <= 0 { // Newton left the bracket: bisect
			next = 0.5 * (sLo + sHi)
		}
		if math.Abs(next-s) < 1e-15 || sHi-sLo < 1e-15 {
			s = next
			break
		}
		s = next
	}
	x := c.x[lo] + s*(c.x[hi]-c.x[lo])
	return math.Max(-c.bound, math.Min(c.bound, x))
}

// InvertAll replaces every avgs[i] by Invert(avgs[i]), in place.
func (c *ClipLaplaceCalibrator) InvertAll(avgs []float64) {
	for i, v := range avgs {
		avgs[i] = c.Invert(v)
	}
}

// CalibrateClipLaplace is the one-shot form of the APES calibration: it
// builds the calibrator for the clients' epsilons and inverts one average.
// To calibrate many coordinates of the same population, build the
// calibrator once with NewClipLaplaceCalibrator and call Invert/InvertAll.
func CalibrateClipLaplace(avg float64, epsilons []float64, sensitivity, bound float64) (float64, error) {
	c, err := NewClipLaplaceCalibrator(epsilons, sensitivity, bound)
	if err != nil {
		return 0, err
	}
	return c.Invert(avg), nil
}
