// Package deploy runs shufflefl's three roles as network services: the
// analyzer, the shuffler and the clients of package role, driven over gRPC
// (package wire) with TLS and mutual TLS between shuffler and analyzer
// (package pki), every value sealed to the analyzer with HPKE (package
// seal), and every piece of state that must survive a crash in SQLite
// (package store). The services are drivers: the protocol logic (what a
// client releases, what the shuffler checks and pads, how the analyzer
// estimates and accounts, and whether a round is released or void) is the
// role machines', the same code the simulation engine runs; what the two
// drivers share besides (configuration, pre-flight, sampling, partition,
// results) is package round. Deploy does not import the simulator.
//
// # Data flow (FLAME Algorithm 2)
//
//  1. The analyzer opens round t in its round log and announces it to the
//     shuffler over mutual TLS: model, round id, protocol name and
//     parameters, deadline, minimum reports, its HPKE public key.
//  2. The shuffler opens the round in its inbox and offers the announcement
//     to clients, who pull it (PullTask) with signed requests and send
//     heartbeats.
//  3. A client consults its ledger, trains on its shard (for a clustered
//     protocol, on the model it chose), encodes through role.Client, seals
//     every message to the analyzer, stores the sealed
//     report in its outbox in the same transaction as the ledger charge,
//     and only then sends it. A retry resends the stored bytes.
//  4. The shuffler authenticates the request (signature, timestamp, nonce;
//     the signature first on a header sent before the body: admission.go),
//     parses the sealed messages' public headers (never decrypting), checks
//     the labels on the round's role.Shuffler, stores the report durably
//     (the store judges duplicates and replays), counts it in the round
//     and only then acknowledges. When every expected client has reported, or at the
//     deadline with at least the minimum, it closes the round: the role pads
//     with the protocol's dummies (sealed to the analyzer), permutes, strips
//     identities; the batch is streamed to the analyzer.
//  5. The analyzer opens every message with the round's seal.Opener
//     (rejections counted by reason) into the role's batch and hands the
//     round's facts (reporters actually shuffled, their budgets) to the
//     role.Analyzer, which decides: it voids the round (too few reports,
//     past the run's target, a batch it refuses) or absorbs and releases
//     it. The service commits the decision (checkpoint of models and
//     accountant with the round log, or the void entry) in one
//     transaction before acknowledging.
//
// # Clustered protocols
//
// For a clustered protocol (protocol.Clustered: ifca, ifca-dp) the analyzer
// keeps and announces k models; every client receives all k, trains the one
// with the lowest loss on its own shard (the engine's rule; the choice
// never leaves the client), and releases one sealed whole report, the
// protocol's EncodeModel of its updated model, through the role's staged
// path (role.Client.StageModel, then Commit). For ifca-dp the client's own ledger composes the d-privacy level
// n/nu of each release (group-privacy paper, Theorem 1) and declines a
// release past its cap. The analyzer runs the protocol's k-means on the
// opened reports and checkpoints the k models together. Setup refuses a
// run whose k models or sealed report exceed the wire's limits.
//
// # Randomness
//
// Services draw every random number from crypto/rand (rng.NewCrypto) and
// every protocol is built with protocol.Params.Secure. The one exception is
// the explicit test mode (Options.TestSeed): clients' training and noise,
// the shuffler's padding and the analyzer's estimate then use the
// simulation's streams (rng.Stream(seed, label, round, client)), so that a
// deployment reproduces `shufflefl run` with the same seed. Test mode makes
// every client's noise predictable from the seed: it must never be used for
// real data.
package deploy
