package pld

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// maxHeteroGroups bounds the number of distinct clone probabilities
// ShuffleClonesHeteroCounts accepts, and maxHeteroWork the work of its
// clone-count convolution (sum over the groups of the window lengths
// multiplied).
const (
	maxHeteroGroups = 1 << 16
	maxHeteroWork   = 4e8
)

// ShuffleClonesHeteroCounts is ShuffleClonesHetero for clone probabilities
// given as a histogram: counts[g] of the other users reproduce the
// differing user's report with probability probs[g] each. The clone count
// C = sum_g Bin(counts[g], probs[g]) is the same Poisson-binomial law as
// ShuffleClonesHetero's for the expanded list, computed instead as the
// convolution of the groups' binomial windows (Loader's saddle-point pmf at
// the mode and ratio recurrences outward, as for ShuffleClones), which
// costs the product of window lengths rather than n times a window: for
// 10^6 users in 256 groups, milliseconds.
//
// Error terms (all pessimistic, see docs/PLD.md):
//
//   - trimmed mass. Each group's window drops at most lost_g (binomWindow's
//     geometric tail bound) and the true mass the product of windows keeps
//     is prod_g (1 - l_g) >= 1 - sum_g l_g, so at most sum_g lost_g of the
//     true law of C is missing; the convolution's own entries below 1e-45
//     are trimmed as it proceeds and their computed mass added. All of it,
//     inflated by (1 + 2 rho + 1e-9) for its rounding, goes to the +Inf
//     atom (clonesDir), which counts fully in delta;
//   - relative error of each kept entry. A window entry has relative error
//     at most (64 + 4 len_g) u (as in ShuffleClones); an entry of the
//     convolution is a sum of products of non-negative factors, so its
//     relative error is at most the sum of its factors' bounds plus
//     (len + 2) u per convolution step (one product and a sum of at most
//     len non-negative terms; Higham, Lemma 3.1 and Section 4.2); the sum
//     over all steps, doubled for the second-order terms (every bound here
//     is far below 1e-6), is the rho handed to clonesDir.
//
// Each probability p is used as p' <= p with p' + (1 - p') = 1 exactly (see
// cloneCountHist), which only lowers the clone count. probs must be in
// [0, 1], counts in [0, 2^40] with at least one user in all, and eps0 in
// (0, 500]. The relation is substitution, as for ShuffleClones.
func ShuffleClonesHeteroCounts(probs []float64, counts []int, eps0 float64, o Options) (*PLD, error) {
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
	cLo, pc, lost, rhoC, err := cloneCountHist(probs, counts)
	if err != nil {
		return nil, fmt.Errorf("heterogeneous shuffle clones PLD: %w", err)
	}
	d, err := clonesDir(o.Interval, o.TailMass, eps0, cLo, pc, lost, rhoC)
	if err != nil {
		return nil, fmt.Errorf("heterogeneous shuffle clones PLD: %w", err)
	}
	out := symmetric(o.Interval, o, d)
	out.subst = true
	return out, nil
}

// cloneCountHist returns the pmf of sum_g Bin(counts[g], probs[g]) on a
// window [lo, lo+len(w)), an upper bound on the mass missing from it (the
// trimmed tails, inflated for rounding) and the relative error bound of
// its entries (see ShuffleClonesHeteroCounts).
func cloneCountHist(probs []float64, counts []int) (lo int, w []float64, lost, rho float64, err error) {
	if len(probs) != len(counts) {
		return 0, nil, 0, 0, checks.Invalidf("%d clone probabilities for %d counts", len(probs), len(counts))
	}
	if len(probs) > maxHeteroGroups {
		return 0, nil, 0, 0, checks.Invalidf("%d groups of clone probabilities, at most %d", len(probs), maxHeteroGroups)
	}
	total := 0
	for g, p := range probs {
		if err := checks.Probability(fmt.Sprintf("clone probability of group %d", g), p); err != nil {
			return 0, nil, 0, 0, err
		}
		if counts[g] < 0 || counts[g] > 1<<40 {
			return 0, nil, 0, 0, checks.Invalidf("group %d has %d users (want 0 to 2^40)", g, counts[g])
		}
		total += counts[g]
	}
	if total < 1 {
		return 0, nil, 0, 0, checks.Invalidf("the clone count needs at least one other user, got %d", total)
	}
	// Estimated window lengths (a binomial window below 1e-45 spans about
	// 29 standard deviations): refuse before allocating anything.
	est, acc := 0.0, 1.0
	for g, p := range probs {
		l := 30*math.Sqrt(float64(counts[g])*p*(1-p)) + 3
		est += acc * l
		acc += l
	}
	if est > maxHeteroWork {
		return 0, nil, 0, 0, checks.Invalidf("the clone-count convolution needs about %.2g operations at these parameters (limit %.0g)", est, float64(maxHeteroWork))
	}
	w = []float64{1}
	work := 0.0
	var bb binomBuf
	for g, p := range probs {
		n := counts[g]
		if n == 0 || p == 0 {
			continue
		}
		// The window is computed for p' = 1 - q with q = 1 - p rounded up,
		// so that p' + q = 1 exactly and p' <= p (one step of Nextafter
		// suffices: fl(1 - p) is within half an ulp of 1 - p). Fewer
		// clones is pessimistic: the pair with a stochastically smaller
		// clone count is post-processed into the other by adding clones.
		q := 1 - p
		if 1-q > p {
			q = math.Nextafter(q, 2)
		}
		p = 1 - q
		var glo int
		var gw []float64
		var glost float64
		if q == 0 {
			glo, gw = n, []float64{1}
		} else {
			glo, gw, glost = bb.window(n, p, q)
		}
		rho += float64(64+4*len(gw)) * unitRoundoff
		lost += glost
		work += float64(len(w)) * float64(len(gw))
		if work > maxHeteroWork {
			return 0, nil, 0, 0, checks.Invalidf("the clone-count convolution needs more than %.0g operations at these parameters", float64(maxHeteroWork))
		}
		nw := make([]float64, len(w)+len(gw)-1)
		for i, a := range w {
			if a == 0 {
				continue
			}
			for j, b := range gw {
				nw[i+j] += a * b
			}
		}
		rho += float64(min(len(w), len(gw))+2) * unitRoundoff
		a, b := 0, len(nw)-1
		for a < b && nw[a] < binomFloor {
			lost += nw[a]
			a++
		}
		for b > a && nw[b] < binomFloor {
			lost += nw[b]
			b--
		}
		lo += glo + a
		w = nw[a : b+1]
	}
	rho *= 2
	return lo, w, lost * (1 + 2*rho + 1e-9), rho, nil
}
