package deploy

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// Shuffler shards (docs/DEPLOYMENT.md, "Shuffler shards"). A round's
// shuffle may be split over S shard processes (`shufflefl shuffler-shard`)
// behind the front shuffler that clients report to. At the round's close
// the front routes every stored report's sealed messages to the shard that
// owns each (by coordinate range for per-coordinate protocols, shard.Coord's
// rule; to a uniformly drawn shard for whole reports, the first stage of
// shard.TwoStage), in chunks on a JetStream work queue, then sends every
// shard a close; each shard pads its coordinates, shuffles its part, saves
// it and forwards it to the analyzer as part s of S, and the front forwards
// the round's manifest (its facts, no messages). The queue's messages are
// sealed with AES-256-GCM under the shard key, a secret of the shuffler
// party shared by the front and its shards: whoever runs the NATS server
// (the analyzer, in deploy-local) sees ciphertexts and sizes, never which
// report a message came from. The associated data binds each message to its
// subject and de-duplication id, so nothing can be moved between rounds,
// shards or positions.
const (
	// shardQueueName names the shard queue's stream.
	shardQueueName = "shufflefl-shard"
	// shardDedupWindow is how long the server remembers a message id.
	shardDedupWindow = time.Hour
	// shardChunkBytes is the most ciphertext bytes of one chunk (less if
	// the server's max payload is smaller); shardChunkSlack what a chunk's
	// encoding and sealing may add besides 8 bytes a message.
	shardChunkBytes = 1 << 20
	shardChunkSlack = 8 << 10
	// ShardKeyBytes is the length of a shard key.
	ShardKeyBytes = 32
)

// ShardKey is the secret the front shuffler shares with its shards: it
// seals the shard queue's messages and seeds the round's routing and
// padding draws, so that a restarted front routes a round exactly as
// before (the same chunks under the same ids) and every shard draws the
// same padding.
type ShardKey struct {
	aead cipher.AEAD
	seed []byte // HMAC key of the draws
}

// NewShardKey returns a fresh key from crypto/rand.
func NewShardKey() ([]byte, error) {
	k := make([]byte, ShardKeyBytes)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("deploy: shard key: %w", err)
	}
	return k, nil
}

// WriteShardKey writes a fresh shard key to path (hex, mode 0600; an
// existing file is an error).
func WriteShardKey(path string) error {
	k, err := NewShardKey()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("deploy: shard key: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(k) + "\n")
	err = errors.Join(err, f.Sync(), f.Close())
	if err != nil {
		return fmt.Errorf("deploy: shard key %s: %w", path, err)
	}
	return nil
}

// ReadShardKey reads a key WriteShardKey wrote.
func ReadShardKey(path string) (*ShardKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("deploy: shard key: %w", err)
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("deploy: shard key %s: not hex: %w", path, err)
	}
	sk, err := ParseShardKey(k)
	if err != nil {
		return nil, fmt.Errorf("deploy: shard key %s: %w", path, err)
	}
	return sk, nil
}

// ParseShardKey derives the sealing and drawing keys from a raw key of
// ShardKeyBytes bytes (HKDF-SHA256, one label each).
func ParseShardKey(k []byte) (*ShardKey, error) {
	if len(k) != ShardKeyBytes {
		return nil, fmt.Errorf("deploy: shard key of %d bytes, want %d", len(k), ShardKeyBytes)
	}
	ak, err := hkdf.Key(sha256.New, k, nil, "shufflefl shard queue aead v1", 32)
	if err != nil {
		return nil, err
	}
	sk, err := hkdf.Key(sha256.New, k, nil, "shufflefl shard draws v1", 32)
	if err != nil {
		return nil, err
	}
	blk, err := aes.NewCipher(ak)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, err
	}
	return &ShardKey{aead: aead, seed: sk}, nil
}

// shardAD is a queue message's associated data: its subject and id.
func shardAD(subject, id string) []byte {
	return []byte("shufflefl shard v1\x00" + subject + "\x00" + id)
}

// seal encodes env and seals it for subject and id: a random nonce, then
// the AES-GCM ciphertext.
func (k *ShardKey) seal(subject, id string, env *wire.ShardEnvelope) ([]byte, error) {
	pt, err := proto.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("deploy: shard queue: encoding: %w", err)
	}
	out := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(pt)+k.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, fmt.Errorf("deploy: shard queue: nonce: %w", err)
	}
	return k.aead.Seal(out, out, pt, shardAD(subject, id)), nil
}

// errShardMessage marks a shard queue message that does not open under
// the key or does not decode to a valid envelope.
var errShardMessage = errors.New("deploy: shard queue: bad message")

// open opens and validates a message sealed for subject and id.
func (k *ShardKey) open(subject, id string, data []byte) (*wire.ShardEnvelope, error) {
	ns := k.aead.NonceSize()
	if len(data) < ns+k.aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes", errShardMessage, len(data))
	}
	pt, err := k.aead.Open(nil, data[:ns], data[ns:], shardAD(subject, id))
	if err != nil {
		return nil, fmt.Errorf("%w: %s (%s): does not open under the shard key", errShardMessage, subject, id)
	}
	env := &wire.ShardEnvelope{}
	if err := proto.Unmarshal(pt, env); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errShardMessage, subject, err)
	}
	if err := env.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errShardMessage, subject, err)
	}
	return env, nil
}

// draws returns the generator of one of round t's draws (purpose, e.g.
// "pad" or "scatter"): ChaCha8 keyed by HMAC-SHA256 of the run, the round
// and the purpose under the key's drawing key. It is unpredictable to
// anyone without the shard key and the same in every process that holds
// it, and after a restart.
func (k *ShardKey) draws(runID string, t int64, purpose string) *mrand.Rand {
	m := hmac.New(sha256.New, k.seed)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t))
	m.Write([]byte(purpose + "\x00" + runID + "\x00"))
	m.Write(b[:])
	var seed [32]byte
	copy(seed[:], m.Sum(nil))
	return mrand.New(mrand.NewChaCha8(seed))
}

// shardDraws returns round t's generator for purpose: in test mode the
// simulation's stream rng.Stream(seed, LabelShuffle, t, label...), else
// key.draws. The padding's is label 0, the single shuffler's padding
// stream, so a sharded round in test mode pads exactly as one shuffler.
func shardDraws(testSeed *uint64, key *ShardKey, runID string, t int64, purpose string, label ...uint64) *mrand.Rand {
	if testSeed != nil {
		return rng.Stream(*testSeed, append([]uint64{rng.LabelShuffle, uint64(t)}, label...)...)
	}
	return key.draws(runID, t, purpose)
}

// shardSubject is the subject of shard s's messages of round t;
// shardFilter matches all of shard s's.
func shardSubject(tag string, s int, t int64) string {
	return fmt.Sprintf("%s.%s.%d.%d", shardQueueName, tag, s, t)
}

func shardFilter(tag string, s int) string {
	return fmt.Sprintf("%s.%s.%d.>", shardQueueName, tag, s)
}

// shardChunkID and shardCloseID are the de-duplication ids of chunk i of
// shard s's part of round t and of its close.
func shardChunkID(tag string, t int64, s, i int) string {
	return fmt.Sprintf("%s/%d/%d/c%d", tag, t, s, i)
}

func shardCloseID(tag string, t int64, s int) string {
	return fmt.Sprintf("%s/%d/%d/close", tag, t, s)
}

// withGeneration is the queue id of a message of base id in routing
// generation gen: base itself for the first routing, base#gen for a
// routing again (Shuffler.rerouting), so that the queue's de-duplication
// does not drop it.
func withGeneration(base string, gen int) string {
	if gen == 0 {
		return base
	}
	return base + "#" + strconv.Itoa(gen)
}

// baseID is the base id of a queue id (withGeneration's inverse), ok
// false when its generation suffix is malformed.
func baseID(id string) (string, bool) {
	i := strings.LastIndexByte(id, '#')
	if i < 0 {
		return id, true
	}
	g, err := strconv.Atoi(id[i+1:])
	if err != nil || g < 1 || strconv.Itoa(g) != id[i+1:] {
		return "", false
	}
	return id[:i], true
}

// shardQueue is the shard queue and the most ciphertext bytes of a chunk.
type shardQueue struct {
	q        *jetstream.Queue
	maxChunk int
}

// openShardQueue creates or opens the shard queue; the front and every
// shard call it with the same settings.
func openShardQueue(ctx context.Context, conn *jetstream.Conn) (*shardQueue, error) {
	maxMsg := int(conn.MaxPayload()) - 4<<10
	if maxMsg < 4*shardChunkSlack {
		return nil, fmt.Errorf("deploy: shard queue: the NATS server's max payload of %d bytes is too small", conn.MaxPayload())
	}
	q, err := conn.Queue(ctx, jetstream.QueueConfig{Name: shardQueueName, DedupWindow: shardDedupWindow, MaxMsgSize: maxMsg})
	if err != nil {
		return nil, fmt.Errorf("deploy: shard queue: %w", err)
	}
	return &shardQueue{q: q, maxChunk: min(shardChunkBytes, maxMsg-shardChunkSlack)}, nil
}
