// Package deploy runs shufflefl's three roles as network services: the
// analyzer, the shuffler and the clients of package role, driven over gRPC
// (package wire) with TLS and mutual TLS between shuffler and analyzer
// (package pki), every value sealed to the analyzer with HPKE (package
// seal), and every piece of state that must survive a crash in SQLite
// (package store). The services are drivers: what a client releases, what
// the shuffler checks and pads, how the analyzer estimates and accounts,
// and whether a round is released or void are the role machines' decisions,
// the same code the simulator runs; what the two drivers share besides is
// package round. Deploy does not import the simulator.
//
// A round: the analyzer opens it in its round log and announces it to the
// shuffler; clients pull the task, consult their ledger, train, encode
// through role.Client, seal every message and store the sealed report with
// the ledger charge before sending it; the shuffler checks a request's
// signed header before reading its body (admission.go), checks the labels
// on the round's role.Shuffler and stores the submission before
// acknowledging; at the deadline (or when every expected client reported)
// it pads, permutes, strips identities and streams the batch to the
// analyzer, which opens every message and hands the round's facts and
// batch to role.Analyzer, then commits the decision (checkpoint or void
// entry) in one transaction before acknowledging. Clustered protocols
// (ifca, ifca-dp) announce k models; each client chooses one locally and
// releases a whole sealed report.
//
// Services draw every random number from crypto/rand. The explicit test
// mode (Options.TestSeed) uses the simulation's streams instead, so that a
// deployment reproduces `shufflefl run` with the same seed; it makes every
// client's noise predictable and must never be used for real data.
//
// docs/DEPLOYMENT.md has the data flow step by step, the statuses, the
// durability rules and the measured costs.
package deploy
