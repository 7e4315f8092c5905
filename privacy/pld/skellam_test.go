package pld

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/shufflefl/shufflefl/checks"
)

// skellamPMFSlow returns the symmetric Skellam pmf of variance x on
// [-r, r], computed independently of the certificate: P[X - Y = k] =
// sum_n P[X = n + k] P[Y = n] for X, Y ~ Poisson(x/2), in log space.
func skellamPMFSlow(x float64, r int) []float64 {
	lam := x / 2
	logPois := func(n int) float64 {
		lg, _ := math.Lgamma(float64(n) + 1)
		return float64(n)*math.Log(lam) - lam - lg
	}
	nmax := int(lam+40*math.Sqrt(lam)) + 60
	out := make([]float64, 2*r+1)
	for k := -r; k <= r; k++ {
		s := 0.0
		for n := 0; n <= nmax; n++ {
			if n+k < 0 {
				continue
			}
			s += math.Exp(logPois(n+k) + logPois(n))
		}
		out[k+r] = s
	}
	return out
}

// gaussHockey is the hockey-stick divergence H_{e^eps}(N(mu,1) || N(0,1)).
func gaussHockey(mu, eps float64) float64 {
	phi := func(y float64) float64 { return 0.5 * math.Erfc(-y/math.Sqrt2) }
	return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
}

// TestSkellamUnitGDPAboveExact: the certified Mu is at least every unit
// increment of Phi^{-1}(F) computed directly from the slow pmf (the
// supremum it certifies), and within a relative 1e-6 of their largest;
// and the hockey-stick divergence of the Skellam shift pair, summed
// exactly, is below the Gaussian's at Mu |s| (plus the tail term), in
// one dimension and for small vectors (the product over coordinates).
func TestSkellamUnitGDPAboveExact(t *testing.T) {
	for _, x := range []float64{1, 3, 10, 40} {
		g, err := SkellamUnitGDP(x, 1e-30)
		if err != nil {
			t.Fatal(err)
		}
		r := int(12*math.Sqrt(x)) + 20
		p := skellamPMFSlow(x, r)
		// increments where the quantiles are well conditioned
		best := 0.0
		cdf := 0.0
		prevU := math.NaN()
		for i := range p {
			cdf += p[i]
			if cdf < 1e-12 || cdf > 1-1e-12 {
				prevU = math.NaN()
				continue
			}
			u := -math.Sqrt2 * math.Erfcinv(2*cdf)
			if !math.IsNaN(prevU) {
				best = math.Max(best, u-prevU)
			}
			prevU = u
		}
		if g.Mu < best*(1-1e-9) || g.Mu > best*(1+1e-6) {
			t.Errorf("x=%v: certified Mu %v, largest direct increment %v", x, g.Mu, best)
		}
		if g.Tail > 1e-30 || g.Cut < 1 {
			t.Errorf("x=%v: tail %v, cut %d", x, g.Tail, g.Cut)
		}
		// hockey sticks, one and several dimensions
		at := func(z int) float64 {
			if z < -r || z > r {
				return 0
			}
			return p[z+r]
		}
		for _, v := range [][]int{{1}, {2}, {5}, {1, 1}, {2, 1}, {1, -2}, {1, 1, 1}} {
			norm := 0.0
			for _, vi := range v {
				norm += float64(vi * vi)
			}
			mu := g.Mu * math.Sqrt(norm)
			for _, eps := range []float64{0, 0.1, 0.5, 1, 2, 4} {
				var h float64
				switch len(v) {
				case 1:
					for z := -r; z <= r+v[0]; z++ {
						h += math.Max(0, at(z-v[0])-math.Exp(eps)*at(z))
					}
				case 2:
					for z1 := -r; z1 <= r+2; z1++ {
						for z2 := -r - 2; z2 <= r+2; z2++ {
							h += math.Max(0, at(z1-v[0])*at(z2-v[1])-math.Exp(eps)*at(z1)*at(z2))
						}
					}
				case 3:
					if x > 10 {
						continue
					}
					for z1 := -r; z1 <= r+1; z1++ {
						for z2 := -r; z2 <= r+1; z2++ {
							for z3 := -r; z3 <= r+1; z3++ {
								h += math.Max(0, at(z1-1)*at(z2-1)*at(z3-1)-math.Exp(eps)*at(z1)*at(z2)*at(z3))
							}
						}
					}
				}
				bound := gaussHockey(mu, eps) + (1+math.Exp(eps))*float64(len(v))*g.Tail + 1e-12
				if h > bound {
					t.Errorf("x=%v v=%v eps=%v: exact hockey stick %v above the Gaussian's %v (Mu %v)", x, v, eps, h, bound, g.Mu)
				}
			}
		}
	}
}

// TestSkellamUnitGDPNearGaussian: at large variance the Skellam noise is
// nearly Gaussian and the certified Mu sqrt(x) is within 1e-4 of 1 (about
// 1 + 1/(6x) at moderate x); the certificate stays fast.
func TestSkellamUnitGDPNearGaussian(t *testing.T) {
	for _, c := range []struct{ x, tol float64 }{{1e3, 2e-4}, {1e4, 2e-5}, {1e6, 1e-6}, {4.8e7, 1e-6}} {
		g, err := SkellamUnitGDP(c.x, 1e-34)
		if err != nil {
			t.Fatal(err)
		}
		if m := g.Mu * math.Sqrt(c.x); m < 1 || m > 1+c.tol {
			t.Errorf("x=%v: Mu sqrt(x) = %.10f, want in [1, 1+%v]", c.x, m, c.tol)
		}
	}
}

// TestSkellamUnitGDPBadInput: bad variances and tails are refused with
// checks.ErrInvalid, never a panic.
func TestSkellamUnitGDPBadInput(t *testing.T) {
	for _, c := range []struct{ x, tail float64 }{
		{math.NaN(), 1e-30}, {-1, 1e-30}, {0, 1e-30}, {1e-4, 1e-30}, {math.Inf(1), 1e-30}, {1e16, 1e-30},
		{10, math.NaN()}, {10, 0}, {10, 0.5}, {10, -1}, {10, 1e-300},
	} {
		if _, err := SkellamUnitGDP(c.x, c.tail); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("SkellamUnitGDP(%v, %v): %v, want an invalid-input error", c.x, c.tail, err)
		}
	}
}

// phiBig returns Phi(y) = erfc(-y/sqrt2)/2 from the power series of erf
// in big.Float arithmetic (precision enough for the cancellation of terms
// up to e^{y^2/2}).
func phiBig(y float64) float64 {
	prec := uint(200 + 2*y*y)
	x := new(big.Float).SetPrec(prec).SetFloat64(math.Abs(y))
	x.Quo(x, new(big.Float).SetPrec(prec).SetFloat64(math.Sqrt2)) // |y|/sqrt2, as rounded in float64 by Sqrt2
	x2 := new(big.Float).SetPrec(prec).Mul(x, x)
	term := new(big.Float).SetPrec(prec).Set(x) // x^{2n+1}/n! with sign
	sum := new(big.Float).SetPrec(prec)
	tmp := new(big.Float).SetPrec(prec)
	for n := 0; n < 100000; n++ {
		tmp.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(2*n+1)))
		sum.Add(sum, tmp)
		term.Mul(term, x2)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(-(n + 1))))
		if term.Sign() == 0 || term.MantExp(nil) < sum.MantExp(nil)-int(prec)-10 {
			break
		}
	}
	// erf(x) = 2/sqrt(pi) sum; sqrt(pi) to the precision
	sp := new(big.Float).SetPrec(prec).Sqrt(bigPi(prec))
	erf := new(big.Float).SetPrec(prec).Quo(sum, sp)
	erf.Mul(erf, new(big.Float).SetPrec(prec).SetInt64(2))
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	var phi *big.Float
	if y < 0 { // Phi(y) = (1 - erf(|y|/sqrt2))/2
		phi = new(big.Float).SetPrec(prec).Sub(one, erf)
	} else {
		phi = new(big.Float).SetPrec(prec).Add(one, erf)
	}
	phi.Quo(phi, new(big.Float).SetPrec(prec).SetInt64(2))
	f, _ := phi.Float64()
	return f
}

// TestPhiCertifiedAccuracy: the relative error skellamPhiErr allowed for
// Phi through math.Erfc holds, with a factor 10 to spare, against the
// erf series in big.Float, over the range the certificate evaluates.
func TestPhiCertifiedAccuracy(t *testing.T) {
	for _, y := range []float64{-36.5, -30, -20.25, -12.3, -11.5, -10, -8.5, -6.1, -5, -3.3, -2, -1, -0.5, -1e-3, 0, 0.3, 0.7, 1.2} {
		want := phiBig(y)
		got := phiCertified(y)
		if rel := math.Abs(got-want) / want; !(rel <= skellamPhiErr/10) {
			t.Errorf("Phi(%v): Erfc gives %v, series %v (relative %v)", y, got, want, rel)
		}
	}
}

// bigPi returns pi to prec bits by Machin's formula, 16 atan(1/5) -
// 4 atan(1/239), each arctangent from its series.
func bigPi(prec uint) *big.Float {
	atanInv := func(n int64) *big.Float {
		x := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).SetInt64(1), new(big.Float).SetPrec(prec).SetInt64(n))
		x2 := new(big.Float).SetPrec(prec).Mul(x, x)
		term := new(big.Float).SetPrec(prec).Set(x)
		sum := new(big.Float).SetPrec(prec)
		tmp := new(big.Float).SetPrec(prec)
		for k := int64(0); ; k++ {
			tmp.Quo(term, new(big.Float).SetPrec(prec).SetInt64(2*k+1))
			if k%2 == 0 {
				sum.Add(sum, tmp)
			} else {
				sum.Sub(sum, tmp)
			}
			term.Mul(term, x2)
			if term.MantExp(nil) < -int(prec)-10 {
				return sum
			}
		}
	}
	a := atanInv(5)
	a.Mul(a, new(big.Float).SetPrec(prec).SetInt64(16))
	b := atanInv(239)
	b.Mul(b, new(big.Float).SetPrec(prec).SetInt64(4))
	return a.Sub(a, b)
}
