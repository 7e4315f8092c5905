package jetstream

import (
	"bytes"
	"errors"
	"testing"
)

func TestBlobs(t *testing.T) {
	ctx := testCtx(t)
	s := embedded(t, t.TempDir())
	c := connect(t, s)
	b, err := c.Blobs(ctx, "settings")
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB: several chunks
	for _, tc := range []struct {
		name string
		data []byte
	}{{"run/spec", []byte("settings")}, {"run/round-1", big}, {"empty", nil}} {
		if err := b.Put(ctx, tc.name, tc.data); err != nil {
			t.Fatalf("Put %s: %v", tc.name, err)
		}
		got, err := b.Get(ctx, tc.name)
		if err != nil || !bytes.Equal(got, tc.data) {
			t.Fatalf("Get %s: %d bytes, %v; want %d bytes", tc.name, len(got), err, len(tc.data))
		}
	}
	if err := b.Delete(ctx, "run/spec"); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "run/spec"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	if _, err := b.Get(ctx, "run/spec"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := b.Put(ctx, "", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Put with no name: %v, want ErrInvalid", err)
	}
}

func TestPurgeAndDeleteConsumer(t *testing.T) {
	ctx := testCtx(t)
	s := embedded(t, t.TempDir())
	c := connect(t, s)
	q := openQueue(t, c, QueueConfig{Name: "tasks"})
	for i, subj := range []string{"tasks.a", "tasks.a", "tasks.b"} {
		if _, err := q.Publish(ctx, subj, string(rune('0'+i)), payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Purge(ctx, "tasks.a"); err != nil {
		t.Fatal(err)
	}
	if n := queueLen(t, q); n != 1 {
		t.Fatalf("%d messages after purging tasks.a, want 1", n)
	}
	openConsumer(t, q, ConsumerConfig{Name: "g", Subject: "tasks.b"})
	for range 2 {
		if err := q.DeleteConsumer(ctx, "g"); err != nil {
			t.Fatalf("DeleteConsumer: %v", err)
		}
	}
}
