package pld

import (
	"math"
	"math/bits"
	"sync"
)

// unitRoundoff is u = 2^-53, the unit roundoff of float64.
const unitRoundoff = 1.0 / (1 << 53)

// twiddleErr bounds |fl(w) - w| for every twiddle factor w = exp(-2 pi i m/N)
// computed by sincos2pi: the angle 2 pi (m'/N) of the reduced index m' is
// at most pi/4 and carries a relative error of at most 2u (one rounding of
// 2 pi, one of the product; m'/N is exact), i.e. an absolute error below
// 1.6u, and math.Sincos is accurate to about one ulp on [0, pi/4]; together
// below 3.6u per real component, 5.1u in modulus. 8u leaves a margin.
const twiddleErr = 8 * unitRoundoff

// fftKappa returns Higham's normwise forward error constant for the radix-2
// Cooley-Tukey FFT of length n = 2^t (Higham, "Accuracy and Stability of
// Numerical Algorithms", 2nd ed., Theorem 24.2):
//
//	||fl(F x) - F x||_2 <= t eta / (1 - t eta) ||F x||_2,  eta = mu + gamma_4 (sqrt 2 + mu),
//
// with mu = twiddleErr the error of the computed twiddle factors and
// gamma_4 = 4u/(1-4u). The same constant holds for the unscaled inverse.
func fftKappa(n int) float64 {
	t := float64(bits.Len(uint(n)) - 1)
	u := unitRoundoff
	g4 := 4 * u / (1 - 4*u)
	eta := twiddleErr + g4*(math.Sqrt2+twiddleErr)
	return t * eta / (1 - t*eta) * (1 + 1e-6)
}

// sincos2pi returns (sin, cos) of 2 pi m / n for 0 <= m < n, n a power of two
// >= 8, reducing the angle to [0, pi/4] with exact integer arithmetic first.
func sincos2pi(m, n int) (s, c float64) {
	m %= n
	// quadrant reduction
	q := n / 4
	quad := m / q
	r := m % q // angle 2 pi r/n in [0, pi/2)
	var sr, cr float64
	if 2*r <= q {
		sr, cr = math.Sincos(2 * math.Pi * (float64(r) / float64(n)))
	} else {
		// pi/2 - theta
		cr, sr = math.Sincos(2 * math.Pi * (float64(q-r) / float64(n)))
	}
	switch quad {
	case 0:
		return sr, cr
	case 1:
		return cr, -sr
	case 2:
		return -sr, -cr
	default:
		return -cr, sr
	}
}

// fftPlan holds the twiddle factors exp(-2 pi i k/n), k < n/2, of one length.
type fftPlan struct {
	n  int
	tw []complex128
}

var plans sync.Map // int -> *fftPlan

func planFor(n int) *fftPlan {
	if p, ok := plans.Load(n); ok {
		return p.(*fftPlan)
	}
	p := &fftPlan{n: n, tw: make([]complex128, n/2)}
	if n >= 8 {
		for k := range p.tw {
			s, c := sincos2pi(k, n)
			p.tw[k] = complex(c, -s)
		}
	} else {
		for k := range p.tw {
			s, c := math.Sincos(2 * math.Pi * float64(k) / float64(n))
			p.tw[k] = complex(c, -s)
		}
	}
	plans.Store(n, p)
	return p
}

// transform runs an in-place iterative radix-2 decimation-in-time FFT of x
// (len(x) = n, a power of two): the unnormalised DFT X_j = sum_k x_k
// exp(-2 pi i jk/n), or with inverse the unnormalised conjugate transform.
func (p *fftPlan) transform(x []complex128, inverse bool) {
	n := p.n
	if n <= 1 {
		return
	}
	shift := 64 - uint(bits.Len(uint(n))-1)
	for i := 0; i < n; i++ {
		j := int(bits.Reverse64(uint64(i)) >> shift)
		if j > i {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half := size >> 1
		step := n / size
		for start := 0; start < n; start += size {
			k := 0
			blk := x[start : start+size]
			for j := 0; j < half; j++ {
				w := p.tw[k]
				if inverse {
					w = complex(real(w), -imag(w))
				}
				a := blk[j]
				b := blk[j+half]
				wr, wi := real(w), imag(w)
				br, bi := real(b), imag(b)
				tr := wr*br - wi*bi
				ti := wr*bi + wi*br
				blk[j] = complex(real(a)+tr, imag(a)+ti)
				blk[j+half] = complex(real(a)-tr, imag(a)-ti)
				k += step
			}
		}
	}
}

// nextPow2 returns the smallest power of two >= n (and >= 8).
func nextPow2(n int) int {
	p := 8
	for p < n {
		p <<= 1
	}
	return p
}

// neumaier is a compensated accumulator (Neumaier's variant of Kahan
// summation): |result - exact sum| <= 2u |sum| + 16 n u^2 sum |x_i|
// (Higham, Section 4.3).
type neumaier struct{ s, c float64 }

func (a *neumaier) add(x float64) {
	t := a.s + x
	if math.Abs(a.s) >= math.Abs(x) {
		a.c += (a.s - t) + x
	} else {
		a.c += (x - t) + a.s
	}
	a.s = t
}

func (a *neumaier) sum() float64 { return a.s + a.c }
