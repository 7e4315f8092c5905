package mechanism

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
)

// MaxExactMean is the largest mean PoissonExact accepts: its set-up
// multiplies about sqrt(mean) integers exactly and each draw costs
// O(sqrt(mean)) uniform integers.
const MaxExactMean = 1 << 30

// PoissonExact is an exact, integer-only sampler of the Poisson
// distribution with a rational mean lambda = num/den. Its draws use only
// uniform integers from the *rand.Rand (rand.Rand.Uint64N and Uint64, both
// exactly uniform) and integer or rational comparisons: no floating point
// touches the output, so it has none of the floating-point leaks of
// Poisson (Mironov, CCS 2012) and its output distribution is exactly
// Poisson(num/den) given an ideal source of random bits.
//
// Construction (rejection from a two-sided geometric envelope around the
// mode m = ceil(lambda) - 1): the ratio p(m+j)/p(m) is the product of j
// factors f_i = lambda/(m+i) above the mode and of j factors
// g_i = (m-i+1)/lambda below it, each a rational in [0, 1] that decreases
// with i. With a cut-off s (about sqrt(lambda)) and rho = f_s, the envelope
// C·rho^j with C = prod_{i<=s} f_i/rho bounds the ratio, and the acceptance
// probability of a proposed j is a product of rationals each at most 1:
// (m+i)/(m+s) for i in (j, s] or (m+s)/(m+i) for i in (s, j] (likewise
// below the mode), so it is drawn as the conjunction of Bernoulli draws of
// those rationals. The proposal picks the mode (envelope mass 1), the upper
// or the lower tail with probabilities that are exact big rationals
// computed once, then a geometric offset by Bernoulli(rho) trials. See
// docs/MECHANISMS.md for the cost: O(sqrt(lambda)) uniform integers per
// draw, against O(1) for the floating-point Poisson.
type PoissonExact struct {
	num, den uint64
	m        uint64 // a mode, ceil(num/den) - 1
	up, down tail
	pMode    *bigBernoulli // P[propose the mode]
	pUp      *bigBernoulli // P[upper tail | not the mode]
}

// tail is one side of the envelope: offsets j >= 1 with weight rho^j,
// rho = rhoNum/rhoDen, and cut-off s. A tail with s = 0 is empty.
type tail struct {
	s              uint64
	rhoNum, rhoDen uint64
}

// NewPoissonExact returns the exact sampler of Poisson(num/den). num and den
// must be positive and num/den at most MaxExactMean.
func NewPoissonExact(num, den uint64) (*PoissonExact, error) {
	if num == 0 || den == 0 {
		return nil, fmt.Errorf("mechanism: exact Poisson mean %d/%d: numerator and denominator must be positive", num, den)
	}
	m := (num - 1) / den // ceil(lambda) - 1, a mode, below lambda
	if m >= MaxExactMean {
		return nil, fmt.Errorf("mechanism: exact Poisson mean %d/%d exceeds %d", num, den, uint64(MaxExactMean))
	}
	s := max(1, isqrt(m))
	p := &PoissonExact{num: num, den: den, m: m}
	// Upper tail: rho = f_s = num / (den (m+s)) < 1, as m + 2 > lambda.
	su := max(2, s)
	hi, lo := bits.Mul64(den, m+su)
	if hi != 0 {
		return nil, fmt.Errorf("mechanism: exact Poisson mean %d/%d: den·(mode+%d) overflows 64 bits", num, den, su)
	}
	p.up = tail{s: su, rhoNum: num, rhoDen: lo}
	if m >= 1 {
		// Lower tail: rho = g_s = den (m-s+1) / num < 1, as m < lambda.
		sd := min(s, m)
		hi, lo := bits.Mul64(den, m-sd+1)
		if hi != 0 {
			return nil, fmt.Errorf("mechanism: exact Poisson mean %d/%d: den·mode overflows 64 bits", num, den)
		}
		p.down = tail{s: sd, rhoNum: lo, rhoDen: num}
	}
	p.setProposal()
	return p, nil
}

// Mean returns the mean num/den the sampler was built for.
func (p *PoissonExact) Mean() (num, den uint64) { return p.num, p.den }

// setProposal computes the exact envelope masses: 1 at the mode and
// W = C·rho/(1-rho) for each tail, C the product of the tail's factors
// over rho for i <= s. The fractions are kept unreduced (a
// gcd of million-bit numbers would dominate the set-up at large means).
func (p *PoissonExact) setProposal() {
	nUp, dUp := p.tailMass(p.up, true)
	nDown, dDown := p.tailMass(p.down, false)
	// W+ + W- = (nUp dDown + nDown dUp) / (dUp dDown).
	a := new(big.Int).Mul(nUp, dDown)
	tails := new(big.Int).Add(a, new(big.Int).Mul(nDown, dUp))
	den := new(big.Int).Mul(dUp, dDown)
	p.pMode = newBigBernoulli(den, new(big.Int).Add(den, tails))
	p.pUp = newBigBernoulli(a, tails)
}

// tailMass is C·rho/(1-rho) for one tail as an unreduced fraction (0/1 for
// an empty tail).
func (p *PoissonExact) tailMass(t tail, up bool) (num, den *big.Int) {
	if t.s == 0 {
		return new(big.Int), big.NewInt(1)
	}
	nf := make([]uint64, 0, t.s+1)
	df := make([]uint64, 0, t.s+1)
	for i := uint64(1); i <= t.s; i++ {
		if up {
			nf, df = append(nf, p.m+t.s), append(df, p.m+i)
		} else {
			nf, df = append(nf, p.m-i+1), append(df, p.m-t.s+1)
		}
	}
	// rho/(1-rho) = rhoNum / (rhoDen - rhoNum); rho < 1 for both tails.
	nf, df = append(nf, t.rhoNum), append(df, t.rhoDen-t.rhoNum)
	return product(nf), product(df)
}

// product multiplies xs by a balanced tree, so that the big
// multiplications are of numbers of similar size.
func product(xs []uint64) *big.Int {
	switch len(xs) {
	case 0:
		return big.NewInt(1)
	case 1:
		return new(big.Int).SetUint64(xs[0])
	}
	h := len(xs) / 2
	return new(big.Int).Mul(product(xs[:h]), product(xs[h:]))
}

// Sample draws one value of Poisson(num/den).
func (p *PoissonExact) Sample(r *rand.Rand) int64 {
	for {
		if p.pMode.sample(r) {
			return int64(p.m)
		}
		if p.pUp.sample(r) {
			j := 1 + geometric(r, p.up.rhoNum, p.up.rhoDen)
			if p.acceptUp(r, j) {
				return int64(p.m + j)
			}
			continue
		}
		j := 1 + geometric(r, p.down.rhoNum, p.down.rhoDen)
		if j <= p.m && p.acceptDown(r, j) {
			return int64(p.m - j)
		}
	}
}

// acceptUp accepts the offset j above the mode with probability
// prod_{i in (j,s]} (m+i)/(m+s) or prod_{i in (s,j]} (m+s)/(m+i).
func (p *PoissonExact) acceptUp(r *rand.Rand, j uint64) bool {
	s, m := p.up.s, p.m
	c := chain{a: 1, b: 1}
	for i := j + 1; i <= s; i++ {
		if !c.times(r, m+i, m+s) {
			return false
		}
	}
	for i := s + 1; i <= j; i++ {
		if !c.times(r, m+s, m+i) {
			return false
		}
	}
	return c.draw(r)
}

// acceptDown accepts the offset j (1 <= j <= m) below the mode with
// probability prod_{i in (j,s]} (m-s+1)/(m-i+1) or
// prod_{i in (s,j]} (m-i+1)/(m-s+1).
func (p *PoissonExact) acceptDown(r *rand.Rand, j uint64) bool {
	s, m := p.down.s, p.m
	c := chain{a: 1, b: 1}
	for i := j + 1; i <= s; i++ {
		if !c.times(r, m-s+1, m-i+1) {
			return false
		}
	}
	for i := s + 1; i <= j; i++ {
		if !c.times(r, m-i+1, m-s+1) {
			return false
		}
	}
	return c.draw(r)
}

// chain draws Bernoulli of a product of rationals, each at most 1, as the
// conjunction of independent Bernoulli draws of partial products: factors
// are multiplied into a/b while the product fits in 64 bits, and a/b is
// drawn (and reset) when the next factor would overflow it.
type chain struct{ a, b uint64 }

// times multiplies x/y (x <= y) into the chain; it returns false if a
// partial product drawn on the way came out false.
func (c *chain) times(r *rand.Rand, x, y uint64) bool {
	ha, la := bits.Mul64(c.a, x)
	hb, lb := bits.Mul64(c.b, y)
	if ha == 0 && hb == 0 {
		c.a, c.b = la, lb
		return true
	}
	ok := c.draw(r)
	c.a, c.b = x, y
	return ok
}

// draw returns Bernoulli(a/b) of the pending product.
func (c *chain) draw(r *rand.Rand) bool { return c.a == c.b || bernoulli(r, c.a, c.b) }

// bernoulli returns true with probability a/b exactly (0 <= a <= b, b > 0).
func bernoulli(r *rand.Rand, a, b uint64) bool { return r.Uint64N(b) < a }

// geometric returns the number of successes of Bernoulli(a/b) trials before
// the first failure: P[k] = rho^k (1 - rho), rho = a/b < 1.
func geometric(r *rand.Rand, a, b uint64) uint64 {
	var k uint64
	for bernoulli(r, a, b) {
		k++
	}
	return k
}

// isqrt is floor(sqrt(n)).
func isqrt(n uint64) uint64 {
	x := uint64(math.Sqrt(float64(n)))
	for x*x > n {
		x--
	}
	for (x+1)*(x+1) <= n {
		x++
	}
	return x
}

// bigBernoulli draws Bernoulli(p) for a rational p in [0, 1] exactly by
// comparing a uniform U in [0, 1), 64 bits at a time, with the binary
// expansion of p: U < p decides at the first differing block. The first
// block is precomputed; later blocks (needed with probability 2^-64) are
// computed on demand.
type bigBernoulli struct {
	num, den *big.Int
	first    uint64
	rem      *big.Int // num·2^64 - first·den
}

// newBigBernoulli prepares Bernoulli(num/den), 0 <= num <= den, den > 0.
func newBigBernoulli(num, den *big.Int) *bigBernoulli {
	b := &bigBernoulli{num: num, den: den}
	b.first, b.rem = nextBlock(b.num, b.den)
	return b
}

// nextBlock returns floor(rem·2^64/den) and rem·2^64 mod den; a block of
// 2^64 (p = 1) is returned as all ones with the remainder den, so that the
// expansion 0.111... is continued.
func nextBlock(rem, den *big.Int) (uint64, *big.Int) {
	x := new(big.Int).Lsh(rem, 64)
	q, m := new(big.Int).QuoRem(x, den, new(big.Int))
	if !q.IsUint64() {
		return math.MaxUint64, new(big.Int).Set(den)
	}
	return q.Uint64(), m
}

// sample returns true with probability p.
func (b *bigBernoulli) sample(r *rand.Rand) bool {
	block, rem := b.first, b.rem
	for {
		u := r.Uint64()
		if u != block {
			return u < block
		}
		block, rem = nextBlock(rem, b.den)
	}
}

// SkellamExact is an exact, integer-only sampler of the symmetric Skellam
// distribution with rational variance num/den: the difference of two
// independent PoissonExact draws of mean num/(2 den). It has the
// distribution of Skellam(r, num/den) without its floating-point
// arithmetic; split-mix uses it when Params.Secure is set.
type SkellamExact struct {
	half *PoissonExact
}

// NewSkellamExact returns the exact sampler of the Skellam distribution
// with variance num/den (both positive, num/(2 den) at most MaxExactMean).
func NewSkellamExact(num, den uint64) (*SkellamExact, error) {
	if num%2 == 0 {
		num /= 2
	} else if den > math.MaxUint64/2 {
		return nil, fmt.Errorf("mechanism: exact Skellam variance %d/%d: 2·den overflows 64 bits", num, den)
	} else {
		den *= 2
	}
	p, err := NewPoissonExact(num, den)
	if err != nil {
		return nil, fmt.Errorf("mechanism: exact Skellam: %w", err)
	}
	return &SkellamExact{half: p}, nil
}

// Sample draws one value.
func (s *SkellamExact) Sample(r *rand.Rand) int64 {
	return s.half.Sample(r) - s.half.Sample(r)
}

// DyadicRational returns v as the exact fraction num/den with den a power
// of two, in lowest terms: every finite float64 is one. It fails for a
// negative, zero or non-finite v and when num or den needs more than 64
// bits.
func DyadicRational(v float64) (num, den uint64, err error) {
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, 0, fmt.Errorf("mechanism: %v is not a positive finite number", v)
	}
	frac, exp := math.Frexp(v) // v = frac·2^exp, frac in [0.5, 1)
	mant := uint64(frac * (1 << 53))
	exp -= 53
	tz := bits.TrailingZeros64(mant)
	mant >>= tz
	exp += tz
	switch {
	case exp >= 0:
		if exp >= 64 || mant > math.MaxUint64>>exp {
			return 0, 0, fmt.Errorf("mechanism: %v overflows a 64-bit numerator", v)
		}
		return mant << exp, 1, nil
	case -exp >= 64:
		return 0, 0, fmt.Errorf("mechanism: %v needs a denominator of 2^%d, above 64 bits", v, -exp)
	}
	return mant, 1 << -exp, nil
}
