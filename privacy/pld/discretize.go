package pld

import (
	"math"
	"sort"

	"github.com/shufflefl/shufflefl/checks"
)

// builder accumulates a connect-the-dots discretisation of one direction on
// a dense grid covering [lmin, lmax].
type builder struct {
	h   float64
	om  float64 // 1 - e^-h
	off int
	g   []float64
	inf float64
	// relative rounding error of the masses added so far
	rho float64
}

func newBuilder(h, lmin, lmax float64) (*builder, error) {
	if n := math.Ceil(lmax/h) - math.Floor(lmin/h) + 4; n > MaxBins || math.IsNaN(n) {
		return nil, checks.Invalidf("the loss range [%.6g, %.6g] needs %.3g grid points at Interval %v (limit %d); use a larger Options.Interval", lmin, lmax, n, h, MaxBins)
	}
	lo := int(math.Floor(lmin/h)) - 1
	hi := int(math.Ceil(lmax/h)) + 2
	return &builder{h: h, om: -math.Expm1(-h), off: lo, g: make([]float64, hi-lo+1), rho: 8 * unitRoundoff}, nil
}

// atom adds probability p at privacy loss l by connect-the-dots: with
// l_i <= l < l_{i+1}, mass b = p (1 - e^{-(l-l_i)})/(1 - e^{-h}) goes to
// l_{i+1} and a = p - b to l_i, which keeps both the P-mass p and the
// Q-mass p e^{-l}. The offset d = l - l_i is rounded up by a bound on its
// floating-point error, which only moves mass up (pessimistic).
func (b *builder) atom(l, p float64) {
	if p <= 0 {
		return
	}
	b.apply(b.cells().place(l, p))
}

// cells are the grid parameters of a builder that place reads: goroutines
// may place atoms on a copy while one goroutine applies them in order.
type cells struct {
	h, om float64
	off   int
	n     int // len(builder.g)
}

func (b *builder) cells() cells { return cells{h: b.h, om: b.om, off: b.off, n: len(b.g)} }

// gridAdd is where atom puts one atom: lo at grid index k and up at k+1
// (indices of builder.g), or, when k < 0, lo on the +Inf atom.
type gridAdd struct {
	k      int
	lo, up float64
}

// place returns where atom puts probability p > 0 at loss l (the
// arithmetic of atom, which apply completes).
func (c cells) place(l, p float64) gridAdd {
	i, d := c.cell(l)
	return c.split(i, d, p)
}

// cell returns the grid index i of the cell [l_i, l_{i+1}) holding loss l
// and the offset d = l - l_i, rounded up by a bound on its floating-point
// error.
func (c cells) cell(l float64) (i int, d float64) {
	h := c.h
	i = int(math.Floor(l / h))
	li := float64(i) * h
	d = l - li + 4*unitRoundoff*(math.Abs(l)+math.Abs(li)+h)
	for d >= h {
		i++
		d -= h
	}
	if d < 0 {
		d = 0
	}
	return i, d
}

// split returns the connect-the-dots split of mass p at offset d in cell i.
func (c cells) split(i int, d, p float64) gridAdd {
	var up float64
	if d > 0 {
		up = minNum(p, p*oneMinusExpNeg(d)/c.om*(1+8*unitRoundoff))
	}
	k := i - c.off
	if k < 0 {
		k = 0 // cannot happen for l >= lmin; pessimistic anyway
	}
	if k+1 >= c.n {
		return gridAdd{k: -1, lo: p}
	}
	return gridAdd{k: k, lo: p - up, up: up}
}

// minNum is math.Min unless a and b are zeros of opposite signs (Min
// returns -0 for those; minNum returns a): it is inlined, where math.Min
// calls an assembly routine on amd64.
func minNum(a, b float64) float64 {
	switch {
	case b < a:
		return b
	case a != a || b != b:
		return math.NaN()
	}
	return a
}

// apply adds a placed atom to the grid (or the +Inf atom).
func (b *builder) apply(a gridAdd) {
	if a.k < 0 {
		b.inf += a.lo
		return
	}
	b.g[a.k] += a.lo
	b.g[a.k+1] += a.up
}

// interval adds the continuous mass of grid cell [l_i, l_{i+1}] (i the
// absolute grid index): total P-mass pm, of which up = int (1 -
// e^{l_i - l})/(1 - e^{-h}) dP goes to l_{i+1} (connect-the-dots).
func (b *builder) interval(i int, pm, up float64) {
	if pm <= 0 {
		return
	}
	up = math.Min(pm, math.Max(up, 0)*(1+64*unitRoundoff))
	k := i - b.off
	if k < 0 || k+1 >= len(b.g) {
		b.inf += pm
		return
	}
	b.g[k] += pm - up
	b.g[k+1] += up
}

// finish truncates the tails (lower tail moved up to the lowest kept grid
// point, upper tail to +Inf, each at most tail/2) and returns the direction.
func (b *builder) finish(tail float64) dir {
	lo, hi := truncRange(b.g, tail)
	d := dir{off: b.off + lo, inf: b.inf, rho: b.rho}
	if lo > hi {
		d.pmf = nil
		for _, v := range b.g {
			d.inf += v
		}
		return d
	}
	d.pmf = make([]float64, hi-lo+1)
	copy(d.pmf, b.g[lo:hi+1])
	for _, v := range b.g[:lo] {
		d.pmf[0] += v
	}
	for _, v := range b.g[hi+1:] {
		d.inf += v
	}
	return d
}

// truncRange returns the index range [lo, hi] to keep so that the mass
// below lo and the mass above hi are each at most tail/2.
func truncRange(g []float64, tail float64) (lo, hi int) {
	c := 0.0
	lo = 0
	for lo < len(g) && c+g[lo] <= tail/2 {
		c += g[lo]
		lo++
	}
	c = 0
	hi = len(g) - 1
	for hi >= 0 && c+g[hi] <= tail/2 {
		c += g[hi]
		hi--
	}
	if lo > hi && len(g) > 0 {
		// everything is tiny: keep the whole range
		return 0, len(g) - 1
	}
	return lo, hi
}

// truncate applies truncRange to an existing direction.
func (d *dir) truncate(tail float64) {
	lo, hi := truncRange(d.pmf, tail)
	if len(d.pmf) == 0 || (lo == 0 && hi == len(d.pmf)-1) {
		return
	}
	p := make([]float64, hi-lo+1)
	copy(p, d.pmf[lo:hi+1])
	for _, v := range d.pmf[:lo] {
		p[0] += v
	}
	for _, v := range d.pmf[hi+1:] {
		d.inf += v
	}
	d.off += lo
	d.pmf = p
}

// gridMoments returns log sum_i g_i e^{lambda l_i} over the grid for every
// Chernoff order, rounded up (relative 1e-9 plus an absolute 1e-290 of the
// shifted sum for underflowed terms).
func gridMoments(off int, g []float64, h float64) []float64 {
	top := -1
	for i := len(g) - 1; i >= 0; i-- {
		if g[i] > 0 {
			top = i
			break
		}
	}
	out := make([]float64, len(chernoffLambdas))
	if top < 0 {
		for j := range out {
			out[j] = math.Inf(-1)
		}
		return out
	}
	ltop := float64(off+top) * h
	for j, lam := range chernoffLambdas {
		s := 0.0
		f := math.Exp(-lam * h) // ratio between consecutive terms going down
		var t float64
		for i := top; i >= 0; i-- {
			if (top-i)&255 == 0 {
				t = math.Exp(lam * (float64(off+i)*h - ltop))
			}
			s += g[i] * t
			t *= f
		}
		out[j] = math.Log(s*(1+1e-9)+1e-290) + lam*ltop
	}
	return out
}

// atomMoments returns log sum_k p_k e^{lambda l_k} for finite atoms.
func atomMoments(ls, ps []float64) []float64 {
	out := make([]float64, len(chernoffLambdas))
	for j, lam := range chernoffLambdas {
		mx := math.Inf(-1)
		for k, l := range ls {
			if ps[k] > 0 {
				mx = math.Max(mx, math.Log(ps[k])+lam*l)
			}
		}
		if math.IsInf(mx, -1) {
			out[j] = mx
			continue
		}
		s := 0.0
		for k, l := range ls {
			if ps[k] > 0 {
				s += math.Exp(math.Log(ps[k]) + lam*l - mx)
			}
		}
		out[j] = math.Log(s*(1+1e-9)) + mx
	}
	return out
}

// atomsDir discretises finite atoms (loss ls[k], P-mass ps[k]) plus an atom
// at +Inf: the tails are cut first (at most cut/2 each; the lower one moved
// up to the lowest kept loss, the upper one to +Inf), then connect-the-dots,
// then the grid is truncated at tail. The Chernoff certificate is computed
// exactly from the atoms when there are few, otherwise from the
// connect-the-dots grid before the final truncation (whose pair dominates
// the atoms' pair, so its moments are larger).
func atomsDir(h, cut, tail float64, ls, ps []float64, inf float64) (dir, error) {
	idx := make([]int, 0, len(ls))
	for k := range ls {
		if ps[k] > 0 {
			idx = append(idx, k)
		}
	}
	if !sort.SliceIsSorted(idx, func(a, b int) bool { return ls[idx[a]] < ls[idx[b]] }) {
		sort.SliceStable(idx, func(a, b int) bool { return ls[idx[a]] < ls[idx[b]] })
	}
	if len(idx) == 0 {
		return dir{inf: inf, cinf: inf, logm: atomMoments(nil, nil), rho: 8 * unitRoundoff}, nil
	}
	// cut tails
	lo, c := 0, 0.0
	for lo < len(idx)-1 && c+ps[idx[lo]] <= cut/2 {
		c += ps[idx[lo]]
		lo++
	}
	hi, cu := len(idx)-1, 0.0
	for hi > lo && cu+ps[idx[hi]] <= cut/2 {
		cu += ps[idx[hi]]
		hi--
	}
	b, err := newBuilder(h, ls[idx[lo]], ls[idx[hi]])
	if err != nil {
		return dir{}, err
	}
	b.inf = inf + cu
	b.atom(ls[idx[lo]], c)
	for _, k := range idx[lo : hi+1] {
		b.atom(ls[k], ps[k])
	}
	var logm []float64
	cinf := inf
	if len(idx) <= 64 {
		logm = atomMoments(ls, ps)
	} else {
		logm = gridMoments(b.off, b.g, h)
		cinf = b.inf
	}
	d := b.finish(tail)
	d.logm = logm
	d.cinf = cinf
	return d, nil
}

// Gauss-Legendre nodes and weights on [-1, 1] (8 and 4 points).
var glX8 = []float64{-0.9602898564975363, -0.7966664774136267, -0.5255324099163290, -0.1834346424956498,
	0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363}
var glW8 = []float64{0.1012285362903763, 0.2223810344533745, 0.3137066458778873, 0.3626837833783620,
	0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763}
var glX4 = []float64{-0.8611363115940526, -0.3399810435848563, 0.3399810435848563, 0.8611363115940526}
var glW4 = []float64{0.3478548451374538, 0.6521451548625461, 0.6521451548625461, 0.3478548451374538}

// continuous adds the mass of a density f(l) on [a, c] (a < c) by
// connect-the-dots per grid cell: for the cell [l_i, l_i + h] the P-mass and
// the part moved up are Gauss-Legendre integrals over pieces of width w no
// larger than scale/4, where f is smooth (analytic) on the length scale
// `scale`. The n-point rule's error is of order (w/scale)^{2n} relative:
// with 8 points and w <= scale/4 below 1e-19, with 4 points (used when
// w <= scale/100) below 1e-16, i.e. within the relative rounding error
// already accounted for in rho.
func (b *builder) continuous(f func(float64) float64, a, c, scale float64) {
	h := b.h
	om := -math.Expm1(-h)
	i0 := int(math.Floor(a / h))
	i1 := int(math.Ceil(c / h))
	w := math.Min(h, scale/4)
	xs, ws := glX8, glW8
	if w <= scale/100 {
		xs, ws = glX4, glW4
	}
	for i := i0; i < i1; i++ {
		li := float64(i) * h
		x0 := math.Max(li, a)
		x1 := math.Min(li+h, c)
		if x1 <= x0 {
			continue
		}
		m := int(math.Ceil((x1 - x0) / w))
		if m < 1 {
			m = 1
		}
		pw := (x1 - x0) / float64(m)
		pm, up := 0.0, 0.0
		for s := 0; s < m; s++ {
			mid := x0 + (float64(s)+0.5)*pw
			for k, xk := range xs {
				x := mid + 0.5*pw*xk
				v := ws[k] * f(x)
				pm += v
				up += v * -math.Expm1(li-x) / om
			}
		}
		b.interval(i, 0.5*pw*pm, 0.5*pw*up)
	}
}

// oneMinusExpNeg returns 1 - e^{-d} for d >= 0: for d <= 1e-3 by the
// alternating Taylor series to the d^6 term (truncation below d^6/5040,
// relative below 2e-19, rounding a few ulps), otherwise by math.Expm1.
func oneMinusExpNeg(d float64) float64 {
	if d > 1e-3 {
		return -math.Expm1(-d)
	}
	return d * (1 - d/2*(1-d/3*(1-d/4*(1-d/5*(1-d/6)))))
}
