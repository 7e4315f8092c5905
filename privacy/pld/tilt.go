package pld

import (
	"math"
	"sync"
)

// tiltSrc records that a direction is the k-fold self-composition of base
// (a direction with no additive error term, err = 0, such as every pair the
// constructors build): the tilted bound (tiltView) recomputes that
// composition under an exponential tilt when a small delta is asked for.
type tiltSrc struct {
	base *dir
	k    int
	tail float64

	// caches, keyed by the tilt's index on the grid lam = e^{i/16}: the
	// base's log moment generating function and the views computed
	mu    sync.Mutex
	mgf   map[int]float64
	views map[int]*tiltView
}

// tiltSteps is the number of tilts per unit of log lambda (the grid of
// the saddle-point search and of the view cache). The tilted sum is exact
// whatever the tilt; the tilt only decides which part of the composed
// loss the FFT resolves to full relative accuracy, so a coarse grid loses
// nothing measurable (q = 0.001, sigma = 1, 100 steps: delta(1) 2.277e-14
// with 16 steps per unit, 2.279e-14 with 4) and needs fewer views.
const tiltSteps = 4

// maxCachedViews bounds the views kept per source.
const maxCachedViews = 8

// maxTiltFold bounds k for the tilted bound (the grid offsets k*off stay
// far from overflow).
const maxTiltFold = 1 << 40

// newTiltSrc returns the source of the k-fold self-composition of d, or
// nil if the tilted bound does not apply (d carries an additive error
// term and is not itself a self-composition).
func newTiltSrc(d *dir, k int, tail float64) *tiltSrc {
	if d.src != nil {
		if d.src.k > maxTiltFold/k {
			return nil
		}
		return &tiltSrc{base: d.src.base, k: d.src.k * k, tail: d.src.tail}
	}
	if d.err != 0 || k > maxTiltFold {
		return nil
	}
	b := *d
	b.src = nil
	return &tiltSrc{base: &b, k: k, tail: tail}
}

// tiltView is the k-fold composition of a tilt source computed under the
// exponential tilt lambda > 0. With r the reference measure of the base
// (c = (1+theta) r entrywise, |theta| <= rho) and a > 0 a constant, the
// tilted base a T r, (T r)_i = r_i e^{lambda l_i}, satisfies
// (a T r)^{*k} = a^k T (r^{*k}) because losses add under convolution, so
//
//	delta_fin(eps) = sum_{l_j > eps} r^{*k}_j (1 - e^{eps - l_j})
//	               = sum_j g_j R_j,  R = (a T r)^{*k},
//	g_j = a^{-k} e^{-lambda l_j} (1 - e^{eps - l_j})_+ <= G = a^{-k} c_lambda e^{-lambda eps}
//
// (c_lambda as in the Chernoff certificate). The computed window y of R
// (powerWindow on the computed tilted base) has relative error rho, a
// round-off error of l2 norm at most e2 = efft/sqrt(N) (Parseval, see
// docs/PLD.md), and an l1 error errT: the mass outside the
// window (2 tau, where g <= G; the cyclic wrap-around only adds
// non-negative mass inside, which can only raise the sum, and is counted
// with another 2 tau anyway) and the entries of the tilted base that
// underflowed (set to 0, at most 1e-290 each, k-fold). Since g >= 0,
//
//	delta_fin(eps) <= (sum_j g_j y_j + ||g||_2 e2 + G errT) / (1 - rho),
//
// the round-off weighted by g (Cauchy-Schwarz), the rest by G. G is about
// the size of delta itself when lambda is the saddle point of eps, and
// ||g||_2 a small fraction of G sqrt(N): the bound keeps its relative
// accuracy at deltas far below the FFT's absolute round-off (about
// 1e-12), where the untilted grid bound cannot.
type tiltView struct {
	lam float64
	// off is the grid index of pmf[0]: the composed losses are (off+j) h.
	off int
	pmf []float64
	// logScale >= log a^{-k} (rounded up).
	logScale float64
	// e2 bounds the l2 norm of the FFT round-off on the window (efft /
	// sqrt(N), Parseval), errT the l1 error of the rest (see delta).
	e2   float64
	errT float64
	rho  float64
	// inf is the computed +Inf mass of the k-fold composition (relative
	// error rho as well).
	inf float64
}

// view computes the tilted k-fold composition at tilt lam; ok is false when
// the tilted computation does not apply or fails (a single grid point, an
// FFT beyond MaxBins).
func (s *tiltSrc) view(h, lam float64) (v *tiltView, ok bool) {
	b := s.base
	f, l := 0, len(b.pmf)-1
	for f <= l && b.pmf[f] == 0 {
		f++
	}
	for l >= f && b.pmf[l] == 0 {
		l--
	}
	if l-f < 1 || !(lam > 0) {
		return nil, false
	}
	u := unitRoundoff
	kf := float64(s.k)
	W := l - f + 1
	t := make([]float64, W)
	sum := neumaier{}
	for i := range t {
		t[i] = b.pmf[f+i] * math.Exp(lam*(float64(i-(W-1))*h))
		sum.add(t[i])
	}
	st := sum.sum()
	if !(st > 0) {
		return nil, false
	}
	// t_i = exp(log c_i + lam (l_i - l_top) - log st), in log space so
	// that an entry whose exact value could exceed 1e-290 is never lost to
	// underflow: the exponent's rounding error is below 1e-9, so an entry
	// with exponent below log(1e-290) - 1e-9 is below 1e-290 exactly; it
	// is dropped and counted as l1 error
	lst := math.Log(st)
	cut := math.Log(1e-290) - 1e-9
	under := 0
	maxLog := 0.0
	for i := range t {
		c := b.pmf[f+i]
		if c <= 0 {
			t[i] = 0
			continue
		}
		lc := math.Log(c)
		maxLog = math.Max(maxLog, math.Abs(lc))
		x := lc + lam*(float64(i-(W-1))*h) - lst
		if x < cut {
			t[i] = 0
			under++
			continue
		}
		t[i] = math.Exp(x)
	}
	// trim the zero ends left by underflow
	lo0, hi0 := 0, W-1
	for lo0 < hi0 && t[lo0] == 0 {
		lo0++
	}
	for hi0 > lo0 && t[hi0] == 0 {
		hi0--
	}
	if hi0-lo0 < 1 {
		return nil, false
	}
	t = t[lo0 : hi0+1]
	// relative error of a tilted entry: the base's rho and the rounding of
	// the exponent (|log c_i| u for the logarithm, 2 |lam (l_i - l_top)| u
	// for the product, |log st| u, and the two additions, each below u
	// times the sum of their magnitudes) times 1 + a few u, plus exp
	maxArg := lam * float64(W-1) * h
	rhoT := b.rho + (3*(maxLog+2*maxArg+math.Abs(lst))+8)*u
	m, _ := norms(t)
	errStep := float64(under) * 1e-290 * (1 + 1e-6)
	tau := s.tail / 8
	lo, res, efft, err := powerWindow(t, m, s.k, tau, false)
	if err != nil {
		return nil, false
	}
	errK := powMass(m, errStep, s.k) * (1 + 1e-9)
	ltop := float64(b.off+l) * h
	ls := lam*ltop + math.Log(st)
	mb, _ := norms(b.pmf)
	v = &tiltView{
		lam:      lam,
		off:      s.k*(b.off+f+lo0) + lo,
		pmf:      res,
		logScale: kf*ls + 4*u*kf*(math.Abs(lam*ltop)+math.Abs(lst)+1),
		e2:       efft / math.Sqrt(float64(len(res))) * (1 + 1e-9),
		errT:     (4*tau + errK) * (1 + 1e-9),
		rho:      math.Expm1(kf*math.Log1p(rhoT)) + 8*u + 4*u*(kf*math.Abs(math.Log(m))+4),
		inf:      powMass(mb, b.inf, s.k),
	}
	if !(v.rho < 0.01) || math.IsInf(v.logScale, 0) || math.IsNaN(v.logScale) {
		return nil, false
	}
	return v, true
}

// delta is the tilted bound on the delta at eps of the k-fold composition
// (the +Inf atom included), capped at 1.
func (v *tiltView) delta(h, eps float64) float64 {
	if len(v.pmf) == 0 {
		return 1
	}
	start := int(math.Floor(eps/h)) - v.off
	if start < 0 {
		start = 0
	}
	s, g2 := 0.0, 0.0
	cnt := 0
	maxArg := 0.0
	for j := start; j < len(v.pmf); j++ {
		l := float64(v.off+j) * h
		if l <= eps {
			continue
		}
		a := v.logScale - v.lam*l
		gj := math.Exp(a) * -math.Expm1(eps-l)
		g2 += gj * gj
		if y := v.pmf[j]; y > 0 {
			s += y * gj
			cnt++
		}
		maxArg = math.Max(maxArg, math.Abs(a))
	}
	// rounding of the sum (gamma_n), of the exponents (|a| u each for the
	// argument's roundings, a few ulps for exp and expm1) and of the grid
	// values l (u |l| each)
	hiL := math.Abs(float64(v.off+len(v.pmf))*h) + math.Abs(float64(v.off)*h)
	slack := deltaSlack(cnt) + 4*unitRoundoff*(maxArg+v.lam*hiL+math.Abs(eps)+hiL+4)
	g := math.Exp(logCLambda(v.lam) - v.lam*eps + v.logScale)
	// round-off by Cauchy-Schwarz, the rest by the largest weight
	fin := (s*(1+slack) + math.Sqrt(g2)*(1+slack)*v.e2 + v.errT*g) / (1 - v.rho)
	r := (v.inf/(1-v.rho) + fin) * (1 + 1e-9)
	if math.IsNaN(r) {
		return 1
	}
	return math.Min(1, r)
}

// logMGFLoss returns log sum_i c_i e^{lam l_i} over the base's grid.
func (s *tiltSrc) logMGFLoss(h, lam float64) float64 {
	b := s.base
	top := len(b.pmf) - 1
	for top >= 0 && b.pmf[top] == 0 {
		top--
	}
	if top < 0 {
		return math.Inf(-1)
	}
	sum := 0.0
	for i := top; i >= 0; i-- {
		if v := b.pmf[i]; v > 0 {
			sum += v * math.Exp(lam*float64(i-top)*h)
		}
	}
	return math.Log(sum) + lam*float64(b.off+top)*h
}

// tiltGrid is the range of tilt indices i (lam = e^{i/tiltSteps}):
// lam from 1e-3 to 4096.
var tiltGrid = [2]int{int(math.Floor(math.Log(1e-3) * tiltSteps)), int(math.Ceil(math.Log(4096) * tiltSteps))}

// lambdaIndex returns the tilt index on the grid lam = e^{i/tiltSteps}
// that (approximately) minimises the Chernoff bound k log M(lam) + log
// c_lam - lam eps of the k-fold composition at eps, M the base's moment
// generating function: the saddle point, where the tilted composed loss is
// centred near eps. Any lam > 0 gives a rigorous bound; this choice makes
// it tight (see tiltSteps). Ternary search over the grid, the moment generating function
// memoised per source.
func (s *tiltSrc) lambdaIndex(h, eps float64) int {
	kf := float64(s.k)
	F := func(i int) float64 {
		lam := math.Exp(float64(i) / tiltSteps)
		s.mu.Lock()
		m, ok := s.mgf[i]
		s.mu.Unlock()
		if !ok {
			m = s.logMGFLoss(h, lam)
			s.mu.Lock()
			if s.mgf == nil {
				s.mgf = map[int]float64{}
			}
			s.mgf[i] = m
			s.mu.Unlock()
		}
		v := kf*m + logCLambda(lam) - lam*eps
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		return v
	}
	a, b := tiltGrid[0], tiltGrid[1]
	for b-a > 2 {
		m1, m2 := a+(b-a)/3, b-(b-a)/3
		if F(m1) <= F(m2) {
			b = m2
		} else {
			a = m1
		}
	}
	best := a
	for i := a + 1; i <= b; i++ {
		if F(i) < F(best) {
			best = i
		}
	}
	return best
}

// viewAt returns the (cached) view at the tilt of index i.
func (s *tiltSrc) viewAt(h float64, i int) (*tiltView, bool) {
	s.mu.Lock()
	v, ok := s.views[i]
	s.mu.Unlock()
	if ok {
		return v, v != nil
	}
	v, ok = s.view(h, math.Exp(float64(i)/tiltSteps))
	if !ok {
		v = nil
	}
	s.mu.Lock()
	if s.views == nil || len(s.views) >= maxCachedViews {
		s.views = map[int]*tiltView{}
	}
	s.views[i] = v
	s.mu.Unlock()
	return v, ok
}

// tiltWorthwhile reports whether the tilted bound may improve on the bound
// v at hand: the direction is a self-composition and its additive error
// term is more than 1% of v (below that, the tilted view, an FFT of the
// composition's length, would change the epsilon by a few parts in 10^4
// at most).
func (d *dir) tiltWorthwhile(v float64) bool {
	return d.src != nil && v > 0 && d.err > 1e-2*v
}

// tiltedDelta is the tilted bound at eps with the saddle-point tilt (1 if
// it does not apply).
func (d *dir) tiltedDelta(h, eps float64) float64 {
	v, ok := d.src.viewAt(h, d.src.lambdaIndex(h, eps))
	if !ok {
		return 1
	}
	return v.delta(h, eps)
}

// epsTilted returns an eps <= hi whose tilted bound is at most delta, and
// that bound as a function of eps (nil if no eps below hi was found). The
// tilt is the saddle point at hi, then at the answer, until the answer's
// own saddle point is the tilt used (so that Delta at the answer, which
// uses that tilt, agrees); each view is inverted by bisection (its bound
// is non-increasing in eps, up to rounding, which the caller's
// verification absorbs).
func (d *dir) epsTilted(h, delta, hi float64) (float64, func(float64) float64) {
	best := hi
	var bestF func(float64) float64
	at := hi
	for iter := 0; iter < 4; iter++ {
		i := d.src.lambdaIndex(h, at)
		v, ok := d.src.viewAt(h, i)
		if !ok {
			break
		}
		f := func(eps float64) float64 { return v.delta(h, eps) }
		lo, up := 0.0, hi
		if f(up) > delta {
			break
		}
		if f(lo) <= delta {
			return 0, f
		}
		for i := 0; i < 60 && up-lo > 1e-12*(1+up); i++ {
			mid := (lo + up) / 2
			if f(mid) > delta {
				lo = mid
			} else {
				up = mid
			}
		}
		if up < best {
			best, bestF = up, f
		}
		if d.src.lambdaIndex(h, up) == i {
			break
		}
		at = up
	}
	return best, bestF
}
