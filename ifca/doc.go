// Package ifca implements the roles of Algorithm 1 of Galli et al., "Group
// privacy for personalized federated learning" (the group-privacy paper,
// seed 004): personalized federated learning with k hypotheses, after IFCA
// (Ghosh et al.), where every client releases only a d-private
// (metric-private) full parameter vector.
//
// The package is pure (no I/O) and split so that the engine (package
// runtime, protocol ifca-dp) can reuse each role on its own:
//
//   - client side: ChooseHypothesis (Algorithm 1 line 5, lowest local loss),
//     ClientRound (choose, train E local epochs through the Client interface,
//     sanitize the FULL updated vector with mechanism.SanitizeUpdate; the
//     release carries no cluster identity and no sample count), with a
//     leakage cap above which the client declines;
//   - server side: ServerRound (k-means on the released vectors initialised
//     at the current hypotheses, package cluster; the cluster means are the
//     new hypotheses);
//   - accounting: Ledger, a per-client d-privacy ledger composed over
//     rounds with account.ComposeDPrivacy (Theorem 1), and LeakageStats (max
//     and median);
//   - Simulate, a reference driver for small models (the paper's Sections
//     5.1 and 5.2) with early stopping on held-out clients (fl.EarlyStop).
//
// Plain IFCA is the same with Nu = 0 (no sanitization, infinite leakage);
// the one-model ablation is K = 1.
//
// Privacy statement: each participation costs n/ν of d-privacy with respect
// to points in the client's ||δ_c||-neighbourhood (Section 4.1); the costs
// add up over rounds (Theorem 1). This is the paper's heuristic: ε depends
// on ||δ_c||, which the release reveals (see mechanism.SanitizeUpdate), so
// it is not a formal local-DP guarantee. In the shuffle model the analyzer
// cannot send a cluster assignment back to an anonymous client: every
// participant receives all k hypotheses and chooses locally, which is what
// ClientRound does.
package ifca
