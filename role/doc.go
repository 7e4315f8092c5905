// Package role holds the three parties of the shuffle model — client,
// shuffler and analyzer — as deterministic state machines, in the manner of
// etcd raft's RawNode: each takes its inputs (an announced round, a local
// update, a submission, a round's facts and reports) and returns its
// outputs and what it decided — a report, an Ack, a Batch, a Ready with the
// released estimate and the Checkpoint to persist — and performs no I/O,
// no concurrency and no timekeeping of its own. Drivers move the messages
// and persist what the machines hand back: the simulation engine (package
// runtime) calls the three roles in one process, a deployment's services
// (package deploy) call the same code over the network, so the protocol a
// simulation measures is the protocol a deployment runs.
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
//     leaves. Client.Stage (StageModel for a clustered protocol's whole
//     model) checks the ledger, produces the report and returns a
//     ClientReady naming the release; the driver records it durably (the
//     machine only reads its ledger, through a LedgerView) and calls
//     Client.Advance, which checks that the ledger holds the charge; only
//     then may the report be sent. A driver that stores the report with
//     its charge in one transaction resends those bytes on a retry: a
//     second report in a round is refused, so nobody re-randomizes (no
//     double spend). Both drivers run one client machine per client and
//     round from Stage to Advance.
//   - The shuffler accepts one submission per sender per round; a second one
//     is ErrDuplicateSender (Resubmit acknowledges a driver's retry of a
//     persisted submission as a Duplicate instead). Check tests a
//     submission's labels without accepting it, for a driver that persists
//     before it counts. It releases a round's batch only when the round
//     is closed with at least the minimum number of senders; below it the
//     round is void and nothing is released (ErrTooFew). A closed round
//     accepts nothing. A round in which a driver counted a submission
//     without handing over its payloads (Count) closes only with
//     ClosePadding (Close is ErrOrder), and the driver then permutes every
//     group itself.
//   - The analyzer opens rounds in order, each on the round's Facts, and
//     decides it there: too few reporters, or a round that would take the
//     cumulative epsilon past the run's target, is void at once; otherwise
//     it absorbs the round's inputs (one way in: Absorb of a batch, a
//     partial aggregate or a dummy) and Close releases the round at most
//     once (ErrReleased), or voids it when the estimate fails. A driver may
//     void an open round (Void). The round's statement is recorded in the
//     run's accountant when the round is released or void, never
//     otherwise.
package role
