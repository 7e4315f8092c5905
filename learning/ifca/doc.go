// Package ifca holds what clustered federated learning (IFCA, Ghosh et al.
// 2020, and its d-private variant, Galli et al., "Group privacy for
// personalized federated learning", seed 004) needs beyond the protocol
// and the driver: the client's choice of hypothesis (ChooseHypothesis) and
// IFCA's cluster-assignment accuracy (AssignmentAccuracy).
//
// Clustered FL runs in one place, the engine: protocol ifca / ifca-dp
// (package protocol: a client releases its whole updated model, sanitized
// under ifca-dp; the analyzer runs k-means) driven by package sim,
// which also keeps the d-privacy ledger. Subpackage ifcaref is a naive
// reference simulation that the engine is tested against (and that drives
// the two regression experiments the engine cannot express); ifca/regress
// holds its small regression models.
package ifca
