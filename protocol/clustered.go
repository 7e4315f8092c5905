package protocol

import "math/rand/v2"

// Clustered is implemented by protocols whose analyzer keeps k models, one
// per group of similar clients (clustered federated learning: IFCA and the
// group-privacy paper's Algorithm 1).
//
// In the shuffle model the analyzer cannot send a cluster assignment back
// to an anonymous client, so every participant receives all k models,
// chooses locally the one with the lowest loss on its own data, trains it,
// and releases its full updated parameter vector — never the index of the
// model it chose. The analyzer sees the released vectors (Aggregate.Vectors:
// the aggregate of a Clustered protocol keeps them) and re-estimates the k
// models from them.
type Clustered interface {
	Protocol
	// Hypotheses is k, the number of models.
	Hypotheses() int
	// EncodeModel is the client role: base is the model the client chose
	// and trained, update its local change (local model − base, length
	// s.Dim; it may be modified). It writes the released vector into out.
	EncodeModel(r *rand.Rand, s Shape, base, update []float64, b Budget, out *Report) error
	// EstimateModels is the analyzer role: from the round's released
	// vectors (agg.Vectors) it updates the k models in place and returns
	// how many released vectors each model was estimated from.
	EstimateModels(r *rand.Rand, s Shape, agg *Aggregate, models [][]float64) ([]int, error)
}

// DPrivacy is the statement of a protocol whose guarantee is d-privacy
// (metric privacy) rather than (epsilon, delta)-DP: a release is
// Level-indistinguishable from every point within the client's
// neighbourhood (the group-privacy paper, Section 4.1), and the levels of
// a client's releases add up over its participations (Theorem 1).
type DPrivacy struct {
	// Level is the leakage of one participation, epsilon·r = n/nu for the
	// paper's noise multiplier nu (+Inf without sanitization).
	Level float64 `json:"level"`
	// Nu is the noise multiplier (0: no sanitization).
	Nu float64 `json:"nu"`
	// Neighbourhood says which points are protected.
	Neighbourhood string `json:"neighbourhood"`
}
