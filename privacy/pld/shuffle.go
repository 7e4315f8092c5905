package pld

import (
	"fmt"
	"math"
	"runtime"

	"github.com/shufflefl/shufflefl/checks"
)

// binomFloor is the smallest probability kept in the clone-count and
// first-type-count windows; the neglected tails are bounded geometrically
// and go to the +Inf atom.
const binomFloor = 1e-45

// stirlerr returns log(n!) - log(sqrt(2 pi n) (n/e)^n) for n >= 1
// (Loader 2000).
func stirlerr(n float64) float64 {
	if n <= 15 {
		lg, _ := math.Lgamma(n + 1)
		return lg - (n+0.5)*math.Log(n) + n - 0.5*math.Log(2*math.Pi)
	}
	const (
		s0 = 1.0 / 12
		s1 = 1.0 / 360
		s2 = 1.0 / 1260
		s3 = 1.0 / 1680
		s4 = 1.0 / 1188
	)
	nn := n * n
	return (s0 - (s1-(s2-(s3-s4/nn)/nn)/nn)/nn) / n
}

// bd0 returns x log(x/np) + np - x accurately (Loader 2000).
func bd0(x, np float64) float64 {
	if math.Abs(x-np) < 0.1*(x+np) {
		v := (x - np) / (x + np)
		s := (x - np) * v
		ej := 2 * x * v
		v *= v
		for j := 1; j < 1000; j++ {
			ej *= v
			s1 := s + ej/float64(2*j+1)
			if s1 == s {
				return s1
			}
			s = s1
		}
		return s
	}
	return x*math.Log(x/np) + np - x
}

// logDbinom returns log P(Bin(n, p) = k) with q = 1 - p given separately
// (Loader's saddle-point form, relative accuracy near machine precision).
func logDbinom(k, n int, p, q float64) float64 {
	switch {
	case k == 0:
		return float64(n) * math.Log1p(-p)
	case k == n:
		return float64(n) * math.Log(p)
	}
	if p == 0 || q == 0 {
		return math.Inf(-1)
	}
	nf, kf := float64(n), float64(k)
	return stirlerr(nf) - stirlerr(kf) - stirlerr(nf-kf) - bd0(kf, nf*p) - bd0(nf-kf, nf*q) +
		0.5*math.Log(nf/(2*math.Pi*kf*(nf-kf)))
}

// binomWindow returns the Bin(n, p) pmf (q = 1-p) on [lo, lo+len(w)) where
// it is at least binomFloor, computed from the mode outward by the ratio
// recurrence, and an upper bound on the mass outside (geometric tail
// bounds, the ratios being monotone).
func binomWindow(n int, p, q float64) (lo int, w []float64, lost float64) {
	var bb binomBuf
	return bb.window(n, p, q)
}

// binomBuf holds the buffers of binomWindow, reused from one window to the
// next: the clone pair needs a Bin(c, 1/2) window for every clone count c.
type binomBuf struct {
	down, w []float64
}

// window is binomWindow; w aliases bb's buffer and is valid until the next
// call.
func (bb *binomBuf) window(n int, p, q float64) (lo int, w []float64, lost float64) {
	if n == 0 || p == 0 {
		bb.w = append(bb.w[:0], 1)
		return 0, bb.w, 0
	}
	if q == 0 {
		bb.w = append(bb.w[:0], 1)
		return n, bb.w, 0
	}
	mode := int(math.Floor(float64(n+1) * p))
	if mode > n {
		mode = n
	}
	pm := math.Exp(logDbinom(mode, n, p, q))
	odds := p / q
	down := bb.down[:0]
	v, k := pm, mode
	for k > 0 {
		r := float64(k) / (float64(n-k+1) * odds)
		if v*r < binomFloor {
			if r < 1 {
				lost += v * r / (1 - r)
			} else {
				lost += float64(k) * v
			}
			break
		}
		v *= r
		k--
		down = append(down, v)
	}
	lo = k
	w = bb.w[:0]
	for i := len(down) - 1; i >= 0; i-- {
		w = append(w, down[i])
	}
	w = append(w, pm)
	v, k = pm, mode
	for k < n {
		r := float64(n-k) * odds / float64(k+1)
		if v*r < binomFloor {
			if r < 1 {
				lost += v * r / (1 - r)
			} else {
				lost += float64(n-k) * v
			}
			break
		}
		v *= r
		k++
		w = append(w, v)
	}
	bb.down, bb.w = down, w
	return lo, w, lost
}

// cloneLoss returns log((e r + 1)/(r + e)), e = e^eps0, the privacy loss of
// first-type count y given c clones with r = y/(c-y+1), computed
// stably: for r >= 1 as log1p(expm1(eps0) (r-1)/(r+e)), for r < 1 as minus
// the value at 1/r. em1 = expm1(eps0) and e = exp(eps0) are passed in.
func cloneLoss(eps0, em1, e, r float64) float64 {
	if r < 1 {
		if r == 0 {
			return -eps0
		}
		return -cloneLoss(eps0, em1, e, 1/r)
	}
	if math.IsInf(r, 1) {
		return eps0
	}
	return math.Log1p(em1 * (r - 1) / (r + e))
}

// maxCloneAtoms bounds the number of (clone count, first-type count)
// outcomes evaluated.
const maxCloneAtoms = 4e8

// clonesDir builds the PLD of the clone pair given the clone-count window.
// By the symmetry (y1, y2) -> (y2, y1), which swaps P0 and P1, both
// directions have this same distribution.
func clonesDir(h, tail, eps0 float64, cLo int, pc []float64, lost, rhoC float64) (dir, error) {
	b, err := newBuilder(h, -eps0, eps0)
	if err != nil {
		return dir{}, err
	}
	work := 0.0
	for i := range pc {
		work += math.Sqrt(float64(cLo+i)+1)*math.Sqrt(2*math.Log(1/binomFloor)) + 3
	}
	if work > maxCloneAtoms {
		return dir{}, checks.Invalidf("the clone pair has about %.2g outcomes at these parameters (limit %.0g)", work, maxCloneAtoms)
	}
	// alpha = e^eps0/(1+e^eps0), 1-alpha = 1/(1+e^eps0)
	cr := cloneRows{
		cells: b.cells(),
		eps0:  eps0,
		al:    1 / (1 + math.Exp(-eps0)),
		be:    math.Exp(-eps0) / (1 + math.Exp(-eps0)),
		em1:   math.Expm1(eps0),
		ee:    math.Exp(eps0),
		cLo:   cLo,
		pc:    pc,
	}
	inf, maxSteps := cr.run(b, lost, runtime.GOMAXPROCS(0))
	b.inf += inf
	b.rho = rhoC + (64+4*float64(maxSteps))*unitRoundoff
	logm := gridMoments(b.off, b.g, h)
	cinf := b.inf
	d := b.finish(tail)
	d.logm, d.cinf = logm, cinf
	return d, nil
}

// ShuffleClones returns the PLD of the clone reduction of Feldman, McMillan
// and Talwar (FOCS 2021; the 2022 journal version): shuffling the reports
// of n users, each applying any eps0-LDP randomizer, is for the
// substitution relation (one user's data replaced) a post-processing of
// the pair
//
//	P0 = (A + D, C - A + 1 - D),  P1 = (A + 1 - D, C - A + D),
//
// C ~ Bin(n-1, e^-eps0), A ~ Bin(C, 1/2), D ~ Bern(e^eps0/(e^eps0+1)). The
// exact pmf of the pair is evaluated in log space (Loader's saddle-point
// binomial, ratio recurrences), outcomes of probability below 1e-45 in the
// clone-count or first-type-count windows are trimmed with a geometric
// bound on their mass, which goes to +Inf. Both directions coincide by
// symmetry. Range: eps0 in (0, 500] (the grid must cover [-eps0, eps0]
// with at most MaxBins points, so beyond eps0 = 400 use a coarser
// Interval), tested from 1e-6 to 60, and n up to 10^6: the number of
// outcomes evaluated is about 14 sqrt(n) times 29 sqrt(n e^-eps0
// (1 - e^-eps0)) (1.2e8 at eps0 = 1 and n = 10^6, about 3 s on one core;
// milliseconds when eps0 is small or large), evaluated on GOMAXPROCS
// goroutines with the same result whatever their number; above 4e8 an
// error is returned. The grid
// should resolve the losses: with Interval = min(1e-4, eps0/200) the delta
// agrees with the exact clone bound (amplify.ClonesDelta) to within 2%
// (TestShuffleClonesAgainstAmplify); a coarser grid stays rigorous but
// looser.
//
// The relation is substitution: SubsamplePoisson (add/remove) refuses this
// PLD and every composition containing it (Substitution reports it).
func ShuffleClones(eps0 float64, n int, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("shuffle clones PLD: %w", err)
	}
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return nil, fmt.Errorf("shuffle clones PLD: %w", err)
	}
	if eps0 > 500 {
		return nil, fmt.Errorf("shuffle clones PLD: %w", checks.Invalidf("eps0 must be <= 500, got %v", eps0))
	}
	if err := checks.IntAtLeast("n", n, 1); err != nil {
		return nil, fmt.Errorf("shuffle clones PLD: %w", err)
	}
	p := math.Exp(-eps0)
	q := -math.Expm1(-eps0)
	if w := cloneWork(n, p, q); w > maxCloneWork {
		return nil, fmt.Errorf("shuffle clones PLD: %w", checks.Invalidf("n = %d: the clone pair's PLD needs about %.2g binomial terms (at most %.0g, about %.0f minutes here): use a smaller n", n, w, maxCloneWork, maxCloneWork*400e-9/60))
	}
	cLo, pc, lost := binomWindow(n-1, p, q)
	rhoC := (64 + 4*float64(len(pc))) * unitRoundoff
	d, err := clonesDir(o.Interval, o.TailMass, eps0, cLo, pc, lost, rhoC)
	if err != nil {
		return nil, fmt.Errorf("shuffle clones PLD: %w", err)
	}
	out := symmetric(o.Interval, o, d)
	out.subst = true
	return out, nil
}

// maxCloneWork bounds the binomial terms one clone pair's PLD may
// evaluate (cloneWork): 10^9, about seven minutes at the 400 ns a term
// measured at n = 10^6.
const maxCloneWork = 1e9

// cloneWork estimates the binomial terms ShuffleClones evaluates: one
// Bin(c, 1/2) window per clone count c of the Bin(n-1, p) window, each
// about 2 sqrt(2 ln(1e45) c/4) + 2 ln(1e45) wide at c near (n-1) p.
func cloneWork(n int, p, q float64) float64 {
	l := math.Log(1e45)
	v := float64(n-1) * p * q
	rows := 2*math.Sqrt(2*l*v) + 2*l + 3
	c := float64(n-1)*p + math.Sqrt(2*l*v)
	return rows * (2*math.Sqrt(2*l*c/4) + 2*l + 3)
}

// ShuffleClonesHetero is ShuffleClones with the clone count C the
// Poisson-binomial sum of independent Bernoulli(cloneProbs[i]) over the
// other n-1 users (APES's Echo-of-Neighbors generalisation, e.g. the
// probabilities of amplify.EoNCloneProbs without the differing user) and
// the differing user randomizing with local eps0. The Poisson-binomial pmf
// is computed by the exact recursion, windows trimmed below 1e-45 into the
// +Inf atom. Probabilities must be in [0, 1].
func ShuffleClonesHetero(cloneProbs []float64, eps0 float64, o Options) (*PLD, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("heterogeneous shuffle clones PLD: %w", err)
	}
	if err := checks.Epsilon("eps0", eps0); err != nil {
		return nil, fmt.Errorf("heterogeneous shuffle clones PLD: %w", err)
	}
	if eps0 > 500 {
		return nil, fmt.Errorf("heterogeneous shuffle clones PLD: %w", checks.Invalidf("eps0 must be <= 500, got %v", eps0))
	}
	for i, v := range cloneProbs {
		if err := checks.Probability(fmt.Sprintf("cloneProbs[%d]", i), v); err != nil {
			return nil, fmt.Errorf("heterogeneous shuffle clones PLD: %w", err)
		}
	}
	cLo, pc, lost := poissonBinomial(cloneProbs)
	rhoC := (64 + 4*float64(len(cloneProbs))) * unitRoundoff
	d, err := clonesDir(o.Interval, o.TailMass, eps0, cLo, pc, lost, rhoC)
	if err != nil {
		return nil, fmt.Errorf("heterogeneous shuffle clones PLD: %w", err)
	}
	out := symmetric(o.Interval, o, d)
	out.subst = true
	return out, nil
}

// poissonBinomial returns the pmf of a sum of independent Bernoulli(ps[i])
// on a window [lo, lo+len(w)) and the (exactly tracked) mass trimmed from
// the edges, where entries below binomFloor are dropped as the recursion
// proceeds. Every entry is a sum of products of non-negative numbers, so
// its relative rounding error is at most 2 len(ps) u.
func poissonBinomial(ps []float64) (lo int, w []float64, lost float64) {
	w = []float64{1}
	for _, p := range ps {
		nw := make([]float64, len(w)+1)
		for k, v := range w {
			nw[k] += v * (1 - p)
			nw[k+1] += v * p
		}
		a, b := 0, len(nw)-1
		for a < b && nw[a] < binomFloor {
			lost += nw[a]
			a++
		}
		for b > a && nw[b] < binomFloor {
			lost += nw[b]
			b--
		}
		lo += a
		w = nw[a : b+1]
	}
	return lo, w, lost * (1 + 1e-9)
}
