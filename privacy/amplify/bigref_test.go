package amplify

import (
	"math"
	"math/big"
)

// High-precision references (math/big.Float, 320 bits) for the numerical
// tests: the textbook formulas are evaluated as written, cancellations and
// all, with enough bits that the cancellation does not matter.

const bigPrec = 320

func bf(x float64) *big.Float { return new(big.Float).SetPrec(bigPrec).SetFloat64(x) }

func bnew() *big.Float { return new(big.Float).SetPrec(bigPrec) }

func badd(a, b *big.Float) *big.Float { return bnew().Add(a, b) }
func bsub(a, b *big.Float) *big.Float { return bnew().Sub(a, b) }
func bmul(a, b *big.Float) *big.Float { return bnew().Mul(a, b) }
func bquo(a, b *big.Float) *big.Float { return bnew().Quo(a, b) }

func f64(x *big.Float) float64 { v, _ := x.Float64(); return v }

// bigExp returns e^x: x is scaled by 2^-s into |x| < 2^-12, the Taylor
// series is summed, and the result squared s times (320 bits leave well
// over 200 after the squarings).
func bigExp(x *big.Float) *big.Float {
	s := 0
	y := bnew().Set(x)
	lim := bf(1.0 / 4096)
	for bnew().Abs(y).Cmp(lim) > 0 {
		y.Quo(y, bf(2))
		s++
	}
	sum, term := bf(1), bf(1)
	for k := 1; k < 60; k++ {
		term = bquo(bmul(term, y), bf(float64(k)))
		sum = badd(sum, term)
	}
	for range s {
		sum = bmul(sum, sum)
	}
	return sum
}

func bigExpF(x float64) *big.Float { return bigExp(bf(x)) }

// bigLog returns log x for x > 0 by Newton's iteration on e^y = x from the
// float64 logarithm (each step doubles the correct bits).
func bigLog(x *big.Float) *big.Float {
	m := bnew()
	e := x.MantExp(m) // x = m 2^e, m in [0.5, 1)
	y := bf(math.Log(f64(m)) + float64(e)*math.Ln2)
	for range 6 {
		ey := bigExp(y)
		// y += 2 (x - e^y)/(x + e^y)  (Halley)
		y = badd(y, bquo(bmul(bf(2), bsub(x, ey)), badd(x, ey)))
	}
	return y
}

// bigPowInt returns x^k for k >= 0.
func bigPowInt(x *big.Float, k int) *big.Float {
	r := bf(1)
	b := bnew().Set(x)
	for k > 0 {
		if k&1 == 1 {
			r = bmul(r, b)
		}
		b = bmul(b, b)
		k >>= 1
	}
	return r
}

// bigBinomRow returns C(n, k) for k = 0..n.
func bigBinomRow(n int) []*big.Float {
	row := make([]*big.Float, n+1)
	c := new(big.Int).SetInt64(1)
	for k := 0; k <= n; k++ {
		row[k] = bnew().SetInt(c)
		c.Mul(c, big.NewInt(int64(n-k)))
		c.Quo(c, big.NewInt(int64(k+1)))
	}
	return row
}

// bigCloneHalves returns, for c = 0..m, the Bin(c, 1/2) pmf as big floats.
func bigCloneHalves(m int) [][]*big.Float {
	out := make([][]*big.Float, m+1)
	for c := 0; c <= m; c++ {
		row := bigBinomRow(c)
		half := bnew().SetMantExp(bf(1), -c)
		for a := range row {
			row[a] = bmul(row[a], half)
		}
		out[c] = row
	}
	return out
}

// bigClonesDelta is the clones reduction's delta(eps) by definition, in
// big floats: the clone count C has pmf w (c = 0..len(w)-1), A | C = c is
// Bin(c, 1/2) (halves[c]), the differing user randomizes at eps1, and
// delta = sum_c w_c sum_a (P_c(a) - e^eps Q_c(a))_+ with
// P_c = alpha (A+1) + (1-alpha) A, Q_c = (1-alpha)(A+1) + alpha A.
// (By symmetry both directions agree.)
func bigClonesDelta(w []*big.Float, halves [][]*big.Float, eps1, eps float64) *big.Float {
	e1 := bigExpF(eps1)
	alpha := bquo(e1, badd(bf(1), e1))
	beta := bsub(bf(1), alpha)
	ee := bigExpF(eps)
	a1 := bsub(alpha, bmul(ee, beta)) // coefficient of b(a-1)
	a2 := bsub(beta, bmul(ee, alpha)) // coefficient of b(a)
	total := bf(0)
	zero := bf(0)
	for c, wc := range w {
		if wc.Sign() == 0 {
			continue
		}
		b := halves[c]
		s := bf(0)
		for a := 0; a <= c+1; a++ {
			t := bf(0)
			if a-1 >= 0 {
				t = badd(t, bmul(a1, b[a-1]))
			}
			if a <= c {
				t = badd(t, bmul(a2, b[a]))
			}
			if t.Cmp(zero) > 0 {
				s = badd(s, t)
			}
		}
		total = badd(total, bmul(wc, s))
	}
	return total
}

// bigBinomialWeights returns the Bin(m, p) pmf, p = e^-eps0, in big floats.
func bigBinomialWeights(m int, eps0 float64) []*big.Float {
	p := bigExpF(-eps0)
	q := bsub(bf(1), p)
	row := bigBinomRow(m)
	w := make([]*big.Float, m+1)
	for c := range w {
		w[c] = bmul(row[c], bmul(bigPowInt(p, c), bigPowInt(q, m-c)))
	}
	return w
}

// bigPoissonBinomial returns the pmf of sum_i Bernoulli(q_i) in big floats
// (the O(n^2) recursion).
func bigPoissonBinomial(q []float64) []*big.Float {
	p := []*big.Float{bf(1)}
	for _, qi := range q {
		bq := bf(qi)
		bc := bsub(bf(1), bq)
		next := make([]*big.Float, len(p)+1)
		for k := range next {
			v := bf(0)
			if k < len(p) {
				v = badd(v, bmul(p[k], bc))
			}
			if k > 0 {
				v = badd(v, bmul(p[k-1], bq))
			}
			next[k] = v
		}
		p = next
	}
	return p
}

// bigShuffledRRDelta is the exact delta(eps) of shuffled binary randomized
// response (n users, user 1 holds 0 or 1, the others 0), both directions,
// in big floats.
func bigShuffledRRDelta(n int, eps0, eps float64) *big.Float {
	m := n - 1
	e0 := bigExpF(eps0)
	q := bquo(bf(1), badd(bf(1), e0)) // P(report 1 | input 0)
	qc := bsub(bf(1), q)
	row := bigBinomRow(m)
	B := make([]*big.Float, m+1)
	for k := range B {
		B[k] = bmul(row[k], bmul(bigPowInt(q, k), bigPowInt(qc, m-k)))
	}
	at := func(k int) *big.Float {
		if k < 0 || k > m {
			return bf(0)
		}
		return B[k]
	}
	ee := bigExpF(eps)
	d1, d2 := bf(0), bf(0)
	for k := 0; k <= m+1; k++ {
		P := badd(bmul(at(k), qc), bmul(at(k-1), q))
		Q := badd(bmul(at(k), q), bmul(at(k-1), qc))
		if t := bsub(P, bmul(ee, Q)); t.Sign() > 0 {
			d1 = badd(d1, t)
		}
		if t := bsub(Q, bmul(ee, P)); t.Sign() > 0 {
			d2 = badd(d2, t)
		}
	}
	if d1.Cmp(d2) > 0 {
		return d1
	}
	return d2
}

// bigBlanketDelta evaluates the privacy-blanket delta (Bennett or
// Hoeffding) with the textbook parameter formulas, in big floats, capped at 1.
func bigBlanketDelta(r Randomizer, v BlanketVariant, eps, eps0 float64, n int) float64 {
	one := bf(1)
	ee := bigExpF(eps)
	e2 := bmul(ee, ee)
	a := bsub(ee, one)
	var g, maxL, rng, m2 *big.Float
	switch r.Mech {
	case Laplace:
		h := bigExpF(eps0 / 2)
		hi := bquo(one, h)
		e0i := bigExpF(-eps0)
		g = hi
		maxL = bmul(h, bsub(one, bigExpF(eps-eps0)))
		rng = bmul(badd(ee, one), bsub(h, hi))
		m2 = bsub(bmul(bquo(badd(e2, one), bf(3)), badd(bmul(bf(2), h), e0i)),
			bmul(bmul(bf(2), ee), bsub(bmul(bf(2), hi), e0i)))
	case KRR, RGammaB:
		k := bf(float64(r.K))
		g = bquo(k, bsub(badd(bigExpF(eps0), k), one))
		gc := bsub(one, g)
		maxL = badd(bmul(g, bsub(one, ee)), bmul(gc, k))
		rng = bmul(bmul(gc, k), badd(ee, one))
		m2 = badd(bmul(bmul(g, bsub(bf(2), g)), bmul(a, a)), bmul(bmul(bmul(gc, gc), k), badd(e2, one)))
	default:
		e0 := bigExpF(eps0)
		g = bigExpF(-eps0)
		maxL = bmul(e0, bsub(one, bigExpF(eps-2*eps0)))
		rng = bmul(badd(ee, one), bsub(e0, g))
		m2 = bsub(bmul(e0, badd(e2, one)), bmul(bmul(bf(2), g), bigExpF(eps-2*eps0)))
	}
	nf := bf(float64(n))
	gc := bsub(one, g)
	var d *big.Float
	if v == Hoeffding {
		u := bquo(bmul(bf(2), bmul(a, a)), bmul(rng, rng))
		t := bsub(one, bigExp(bnew().Neg(u)))
		base := bsub(one, bmul(g, t))
		d = bquo(bquo(bmul(rng, rng), bmul(bf(4), a)), bmul(g, nf))
		d = bmul(d, bigPowInt(base, n))
	} else {
		alpha := bquo(m2, bmul(maxL, maxL))
		beta := bquo(bmul(a, maxL), m2)
		l1b := bigLog(badd(one, beta))
		phi := bsub(bmul(badd(one, beta), l1b), beta)
		x := bigExp(bnew().Neg(bmul(alpha, phi)))
		s := bsub(bigPowInt(badd(gc, bmul(g, x)), n), bigPowInt(gc, n))
		d = bquo(bmul(s, maxL), bmul(bmul(l1b, g), nf))
	}
	return math.Min(1, f64(d))
}
