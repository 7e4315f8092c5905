package account

import (
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/shufflefl/shufflefl/internal/longtest"
)

// The exact total variation of the split-and-mix view for a small modulus.
//
// Party i splits x_i in Z_q into m shares: m-1 uniform, the last completing
// x_i. The analyzer sees the multiset of all n·m shares, i.e. the histogram
// (c_0, ..., c_{q-1}) of their values. One party's histogram has law
// multinomial(k) / q^{m-1} on the k with sum_v v·k_v = x_i mod q, so the
// view's law is the convolution over the parties, and it depends on the
// input only through how many parties hold each value (its type). The
// counts below are exact integers: the number of the q^{n(m-1)} equally
// likely choices of the free shares that give each histogram.

// smGrid is a histogram law on the (q-1)-dimensional grid of the counts of
// the values 1..q-1 (the count of 0 is implied), side n·m + 1.
type smGrid struct {
	q, side int
	cell    []*big.Int // nil = 0
}

// smKernel lists one party's histograms for input x: offsets into the grid
// and their multiplicities.
type smKernel struct {
	off []int
	mul []uint64
}

func smNewKernel(q, m, x, side int) smKernel {
	var k smKernel
	counts := make([]int, q-1)
	var rec func(v, left int)
	rec = func(v, left int) {
		if v == q-1 {
			sum, off, stride := 0, 0, 1
			for i, c := range counts {
				sum += (i + 1) * c
				off += c * stride
				stride *= side
			}
			if sum%q != x {
				return
			}
			// multinomial m! / (k_0! k_1! ... k_{q-1}!)
			mul, rest := uint64(1), m
			for _, c := range counts {
				mul *= binomial(rest, c)
				rest -= c
			}
			k.off = append(k.off, off)
			k.mul = append(k.mul, mul)
			return
		}
		for c := 0; c <= left; c++ {
			counts[v] = c
			rec(v+1, left-c)
		}
		counts[v] = 0
	}
	rec(0, m)
	return k
}

func binomial(n, k int) uint64 {
	r := uint64(1)
	for i := 1; i <= k; i++ {
		r = r * uint64(n-k+i) / uint64(i)
	}
	return r
}

// smLaw returns the exact histogram counts of the shuffled shares when the
// n parties hold the inputs xs (xs[i] in [0, q)).
func smLaw(q, m int, xs []int) smGrid {
	n := len(xs)
	side := n*m + 1
	size := 1
	for range q - 1 {
		size *= side
	}
	g := smGrid{q: q, side: side, cell: make([]*big.Int, size)}
	g.cell[0] = big.NewInt(1)
	kernels := map[int]smKernel{}
	tmp := new(big.Int)
	for _, x := range xs {
		k, ok := kernels[x]
		if !ok {
			k = smNewKernel(q, m, x, side)
			kernels[x] = k
		}
		next := make([]*big.Int, size)
		for at, v := range g.cell {
			if v == nil {
				continue
			}
			for j, off := range k.off {
				tmp.SetUint64(k.mul[j])
				tmp.Mul(tmp, v)
				if next[at+off] == nil {
					next[at+off] = new(big.Int)
				}
				next[at+off].Add(next[at+off], tmp)
			}
		}
		g.cell = next
	}
	return g
}

// smTVBits returns -log2 of the total variation distance between two laws
// of the same n, m, q: sum |a - b| / (2 q^{n(m-1)}), evaluated exactly and
// converted to bits at the end. It is +Inf when the laws are equal.
func smTVBits(a, b smGrid, n, m int) float64 {
	sum, d := new(big.Int), new(big.Int)
	zero := new(big.Int)
	for i := range a.cell {
		x, y := a.cell[i], b.cell[i]
		if x == nil {
			x = zero
		}
		if y == nil {
			y = zero
		}
		d.Sub(x, y)
		sum.Add(sum, d.Abs(d))
	}
	if sum.Sign() == 0 {
		return math.Inf(1)
	}
	return float64(n*(m-1))*math.Log2(float64(a.q)) + 1 - bigLog2(sum)
}

// bigLog2 returns log2(x) for x > 0 to float64 precision.
func bigLog2(x *big.Int) float64 {
	shift := x.BitLen() - 60
	if shift < 0 {
		shift = 0
	}
	top := new(big.Int).Rsh(x, uint(shift))
	return float64(shift) + math.Log2(float64(top.Uint64()))
}

// smInputs returns the input vector with c[v] parties holding value v.
func smInputs(c []int) []int {
	var xs []int
	for v, k := range c {
		for range k {
			xs = append(xs, v)
		}
	}
	return xs
}

// smExtremes returns the candidate worst pairs of input types: every pair of
// "all parties hold v, up to the few needed to fix the sum" for v, w in Z_q,
// the types furthest apart. (For q = 2 the exhaustive search below confirms
// that the extreme pair is the worst at small n.)
func smExtremes(q, n int) [][2][]int {
	var pairs [][2][]int
	for v := 0; v < q; v++ {
		for w := v + 1; w < q; w++ {
			// n parties at v against n - r at w and r at 0, with
			// n·v = (n-r)·w mod q, r the smallest such.
			a := make([]int, q)
			a[v] = n
			for r := 0; r < q && r <= n; r++ {
				if ((n*v-(n-r)*w)%q+q)%q == 0 {
					b := make([]int, q)
					b[w] += n - r
					b[0] += r
					pairs = append(pairs, [2][]int{a, b})
					break
				}
			}
		}
	}
	return pairs
}

// smExactBits returns the exact security, in bits, over the given pairs of
// input types, and the worst pair.
func smExactBits(q, m int, pairs [][2][]int, n int) (bits float64, worst [2][]int) {
	bits = math.Inf(1)
	laws := map[string]smGrid{}
	law := func(c []int) smGrid {
		key := fmt.Sprint(c)
		if g, ok := laws[key]; ok {
			return g
		}
		g := smLaw(q, m, smInputs(c))
		laws[key] = g
		return g
	}
	for _, p := range pairs {
		if b := smTVBits(law(p[0]), law(p[1]), n, m); b < bits {
			bits, worst = b, p
		}
	}
	return bits, worst
}

// smAllPairs returns every pair of distinct input types (counts per value,
// summing to n) whose inputs have the same sum mod q.
func smAllPairs(q, n int) [][2][]int {
	var types [][]int
	c := make([]int, q)
	var rec func(v, left int)
	rec = func(v, left int) {
		if v == q-1 {
			c[v] = left
			types = append(types, append([]int(nil), c...))
			return
		}
		for k := 0; k <= left; k++ {
			c[v] = k
			rec(v+1, left-k)
		}
	}
	rec(0, n)
	sum := func(c []int) int {
		s := 0
		for v, k := range c {
			s += v * k
		}
		return s % q
	}
	var pairs [][2][]int
	for i, a := range types {
		for _, b := range types[i+1:] {
			if sum(a) == sum(b) {
				pairs = append(pairs, [2][]int{a, b})
			}
		}
	}
	return pairs
}

// smCase is one point (q, n, m) of the exact comparison.
type smCase struct{ q, n, m int }

// smQuick are the points run by go test; smLong are added under
// SHUFFLEFL_LONG=1 (larger n·m: seconds each).
var (
	smQuick = []smCase{
		{2, 19, 4}, {2, 19, 8}, {2, 19, 12}, {2, 19, 16}, {2, 19, 20},
		{2, 30, 10}, {2, 50, 12}, {2, 60, 12}, {2, 100, 8}, {2, 100, 12},
		{3, 19, 4}, {3, 19, 6}, {3, 19, 8}, {3, 25, 6},
		{4, 19, 4},
	}
	smLong = []smCase{
		{2, 100, 16}, {2, 100, 20}, {2, 173, 12}, {2, 200, 16}, {2, 200, 20},
		{3, 19, 10}, {3, 30, 8},
		{4, 19, 5},
	}
)

func smCases() []smCase {
	if longtest.Enabled() {
		return append(append([]smCase(nil), smQuick...), smLong...)
	}
	return smQuick
}

// TestSplitMixWorstPair: the worst pair of inputs found by an exhaustive
// search over all pairs of input types with equal sums is one of the
// extreme pairs (smExtremes), which the comparison below uses at larger n.
func TestSplitMixWorstPair(t *testing.T) {
	cases := []smCase{{2, 19, 4}, {2, 19, 8}, {2, 30, 10}}
	if longtest.Enabled() {
		cases = append(cases, smCase{3, 19, 4}, smCase{3, 19, 5}, smCase{3, 20, 5}, smCase{3, 21, 4})
	}
	for _, c := range cases {
		all, w := smExactBits(c.q, c.m, smAllPairs(c.q, c.n), c.n)
		ext, _ := smExactBits(c.q, c.m, smExtremes(c.q, c.n), c.n)
		if math.Abs(all-ext) > 1e-9 {
			t.Errorf("q=%d n=%d m=%d: exhaustive worst pair %v gives %.4f bits, the extreme pairs %.4f", c.q, c.n, c.m, w, all, ext)
		}
	}
}

// TestSplitMixSecurityBitsBelowExact compares the claimed security of
// SplitMixSecurityBits with the exact total variation distance of the
// shuffled shares (worst of the extreme pairs): the claim must never exceed
// -log2(TV). The negative control, the reading with sigma in place of
// 2 sigma (claiming 2s + log2 q bits), must be caught at some point.
func TestSplitMixSecurityBitsBelowExact(t *testing.T) {
	caught := 0
	for _, c := range smCases() {
		exact, _ := smExactBits(c.q, c.m, smExtremes(c.q, c.n), c.n)
		claim := SplitMixSecurityBits(c.n, c.m, float64(c.q))
		loose := 2*claim + math.Log2(float64(c.q))
		t.Logf("q=%d n=%3d m=%2d: exact %6.2f bits, claimed %6.2f (margin %5.2f); sigma-for-2-sigma reading %6.2f", c.q, c.n, c.m, exact, claim, exact-claim, loose)
		if claim > exact {
			t.Errorf("q=%d n=%d m=%d: SplitMixSecurityBits claims %.3f bits, the exact total variation gives only %.3f", c.q, c.n, c.m, claim, exact)
		}
		if loose > exact {
			caught++
		}
	}
	if caught == 0 {
		t.Error("the sigma-for-2-sigma reading was never caught: the comparison cannot fail")
	}
}

// TestSplitMixFrontierWorkedExample recomputes docs/ACCOUNTING.md's worked
// example at the frontier's settings: N = 1,000 clients sampled at rate
// 0.1, d = 7,850, q = 2^32, no colluders, 2^-40 for the void probability
// and for the split-and-mix term, T = 30 rounds at eps = 2.
func TestSplitMixFrontierWorkedExample(t *testing.T) {
	const pop, rate, d, rounds, eps = 1000, 0.1, 7850, 30, 2.0
	budget := math.Exp2(-40)
	k := int(math.Ceil(pop * rate))
	for BinomialUpperTail(pop, rate, k) > budget {
		k++
	}
	void := BinomialUpperTail(pop, rate, k)
	q := math.Exp2(32)
	need := 40 + math.Log2(d)
	m, err := SplitMixMessages(k, q, need)
	if err != nil {
		t.Fatal(err)
	}
	s := SplitMixSecurityBits(k, m, q)
	mix := d * math.Exp2(-s)
	tv := void + mix
	t.Logf("K = %d: P[Bin(%d, %v) > %d] = %.3g, P[> %d] = %.3g, budget 2^-40 = %.3g", k, pop, rate, k, void, k-1, BinomialUpperTail(pop, rate, k-1), budget)
	t.Logf("per coordinate s >= 40 + log2(%d) = %.2f bits; log2(K/e) = %.3f", d, need, math.Log2(float64(k)/math.E))
	t.Logf("m = %d: s = %.2f bits; m = %d: s = %.2f bits", m, s, m-1, SplitMixSecurityBits(k, m-1, q))
	t.Logf("d·2^-s = %.3g; TV per round = %.3g; (1 + e^%v)·%d·TV = %.3g", mix, tv, eps, rounds, (1+math.Exp(eps))*rounds*tv)
	if k != 173 || m != 27 {
		t.Errorf("K = %d, m = %d; docs/ACCOUNTING.md says 173 and 27", k, m)
	}
}
