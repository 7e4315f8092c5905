package pld

import (
	"math"
	"math/big"
	"math/cmplx"

	"github.com/shufflefl/shufflefl/checks"
)

// allocPrec is the precision (bits) of the exact spectrum of the
// allocation's ratio sum.
const allocPrec = 192

// piDigits is pi to 60 significant digits.
const piDigits = "3.14159265358979323846264338327950288419716939937510582097494"

// powerWindowExact is powerWindow for the T-fold sum of ratios of the
// blanket allocation, with the frequencies that matter computed in
// 192-bit arithmetic. The FFT's absolute round-off (about 1e-15 per
// frequency) is amplified T-fold by the T-th power (T = 15,000 to 10^7
// positions here), which would leave an l1 error of 1e-10 per allocation
// and, over the k x rounds compositions of a run, a noticeable share of
// the delta. Every frequency j whose power is not negligible, by the bound
// T (|X_j| + e)^{T-1} e > 1e-17 with e the FFT's l_inf error, is instead
// computed exactly (up to a budget of exactBudget big-float products, in
// order of frequency; beyond it by powerSpectrum's compensated direct DFT
// in float64, then the FFT value with its bound): X_j = sum_i p_i w^i by Horner's rule with w =
// exp(-2 pi i j/N) from its Taylor series (pi to 60 digits), and Y_j =
// X_j^T by binary powering, all at 192 bits (relative error below
// 10^-45 for T up to 2^30), then rounded to float64 (error at most
// 2u |Y_j| per component, 4u |Y_j| counted). The real input makes the
// spectrum conjugate-symmetric, so only j <= N/2 is computed. The other
// frequencies, the inverse FFT and the window are handled as in
// powerSpectrum and powerWindow (docs/PLD.md, "Composition by FFT and its
// error bound"); efft bounds the l1 distance between res and the cyclic
// folding of the composed measure into the window.
func powerWindowExact(pmf []float64, m float64, k int, tau float64) (lo int, res []float64, efft float64, err error) {
	W := len(pmf)
	lo, hi := chernoffWindow(pmf, m, k, tau)
	N := nextPow2(max(hi-lo, W))
	if N > MaxBins {
		return 0, nil, 0, checks.Invalidf("%d-fold allocation needs an FFT of length %d (limit %d)", k, N, MaxBins)
	}
	if N < 8 {
		N = 8
	}
	pl := planFor(N)
	kap := fftKappa(N)
	x := make([]complex128, N)
	for i, v := range pmf {
		x[i] = complex(v, 0)
	}
	pl.transform(x, false)
	_, p2 := norms(pmf)
	dfft := kap * math.Sqrt(float64(N)) * p2
	u := unitRoundoff
	kf := float64(k)
	lk := math.Log(kf)
	var e2, y2 neumaier
	skipped := 0
	var ex *exactSpectrum
	// the exact evaluations cost about W big-float products each: at most
	// exactBudget products in all (the frequencies beyond keep the FFT
	// value and its error bound, which is only large for large T, where
	// few frequencies matter)
	budget := exactBudget
	// beyond it, a compensated direct DFT in float64 (powerSpectrum's
	// refinement), up to 5e7 operations
	var nzI []int64
	var nzV []float64
	for i, v := range pmf {
		if v > 0 {
			nzI = append(nzI, int64(i))
			nzV = append(nzV, v)
		}
	}
	dacc := (twiddleErr + 3*u + math.Sqrt2*(2*u+16*float64(len(nzV))*u*u)) * m * 1.01
	slow := 5e7 / float64(len(nzV))
	for j := 0; j <= N/2; j++ {
		mult := 2.0 // j and N-j
		if j == 0 || j == N/2 {
			mult = 1
		}
		X := x[j]
		r := cmplx.Abs(X)
		la := lk + (kf-1)*math.Log(math.Min(r+dfft, 1+dfft))
		if la < -700 {
			x[j] = 0
			if mult == 2 {
				x[N-j] = 0
			}
			skipped += int(mult)
			continue
		}
		amp := math.Exp(la)
		var Y complex128
		var ej float64
		if amp*dfft > 1e-17 && budget >= W+64 {
			budget -= W + 64
			if ex == nil {
				ex = newExactSpectrum(pmf, N)
			}
			Y = ex.power(j, k)
			ej = 4*u*cmplx.Abs(Y) + 1e-300
		} else {
			delta := dfft
			if amp*dfft > 1e-17 && slow >= 1 {
				slow--
				X = directDFT(pl, nzI, nzV, j)
				r = cmplx.Abs(X)
				delta = dacc
				amp = math.Exp(lk + (kf-1)*math.Log(r+delta))
			}
			ej = amp * delta * (1 + 1e-9)
			if r > 0 {
				lr := math.Log(r)
				th := math.Atan2(imag(X), real(X))
				mag := math.Exp(kf * lr)
				s, c := math.Sincos(math.Mod(kf*th, 2*math.Pi))
				Y = complex(mag*c, mag*s)
				ej += mag * (8*u + 4*kf*u*(math.Abs(lr)+math.Abs(th)+1))
			}
		}
		x[j] = Y
		if mult == 2 {
			x[N-j] = cmplx.Conj(Y)
		}
		e2.add(mult * ej * ej)
		ay := cmplx.Abs(Y)
		y2.add(mult * ay * ay)
	}
	pl.transform(x, true)
	inv := 1 / float64(N)
	res = make([]float64, N)
	for t := range res {
		v := real(x[(lo+t)%N]) * inv
		if v > 0 {
			res[t] = v
		}
	}
	efft = (math.Sqrt(e2.sum()) + kap*math.Sqrt(y2.sum()) + math.Sqrt(float64(skipped))*4e-304) * (1 + 1e-9)
	return lo, res, efft, nil
}

// exactBudget bounds the big-float products of one powerWindowExact
// (about 0.2 s).
const exactBudget = 200000

// exactSpectrum evaluates single frequencies of the DFT of pmf (length N)
// and their powers in allocPrec-bit arithmetic.
type exactSpectrum struct {
	p   []*big.Float
	n   int
	pi2 *big.Float // 2 pi / N
}

func newBig() *big.Float { return new(big.Float).SetPrec(allocPrec) }

func newExactSpectrum(pmf []float64, n int) *exactSpectrum {
	e := &exactSpectrum{n: n, p: make([]*big.Float, len(pmf))}
	for i, v := range pmf {
		e.p[i] = newBig().SetFloat64(v)
	}
	pi, _, _ := big.ParseFloat(piDigits, 10, allocPrec, big.ToNearestEven)
	e.pi2 = newBig().Mul(pi, newBig().SetInt64(2))
	e.pi2.Quo(e.pi2, newBig().SetInt64(int64(n)))
	return e
}

// bigC is a complex number of big.Floats.
type bigC struct{ re, im *big.Float }

func (a bigC) mul(b bigC) bigC {
	t1 := newBig().Mul(a.re, b.re)
	t2 := newBig().Mul(a.im, b.im)
	t3 := newBig().Mul(a.re, b.im)
	t4 := newBig().Mul(a.im, b.re)
	return bigC{t1.Sub(t1, t2), t3.Add(t3, t4)}
}

// sincos returns sin and cos of theta in [0, pi] by their Taylor series,
// summed until the terms fall below 2^-(allocPrec+16) (the series
// alternate with decreasing terms once n > theta, so the rest is below the
// last term).
func sincos(theta *big.Float) (s, c *big.Float) {
	s, c = newBig(), newBig().SetInt64(1)
	term := newBig().SetInt64(1) // theta^n/n!
	eps := newBig().SetMantExp(newBig().SetInt64(1), -(allocPrec + 16))
	abs := newBig()
	for n := 1; n < 400; n++ {
		term.Mul(term, theta)
		term.Quo(term, newBig().SetInt64(int64(n)))
		switch n % 4 {
		case 0:
			c.Add(c, term)
		case 1:
			s.Add(s, term)
		case 2:
			c.Sub(c, term)
		case 3:
			s.Sub(s, term)
		}
		if n > 8 && abs.Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	return s, c
}

// power returns (sum_i p_i exp(-2 pi i j i/N))^k rounded to complex128.
func (e *exactSpectrum) power(j, k int) complex128 {
	theta := newBig().Mul(e.pi2, newBig().SetInt64(int64(j)))
	s, c := sincos(theta)
	w := bigC{c, s.Neg(s)}
	// Horner: X = sum_i p_i w^i
	X := bigC{newBig(), newBig()}
	for i := len(e.p) - 1; i >= 0; i-- {
		X = X.mul(w)
		X.re.Add(X.re, e.p[i])
	}
	// binary powering
	Y := bigC{newBig().SetInt64(1), newBig()}
	for b := k; b > 0; b >>= 1 {
		if b&1 == 1 {
			Y = Y.mul(X)
		}
		if b > 1 {
			X = X.mul(X)
		}
	}
	re, _ := Y.re.Float64()
	im, _ := Y.im.Float64()
	return complex(re, im)
}
