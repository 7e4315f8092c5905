package account

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/pld"
)

// KindShuffleHetero is the Component kind of one shuffle of LDP reports
// with heterogeneous budgets (APES's Echo of Neighbors): the differing
// user's report is Eps0-LDP and the i-th of the other Reporters-1 users
// reproduces ("echoes") it with probability p_i, given compactly by
// Component.Clones. Its dominating pair is the clone pair with a
// Poisson-binomial clone count (pld.ShuffleClonesHeteroCounts).
//
// Why that pair dominates the shuffled reports (substitution relation; one
// dimension of one round; u the differing user, inputs x and x'):
//
//  1. Decomposition of u's randomizer. If R_u is eps0-LDP, with P = R_u(x)
//     and P' = R_u(x') (densities), Q0 = (e^eps0 P - P')/(e^eps0 - 1) and
//     Q1 = (e^eps0 P' - P)/(e^eps0 - 1) are non-negative (e^-eps0 <= P/P'
//     <= e^eps0) and sum to one each, P = a Q0 + (1-a) Q1 and
//     P' = (1-a) Q0 + a Q1 with a = e^eps0/(1 + e^eps0), and
//     Q0 + Q1 = P + P' (direct substitution; this is the first step of
//     Feldman, McMillan and Talwar's clone reduction, FOCS 2021, Section 3).
//     A randomizer that is eps_u-LDP with eps_u <= eps0 is eps0-LDP, so
//     eps0 may be any bound on u's budget (the largest one).
//  2. Echoes of the others. If R_i(x_i) >= p_i (P + P')/2 pointwise for
//     every input x_i of user i, then R_i(x_i) = p_i (Q0 + Q1)/2 +
//     (1 - p_i) L_i with L_i = (R_i(x_i) - p_i (P + P')/2)/(1 - p_i) a
//     distribution that does not depend on u's input. For APES's
//     Clip-Laplace randomizers R_i(x_i) >= p_iu R_u(y) for every input y,
//     hence the condition, with p_iu = amplify.ClipLaplaceExactEchoProb(
//     eps_i, eps_u) (the exact infimum of the density ratio, proved there;
//     at least APES Lemma 6's amplify.ClipLaplaceEchoProb); any smaller p_i
//     satisfies it too (step 5).
//  3. The reduction. Draw every mixture component first: user i is a clone
//     with probability p_i (independently), C = the number of clones, and
//     each clone draws Q0 or Q1 with probability 1/2; u draws Q0 with
//     probability a under x and 1 - a under x'. The shuffled multiset is
//     obtained from (N0, N1), the numbers of Q0 and Q1 draws, by a
//     randomized map that does not depend on u's input: choose the set of
//     clones from its law given its size N0 + N1 - 1, draw the L_i of the
//     others, N0 values from Q0 and N1 from Q1, and forget the order. So the
//     shuffle is a post-processing of the pair (N0, N1) = (A + D, C - A +
//     1 - D) against (A + 1 - D, C - A + D), A ~ Bin(C, 1/2),
//     D ~ Bern(a), C Poisson-binomial(p_i): pld.ShuffleClonesHetero's pair.
//  4. Composition. The d coordinates are randomized and shuffled
//     independently (per-coordinate permutations; APES's list of epsilons
//     is permuted independently of the columns and, the budgets being
//     public, its multiset is known anyway), so a round's view is a
//     product of d such mechanisms and the product of their pairs
//     dominates it; rounds compose adaptively, for which the product of
//     dominating pairs dominates too (docs/PLD.md). The run's accountant
//     composes Count applications of the pair.
//  5. Quantisation (HeteroClones). Each p_i is replaced by a value
//     q_i <= p_i on a grid of 2^-8 relative precision in min(p, 1 - p);
//     step 2 holds for q_i since q_i (P + P')/2 <= p_i (P + P')/2, so the
//     pair with the q_i dominates as well. Users with equal q_i form one
//     group of the histogram: the ledger holds at most a few hundred
//     (probability, count) pairs per release however many reporters there
//     are, and d identical dimensions are one Component with Count d.
//
// Which differing user. With public budgets (the standard definition) the
// statement must hold for every u: protocol/apes.go uses the pair of
// amplify.EoNClonePair(eps, false) (amplify's eonExactOthers, which proves
// that it covers every u: eps0 = eps* the largest budget, and the exact echo
// probabilities against eps* of every user but one of smallest budget;
// u's own clone count is stochastically larger, and the pair with more
// clones is a post-processing of the pair with fewer: given C' = N0 + N1 -
// 1, draw the extra clones from the coupling's law of C - C' and add each
// to N0 or N1 with probability 1/2). Under APES's hidden-budget assumption
// (option hidden-budget=1, when the round's bound is the hidden-budget one)
// the clone probabilities are Lemma 5's averages instead
// (amplify.EoNClonePair(eps, true)), and the round's bound says so.
const KindShuffleHetero = "shuffle-hetero"

// heteroQuantBits is the relative precision 2^-heteroQuantBits of the
// quantised clone probabilities (HeteroClones).
const heteroQuantBits = 8

// quantCloneProb returns a value q <= p close to p: p rounded down to
// heteroQuantBits significant bits when p <= 1/2, and 1 minus (1 - p)
// rounded up to heteroQuantBits significant bits when p > 1/2 (1 - p is
// exact there, Sterbenz); should the last subtraction round above p, p
// itself is kept. Every result is checked to be <= p.
func quantCloneProb(p float64) float64 {
	switch {
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	case p <= 0.5:
		return roundMantissa(p, false)
	}
	q := 1 - roundMantissa(1-p, true)
	if q > p {
		q = p
	}
	return q
}

// roundMantissa rounds x > 0 to heteroQuantBits significant bits, up or
// down; both steps (Frexp, the scaled floor or ceiling, Ldexp) are exact.
func roundMantissa(x float64, up bool) float64 {
	f, e := math.Frexp(x) // x = f 2^e, f in [1/2, 1)
	s := math.Ldexp(f, heteroQuantBits)
	if up {
		s = math.Ceil(s)
	} else {
		s = math.Floor(s)
	}
	return math.Ldexp(s, e-heteroQuantBits)
}

// HeteroClones returns the canonical text form of the quantised histogram
// of clone probabilities probs (one per user other than the differing one):
// every p is replaced by quantCloneProb(p) <= p (a pessimistic change, see
// KindShuffleHetero, step 5) and equal values are counted together, as
// "p*count" items in increasing p separated by commas, p in Go's shortest
// round-trip form. Probabilities must be in [0, 1], and at least one given.
func HeteroClones(probs []float64) (string, error) {
	if len(probs) == 0 {
		return "", checks.Invalidf("heterogeneous clones: no other user")
	}
	qs := make([]float64, len(probs))
	for i, p := range probs {
		if err := checks.Probability(fmt.Sprintf("clone probability %d", i), p); err != nil {
			return "", fmt.Errorf("heterogeneous clones: %w", err)
		}
		qs[i] = quantCloneProb(p)
	}
	slices.Sort(qs)
	var b strings.Builder
	for i := 0; i < len(qs); {
		j := i
		for j < len(qs) && qs[j] == qs[i] {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(qs[i], 'g', -1, 64))
		b.WriteByte('*')
		b.WriteString(strconv.Itoa(j - i))
		i = j
	}
	return b.String(), nil
}

// parseHeteroClones reads HeteroClones's form back: the distinct
// probabilities (strictly increasing, in [0, 1]) and their counts (>= 1).
func parseHeteroClones(s string) (probs []float64, counts []int, err error) {
	if s == "" {
		return nil, nil, checks.Invalidf("empty clone histogram")
	}
	items := strings.Split(s, ",")
	if len(items) > 1<<16 {
		return nil, nil, checks.Invalidf("clone histogram of %d groups, at most %d", len(items), 1<<16)
	}
	for i, it := range items {
		ps, cs, ok := strings.Cut(it, "*")
		if !ok {
			return nil, nil, checks.Invalidf("clone histogram item %d %q is not p*count", i, it)
		}
		p, err := strconv.ParseFloat(ps, 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return nil, nil, checks.Invalidf("clone histogram item %d: probability %q is not in [0, 1]", i, ps)
		}
		c, err := strconv.Atoi(cs)
		if err != nil || c < 1 || c > 1<<40 {
			return nil, nil, checks.Invalidf("clone histogram item %d: count %q is not an integer in [1, 2^40]", i, cs)
		}
		if i > 0 && !(p > probs[i-1]) {
			return nil, nil, checks.Invalidf("clone histogram item %d: probability %v does not increase", i, p)
		}
		probs, counts = append(probs, p), append(counts, c)
	}
	return probs, counts, nil
}

// validateHetero checks a KindShuffleHetero component.
func validateHetero(c Component) string {
	if !(c.Eps0 > 0) || c.Eps0 > 500 || c.Reporters < 2 {
		return fmt.Sprintf("heterogeneous shuffle component needs eps0 in (0, 500] and reporters >= 2, got %v and %d", c.Eps0, c.Reporters)
	}
	_, counts, err := parseHeteroClones(c.Clones)
	if err != nil {
		return "heterogeneous shuffle component: " + err.Error()
	}
	n := 0
	for _, k := range counts {
		n += k
	}
	if n != c.Reporters-1 {
		return fmt.Sprintf("heterogeneous shuffle component: the clone histogram counts %d users, want reporters - 1 = %d", n, c.Reporters-1)
	}
	return ""
}

func init() {
	registerKind(KindShuffleHetero, componentKind{
		lossBound: func(c Component) float64 { return c.Eps0 },
		pair: func(c Component, o pld.Options) (*pld.PLD, error) {
			return heteroPairs.get(c.Clones, c.Eps0, o)
		},
		validate: validateHetero,
	})
}

// heteroKey identifies a heterogeneous clone pair.
type heteroKey struct {
	clones string
	eps0   float64
	o      pld.Options
}

// heteroMemo keeps the heterogeneous clone pairs last built (as pairMemo
// does for pld.ShuffleClones): every round of a run with the same
// participants composes the same pair, and each accounting builds it on a
// probe grid and then on the composition's grid.
type heteroMemo struct {
	mu   sync.Mutex
	keys []heteroKey
	vals []*pld.PLD
}

// heteroPairs is the package's memo of heterogeneous clone pairs.
var heteroPairs heteroMemo

// get returns the pair of clone histogram clones at eps0 on grid o.
func (m *heteroMemo) get(clones string, eps0 float64, o pld.Options) (*pld.PLD, error) {
	k := heteroKey{clones, eps0, o}
	m.mu.Lock()
	for i, ki := range m.keys {
		if ki == k {
			p := m.vals[i]
			m.keys = append(append(m.keys[:i:i], m.keys[i+1:]...), k)
			m.vals = append(append(m.vals[:i:i], m.vals[i+1:]...), p)
			m.mu.Unlock()
			return p, nil
		}
	}
	m.mu.Unlock()
	probs, counts, err := parseHeteroClones(clones)
	if err != nil {
		return nil, err
	}
	p, err := pld.ShuffleClonesHeteroCounts(probs, counts, eps0, o)
	if err != nil {
		return nil, err
	}
	if rb, ab := p.Bins(); max(rb, ab) > clonePairMemoBins {
		return p, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.keys) == clonePairMemoSize {
		m.keys, m.vals = m.keys[1:], m.vals[1:]
	}
	m.keys, m.vals = append(m.keys, k), append(m.vals, p)
	return p, nil
}
