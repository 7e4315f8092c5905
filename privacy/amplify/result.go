package amplify

import "fmt"

// Bound is one central privacy statement produced by a named analysis.
// A rigorous bound (Approximation == false) guarantees that the shuffled
// mechanism is (Epsilon, Delta)-DP with respect to the substitution
// (replace-one) neighbouring relation. An approximation (E-APES's Gaussian
// step) is reported for comparison only and is never selected by Best.
type Bound struct {
	// Name identifies the analysis, e.g. "clones-numerical".
	Name string `json:"bound"`
	// Epsilon and Delta are the central guarantee.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Approximation is true when the number is not a proven upper bound
	// (E-APES's Gaussian step; anything computed with the flawed
	// BennettLegacyFLAME variant).
	Approximation bool `json:"approximation"`
	// Assumption is empty for a bound on the standard definition (every
	// user's budget public, the adversary knows whose report differs).
	// Otherwise it names the extra modelling assumption the bound needs,
	// e.g. HiddenBudgetAssumption for APES's EoN; such bounds are chosen
	// by BestPersonalOpts only on request.
	Assumption string `json:"assumption,omitempty"`
	// Note explains the result (paper and theorem, or why it is trivial).
	Note string `json:"note,omitempty"`
}

// String formats the bound on one line.
func (b Bound) String() string {
	s := fmt.Sprintf("%s: (%.6g, %.3g)", b.Name, b.Epsilon, b.Delta)
	if b.Approximation {
		s += " [approximation, not an upper bound]"
	}
	if b.Assumption != "" {
		s += " [under " + b.Assumption + "]"
	}
	return s
}

// Standard reports whether b is a rigorous bound for the standard
// definition: not an approximation and no extra assumption.
func (b Bound) Standard() bool { return !b.Approximation && b.Assumption == "" }

// HiddenBudgetAssumption is the Assumption of APES's EoN bounds (EoN,
// EoNClosedForm, EoNNumerical, EoNDelta). APES (Lemma 5, Step (i): "both g
// and eps^l are shuffled ... An adversary cannot decide which eps^l_j is
// used for perturbing g_1, hence any value in {eps^l_i} is possible")
// averages every other user's clone probability over the differing user's
// budget, q_i = (1/n) sum_j p_ij. That is a guarantee for a differing user
// whose budget is uniformly distributed over the population and unknown to
// the adversary. Under the standard definition the budgets are public (they
// are the personalized guarantees) and the worst case is the user with the
// largest budget: see EoNWorstCase.
const HiddenBudgetAssumption = "APES's hidden-budget assumption (the adversary cannot tell the differing user's budget)"
