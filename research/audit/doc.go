// Package audit measures what shufflefl's privacy guarantees mean against
// real attacks, and checks the accountant with evidence it cannot fool. It
// is what `shufflefl audit` runs; docs/AUDIT.md explains the methods.
//
// Empirical epsilon (lower bounds that must stay below the claims):
// MechanismGame plays the distinguishing game of one local randomizer
// (Clopper-Pearson bounds, eps_lower = log((TPR_lo - delta)/FPR_hi));
// ProtocolGame plays it through a whole round of a protocol and EngineGame
// through the engine's first round; ProtocolAudit runs them for one or
// every protocol, with the tight game. OneRun is the one-run canary audit
// (Steinke, Nasr and Jagielski 2023; Andrew et al. 2024).
//
// Attacks: InvertFC and Optimize reconstruct a client's input from its
// update (analytic, DLG/iDLG), InversionStudy runs them per release;
// MembershipInference attacks a trained model; TopkShuffler measures what
// the SS-Topk shuffler learns against FLAME Definition 3.
//
// Accountant checks: CheckAccountant sets a finished run's statements
// (Facts, from its files) against exact lower bounds.
//
// Each subcommand's result is a report (MechanismReport, ProtocolReport,
// ...) that marshals to JSON and renders as markdown (Markdown);
// WriteReport writes its files. Each subcommand's help (MechanismHelp, ...)
// is here too.
package audit
