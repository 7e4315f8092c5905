package amplify

import (
	"fmt"
	"math"

	"github.com/shufflefl/shufflefl/checks"
)

// SSDoubleAllocPlan is what the random-allocation statement of FLAME's
// SS-Double (pld.SparseShuffleAllocation) needs about one round: m, a
// number of blanket values that every coordinate holds (the differing
// user's slot included) except with probability Fail, and Fail itself.
type SSDoubleAllocPlan struct {
	// Slots is m = n_p - L.
	Slots int
	// LO is L, the most non-blanket reports any coordinate may hold.
	LO int
	// Fail bounds the probability that some coordinate overflows n_p or
	// holds more than L non-blanket reports.
	Fail float64
	// Gamma is the blanket weight of the randomizer.
	Gamma float64
}

// SSDoubleAlloc plans the random-allocation statement of SS-Double for n
// users, each reporting k of d coordinates (beta = k/d) at eps0 = epsL/k,
// every coordinate padded to n_p values with blanket draws, for the
// Laplace randomizer (levels 0, gamma = e^{-eps0/2}) or R_{gamma,b}
// (levels = b >= 2, gamma = (b+1)/(e^eps0 + b)); failBudget is the
// probability the choice of L may add (e.g. 1e-4 of the round's delta).
//
// Derivation (the others' randomness Z has the same law whatever the
// differing user holds, and is independent of its choices). Every other
// user's report in coordinate j is a blanket draw with probability gamma
// and an LO value otherwise (R(x) = gamma omega + (1-gamma) LO_x), and it
// reports j with probability beta, independently of the other users: the
// number of reports in j among the n-1 others is Bin(n-1, beta) and the
// number of non-blanket ones Bin(n-1, beta (1-gamma)). Let E be the event
// that every coordinate has at most n_p - 1 reports of the others and at
// most L non-blanket ones. On E the shuffler never overflows (with or
// without the differing user) and each coordinate holds at least
// n_p - L blanket values counting the user's slot, so the round is
// dominated by pld.SparseShuffleAllocation(eps0, levels, d, k, n_p - L).
// Off E nothing is claimed: P(E^c) <= d [P(Bin(n-1, beta) >= n_p) +
// P(Bin(n-1, beta (1-gamma)) >= L+1)] (union bound; each tail by the
// Chernoff bound exp(-N KL(a/N || p)), a > N p), and with q >= P(E^c) the
// pair "loss +Inf with probability q, else the allocation pair", i.e. the
// composition with pld.FromPair([q, 1-q, 0], [0, 1-q, q]), dominates the
// round: for every alpha >= 0, H_alpha(mixture over Z) <= P(E) H_alpha(
// allocation) + P(E^c) <= q + (1-q) H_alpha(allocation) (joint convexity,
// H_alpha <= 1), which is the composed pair's H_alpha (Blackwell's theorem
// for dichotomies). L is the smallest with d P(Bin(n-1, beta(1-gamma)) >=
// L+1) <= failBudget.
func SSDoubleAlloc(epsL float64, d, k, n, np, levels int, failBudget float64) (SSDoubleAllocPlan, error) {
	if err := checks.Epsilon("eps_l", epsL); err != nil {
		return SSDoubleAllocPlan{}, fmt.Errorf("SS-Double allocation: %w", err)
	}
	if err := checks.IntAtLeast("k", k, 1); err != nil {
		return SSDoubleAllocPlan{}, fmt.Errorf("SS-Double allocation: %w", err)
	}
	if d < k {
		return SSDoubleAllocPlan{}, fmt.Errorf("SS-Double allocation: %w", checks.Invalidf("k = %d exceeds d = %d", k, d))
	}
	if err := checks.IntAtLeast("n", n, 1); err != nil {
		return SSDoubleAllocPlan{}, fmt.Errorf("SS-Double allocation: %w", err)
	}
	if err := checks.IntAtLeast("np", np, 1); err != nil {
		return SSDoubleAllocPlan{}, fmt.Errorf("SS-Double allocation: %w", err)
	}
	if levels != 0 {
		if err := checks.IntInRange("levels", levels, 2, 1<<20); err != nil {
			return SSDoubleAllocPlan{}, fmt.Errorf("SS-Double allocation: %w (0 selects Laplace)", err)
		}
	}
	if err := checks.Delta("failure budget", failBudget); err != nil {
		return SSDoubleAllocPlan{}, fmt.Errorf("SS-Double allocation: %w", err)
	}
	eps0 := epsL / float64(k)
	gamma := math.Exp(-eps0 / 2)
	if levels != 0 {
		gamma = float64(levels+1) / (math.Exp(eps0) + float64(levels))
	}
	beta := float64(k) / float64(d)
	df := float64(d)
	pad := df * binomUpperChernoff(n-1, beta, np)
	plo := beta * (1 - gamma)
	L := 0
	for ; L < np; L++ {
		if df*binomUpperChernoff(n-1, plo, L+1) <= failBudget {
			break
		}
	}
	if L >= np {
		return SSDoubleAllocPlan{}, fmt.Errorf("SS-Double allocation: %w", checks.Invalidf("n_p = %d is too small: no bound L < n_p on the non-blanket reports of a coordinate keeps the failure probability under %v", np, failBudget))
	}
	fail := math.Min(1, (pad+df*binomUpperChernoff(n-1, plo, L+1))*(1+1e-9))
	return SSDoubleAllocPlan{Slots: np - L, LO: L, Fail: fail, Gamma: gamma}, nil
}

// binomUpperChernoff bounds P(Bin(N, p) >= a) by exp(-N KL(a/N || p)) for
// a > N p (1 otherwise, 0 for a > N), with the exponent rounded down.
func binomUpperChernoff(N int, p float64, a int) float64 {
	if a > N {
		return 0
	}
	nf, af := float64(N), float64(a)
	if a <= 0 || af <= nf*p || p <= 0 {
		if p <= 0 && a > 0 {
			return 0
		}
		return 1
	}
	x := af / nf
	kl := x * math.Log(x/p)
	if x < 1 {
		kl += (1 - x) * (math.Log1p(-x) - math.Log1p(-p))
	} else {
		kl = -math.Log(p)
	}
	if !(kl > 0) {
		return 1
	}
	return math.Min(1, math.Exp(-nf*kl*(1-1e-12))*(1+1e-12))
}
