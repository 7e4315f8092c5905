package deploy

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"time"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// The analyzer's opener queue (docs/DEPLOYMENT.md, "Openers"): the analyzer
// cuts a round's batch into chunks and publishes each on the chunk queue (a
// work queue); the openers, a pull-consumer group, open a chunk and publish
// its result on the results log (kept until the analyzer purges the round),
// then acknowledge the chunk. Subjects carry a tag of the run id (whatever
// characters the id has), the round and the chunk index; the de-duplication
// id adds the chunk's digest, so a chunk published again (a restarted
// analyzer, a retried forward) or answered twice (an opener killed after
// publishing, before acknowledging) is stored once, and a result can only
// ever belong to the very messages it was computed from.
const (
	// openQueueName and openLogName name the chunk queue and the results
	// log; openerGroup the openers' consumer group.
	openQueueName = "shufflefl-open"
	openLogName   = "shufflefl-opened"
	openerGroup   = "openers"
	// openDedupWindow is how long the server remembers a chunk's or a
	// result's id.
	openDedupWindow = time.Hour
	// DefaultOpenerChunk is the number of messages of a chunk (about 0.3 s
	// of one core's opening at 70 µs a message) and openChunkBytes the
	// most ciphertext bytes of one (below it a chunk may be cut smaller to
	// fit the server's max payload).
	DefaultOpenerChunk = 4096
	openChunkBytes     = 4 << 20
	// openChunkSlack is what a chunk's encoding may add to its
	// ciphertexts besides 8 bytes a message (the fixed fields, the key).
	openChunkSlack = 8 << 10
	// DefaultOpenWindow is how many chunk bytes the analyzer has on the
	// queue at once, unanswered.
	DefaultOpenWindow = 64 << 20
	// outcomeRejected marks a rejected message's outcome byte (the
	// reason in the low bits).
	outcomeRejected = 0x80
)

// openStreams are the chunk queue and the results log on one connection.
type openStreams struct {
	chunks  *jetstream.Queue
	results *jetstream.Log
	// maxChunk is the most bytes of ciphertext (plus 8 a message) a chunk
	// may carry.
	maxChunk int
}

// openOpenerStreams creates or opens the opener queue's streams; the
// analyzer and every opener call it with the same settings. The analyzer
// (create) creates the results log; an opener, which may publish on it but
// neither read nor reconfigure it, only opens it once it exists.
func openOpenerStreams(ctx context.Context, conn *jetstream.Conn, create bool) (*openStreams, error) {
	// The ids' header and the server's framing fit in 4 KiB.
	maxMsg := int(conn.MaxPayload()) - 4<<10
	if maxMsg < 2*openChunkSlack {
		return nil, fmt.Errorf("deploy: opener queue: the NATS server's max payload of %d bytes is too small", conn.MaxPayload())
	}
	q, err := conn.Queue(ctx, jetstream.QueueConfig{Name: openQueueName, DedupWindow: openDedupWindow, MaxMsgSize: maxMsg})
	if err != nil {
		return nil, fmt.Errorf("deploy: opener queue: %w", err)
	}
	var l *jetstream.Log
	if create {
		l, err = conn.Log(ctx, jetstream.LogConfig{Name: openLogName, DedupWindow: openDedupWindow, MaxMsgSize: maxMsg})
	} else {
		l, err = conn.OpenLog(ctx, openLogName)
	}
	if err != nil {
		return nil, fmt.Errorf("deploy: opener results: %w", err)
	}
	return &openStreams{chunks: q, results: l, maxChunk: min(openChunkBytes, maxMsg-openChunkSlack)}, nil
}

// runTag is the run's token in the opener queue's subjects: 16 hex digits
// of the SHA-256 of its id.
func runTag(runID string) string {
	h := sha256.Sum256([]byte(runID))
	return hex.EncodeToString(h[:8])
}

// chunkSubject and resultSubject are chunk c of round t's subjects ("*"
// or ">" as c match every chunk of the round).
func chunkSubject(tag string, t int64, c string) string {
	return fmt.Sprintf("%s.%s.%d.%s", openQueueName, tag, t, c)
}

func resultSubject(tag string, t int64, c string) string {
	return fmt.Sprintf("%s.%s.%d.%s", openLogName, tag, t, c)
}

// chunkID is the de-duplication id of a chunk and of its result.
func chunkID(tag string, t int64, c int, digest []byte) string {
	return fmt.Sprintf("%s/%d/%d/%s", tag, t, c, hex.EncodeToString(digest[:8]))
}

// chunkDigest is the SHA-256 of messages, each as its length in a uvarint
// then its bytes.
func chunkDigest(ms [][]byte) []byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, m := range ms {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(m)))])
		h.Write(m)
	}
	return h.Sum(nil)
}

// span is one chunk of a batch: messages [from, to) and their ciphertext
// bytes.
type span struct {
	from, to int
	bytes    int
}

// splitChunks cuts ms into chunks of at most perChunk messages and maxBytes
// bytes (counting 8 a message besides its ciphertext); a message larger
// than maxBytes travels alone.
func splitChunks(ms []*wire.SealedMessage, perChunk, maxBytes int) []span {
	var out []span
	cur := span{}
	for i, m := range ms {
		n := len(m.GetCiphertext()) + 8
		if cur.to > cur.from && (cur.to-cur.from == perChunk || cur.bytes+n > maxBytes) {
			out = append(out, cur)
			cur = span{from: i, to: i}
		}
		cur.to++
		cur.bytes += n
	}
	if cur.to > cur.from {
		out = append(out, cur)
	}
	return out
}

// specWire and specOf convert a round's seal.Spec to and from the wire.
func specWire(s seal.Spec) *wire.OpenSpec {
	return &wire.OpenSpec{Mode: uint32(s.Mode), Dimension: uint32(s.Dim), Meta: s.Meta, ValuesLo: s.Values.Lo, ValuesHi: s.Values.Hi,
		MetaLo: s.MetaValues.Lo, MetaHi: s.MetaValues.Hi, Integers: s.Integers}
}

func specOf(w *wire.OpenSpec) seal.Spec {
	return seal.Spec{Mode: seal.Mode(w.GetMode()), Dim: int(w.GetDimension()), Meta: w.GetMeta(), Values: seal.Range{Lo: w.GetValuesLo(), Hi: w.GetValuesHi()},
		MetaValues: seal.Range{Lo: w.GetMetaLo(), Hi: w.GetMetaHi()}, Integers: w.GetIntegers()}
}

// openerMACKey derives the key that authenticates the opener queue's chunks
// and results from the analyzer's HPKE private key, which only the analyzer
// and its openers hold: whoever else can publish on the NATS server can
// neither make the openers open ciphertexts of their choosing nor feed the
// analyzer values.
func openerMACKey(k *seal.PrivateKey) ([]byte, error) {
	pem, err := k.MarshalPEM()
	if err != nil {
		return nil, err
	}
	h := hmac.New(sha256.New, []byte("shufflefl/opener-queue-mac/v1"))
	h.Write(pem)
	return h.Sum(nil), nil
}

// macWriter writes a MAC's fields, each length-prefixed.
type macWriter struct{ h hash.Hash }

func newMAC(key []byte, kind string) macWriter {
	m := macWriter{hmac.New(sha256.New, key)}
	m.bytes([]byte(kind))
	return m
}

func (m macWriter) bytes(b []byte) {
	var n [binary.MaxVarintLen64]byte
	m.h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
	m.h.Write(b)
}

func (m macWriter) uints(xs ...uint64) {
	b := make([]byte, 0, 8*len(xs))
	for _, x := range xs {
		b = binary.BigEndian.AppendUint64(b, x)
	}
	m.bytes(b)
}

// chunkMAC is an OpenChunk's MAC: every field but the messages (the digest
// covers them) and the MAC.
func chunkMAC(key []byte, c *wire.OpenChunk) []byte {
	m := newMAC(key, "chunk")
	m.bytes([]byte(c.RunId))
	m.uints(uint64(c.Round), uint64(c.Chunk), uint64(c.Chunks))
	m.bytes(c.AnalyzerPublicKey)
	sp := c.GetSpec()
	meta := uint64(0)
	if sp.GetMeta() {
		meta = 1
	}
	m.uints(uint64(sp.GetMode()), uint64(sp.GetDimension()), meta, math.Float64bits(sp.GetValuesLo()), math.Float64bits(sp.GetValuesHi()),
		math.Float64bits(sp.GetMetaLo()), math.Float64bits(sp.GetMetaHi()))
	m.bytes(c.Digest)
	return m.h.Sum(nil)
}

// resultMAC is an OpenResult's MAC: every field but the MAC.
func resultMAC(key []byte, r *wire.OpenResult) []byte {
	m := newMAC(key, "result")
	m.bytes([]byte(r.RunId))
	m.uints(uint64(r.Round), uint64(r.Chunk))
	m.bytes(r.Digest)
	m.bytes(r.Outcomes)
	cs := make([]uint64, len(r.Coordinates))
	for i, c := range r.Coordinates {
		cs[i] = uint64(c)
	}
	m.uints(cs...)
	m.bytes(r.Values)
	m.bytes([]byte(r.Opener))
	return m.h.Sum(nil)
}
