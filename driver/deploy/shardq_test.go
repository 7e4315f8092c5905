package deploy

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/shufflefl/shufflefl/transport/wire"
)

func testShardKey(t *testing.T) *ShardKey {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shard.key")
	if err := WriteShardKey(path); err != nil {
		t.Fatal(err)
	}
	if err := WriteShardKey(path); err == nil {
		t.Fatal("WriteShardKey overwrote an existing key")
	}
	k, err := ReadShardKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestShardEnvelopeBinding: a queue message opens only under its key, its
// subject and its id, and a valid envelope is required.
func TestShardEnvelopeBinding(t *testing.T) {
	k, other := testShardKey(t), testShardKey(t)
	env := &wire.ShardEnvelope{Body: &wire.ShardEnvelope_Chunk{Chunk: &wire.ShardChunk{Round: 3, Shard: 1, Index: 7,
		Messages: []*wire.SealedMessage{{Label: 4, Ciphertext: []byte("sealed")}}}}}
	subj, id := shardSubject("tag", 1, 3), shardChunkID("tag", 3, 1, 7)
	data, err := k.seal(subj, id, env)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.open(subj, id, data)
	if err != nil || got.GetChunk().GetIndex() != 7 || string(got.GetChunk().Messages[0].Ciphertext) != "sealed" {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)-1] ^= 1
	empty, err := k.seal(subj, id, &wire.ShardEnvelope{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		key      *ShardKey
		subj, id string
		data     []byte
	}{
		{"another key", other, subj, id, data},
		{"another subject", k, shardSubject("tag", 2, 3), id, data},
		{"another id", k, subj, shardChunkID("tag", 3, 1, 8), data},
		{"a flipped bit", k, subj, id, flipped},
		{"too short", k, subj, id, data[:10]},
		{"no body", k, subj, id, empty},
	} {
		if _, err := c.key.open(c.subj, c.id, c.data); !errors.Is(err, errShardMessage) {
			t.Errorf("%s: %v, want errShardMessage", c.name, err)
		}
	}
}

// TestShardDrawsDeterministic: the draws depend on the key, the run, the
// round and the purpose only.
func TestShardDrawsDeterministic(t *testing.T) {
	k, other := testShardKey(t), testShardKey(t)
	first := func(k *ShardKey, run string, r int64, p string) uint64 { return k.draws(run, r, p).Uint64() }
	a := first(k, "run", 1, "pad")
	if a != first(k, "run", 1, "pad") {
		t.Fatal("the same draw differs")
	}
	for name, b := range map[string]uint64{
		"key": first(other, "run", 1, "pad"), "run": first(k, "run2", 1, "pad"),
		"round": first(k, "run", 2, "pad"), "purpose": first(k, "run", 1, "scatter"),
	} {
		if a == b {
			t.Errorf("another %s gives the same draw", name)
		}
	}
	if _, err := ParseShardKey(make([]byte, 16)); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}
