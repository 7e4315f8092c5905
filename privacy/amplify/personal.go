package amplify

import (
	"fmt"
	"math"
	"sort"

	"github.com/shufflefl/shufflefl/checks"
)

// validateBudgets checks a personalized budget vector: at least two users,
// every eps_i finite and > 0 (or >= 0 when zeroOK).
func validateBudgets(eps []float64, zeroOK bool) error {
	if len(eps) < 2 {
		return checks.Invalidf("need at least n >= 2 local budgets, got %d", len(eps))
	}
	for i, e := range eps {
		if math.IsNaN(e) || math.IsInf(e, 0) || e < 0 || (!zeroOK && e == 0) {
			name := fmt.Sprintf("eps[%d]", i)
			if zeroOK {
				return checks.EpsilonOrZero(name, e)
			}
			return checks.Epsilon(name, e)
		}
	}
	return nil
}

func maxOf(x []float64) float64 {
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

// UniS returns APES's baseline bound (APES Eq. 2): the clones closed form
// (FMT Theorem 3.1, ClonesTheorem) evaluated at max_i eps_i for all n users.
// It errors outside the closed form's validity region.
func UniS(eps []float64, delta float64) (Bound, error) {
	if err := validateBudgets(eps, false); err != nil {
		return Bound{}, fmt.Errorf("UniS (APES Eq. 2): %w", err)
	}
	e, err := ClonesTheorem(maxOf(eps), len(eps), delta)
	if err != nil {
		return Bound{}, fmt.Errorf("UniS (APES Eq. 2): %w", err)
	}
	return Bound{Name: "unis", Epsilon: e, Delta: delta, Note: "APES Eq. (2): FMT Theorem 3.1 at max eps_i"}, nil
}

// UniSNumerical is the UniS baseline with FMT's numerical bound
// (ClonesNumerical) at max_i eps_i instead of the closed form; APES Table 3's
// UniS figure (0.069) is this quantity.
func UniSNumerical(eps []float64, delta float64) (Bound, error) {
	if err := validateBudgets(eps, false); err != nil {
		return Bound{}, fmt.Errorf("UniS numerical: %w", err)
	}
	e, err := ClonesNumerical(maxOf(eps), len(eps), delta)
	if err != nil {
		return Bound{}, fmt.Errorf("UniS numerical: %w", err)
	}
	return Bound{Name: "unis-numerical", Epsilon: e, Delta: delta, Note: "FMT numerical bound at max eps_i"}, nil
}

// ClipLaplaceEchoProb returns p_ij of APES Lemma 6: the probability with
// which a user with budget epsI reproduces ("echoes") the output of the
// differing user randomizing with budget epsJ under the Clip-Laplace
// mechanism with A = C, p_ij = exp(-D_N(mu_j || mu_i)) from the neighbour
// divergence bound of APES Lemma 4:
//
//	p_ij = (eps_i/eps_j) (1-e^-eps_j)/(1-e^-eps_i) e^-max(eps_i, eps_j).
func ClipLaplaceEchoProb(epsI, epsJ float64) float64 {
	return echoF(epsI) / echoF(epsJ) * math.Exp(-math.Max(epsI, epsJ))
}

// echoF is eps/(1-e^-eps).
func echoF(e float64) float64 { return e / -math.Expm1(-e) }

// EoNCloneProbs returns, for every user i, q_i = (1/n) sum_j p_ij (APES
// Lemma 5, Eq. 4): the probability that user i's report is a clone of the
// differing user when the latter's budget is any of the n shuffled budgets
// with equal probability. It runs in O(n log n) using prefix sums over the
// sorted budgets. Budgets must be > 0.
func EoNCloneProbs(eps []float64) ([]float64, error) {
	if err := validateBudgets(eps, false); err != nil {
		return nil, fmt.Errorf("EoN clone probabilities: %w", err)
	}
	n := len(eps)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return eps[idx[a]] < eps[idx[b]] })
	sorted := make([]float64, n)
	for k, i := range idx {
		sorted[k] = eps[i]
	}
	qs := cloneProbsSorted(sorted)
	q := make([]float64, n)
	for k, i := range idx {
		q[i] = qs[k]
	}
	return q, nil
}

// cloneProbsSorted returns q_k = (1/n) sum_j p_kj for budgets sorted
// ascending. For ties the two branches of max(eps_i, eps_j) agree, so the
// position within a run of equal budgets does not matter.
func cloneProbsSorted(sorted []float64) []float64 {
	n := len(sorted)
	// suffix[k] = sum_{l>k} e^-e_l/F(e_l)
	suffix := make([]float64, n)
	s := 0.0
	for k := n - 1; k >= 0; k-- {
		suffix[k] = s
		e := sorted[k]
		s += math.Exp(-e) / echoF(e)
	}
	q := make([]float64, n)
	prefix := 0.0 // sum_{l<=k} 1/F(e_l)
	for k, e := range sorted {
		f := echoF(e)
		prefix += 1 / f
		v := f * (math.Exp(-e)*prefix + suffix[k]) / float64(n)
		if v > 1 {
			v = 1
		}
		q[k] = v
	}
	return q
}

// eonOthers returns the clone probabilities of the n-1 users other than the
// differing one. The differing user is taken to be the one with the largest
// q_i (the worst case for the others' sum) and its randomizer to use
// eps* = max_i eps_i (APES Theorem 4's worst case).
func eonOthers(eps []float64) (others []float64, epsStar float64, err error) {
	if err := validateBudgets(eps, false); err != nil {
		return nil, 0, err
	}
	sorted := append([]float64(nil), eps...)
	sortNonNegative(sorted)
	q := cloneProbsSorted(sorted)
	im := 0
	for i, v := range q {
		if v > q[im] {
			im = i
		}
	}
	others = append(q[:im:im], q[im+1:]...)
	return others, sorted[len(sorted)-1], nil
}

// eonClosed evaluates Theorem 4 from the others' clone probabilities.
func eonClosed(others []float64, es, deltaS float64) (Bound, error) {
	S := 0.0
	for _, v := range others {
		S += v
	}
	if need := 16 * math.Log(4/deltaS); S < need {
		return Bound{}, fmt.Errorf("EoN closed form (APES Theorem 4): %w",
			checks.Invalidf("the bound needs sum_{i>=2} sum_j p_ij/n >= 16 ln(4/delta_s) = %.6g, got %.6g", need, S))
	}
	th := math.Tanh(es / 2)
	e := math.Log1p(th * (8*math.Sqrt(math.Log(4/deltaS)/S) + 8/S))
	// Shuffling never hurts: the output is eps*-DP by post-processing.
	e = math.Min(e, es)
	return Bound{Name: "eon", Epsilon: e, Delta: th * deltaS, Note: "APES Theorem 4 (closed form), under APES's hidden-budget assumption",
		Assumption: HiddenBudgetAssumption}, nil
}

// EoNClosedForm returns APES Theorem 4: with S = sum_{i>=2} sum_j p_ij/n
// (EoNCloneProbs summed over the n-1 non-differing users) and
// eps* = max eps_i,
//
//	eps^c = ln(1 + (e^eps*-1)/(e^eps*+1) (8 sqrt(ln(4/delta_s)/S) + 8/S)),
//	delta^c = (e^eps*-1)/(e^eps*+1) delta_s,
//
// valid when S >= 16 ln(4/delta_s) (otherwise an error). Lemma 6 prints the
// last term as "+ S" instead of "+ 8/S"; Theorem 4's form, which matches
// FMT Theorem 3.1 with n e^-eps0 replaced by S, is used. The result is
// capped at eps* and carries HiddenBudgetAssumption.
func EoNClosedForm(eps []float64, deltaS float64) (Bound, error) {
	if err := checks.Delta("delta_s", deltaS); err != nil {
		return Bound{}, fmt.Errorf("EoN closed form (APES Theorem 4): %w", err)
	}
	others, es, err := eonOthers(eps)
	if err != nil {
		return Bound{}, fmt.Errorf("EoN closed form (APES Theorem 4): %w", err)
	}
	return eonClosed(others, es, deltaS)
}

// EoNDelta returns a guaranteed upper bound on delta(eps) of EoN's
// numerical analysis: the clone count C is the exact Poisson-binomial sum of
// Bernoulli(q_i) over the n-1 non-differing users (one report each), and
// delta = E[D_{e^eps}(P_C || Q_C)] with the differing user at eps* = max eps_i,
// summed over every c. Like EoNNumerical it needs HiddenBudgetAssumption
// (EoNWorstCaseDelta does not).
func EoNDelta(eps []float64, epsCentral float64) (float64, error) {
	return eonDeltaWith("EoN numerical delta", eonOthers, eps, epsCentral)
}

// eonDeltaWith is the delta of EoN's clone analysis with the clone
// probabilities and the differing user's budget given by others.
func eonDeltaWith(what string, others func([]float64) ([]float64, float64, error), eps []float64, epsCentral float64) (float64, error) {
	if err := checks.EpsilonOrZero("central eps", epsCentral); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	q, es, err := others(eps)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	w := poissonBinomial(q, pbFloorFor(1e-12, len(q)))
	if err := checkCloneWork(w); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return clonesDeltaWindow(w, epsCentral, es, 1e-12), nil
}

// eonSearchWith is the smallest epsilon (relative precision 1e-6, rounded
// up) whose eonDeltaWith is at most delta.
func eonSearchWith(what, deltaName string, others func([]float64) ([]float64, float64, error), eps []float64, delta float64) (float64, error) {
	if err := checks.Delta(deltaName, delta); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	q, es, err := others(eps)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	start := es
	if b, err := eonClosed(q, es, delta); err == nil && b.Epsilon < start {
		start = b.Epsilon
	}
	w := poissonBinomial(q, pbFloorFor(delta, len(q)))
	if err := checkCloneWork(w); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return clonesSearch(w, es, start, delta), nil
}

// EoNNumerical returns the smallest epsilon (relative precision 1e-6,
// rounded up) with EoNDelta <= deltaS: APES's numerical EoN procedure with
// the normal approximation of the authors' code replaced by the exact
// Poisson-binomial distribution of the clone count, so the result is a
// guaranteed upper bound under APES's decomposition (Lemmas 4-6) and
// HiddenBudgetAssumption (set in the result's Assumption); EoNWorstCase is
// the bound without that assumption.
func EoNNumerical(eps []float64, deltaS float64) (Bound, error) {
	e, err := eonSearchWith("EoN numerical", "delta_s", eonOthers, eps, deltaS)
	if err != nil {
		return Bound{}, err
	}
	return Bound{Name: "eon-numerical", Epsilon: e, Delta: deltaS,
		Note:       "APES EoN, numerical, exact Poisson-binomial clone counts, under APES's hidden-budget assumption",
		Assumption: HiddenBudgetAssumption}, nil
}

// eonWorstOthers returns the clone probabilities of the n-1 users other
// than the differing user when the latter is the user with the largest
// budget eps* (public budgets, the worst case): user i reproduces the
// differing user's Clip-Laplace output with probability
// p_i* = ClipLaplaceEchoProb(eps_i, eps*) = F(eps_i)/F(eps*) e^-eps*,
// F(e) = e/(1-e^-e) (APES Lemmas 4 and 6 with j fixed to the differing
// user, no average over j).
func eonWorstOthers(eps []float64) (others []float64, epsStar float64, err error) {
	if err := validateBudgets(eps, false); err != nil {
		return nil, 0, err
	}
	im := 0
	for i, e := range eps {
		if e > eps[im] {
			im = i
		}
	}
	es := eps[im]
	scale := math.Exp(-es) / echoF(es)
	others = make([]float64, 0, len(eps)-1)
	for i, e := range eps {
		if i == im {
			continue
		}
		others = append(others, math.Min(1, echoF(e)*scale))
	}
	return others, es, nil
}

// EoNWorstCaseDelta is EoNDelta without the hidden-budget assumption: the
// differing user is the one with the largest budget eps* and every other
// user's clone probability is computed against that budget
// (eonWorstOthers); the clone count is their exact Poisson binomial and the
// differing user randomizes at eps*. The result is a guaranteed upper bound
// on delta(epsCentral) for the standard definition with public budgets.
func EoNWorstCaseDelta(eps []float64, epsCentral float64) (float64, error) {
	return eonDeltaWith("EoN worst-case delta", eonWorstOthers, eps, epsCentral)
}

// EoNWorstCase returns APES's EoN analysis for the standard definition of
// differential privacy, where every user's budget is public: the
// differing user is the one with the largest budget eps* (the worst case:
// every clone probability decreases and the differing user's own
// distinguishability increases with its budget), the other users' clone
// probabilities are p_i* = ClipLaplaceEchoProb(eps_i, eps*) (no average
// over the differing user's budget, which needs HiddenBudgetAssumption),
// and the smallest epsilon (relative precision 1e-6, rounded up) whose
// delta, with exact Poisson-binomial clone counts, is at most delta is
// returned. On APES Table 3's population (Uniform2, n = 10^4, delta = 1e-8)
// it gives about 0.0766, above UniS's 0.0689: Lemma 4's neighbour
// divergence, e^-max(eps_i, eps*) F(eps_i)/F(eps*), is smaller than the
// e^-eps* of FMT's clones at eps*.
func EoNWorstCase(eps []float64, delta float64) (Bound, error) {
	e, err := eonSearchWith("EoN worst case", "delta", eonWorstOthers, eps, delta)
	if err != nil {
		return Bound{}, err
	}
	return Bound{Name: "eon-worst-case", Epsilon: e, Delta: delta,
		Note: "APES EoN for public budgets: differing user at max eps_i, clone probabilities against it, exact Poisson-binomial clone counts"}, nil
}

// ClipLaplaceExactEchoProb returns the exact echo probability of APES's
// Clip-Laplace randomizers (A = C, lambda = 2C/eps, inputs and outputs in
// [-C, C]): the largest p with
//
//	mu_i(z | x_i) >= p mu_u(z | x)   for every x_i, x, z in [-C, C],
//
// mu_i the density of a user with budget epsI and mu_u of one with budget
// epsU, which is
//
//	p = G(eps_i)/F(eps_u),  G(e) = e/(e^e - 1),  F(e) = e/(1 - e^-e),
//
// i.e. F(eps_i) e^-eps_i / F(eps_u), at least APES Lemma 6's
// ClipLaplaceEchoProb (equal when eps_i >= eps_u, larger by e^(eps_u -
// eps_i) otherwise) and at most 1.
//
// Proof (C = 1, a = 1/lambda_u = eps_u/2, b = 1/lambda_i = eps_i/2; mu(z|x)
// = e^{-a|z-x|}/N(x) with N(x) = integral_{-1}^{1} e^{-a|w-x|} dw):
//
//  1. N_u(x) e^{a|z-x|} = integral e^{a(|z-x| - |w-x|)} dw >=
//     integral e^{-a|w-z|} dw = N_u(z) (triangle inequality), so
//     1/mu_u(z|x) >= N_u(z), for every x (equality at x = z).
//  2. N_i(x_i) e^{b|z-x_i|} = integral e^{b(|z-x_i| - |w-x_i|)} dw <=
//     integral e^{b|w-z|} dw =: M_i(z), so mu_i(z|x_i) >= 1/M_i(z) (equality
//     at x_i = -z = +-1).
//  3. Hence mu_i(z|x_i)/mu_u(z|x) >= N_u(z)/M_i(z). a N_u(z) = 2 -
//     e^{-a(1+z)} - e^{-a(1-z)} and b M_i(z) = e^{b(1+z)} + e^{b(1-z)} - 2
//     are even in z, the first non-increasing and the second
//     non-decreasing in |z| (their derivatives on [0, 1] are
//     a(e^{-a(1+z)} - e^{-a(1-z)}) <= 0 and b(e^{b(1+z)} - e^{b(1-z)}) >= 0),
//     so the ratio is smallest at z = +-1:
//     N_u(1)/M_i(1) = b (1 - e^{-2a}) / (a (e^{2b} - 1)) = G(eps_i)/F(eps_u),
//     attained at z = x = -1, x_i = 1 (or the mirror image), so it is the
//     infimum.
//
// F is increasing and G decreasing (G'(e) has the sign of e^e (1 - e) - 1
// < 0), so p decreases in both budgets; p(e, e) = e^-e, FMT's clone
// probability. The grid search of TestClipLaplaceEchoRatioGrid finds the
// same value.
func ClipLaplaceExactEchoProb(epsI, epsU float64) float64 {
	return echoG(epsI) / echoF(epsU)
}

// echoG is e/(e^e - 1) = F(e) e^-e.
func echoG(e float64) float64 { return e / math.Expm1(e) }

// eonExactOthers returns the clone probabilities and the differing user's
// budget of a clone pair that dominates the shuffle of Clip-Laplace
// reports for EVERY differing user (public budgets): eps* = max eps_i and,
// for every user but one with the smallest budget, p_i =
// ClipLaplaceExactEchoProb(eps_i, eps*) = G(eps_i)/F(eps*).
//
// Why it covers every differing user u: u's randomizer is eps_u-LDP, hence
// eps*-LDP (account.KindShuffleHetero, step 1: eps0 may be any bound on
// u's budget); the others echo u with p_iu = G(eps_i)/F(eps_u) >=
// G(eps_i)/F(eps*) (F increasing). The multiset {G(eps_i) : i != u}
// dominates, after sorting, the multiset of all G(eps_i) without its
// largest element (removing the largest element gives the elementwise
// smallest sub-multiset of size n-1), and G is largest at the smallest
// budget (G decreasing). So u's clone count is stochastically larger
// (coordinate-wise larger Bernoulli parameters under a matching), and the
// clone pair with fewer clones dominates the one with more (it is
// post-processed into it by adding the extra clones, each to either count
// with probability 1/2). Compared with eonWorstOthers (Lemma 6's weights,
// the largest budget removed) every probability is at least as large after
// matching the largest-budget user here with the smallest-budget user
// there.
func eonExactOthers(eps []float64) (others []float64, epsStar float64, err error) {
	if err := validateBudgets(eps, false); err != nil {
		return nil, 0, err
	}
	imin, imax := 0, 0
	for i, e := range eps {
		if e < eps[imin] {
			imin = i
		}
		if e > eps[imax] {
			imax = i
		}
	}
	es := eps[imax]
	f := echoF(es)
	others = make([]float64, 0, len(eps)-1)
	for i, e := range eps {
		if i == imin {
			continue
		}
		others = append(others, math.Min(1, echoG(e)/f))
	}
	return others, es, nil
}

// EoNExactEchoDelta is EoNWorstCaseDelta with Clip-Laplace's exact echo
// probabilities (eonExactOthers): a guaranteed upper bound on
// delta(epsCentral) of one dimension's shuffle of APES's Clip-Laplace
// reports for the standard definition with public budgets.
func EoNExactEchoDelta(eps []float64, epsCentral float64) (float64, error) {
	return eonDeltaWith("EoN exact-echo delta", eonExactOthers, eps, epsCentral)
}

// EoNExactEcho returns the smallest epsilon (relative precision 1e-6,
// rounded up) whose EoNExactEchoDelta is at most delta: the EoN analysis
// for public budgets (no hidden-budget assumption) with Clip-Laplace's
// exact echo probabilities (ClipLaplaceExactEchoProb) instead of APES
// Lemma 6's, valid for APES's Clip-Laplace randomizers. It is never above
// EoNWorstCase (every clone probability is at least as large).
func EoNExactEcho(eps []float64, delta float64) (Bound, error) {
	e, err := eonSearchWith("EoN exact echo", "delta", eonExactOthers, eps, delta)
	if err != nil {
		return Bound{}, err
	}
	return Bound{Name: "eon-exact-echo", Epsilon: e, Delta: delta,
		Note: "APES EoN for public budgets with Clip-Laplace's exact echo probabilities G(eps_i)/F(eps*), exact Poisson-binomial clone counts"}, nil
}

// EoNClonePair returns the clone pair behind EoN's numerical bounds: the
// clone probabilities of the n-1 users other than the differing one and the
// differing user's budget eps* = max eps_i. For the standard definition
// (hidden false) they are those of EoNExactEcho (eonExactOthers: every
// differing user is covered, Clip-Laplace's exact echo probabilities); with
// hidden set they are those of EoNNumerical (Lemma 5's averages q_i, the
// largest removed), valid only under HiddenBudgetAssumption.
// EoNExactEchoDelta and EoNDelta are the exact deltas of these pairs; the
// run's PLD accountant composes the same pairs (account.KindShuffleHetero).
func EoNClonePair(eps []float64, hidden bool) (others []float64, epsStar float64, err error) {
	if hidden {
		others, epsStar, err = eonOthers(eps)
	} else {
		others, epsStar, err = eonExactOthers(eps)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("EoN clone pair: %w", err)
	}
	return others, epsStar, nil
}
