package amplify

import (
	"math"
	"sort"

	"github.com/shufflefl/shufflefl/checks"
)

// logChoose returns log(n choose k) for 0 <= k <= n.
func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n) + 1)
	b, _ := math.Lgamma(float64(k) + 1)
	c, _ := math.Lgamma(float64(n-k) + 1)
	return a - b - c
}

// pmfWindow is a probability mass function stored on the window [Lo, Lo+len(P)),
// together with an upper bound on the mass that lies outside the window.
type pmfWindow struct {
	Lo   int
	P    []float64
	Lost float64
}

// pmfFloor is the smallest mass kept inside a window; tails below it are
// bounded geometrically and added to Lost.
const pmfFloor = 1e-40

// log1mexp returns log(1 - e^-x) for x > 0 without cancellation (Mächler's
// switch between log(-expm1(-x)) and log1p(-exp(-x)) at log 2).
func log1mexp(x float64) float64 {
	if x <= math.Ln2 {
		return math.Log(-math.Expm1(-x))
	}
	return math.Log1p(-math.Exp(-x))
}

// binomialWindow returns the Bin(n, p) pmf on the window where it exceeds
// pmfFloor, computed exactly (log-gamma at the mode, ratio recurrences
// outward), with a geometric upper bound on the mass of both tails.
// It computes 1 - p by subtraction; callers that know 1 - p more
// accurately (p close to 1) use binomialWindowPQ.
func binomialWindow(n int, p float64) pmfWindow {
	return binomialWindowPQ(n, p, 1-p)
}

// maxWindowEntries is the largest binomial window (entries of 8 bytes) a
// numerical bound may build: 2^26, 512 MiB.
const maxWindowEntries = 1 << 26

// WindowEntries estimates the number of entries of the Bin(n, p) window
// where the pmf exceeds pmfFloor = 1e-40: by the Chernoff bound the pmf
// falls below about e^{-t^2/(2 v + 2t/3)} at distance t from the mean
// (Bernstein, v = n p q), so the window is within 2 sqrt(2 ln(1e40) v)
// plus 2 ln(1e40) for the skewed tail, plus a few entries. It is an
// estimate for refusing work that cannot fit, not a bound used in any
// statement.
func WindowEntries(n int, p, q float64) float64 {
	v := float64(n) * p * q
	l := math.Log(1 / pmfFloor)
	return 2*math.Sqrt(2*l*v) + 2*l + 3
}

// checkWindow refuses a numerical bound whose Bin(n, p) window would not
// fit in memory, before anything is built; name is the parameter the
// user set (e.g. "n") and shown its value.
func checkWindow(name string, shown, n int, p, q float64) error {
	if w := WindowEntries(n, p, q); w > maxWindowEntries {
		return checks.Invalidf("%s = %d: the numerical bound would hold about %.2g binomial probabilities (%.3g GB); at most %d fit: use a smaller %s or the closed form", name, shown, w, w*8/1e9, maxWindowEntries, name)
	}
	return nil
}

// binomialWindowPQ is binomialWindow with the complement q = 1 - p supplied
// by the caller, so that p close to 1 (e.g. p = e^-eps0 for eps0 = 1e-6,
// q = -expm1(-eps0)) loses no relative precision in q.
func binomialWindowPQ(n int, p, q float64) pmfWindow {
	switch {
	case n == 0 || p == 0:
		return pmfWindow{Lo: 0, P: []float64{1}}
	case q == 0:
		return pmfWindow{Lo: n, P: []float64{1}}
	}
	mode := int(math.Floor(float64(n+1) * p))
	if mode > n {
		mode = n
	}
	lp, lq := math.Log(p), math.Log(q)
	pm := math.Exp(logChoose(n, mode) + float64(mode)*lp + float64(n-mode)*lq)
	odds := p / q
	// downward from the mode
	down := []float64{}
	v := pm
	k := mode
	lostLow := 0.0
	for k > 0 {
		r := float64(k) / (float64(n-k+1) * odds) // pmf(k-1)/pmf(k)
		nv := v * r
		if nv < pmfFloor {
			// ratios pmf(j-1)/pmf(j) decrease as j decreases, so the tail
			// below k is at most v*r/(1-r) when r < 1.
			if r < 1 {
				lostLow = v * r / (1 - r)
			} else {
				lostLow = float64(k) * v
			}
			break
		}
		v = nv
		k--
		down = append(down, v)
	}
	lo := k
	up := []float64{}
	v = pm
	k = mode
	lostHigh := 0.0
	for k < n {
		r := float64(n-k) * odds / float64(k+1) // pmf(k+1)/pmf(k)
		nv := v * r
		if nv < pmfFloor {
			if r < 1 {
				lostHigh = v * r / (1 - r)
			} else {
				lostHigh = float64(n-k) * v
			}
			break
		}
		v = nv
		k++
		up = append(up, v)
	}
	P := make([]float64, 0, len(down)+1+len(up))
	for i := len(down) - 1; i >= 0; i-- {
		P = append(P, down[i])
	}
	P = append(P, pm)
	P = append(P, up...)
	// Inflate by a bound on the rounding error: log-gamma at the mode has
	// an absolute error of a few ulps of its magnitude (about n log n), and
	// every ratio step adds about two ulps. The weights then over-count
	// slightly, which keeps expectations of non-negative functions upper
	// bounds.
	nf := float64(n)
	inflate := 1 + 4e-16*(nf*math.Log(nf+2)+nf+1) + 4e-16*float64(len(P))
	for i := range P {
		P[i] *= inflate
	}
	return pmfWindow{Lo: lo, P: P, Lost: (lostLow + lostHigh) * inflate}
}

// expectNonIncreasing returns an upper bound on E[h(C)] for C distributed as
// w and h a function with values in [0, 1]: the in-window sum plus the lost
// mass (counted with h = 1). Window entries whose total mass is below skip
// are not evaluated and are counted with h = 1 as well.
func expectNonIncreasing(w pmfWindow, h func(c int, weight float64) float64, skip float64) float64 {
	s := 0.0
	lost := w.Lost
	for i, wc := range w.P {
		if wc <= 0 {
			continue
		}
		if wc < skip {
			lost += wc
			continue
		}
		s += wc * h(w.Lo+i, wc)
	}
	return s + lost
}

// searchSmallest returns the smallest x in (0, hi], up to a relative
// tolerance, such that f(x) <= target, assuming f non-increasing and
// f(hi) <= target. The returned point always satisfies f(x) <= target, so a
// delta computed as a guaranteed upper bound yields a guaranteed epsilon.
// It runs the Illinois variant of regula falsi on log f - log target,
// keeping a bracket [lo, hi] with f(lo) > target >= f(hi). Each secant point
// is shifted by 0.4 relTol hi towards the bracket end that moved last (an
// empirical choice: 9-16 evaluations for the clones and EoN bounds at
// relTol = 1e-6); every fifth step bisects, so the bracket always shrinks.
func searchSmallest(f func(float64) float64, target, hi, relTol float64) float64 {
	lt := math.Log(target)
	g := func(x float64) float64 {
		v := f(x)
		if v <= 0 {
			return math.Inf(-1)
		}
		return math.Log(v) - lt
	}
	lo := 0.0
	glo := math.Inf(1)
	ghi := g(hi)
	side := 0
	for i := 0; i < 200 && hi-lo > relTol*hi && hi > 1e-12; i++ {
		m := 0.5 * (lo + hi)
		if i%5 != 4 && !math.IsInf(glo, 0) && !math.IsInf(ghi, 0) && glo != ghi {
			m = hi - ghi*(hi-lo)/(ghi-glo)
			m -= float64(side) * 0.4 * relTol * hi // side -1: hi moved last
			w := hi - lo
			m = math.Min(math.Max(m, lo+1e-6*w), hi-1e-6*w)
		}
		gm := g(m)
		if gm <= 0 {
			hi, ghi = m, gm
			if side == -1 {
				glo /= 2
			}
			side = -1
		} else {
			lo, glo = m, gm
			if side == 1 {
				ghi /= 2
			}
			side = 1
		}
	}
	return hi
}

// sortNonNegative sorts non-negative finite floats ascending with an LSD
// radix sort on their IEEE-754 bit patterns (for non-negative floats the
// bit patterns order like the values). It is several times faster than a
// comparison sort for the 10^6-element budget vectors of EoN.
func sortNonNegative(x []float64) {
	n := len(x)
	if n < 256 {
		sort.Float64s(x)
		return
	}
	keys := make([]uint64, n)
	buf := make([]uint64, n)
	for i, v := range x {
		keys[i] = math.Float64bits(v)
	}
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		count = [256]int{}
		for _, k := range keys {
			count[(k>>shift)&0xff]++
		}
		if count[(keys[0]>>shift)&0xff] == n {
			continue // every key has the same byte here
		}
		pos := 0
		for b := range count {
			c := count[b]
			count[b] = pos
			pos += c
		}
		for _, k := range keys {
			b := (k >> shift) & 0xff
			buf[count[b]] = k
			count[b]++
		}
		keys, buf = buf, keys
	}
	for i, k := range keys {
		x[i] = math.Float64frombits(k)
	}
}
