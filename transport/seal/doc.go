// Package seal encrypts randomized values to the analyzer with HPKE (RFC 9180,
// the standard library's crypto/hpke), so that the shuffler, which knows who
// sent what, never sees a value, and the analyzer, which sees every value,
// never learns who sent it (FLAME Table 1's trust separation).
//
// # Messages
//
// One sealed message carries one separately shuffled unit of a protocol:
//
//   - a coordinate value (Label Coord(j)): per-coordinate protocols (FLAME's
//     SS-Simple, SS-Double, SS-Topk; APES; Uni-S) send one message per
//     coordinate they report, because the shuffler permutes every coordinate
//     on its own and the analyzer must not be able to link the coordinates of
//     one report;
//   - a metadata value (Label Meta): APES's epsilon list, shuffled apart from
//     the values;
//   - a whole report (Label Report): whole-report protocols (E-APES and other
//     WholeReport protocols) send their d values in one message.
//
// Every message has its own HPKE encapsulation (a fresh ephemeral key), so two
// messages of one client share no bytes that could link them. The round, the
// label and the run id are bound into the associated data, so a message
// cannot be replayed into another round or run or relabelled to another
// coordinate without failing authentication. The size of a message depends
// only on the suite, the label's kind and (for a report) the dimension, so a
// dummy the shuffler seals with the same public key is the same bytes format
// as a client's value: the analyzer cannot tell them apart by their form. (It
// could by their values if the shuffler drew dummies from a different
// distribution, or with a different floating-point sampler, than the
// protocol's; that is the protocol's Pad contract, not this package's.)
//
// The wire format, version 1, is a 21-byte header followed by the
// encapsulated key and the AEAD ciphertext (all integers big-endian):
//
//	offset size  field
//	0      2     magic "SF"
//	2      1     version (1)
//	3      1     suite (1: x25519, 2: xwing; see Suite)
//	4      1     label kind (1: coordinate, 2: meta, 3: report)
//	5      4     label index (the coordinate; 0 for meta and report)
//	9      8     round (>= 1)
//	17     4     payload length in bytes (8 for a coordinate or meta value,
//	             8·d for a report of d values, d <= MaxDim)
//	21     E     HPKE encapsulated key (E = 32 for x25519, 1120 for xwing)
//	21+E   L+16  AEAD ciphertext of the payload (L = payload length)
//
// The payload is the values as IEEE-754 binary64, big-endian. The associated
// data is a domain string, the run id (length-prefixed) and the 21 header
// bytes; the HPKE info is a domain string and the suite.
//
// # Roles
//
// A client (and the shuffler, for dummies) uses a Sealer built from the
// analyzer's PublicKey. The shuffler uses Parse to read a message's round and
// label (which it needs to group and permute) without being able to decrypt.
// The analyzer uses one Opener per round: it rejects, and counts by Reason,
// malformed messages, messages of another suite, round or label, replays,
// authentication failures, and decrypted values of the wrong length, NaN,
// ±Inf or outside the protocol's range. Nothing in this package panics on
// bad input, and nothing does I/O.
//
// Keys come from crypto/rand (GenerateKey) and are stored as PEM blocks with
// the suite in a header (PrivateKey.MarshalPEM, ParsePrivateKeyPEM).
// crypto/hpke draws every ephemeral key from crypto/rand; sealing therefore
// takes no *rand.Rand.
//
// The design decision, the measured costs and the alternatives considered are
// in docs/DEPLOYMENT.md.
package seal
