package seal

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/shufflefl/shufflefl/checks"
)

// Version is the wire format version this package writes and reads.
const Version = 1

// HeaderSize is the length of a message's header (see the package doc).
const HeaderSize = 21

// TagSize is the length of the AEAD authentication tag.
const TagSize = 16

// ValueSize is the encoded length of one value (IEEE-754 binary64).
const ValueSize = 8

// MaxDim is the largest model dimension the format carries: coordinate
// indices are below it and a report holds at most MaxDim values (a 32 MiB
// payload). Larger claims are rejected as oversize before any allocation.
const MaxDim = 1 << 22

// MaxRunIDLen is the longest run id, in bytes.
const MaxRunIDLen = 255

var magic = [2]byte{'S', 'F'}

// Kind is the kind of a Label.
type Kind uint8

const (
	// KindCoord labels one coordinate's value (per-coordinate shuffling).
	KindCoord Kind = 1
	// KindMeta labels one metadata value, shuffled apart from the values
	// (APES's epsilon list).
	KindMeta Kind = 2
	// KindReport labels a whole report of d values (whole-report shuffling).
	KindReport Kind = 3
)

// String returns "coord", "meta" or "report".
func (k Kind) String() string {
	switch k {
	case KindCoord:
		return "coord"
	case KindMeta:
		return "meta"
	case KindReport:
		return "report"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Label is the public label of a message: what the shuffler groups and
// permutes by, and what the analyzer attributes the value to. It is bound
// into the associated data, so it cannot be changed in transit.
type Label struct {
	Kind  Kind
	Index uint32 // the coordinate for KindCoord; 0 otherwise
}

// Coord returns the label of coordinate j's value.
func Coord(j int) Label { return Label{Kind: KindCoord, Index: uint32(j)} }

// Meta is the label of a metadata value.
var Meta = Label{Kind: KindMeta}

// Report is the label of a whole report.
var Report = Label{Kind: KindReport}

// String returns "coord/J", "meta" or "report".
func (l Label) String() string {
	if l.Kind == KindCoord {
		return "coord/" + strconv.FormatUint(uint64(l.Index), 10)
	}
	if l.Index != 0 {
		return l.Kind.String() + "/" + strconv.FormatUint(uint64(l.Index), 10)
	}
	return l.Kind.String()
}

// Validate checks that l is a label of the format: a known kind, a
// coordinate below MaxDim, index 0 for meta and report.
func (l Label) Validate() error {
	switch l.Kind {
	case KindCoord:
		if l.Index >= MaxDim {
			return checks.Invalidf("seal: coordinate %d is not below MaxDim %d", l.Index, MaxDim)
		}
	case KindMeta, KindReport:
		if l.Index != 0 {
			return checks.Invalidf("seal: %v label has index %d, want 0", l.Kind, l.Index)
		}
	default:
		return checks.Invalidf("seal: unknown label kind %d", uint8(l.Kind))
	}
	return nil
}

// payloadLen is the payload length of a message of kind k carrying n values,
// or an error.
func payloadLen(k Kind, n int) (int, error) {
	switch k {
	case KindCoord, KindMeta:
		if n != 1 {
			return 0, checks.Invalidf("seal: a %v message carries exactly 1 value, got %d", k, n)
		}
	case KindReport:
		if n < 1 || n > MaxDim {
			return 0, checks.Invalidf("seal: a report carries 1 to %d values, got %d", MaxDim, n)
		}
	default:
		return 0, checks.Invalidf("seal: unknown label kind %d", uint8(k))
	}
	return n * ValueSize, nil
}

// MessageSize is the length in bytes of a sealed message of the suite and
// label kind carrying n values (n = 1 for a coordinate or meta value, d for
// a report), or 0 if no such message exists. All messages of one suite, kind
// and n have this length: that is what makes a dummy look like a value.
func MessageSize(s Suite, k Kind, n int) int {
	pl, err := payloadLen(k, n)
	if err != nil || !s.valid() {
		return 0
	}
	return HeaderSize + s.EncSize() + pl + TagSize
}

// Envelope is a parsed sealed message: its public header fields and the
// encapsulated key and ciphertext, which only the analyzer can open. The
// byte slices alias the parsed buffer.
type Envelope struct {
	Suite      Suite
	Label      Label
	Round      uint64
	PayloadLen int    // plaintext length in bytes
	Enc        []byte // HPKE encapsulated key (Suite.EncSize bytes)
	Ciphertext []byte // AEAD ciphertext (PayloadLen + TagSize bytes)
	header     []byte
}

// Values is the number of values the message carries.
func (e *Envelope) Values() int { return e.PayloadLen / ValueSize }

// Parse decodes a sealed message strictly: the magic, the version, a known
// suite and label kind, a coordinate below MaxDim (index 0 for meta and
// report), a round >= 1, a payload length allowed for the kind (one value for
// a coordinate or meta value; 1 to MaxDim values for a report), and a total
// length equal to the header plus the suite's encapsulation plus the payload
// and tag. It does not decrypt. The shuffler uses it to read the round and
// the label; errors wrap checks.ErrInvalid.
func Parse(msg []byte) (*Envelope, error) {
	if len(msg) < HeaderSize {
		return nil, checks.Invalidf("seal: message of %d bytes is shorter than the %d-byte header", len(msg), HeaderSize)
	}
	if msg[0] != magic[0] || msg[1] != magic[1] {
		return nil, checks.Invalidf("seal: bad magic %q", msg[:2])
	}
	if msg[2] != Version {
		return nil, checks.Invalidf("seal: unsupported format version %d (want %d)", msg[2], Version)
	}
	s := Suite(msg[3])
	if !s.valid() {
		return nil, checks.Invalidf("seal: unknown suite %d", msg[3])
	}
	l := Label{Kind: Kind(msg[4]), Index: binary.BigEndian.Uint32(msg[5:9])}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	round := binary.BigEndian.Uint64(msg[9:17])
	if round == 0 {
		return nil, checks.Invalidf("seal: round 0 (rounds start at 1)")
	}
	pl := binary.BigEndian.Uint32(msg[17:21])
	if pl%ValueSize != 0 {
		return nil, checks.Invalidf("seal: payload length %d is not a multiple of %d", pl, ValueSize)
	}
	if l.Kind == KindReport && pl > MaxDim*ValueSize {
		return nil, checks.Invalidf("seal: report of %d values exceeds MaxDim %d", pl/ValueSize, MaxDim)
	}
	if _, err := payloadLen(l.Kind, int(pl/ValueSize)); err != nil {
		return nil, err
	}
	want := HeaderSize + s.EncSize() + int(pl) + TagSize
	if len(msg) != want {
		return nil, checks.Invalidf("seal: %v %v message has %d bytes, want %d", s, l.Kind, len(msg), want)
	}
	encEnd := HeaderSize + s.EncSize()
	return &Envelope{
		Suite:      s,
		Label:      l,
		Round:      round,
		PayloadLen: int(pl),
		Enc:        msg[HeaderSize:encEnd:encEnd],
		Ciphertext: msg[encEnd:],
		header:     msg[:HeaderSize:HeaderSize],
	}, nil
}

// putHeader writes the 21-byte header into h.
func putHeader(h []byte, s Suite, l Label, round uint64, pl int) {
	h[0], h[1], h[2], h[3], h[4] = magic[0], magic[1], Version, byte(s), byte(l.Kind)
	binary.BigEndian.PutUint32(h[5:9], l.Index)
	binary.BigEndian.PutUint64(h[9:17], round)
	binary.BigEndian.PutUint32(h[17:21], uint32(pl))
}

// aadPrefix is the domain separator of the associated data.
const aadPrefix = "shufflefl/seal/v1 aad\x00"

// runAAD returns the run-dependent prefix of the associated data: the domain
// string, then the run id preceded by its length byte. The header is
// appended per message.
func runAAD(runID string) ([]byte, error) {
	if len(runID) == 0 || len(runID) > MaxRunIDLen {
		return nil, checks.Invalidf("seal: run id must have 1 to %d bytes, has %d", MaxRunIDLen, len(runID))
	}
	b := make([]byte, 0, len(aadPrefix)+1+len(runID)+HeaderSize)
	b = append(b, aadPrefix...)
	b = append(b, byte(len(runID)))
	b = append(b, runID...)
	return b, nil
}

// checkRound validates a round number.
func checkRound(round uint64) error {
	if round == 0 {
		return checks.Invalidf("seal: round must be >= 1, got 0")
	}
	return nil
}

// String describes the envelope (never its secret contents).
func (e *Envelope) String() string {
	return fmt.Sprintf("seal.Envelope{%v round %d %v, %d values}", e.Suite, e.Round, e.Label, e.Values())
}
