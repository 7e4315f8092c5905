package pld

import (
	"math"
	"sort"
	"testing"
)

// roundingLaw is R_{gamma,b}'s A* and omega on {0..b}: A* puts e/(e+b) on
// level 0.
func roundingLaw(eps0 float64, b int) (a, w []float64) {
	e := math.Exp(eps0)
	for y := 0; y <= b; y++ {
		w = append(w, 1/float64(b+1))
		if y == 0 {
			a = append(a, e/(e+float64(b)))
		} else {
			a = append(a, 1/(e+float64(b)))
		}
	}
	return a, w
}

// exactAllocDeltas is the exact 1-of-T allocation of R_{gamma,b}'s base
// pair by binomial sums: under omega^T the number N of positions at level
// 0 is Bin(T, 1/(b+1)) and the likelihood ratio is (N r1 + (T-N) r0)/T.
func exactAllocDeltas(eps0 float64, b, T int, eps float64) (rem, add float64) {
	a, w := roundingLaw(eps0, b)
	r1, r0 := a[0]/w[0], a[1]/w[1]
	p := 1 / float64(b+1)
	for N := 0; N <= T; N++ {
		lg1, _ := math.Lgamma(float64(T + 1))
		lg2, _ := math.Lgamma(float64(N + 1))
		lg3, _ := math.Lgamma(float64(T - N + 1))
		pm := math.Exp(lg1 - lg2 - lg3 + float64(N)*math.Log(p) + float64(T-N)*math.Log1p(-p))
		x := (float64(N)*r1 + float64(T-N)*r0) / float64(T)
		rem += pm * math.Max(0, x-math.Exp(eps))
		add += pm * math.Max(0, 1-math.Exp(eps)*x)
	}
	return rem, add
}

func TestBlanketAllocationRoundingExact(t *testing.T) {
	for _, tc := range []struct {
		eps0 float64
		b, T int
	}{{0.5, 2, 1}, {0.5, 2, 7}, {2, 3, 40}, {0.5, 2, 3000}, {0.1, 5, 20000}} {
		p, err := BlanketAllocation(tc.eps0, tc.b, tc.T, Options{Interval: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0, 0.002, 0.01, 0.05, 0.2} {
			er, ea := exactAllocDeltas(tc.eps0, tc.b, tc.T, eps)
			gr, ga := p.rem.delta(p.h, eps), p.add.delta(p.h, eps)
			if gr < er*(1-1e-9) || ga < ea*(1-1e-9) {
				t.Errorf("eps0 %v b %d T %d eps %v: PLD (%.6g, %.6g) below the exact (%.6g, %.6g)", tc.eps0, tc.b, tc.T, eps, gr, ga, er, ea)
			}
			if gr > er*1.05+1e-9 || ga > ea*1.05+1e-9 {
				t.Errorf("eps0 %v b %d T %d eps %v: PLD (%.6g, %.6g) far above the exact (%.6g, %.6g)", tc.eps0, tc.b, tc.T, eps, gr, ga, er, ea)
			}
		}
	}
}

// TestBlanketAllocationLaplace checks T = 1 against the Laplace
// mechanism's closed form (eps0 = 8: the ratio 1/R = e^{-4} lies below the
// lattice spacing, and a lowest lattice point at 0 used to put 0.38 of the
// add direction at +Inf for T = 2) (sensitivity 1/2, scale 1/eps0: delta(eps) =
// 1 - e^{(eps - eps0/2)/2} in both directions) and T = 2 against a direct
// quadrature in output space (y1, y2 iid Lap(1/2, 1/eps0), r(y) =
// exp(eps0 (|y - 1/2| - |y|)), constant outside (0, 1/2)).
func TestBlanketAllocationLaplace(t *testing.T) {
	for _, eps0 := range []float64{0.5, 3, 8} {
		p1, err := BlanketAllocation(eps0, BlanketLaplace, 1, Options{Interval: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0, 0.05, 0.2} {
			want := -math.Expm1((eps - eps0/2) / 2)
			if gr, ga := p1.rem.delta(p1.h, eps), p1.add.delta(p1.h, eps); gr < want*(1-1e-9) || ga < want*(1-1e-9) || gr > want*1.01 || ga > want*1.01 {
				t.Errorf("eps0 %v T=1 eps %v: PLD (%.8g, %.8g), Laplace %.8g", eps0, eps, gr, ga, want)
			}
		}
		// T = 2 by quadrature: the omega-mass of y <= 0, of (0, 1/2) in n
		// midpoint cells, of y >= 1/2.
		const n = 1200
		b := 1 / eps0
		var ys, ms []float64
		ys, ms = append(ys, -1), append(ms, 0.5*math.Exp(-0.5/b))
		for i := 0; i < n; i++ {
			lo, hi := 0.5*float64(i)/n, 0.5*float64(i+1)/n
			// omega = Lap(1/2, b): CDF on y < 1/2 is e^{(y-1/2)/b}/2
			ms = append(ms, 0.5*(math.Exp((hi-0.5)/b)-math.Exp((lo-0.5)/b)))
			ys = append(ys, (lo+hi)/2)
		}
		ys, ms = append(ys, 1), append(ms, 0.5)
		r := func(y float64) float64 { return math.Exp(eps0 * (math.Abs(y-0.5) - math.Abs(y))) }
		p2, err := BlanketAllocation(eps0, BlanketLaplace, 2, Options{Interval: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0.01, 0.1} {
			var qr, qa float64
			for i := range ys {
				for j := range ys {
					x := (r(ys[i]) + r(ys[j])) / 2
					qr += ms[i] * ms[j] * math.Max(0, x-math.Exp(eps))
					qa += ms[i] * ms[j] * math.Max(0, 1-math.Exp(eps)*x)
				}
			}
			gr, ga := p2.rem.delta(p2.h, eps), p2.add.delta(p2.h, eps)
			// midpoint quadrature of a Lipschitz integrand: relative error
			// far below 1e-4 at 1200 cells
			if gr < qr*(1-1e-4) || ga < qa*(1-1e-4) || gr > qr*1.02 || ga > qa*1.02 {
				t.Errorf("eps0 %v T=2 eps %v: PLD (%.8g, %.8g), quadrature (%.8g, %.8g)", eps0, eps, gr, ga, qr, qa)
			}
		}
	}
}

// multisetLaw returns the law of the sorted tuple of independent draws
// from the given distributions on {0..b}.
func multisetLaw(ds [][]float64) map[string]float64 {
	out := map[string]float64{}
	var rec func(i int, vals []int, p float64)
	rec = func(i int, vals []int, p float64) {
		if i == len(ds) {
			s := append([]int(nil), vals...)
			sort.Ints(s)
			k := ""
			for _, v := range s {
				k += string(rune('a' + v))
			}
			out[k] += p
			return
		}
		for y, q := range ds[i] {
			rec(i+1, append(vals, y), p*q)
		}
	}
	rec(0, nil, 1)
	return out
}

// exactSparse enumerates the k-of-d mechanism with m values per column
// (the user's slot and m-1 blanket draws, multiset observed per column):
// P(x) averages over the k-subsets, the user's value law a (nil: the
// reference, its slot holds omega). It returns the outcome probabilities
// in a fixed order.
func exactSparse(a, w []float64, d, k, m int) []float64 {
	mk := func(first []float64) map[string]float64 {
		ds := [][]float64{first}
		for i := 1; i < m; i++ {
			ds = append(ds, w)
		}
		return multisetLaw(ds)
	}
	colA, colB := mk(a), mk(w)
	keys := make([]string, 0, len(colB))
	for k := range colB {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var subsets [][]bool
	var gen func(i, left int, cur []bool)
	gen = func(i, left int, cur []bool) {
		if i == d {
			if left == 0 {
				subsets = append(subsets, append([]bool(nil), cur...))
			}
			return
		}
		gen(i+1, left, append(cur, false))
		if left > 0 {
			gen(i+1, left-1, append(cur, true))
		}
	}
	gen(0, k, nil)
	total := 1
	for i := 0; i < d; i++ {
		total *= len(keys)
	}
	out := make([]float64, total)
	idx := make([]int, d)
	for o := 0; o < total; o++ {
		v := o
		for j := 0; j < d; j++ {
			idx[j] = v % len(keys)
			v /= len(keys)
		}
		s := 0.0
		for _, S := range subsets {
			pr := 1.0
			for j := 0; j < d; j++ {
				if S[j] && a != nil {
					pr *= colA[keys[idx[j]]]
				} else {
					pr *= colB[keys[idx[j]]]
				}
			}
			s += pr
		}
		out[o] = s / float64(len(subsets))
	}
	return out
}

func hockey(p, q []float64, eps float64) float64 {
	s := 0.0
	for i := range p {
		s += math.Max(0, p[i]-math.Exp(eps)*q[i])
	}
	return s
}

// TestSparseShuffleAllocationExact checks the k-of-d partition step, the
// column reduction and the chain to substitution against exact
// enumeration of tiny mechanisms (R_{gamma,b}, b = 2), k | d and k not
// dividing d.
func TestSparseShuffleAllocationExact(t *testing.T) {
	for _, tc := range []struct {
		eps0    float64
		d, k, m int
	}{{1, 4, 2, 1}, {1, 5, 2, 1}, {0.7, 4, 2, 2}, {2, 3, 1, 2}, {1.5, 3, 3, 1}} {
		a, w := roundingLaw(tc.eps0, 2)
		P := exactSparse(a, w, tc.d, tc.k, tc.m)
		Q := exactSparse(nil, w, tc.d, tc.k, tc.m)
		p, err := SparseShuffleAllocation(tc.eps0, 2, tc.d, tc.k, tc.m, Options{Interval: 1e-4})
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0, 0.1, 0.4} {
			er, ea := hockey(P, Q, eps), hockey(Q, P, eps)
			gr, ga := p.rem.delta(p.h, eps), p.add.delta(p.h, eps)
			if gr < er*(1-1e-9) || ga < ea*(1-1e-9) {
				t.Errorf("%+v eps %v: PLD (%.6g, %.6g) below the exact (%.6g, %.6g)", tc, eps, gr, ga, er, ea)
			}
		}
		// substitution: user at level 0 against level 2 (the other
		// extreme); the chain's epsilon at delta must be at least the
		// exact one.
		a2 := append([]float64(nil), a...)
		a2[0], a2[2] = a[2], a[0]
		P2 := exactSparse(a2, w, tc.d, tc.k, tc.m)
		for _, delta := range []float64{1e-3, 0.05} {
			exact := 0.0
			lo, hi := 0.0, 20.0
			for i := 0; i < 100; i++ {
				mid := (lo + hi) / 2
				if math.Max(hockey(P, P2, mid), hockey(P2, P, mid)) > delta {
					lo = mid
				} else {
					hi = mid
				}
			}
			exact = hi
			got, err := p.ChainEpsilon(delta)
			if err != nil {
				t.Fatal(err)
			}
			if got < exact*(1-1e-6) {
				t.Errorf("%+v delta %v: chained substitution epsilon %.6g below the exact %.6g", tc, delta, got, exact)
			}
		}
	}
}

// TestBlanketColumnReduction checks one column with real reports of other
// users: n_p = 4 values, the user's slot (R(x) at x = 0 or 0.3, between
// levels, against a dummy), two reports at x = 0 and x = 1, one dummy; the
// bound counts the reports as non-blanket (m = n_p - 2 = 2).
func TestBlanketColumnReduction(t *testing.T) {
	const b = 2
	for _, eps0 := range []float64{0.5, 2, 5} {
		e := math.Exp(eps0)
		g := float64(b+1) / (e + b)
		rep := func(x float64) []float64 {
			out := make([]float64, b+1)
			lo := math.Floor(x * b)
			fr := x*b - lo
			for y := range out {
				out[y] = g / float64(b+1)
			}
			out[int(lo)] += (1 - g) * (1 - fr)
			if fr > 0 {
				out[int(lo)+1] += (1 - g) * fr
			}
			return out
		}
		_, w := roundingLaw(eps0, b)
		p, err := BlanketAllocation(eps0, b, 2, Options{Interval: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		// x = 0 is the worst input: there m = 3 or 4 (counting the
		// reports as blanket) would be refuted by this enumeration.
		for _, x := range []float64{0, 0.3} {
			lp := multisetLaw([][]float64{rep(x), rep(0), rep(1), w})
			lq := multisetLaw([][]float64{w, rep(0), rep(1), w})
			var P, Q []float64
			for k, v := range lq {
				P, Q = append(P, lp[k]), append(Q, v)
			}
			for _, eps := range []float64{0, 0.1, 0.3} {
				er, ea := hockey(P, Q, eps), hockey(Q, P, eps)
				if gr, ga := p.rem.delta(p.h, eps), p.add.delta(p.h, eps); gr < er*(1-1e-9) || ga < ea*(1-1e-9) {
					t.Errorf("eps0 %v x %v eps %v: PLD (%.6g, %.6g) below the column's exact (%.6g, %.6g)", eps0, x, eps, gr, ga, er, ea)
				}
			}
		}
	}
}

func TestBlanketAllocationBadInput(t *testing.T) {
	for _, tc := range []struct {
		eps0      float64
		levels, T int
	}{{math.NaN(), 0, 10}, {-1, 0, 10}, {0, 0, 10}, {41, 0, 10}, {math.Inf(1), 2, 10}, {0.5, 1, 10}, {0.5, -3, 10}, {0.5, 0, 0}, {0.5, 0, 1 << 31}} {
		if _, err := BlanketAllocation(tc.eps0, tc.levels, tc.T, Options{}); err == nil {
			t.Errorf("%+v: no error", tc)
		}
	}
	for _, tc := range []struct{ d, k, m int }{{5, 6, 10}, {5, 0, 10}, {5, 2, 0}, {1 << 30, 1, 8}} {
		if _, err := SparseShuffleAllocation(0.5, 0, tc.d, tc.k, tc.m, Options{}); err == nil {
			t.Errorf("%+v: no error", tc)
		}
	}
	sub, err := ShuffleClones(0.5, 10, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.ChainEpsilon(1e-6); err == nil {
		t.Error("ChainEpsilon of a substitution PLD: no error")
	}
	p, err := BlanketAllocation(0.5, 0, 100, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []float64{0, 1, math.NaN(), -1} {
		if _, err := p.ChainEpsilon(d); err == nil {
			t.Errorf("ChainEpsilon(%v): no error", d)
		}
	}
}
