// Package seal encrypts randomized values to the analyzer with HPKE (RFC 9180,
// the standard library's crypto/hpke), so that the shuffler, which knows who
// sent what, never sees a value, and the analyzer, which sees every value,
// never learns who sent it (FLAME Table 1's trust separation).
//
// One sealed message carries one separately shuffled unit of a protocol: a
// coordinate value (Label Coord(j), per-coordinate protocols), a metadata
// value (Label Meta, APES's epsilons) or a whole report (Label Report). Every
// message has its own encapsulation, so two messages of one client share no
// bytes; the round, the label and the run id are bound into the associated
// data, so a message cannot be replayed into another round or run or
// relabelled; and a message's size depends only on the suite, the label's
// kind and the dimension, so the shuffler's dummies have the same form as
// clients' values.
//
// A client (and the shuffler, for dummies) seals with a Sealer built from the
// analyzer's PublicKey; the shuffler reads a message's round and label with
// Parse, without being able to decrypt; the analyzer opens a round's
// messages with one Opener, which rejects and counts by Reason malformed
// messages, other suites, rounds or labels, replays, authentication failures
// and values that are not finite or outside the protocol's range. Nothing
// here panics on bad input or does I/O; keys come from crypto/rand.
//
// The wire format (version 1), the design decision, the measured costs and
// the alternatives are in docs/DEPLOYMENT.md ("What is sealed", "Message
// format").
package seal
