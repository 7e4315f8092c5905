package pld

import (
	"fmt"
	"math"
	"math/cmplx"

	"github.com/shufflefl/shufflefl/checks"
)

// Compose returns the PLD of the composition of the two mechanisms (the
// product pairs), direction by direction: the finite parts are convolved by
// zero-padded FFT (no wrap-around), the +Inf atoms combine as in the product
// measure, the tails are truncated again at TailMass (pessimistically), and
// the FFT round-off bound of docs/PLD.md is added to the
// error term. If the Intervals differ, the PLD with the finer grid is first
// moved to the coarser one by connect-the-dots (Regrid); the result uses the
// coarser Interval and the smaller TailMass.
func (p *PLD) Compose(other *PLD) (*PLD, error) {
	if err := p.validate("receiver"); err != nil {
		return nil, fmt.Errorf("PLD compose: %w", err)
	}
	if err := other.validate("other"); err != nil {
		return nil, fmt.Errorf("PLD compose: %w", err)
	}
	if p.h != other.h {
		// Put both on the coarser grid (connect-the-dots of the grid
		// points: pessimistic, see regrid).
		h := math.Max(p.h, other.h)
		var err error
		if p, err = p.regrid(h); err != nil {
			return nil, fmt.Errorf("PLD compose: %w", err)
		}
		if other, err = other.regrid(h); err != nil {
			return nil, fmt.Errorf("PLD compose: %w", err)
		}
	}
	o := p.opt
	o.TailMass = math.Min(o.TailMass, other.opt.TailMass)
	rem, err := convolve(&p.rem, &other.rem, o.TailMass)
	if err != nil {
		return nil, fmt.Errorf("PLD compose: %w", err)
	}
	add, err := convolve(&p.add, &other.add, o.TailMass)
	if err != nil {
		return nil, fmt.Errorf("PLD compose: %w", err)
	}
	return &PLD{h: p.h, opt: o, rem: rem, add: add, subst: p.subst || other.subst}, nil
}

// composeCert composes two Chernoff certificates.
func composeCert(a, b *dir) ([]float64, float64) {
	if a.logm == nil || b.logm == nil {
		return nil, 1
	}
	out := make([]float64, len(a.logm))
	for j := range out {
		out[j] = a.logm[j] + b.logm[j]
	}
	return out, -math.Expm1(math.Log1p(-a.cinf) + math.Log1p(-b.cinf))
}

func norms(x []float64) (l1, l2 float64) {
	s1, s2 := neumaier{}, neumaier{}
	for _, v := range x {
		s1.add(v)
		s2.add(v * v)
	}
	return s1.sum() * (1 + 1e-12), math.Sqrt(s2.sum()) * (1 + 1e-12)
}

// convolve composes two directions by linear FFT convolution.
func convolve(a, b *dir, tail float64) (dir, error) {
	ma, _ := norms(a.pmf)
	mb, _ := norms(b.pmf)
	ta, tb := ma+a.inf, mb+b.inf
	out := dir{
		inf: a.inf*tb + ma*b.inf,
		rho: (1+a.rho)*(1+b.rho) - 1 + 8*unitRoundoff,
		err: a.err*tb + ta*b.err + a.err*b.err,
	}
	out.logm, out.cinf = composeCert(a, b)
	if len(a.pmf) == 0 || len(b.pmf) == 0 {
		// ta tb - ma mb without the cancellation
		out.inf = a.inf*tb + ma*b.inf
		return out, nil
	}
	out.off = a.off + b.off
	L := len(a.pmf) + len(b.pmf) - 1
	if L <= 64 || len(a.pmf) <= 8 || len(b.pmf) <= 8 {
		// direct convolution: exact up to a relative rounding of gamma_n
		res := make([]float64, L)
		for i, x := range a.pmf {
			if x == 0 {
				continue
			}
			for j, y := range b.pmf {
				res[i+j] += x * y
			}
		}
		out.pmf = res
		out.rho += 2 * float64(min(len(a.pmf), len(b.pmf))+2) * unitRoundoff
		out.truncate(tail)
		return out, nil
	}
	N := nextPow2(L)
	if N > MaxBins {
		return dir{}, checks.Invalidf("composition needs an FFT of length %d (limit %d); use a larger Options.Interval or TailMass", N, MaxBins)
	}
	pl := planFor(N)
	kap := fftKappa(N)
	xa := make([]complex128, N)
	xb := make([]complex128, N)
	for i, v := range a.pmf {
		xa[i] = complex(v, 0)
	}
	for i, v := range b.pmf {
		xb[i] = complex(v, 0)
	}
	pl.transform(xa, false)
	pl.transform(xb, false)
	_, a2 := norms(a.pmf)
	_, b2 := norms(b.pmf)
	sq := math.Sqrt(float64(N))
	ea := kap * sq * a2 // ||fl(F a) - F a||_2
	eb := kap * sq * b2
	maxB, maxA := 0.0, 0.0
	yb2 := neumaier{}
	y2 := neumaier{}
	for j := range xa {
		ra, rb := cmplx.Abs(xa[j]), cmplx.Abs(xb[j])
		maxA = math.Max(maxA, ra)
		maxB = math.Max(maxB, rb)
		yb2.add(rb * rb)
		xa[j] *= xb[j]
		r := cmplx.Abs(xa[j])
		y2.add(r * r)
	}
	nb2 := math.Sqrt(yb2.sum()) * (1 + 1e-12)
	ny2 := math.Sqrt(y2.sum()) * (1 + 1e-12)
	g2 := 2 * unitRoundoff / (1 - 2*unitRoundoff)
	// ||Yhat - Fa . Fb||_2 <= ea max|Xb^| + ||Fa||_inf eb + sqrt2 gamma_2 ||Xa^||_inf ||Xb^||_2
	eprod := ea*maxB + ma*eb + math.Sqrt2*g2*maxA*nb2
	pl.transform(xa, true)
	inv := 1 / float64(N)
	res := make([]float64, L)
	for i := range res {
		v := real(xa[i]) * inv
		if v > 0 {
			res[i] = v
		}
	}
	// l1 error over all N outputs <= ||Yhat - Y||_2 + kappa ||Yhat||_2
	// (outputs L..N-1 are zero in exact arithmetic and dropped: their
	// computed values count in the same bound).
	out.err += (eprod + kap*ny2) * (1 + 1e-9)
	out.pmf = res
	out.truncate(tail)
	return out, nil
}

// SelfCompose returns the k-fold composition of p with itself (k >= 1).
// Each direction is computed by one FFT of length N, raising every
// frequency to the k-th power, and one inverse FFT, on a window of the
// composed loss chosen by rigorous Chernoff tail bounds on the computed
// distribution; the mass outside the window (each side at most TailMass/8)
// is accounted for pessimistically (upper side to +Inf, wrap-around as l1
// error), and the round-off of the transforms and powers is bounded as
// described in docs/PLD.md. The frequencies whose k-th power
// is not negligible are recomputed by a compensated direct DFT so that the
// k-fold amplification of their error stays small.
func (p *PLD) SelfCompose(k int) (*PLD, error) {
	if err := p.validate("receiver"); err != nil {
		return nil, fmt.Errorf("PLD self-composition: %w", err)
	}
	if err := checks.IntAtLeast("k", k, 1); err != nil {
		return nil, fmt.Errorf("PLD self-composition: %w", err)
	}
	if k == 1 {
		return p, nil
	}
	rem, err := selfConvolve(&p.rem, k, p.opt.TailMass)
	if err != nil {
		return nil, fmt.Errorf("PLD self-composition: %w", err)
	}
	add, err := selfConvolve(&p.add, k, p.opt.TailMass)
	if err != nil {
		return nil, fmt.Errorf("PLD self-composition: %w", err)
	}
	return &PLD{h: p.h, opt: p.opt, rem: rem, add: add, subst: p.subst}, nil
}

// powMass returns (m + x)^k - m^k for m, x >= 0 (with x the mass of the
// +Inf atom: the mass of the product measure where some factor is at
// +Inf), as m^k expm1(k log1p(x/m)): x is not added to m first, which
// would lose an x below half an ulp of m (an atom of 1e-17 next to a
// finite mass near 1).
func powMass(m, x float64, k int) float64 {
	if x <= 0 {
		return 0
	}
	if m <= 0 {
		return math.Exp(float64(k) * math.Log(x))
	}
	return math.Exp(float64(k)*math.Log(m)) * math.Expm1(float64(k)*math.Log1p(x/m))
}

// logMGF returns log sum_i pmf_i e^{lam i} (index units).
func logMGF(pmf []float64, lam float64) float64 {
	ref := 0.0
	if lam > 0 {
		ref = lam * float64(len(pmf)-1)
	}
	s := 0.0
	for i, v := range pmf {
		if v > 0 {
			s += v * math.Exp(lam*float64(i)-ref)
		}
	}
	return math.Log(s*(1+1e-9)+1e-300) + ref
}

func selfConvolve(d *dir, k int, tail float64) (dir, error) {
	kf := float64(k)
	m, _ := norms(d.pmf)
	t := m + d.inf
	out := dir{
		rho: math.Expm1(kf*math.Log1p(d.rho)) + 8*unitRoundoff,
	}
	if d.err > 0 {
		// (t + err)^k - t^k, rounding covered by the relative 1e-9
		out.err = powMass(t, d.err, k) * (1 + 1e-9)
	}
	if d.logm != nil {
		out.logm = make([]float64, len(d.logm))
		for j, v := range d.logm {
			out.logm[j] = kf * v
		}
		out.cinf = -math.Expm1(kf * math.Log1p(-d.cinf))
	} else {
		out.cinf = 1
	}
	W := len(d.pmf)
	if W == 0 || m == 0 {
		out.inf = powMass(m, d.inf, k)
		return out, nil
	}
	out.inf = powMass(m, d.inf, k)
	out.rho += 4 * unitRoundoff * (kf*math.Abs(math.Log(t)) + 4)
	// first and last non-zero entries
	f, l := 0, W-1
	for d.pmf[f] == 0 {
		f++
	}
	for d.pmf[l] == 0 {
		l--
	}
	pmf := d.pmf[f : l+1]
	base := d.off + f
	W = len(pmf)
	if W == 1 {
		out.off = k * base
		out.pmf = []float64{math.Exp(kf * math.Log(pmf[0]))}
		out.rho += 4 * kf * unitRoundoff
		return out, nil
	}
	tau := tail / 8
	lo, res, efft, err := powerWindow(pmf, m, k, tau, true)
	if err != nil {
		return dir{}, err
	}
	out.err += efft + 4*tau
	out.inf += tau
	out.off = k*base + lo
	out.pmf = res
	out.truncate(tail)
	out.src = newTiltSrc(d, k, tail)
	return out, nil
}

// powerWindow computes the k-fold self-convolution of the non-negative
// measure pmf (k >= 2, at least two entries, the first and last non-zero,
// total mass m) by one FFT, a k-th power per frequency and one inverse
// FFT of length N = len(res), on the window [lo, lo+N) of the composed
// index, lo chosen by Chernoff bounds so that the composed mass below lo,
// and the mass at or above lo+N, are each at most tau. It returns the
// window and a bound efft on the l1 distance between res and the composed
// measure on the window, round-off only: the cyclic wrap-around of the
// mass outside (at most 2 tau) is the caller's to add (see
// docs/PLD.md). With refine, the frequencies whose k-th power is not
// negligible are recomputed by a compensated direct DFT (a smaller efft
// at a cost of up to 5e7 operations).
func powerWindow(pmf []float64, m float64, k int, tau float64, refine bool) (lo int, res []float64, efft float64, err error) {
	W := len(pmf)
	lo, hi := chernoffWindow(pmf, m, k, tau)
	N := nextPow2(max(hi-lo, W))
	if N > MaxBins {
		return 0, nil, 0, checks.Invalidf("%d-fold composition needs an FFT of length %d (limit %d); use a larger Options.Interval", k, N, MaxBins)
	}
	pl := planFor(N)
	kap := fftKappa(N)
	x := make([]complex128, N)
	for i, v := range pmf {
		x[i] = complex(v, 0)
	}
	pl.transform(x, false)
	e2, y2, skipped := powerSpectrum(pl, x, pmf, m, k, kap, refine)
	pl.transform(x, true)
	inv := 1 / float64(N)
	res = make([]float64, N)
	for tt := range res {
		v := real(x[(lo+tt)%N]) * inv
		if v > 0 {
			res[tt] = v
		}
	}
	// the skipped frequencies: l2 norm at most sqrt(skipped) 4e-304
	efft = (math.Sqrt(e2.sum()) + kap*math.Sqrt(y2.sum()) + math.Sqrt(float64(skipped))*4e-304) * (1 + 1e-9)
	return lo, res, efft, nil
}

// chernoffWindow returns the index window [lo, hi) of the k-fold
// composition of pmf (total mass m) outside which the composed mass is at
// most tau on each side, by Chernoff bounds over a fixed ladder of tilts
// scaled to the composition's standard deviation.
func chernoffWindow(pmf []float64, m float64, k int, tau float64) (lo, hi int) {
	kf := float64(k)
	W := len(pmf)
	// mean and standard deviation in index units
	mean, m2 := 0.0, 0.0
	for i, v := range pmf {
		mean += v * float64(i)
	}
	mean /= m
	for i, v := range pmf {
		dd := float64(i) - mean
		m2 += v * dd * dd
	}
	sd := math.Sqrt(m2 / m)
	if sd < 0.5 {
		sd = 0.5
	}
	scale := 1 / (math.Sqrt(kf) * sd)
	ltau := math.Log(tau)
	maxR := float64(k) * float64(W-1)
	hiR, loR := maxR+1, -1.0
	for _, z := range []float64{0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30, 40, 50, 70, 100, 150, 200} {
		lam := z * scale
		if v := (kf*logMGF(pmf, lam) - ltau) / lam; v < hiR {
			hiR = v
		}
		if v := (kf*logMGF(pmf, -lam) - ltau) / -lam; v > loR {
			loR = v
		}
	}
	lo = int(math.Floor(loR)) + 1 // mass at indices < lo is <= tau
	if lo < 0 {
		lo = 0
	}
	hi = int(math.Ceil(hiR)) // mass at indices >= hi is <= tau
	if float64(hi) > maxR+1 {
		hi = int(maxR) + 1
	}
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

// powerSpectrum raises the spectrum x (the FFT of pmf, total mass m, on
// plan pl with error constant kap) to the k-th power in place and returns
// the compensated sums of the squared per-frequency error bounds (e2) and
// of the squared results (y2), and how many negligible frequencies it set
// to zero. With refine, the frequencies whose amplified FFT error is not
// negligible are recomputed by a compensated direct DFT (up to 5e7
// operations in all).
func powerSpectrum(pl *fftPlan, x []complex128, pmf []float64, m float64, k int, kap float64, refine bool) (e2, y2 neumaier, skipped int) {
	kf := float64(k)
	N := len(x)
	_, p2 := norms(pmf)
	dfft := kap * math.Sqrt(float64(N)) * p2 // l_inf bound of the forward error
	u := unitRoundoff
	// non-zero entries, for the direct DFTs
	var nzI []int64
	var nzV []float64
	for i, v := range pmf {
		if v > 0 {
			nzI = append(nzI, int64(i))
			nzV = append(nzV, v)
		}
	}
	nz := len(nzV)
	dacc := (twiddleErr + 3*u + math.Sqrt2*(2*u+16*float64(nz)*u*u)) * m * 1.01
	// frequencies left with the FFT bound contribute at most 1e-15 in l2
	thr := 1e-15 / math.Sqrt(float64(N))
	slowBudget := 5e7 / float64(nz)
	if !refine {
		slowBudget = 0
	}
	lk := math.Log(kf)
	for j := 0; j < N; j++ {
		X := x[j]
		r := cmplx.Abs(X)
		delta := dfft
		la := lk + (kf-1)*math.Log(math.Min(r+delta, 1+delta))
		if la < -700 {
			// Negligible frequency: |X^|^k <= (r + delta)^(k-1) (r + delta)
			// < e^-700 (here r + delta < 1), and so is the amplified
			// error; Y = 0 is within 2e-304 of both, which the absolute
			// term added to efft below covers for all such j together.
			x[j] = 0
			skipped++
			continue
		}
		amp := math.Exp(la)
		if amp*delta > thr && slowBudget >= 1 {
			slowBudget--
			X = directDFT(pl, nzI, nzV, j)
			r = cmplx.Abs(X)
			delta = dacc
			amp = math.Exp(lk + (kf-1)*math.Log(r+delta))
		}
		var Y complex128
		ej := amp * delta * (1 + 1e-9)
		if r > 0 {
			lr := math.Log(r)
			th := math.Atan2(imag(X), real(X))
			mag := math.Exp(kf * lr)
			s, c := math.Sincos(math.Mod(kf*th, 2*math.Pi))
			Y = complex(mag*c, mag*s)
			ej += mag * (8*u + 4*kf*u*(math.Abs(lr)+math.Abs(th)+1))
		}
		x[j] = Y
		e2.add(ej * ej)
		ay := cmplx.Abs(Y)
		y2.add(ay * ay)
	}
	return e2, y2, skipped
}

// directDFT returns sum_k v_k exp(-2 pi i (i_k j mod N)/N) over the
// non-zero entries (i_k, v_k), by compensated summation with the plan's
// twiddles.
func directDFT(pl *fftPlan, idx []int64, val []float64, j int) complex128 {
	N := int64(pl.n)
	half := N / 2
	re, im := neumaier{}, neumaier{}
	jj := int64(j)
	for k, v := range val {
		t := (idx[k] * jj) % N
		var w complex128
		if t < half {
			w = pl.tw[t]
		} else {
			w = -pl.tw[t-half]
		}
		re.add(v * real(w))
		im.add(v * imag(w))
	}
	return complex(re.sum(), im.sum())
}

// Regrid returns p on the grid of spacing h >= p.Interval(): every grid
// point's mass is split between the two enclosing points of the new grid
// by connect-the-dots, which keeps its P- and Q-mass and so describes a
// pair dominating p's (and hence the true pair). The error model carries
// over (the map is linear, positive and mass-preserving).
func (p *PLD) Regrid(h float64) (*PLD, error) {
	if err := p.validate("receiver"); err != nil {
		return nil, fmt.Errorf("PLD regrid: %w", err)
	}
	if err := checks.Positive("h", h); err != nil {
		return nil, fmt.Errorf("PLD regrid: %w", err)
	}
	if h < p.h {
		return nil, fmt.Errorf("PLD regrid: %w", checks.Invalidf("the new interval %v must be >= the current %v", h, p.h))
	}
	return p.regrid(h)
}

func (p *PLD) regrid(h float64) (*PLD, error) {
	if h == p.h {
		return p, nil
	}
	o := p.opt
	o.Interval = h
	out := &PLD{h: h, opt: o, subst: p.subst}
	for k, d := range []*dir{&p.rem, &p.add} {
		nd := dir{inf: d.inf, err: d.err, logm: d.logm, cinf: d.cinf}
		if len(d.pmf) > 0 {
			lo := float64(d.off) * p.h
			hi := float64(d.off+len(d.pmf)-1) * p.h
			b, err := newBuilder(h, lo, hi)
			if err != nil {
				return nil, err
			}
			for i, v := range d.pmf {
				b.atom(float64(d.off+i)*p.h, v)
			}
			b.inf += d.inf
			nd = b.finish(o.TailMass)
			nd.err, nd.logm, nd.cinf = d.err, d.logm, d.cinf
		}
		nd.rho = d.rho + 8*unitRoundoff
		if k == 0 {
			out.rem = nd
		} else {
			out.add = nd
		}
	}
	return out, nil
}
