package deploy

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShardQueuePurgedOrDeleted: an operator (or a retention limit)
// purges or deletes the shard queue while a routed round's chunks wait in
// it for the shards. The round does not hang: the front, still without
// the analyzer's answer to its manifest, routes the round again under
// fresh message ids (creating the queue again after a delete), the shards
// (re-opening their consumer) store the chunks, and the parts are those of
// a fault-free round — the routed messages and one shuffler's dummies.
func TestShardQueuePurgedOrDeleted(t *testing.T) {
	const clients, shards = 6, 2
	for _, tc := range []struct {
		name  string
		fault func(ctx context.Context, r *shardRig) error
	}{
		{"purge", func(ctx context.Context, r *shardRig) error { return r.q.q.Purge(ctx, shardQueueName+".>") }},
		{"delete", func(ctx context.Context, r *shardRig) error { return r.q.q.Delete(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newShardRig(t, "ss-double", clients)
			dir := t.TempDir()
			r.an.refuse.Store(true) // the manifest stays unanswered
			reps := r.frontRound(t, dir, clients, shards, 500*time.Millisecond)
			waitLog(t, r, "round 1: routed")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tc.fault(ctx, r); err != nil {
				t.Fatal(err)
			}
			// The shards start after the fault: they never saw the chunks.
			for s := 1; s <= shards; s++ {
				r.shard(t, s, shards, filepath.Join(dir, fmt.Sprintf("shard-%d.db", s)), nil)
			}
			waitLog(t, r, "routing the round again")
			r.an.refuse.Store(false)
			r.checkShardedRound(t, reps, clients, shards)
		})
	}
}

// waitLog waits until the rig's log holds want.
func waitLog(t *testing.T, r *shardRig, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(r.logs.all(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log does not say %q:\n%s", want, r.logs.all())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGenerationIDs: a routing again's ids carry their generation, which
// the shards strip to the base id (the chunk's nonce); a malformed
// suffix is not a base id.
func TestGenerationIDs(t *testing.T) {
	for _, tc := range []struct {
		id, base string
		ok       bool
	}{
		{withGeneration("tag/1/2/c3", 0), "tag/1/2/c3", true},
		{withGeneration("tag/1/2/c3", 2), "tag/1/2/c3", true},
		{"tag/1/2/close#17", "tag/1/2/close", true},
		{"tag/1/2/c3#0", "", false},
		{"tag/1/2/c3#x", "", false},
		{"tag/1/2/c3#01", "", false},
		{"tag/1/2/c3#", "", false},
	} {
		if base, ok := baseID(tc.id); base != tc.base || ok != tc.ok {
			t.Errorf("baseID(%q) = %q, %v; want %q, %v", tc.id, base, ok, tc.base, tc.ok)
		}
	}
}
