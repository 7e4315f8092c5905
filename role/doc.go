// Package role holds the three parties of the shuffle model — client,
// shuffler and analyzer — as deterministic state machines, in the manner of
// etcd raft's RawNode: each takes its inputs (an announced round, a local
// update, a report, a shuffled batch) and returns its outputs (a report, a
// batch, a model update) plus what it has decided, and performs no I/O, no
// concurrency and no timekeeping of its own. Drivers move the messages: the
// simulation engine (package runtime) calls the three roles in one process,
// a deployment's services call the same code over the network, so the
// protocol a simulation measures is the protocol a deployment runs.
//
// # Who sees what (FLAME Table 1)
//
// A Client knows its own data, budget and ledger. The Shuffler knows which
// sender submitted which messages and their public labels (the coordinate a
// value belongs to), never the values: it is generic in the payload type,
// so a deployment instantiates it with sealed ciphertexts and a simulation
// with plain values, and no method of it reads a payload. The Analyzer sees
// payloads, never senders: a Batch carries no identity.
//
// # Ordering contracts
//
// These are the rules a driver must keep; the roles enforce the ones they
// can observe and return ErrOrder when they are broken.
//
//   - A client's release is charged to its ledger before its report
//     leaves: either Client.Charge returns nil (the ledger's Store made the
//     charge durable) before Client.Encode produces the report, or — for a
//     driver that stores the report with its charge in one transaction, so
//     that a retry resends the same bytes — Client.Stage (StageModel for a
//     clustered protocol's whole model) produces the report and
//     Client.Commit makes the charge durable (and checks that the ledger
//     holds it) before the report is sent. Encoding twice in a round is
//     refused, so a retry must resend the stored report rather than
//     re-randomize (no double spend).
//   - The shuffler accepts one submission per sender per round; a second one
//     is ErrDuplicateSender. It releases a round's batch only when the round
//     is closed with at least the minimum number of senders; below it the
//     round is void and nothing is released (ErrTooFew). A closed round
//     accepts nothing.
//   - The analyzer opens rounds in order, absorbs a round's batch, and
//     releases the round's update at most once (ErrReleased); it records
//     the round's privacy statement in the run's accountant when it
//     releases or voids the round, never otherwise.
package role
