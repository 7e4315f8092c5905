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
	// Approximation is true when the number is not a proven upper bound.
	Approximation bool `json:"approximation"`
	// Note explains the result (paper and theorem, or why it is trivial).
	Note string `json:"note,omitempty"`
}

// String formats the bound on one line.
func (b Bound) String() string {
	s := fmt.Sprintf("%s: (%.6g, %.3g)", b.Name, b.Epsilon, b.Delta)
	if b.Approximation {
		s += " [approximation, not an upper bound]"
	}
	return s
}
