// Package ifcaref is a naive reference simulation of Algorithm 1 of the
// group-privacy paper (clustered FL with k hypotheses, each client
// releasing its full updated vector, d-privately sanitized when Nu > 0,
// and server-side k-means): ClientRound, ServerRound, a per-client
// d-privacy Ledger and Simulate, in plain code over the Client interface.
//
// It is not the implementation: clustered FL runs on the engine (package
// runtime with protocol ifca or ifca-dp). ifcaref has two uses:
//
//   - the oracle the engine is checked against (engine_test.go: same
//     participants, training and noise streams give the same choices,
//     cluster sizes, leakage and models, the models bit for bit unless the
//     engine's faithful shuffler reorders the releases);
//   - the driver of the paper's two regression experiments (package
//     experiment, dprivacy-synthetic and dprivacy-regression), whose
//     linear and ReLU regression models (package ifca/regress) the engine,
//     which trains classifiers, cannot run.
//
// Privacy statement (Section 4.1): each participation costs n/ν of
// d-privacy with respect to points within the client's ||δ_c|| of its
// release; the costs add up over rounds (Theorem 1). ε depends on ||δ_c||,
// which the release reveals, so this is the paper's heuristic, not a local
// DP guarantee.
package ifcaref
