package jetstream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func openLog(t testing.TB, c *Conn, cfg LogConfig) *Log {
	t.Helper()
	l, err := c.Log(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// readN reads n entries of subject from the start.
func readN(t *testing.T, l *Log, subject string, n int) []Entry {
	t.Helper()
	r, err := l.Read(testCtx(t), subject)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []Entry
	for len(out) < n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		e, err := r.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("entry %d of %d: %v", len(out), n, err)
		}
		out = append(out, e)
	}
	return out
}

// TestLogKeepsAndDeduplicates: a log's messages stay after they are read
// (every reader reads them all, in order), a replayed id stores nothing,
// Count counts by subject, and Purge removes one subject's messages only.
func TestLogKeepsAndDeduplicates(t *testing.T) {
	c := connect(t, embedded(t, t.TempDir()))
	l := openLog(t, c, LogConfig{Name: "results"})
	ctx := testCtx(t)
	for i, id := range []string{"a/0", "a/1", "a/1", "a/2"} {
		ack, err := l.Publish(ctx, "results.a."+id[2:], id, []byte(fmt.Sprint("value ", id)))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != (i == 2) {
			t.Errorf("publish %d (%s): duplicate %v", i, id, ack.Duplicate)
		}
	}
	if _, err := l.Publish(ctx, "results.b.0", "b/0", []byte("other")); err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < 2; pass++ { // a second reader reads them all again
		es := readN(t, l, "results.a.>", 3)
		for i, e := range es {
			if want := fmt.Sprint("a/", i); e.ID != want || string(e.Data) != "value "+want || e.Subject != fmt.Sprint("results.a.", i) {
				t.Errorf("pass %d entry %d: %q %q %q", pass, i, e.Subject, e.ID, e.Data)
			}
			if i > 0 && e.Sequence <= es[i-1].Sequence {
				t.Errorf("entry %d: sequence %d after %d", i, e.Sequence, es[i-1].Sequence)
			}
		}
	}
	for subject, want := range map[string]uint64{"results.a.>": 3, "results.b.>": 1, "results.>": 4, "results.a.1": 1} {
		if n, err := l.Count(ctx, subject); err != nil || n != want {
			t.Errorf("Count(%s) = %d, %v; want %d", subject, n, err, want)
		}
	}
	if err := l.Purge(ctx, "results.a.>"); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Count(ctx, "results.>"); err != nil || n != 1 {
		t.Errorf("after the purge: %d messages, %v; want 1", n, err)
	}
	if es := readN(t, l, "results.>", 1); es[0].ID != "b/0" {
		t.Errorf("after the purge the log starts with %q", es[0].ID)
	}
}

// TestLogReaderWaits: a reader returns a message published after it
// started, and ctx's error when none comes.
func TestLogReaderWaits(t *testing.T) {
	c := connect(t, embedded(t, t.TempDir()))
	l := openLog(t, c, LogConfig{Name: "later"})
	r, err := l.Read(testCtx(t), "later.>")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on an empty log: %v, want the deadline", err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		l.Publish(context.Background(), "later.x", "x", []byte("late"))
	}()
	e, err := r.Next(testCtx(t))
	if err != nil || string(e.Data) != "late" {
		t.Fatalf("Next: %q, %v", e.Data, err)
	}
}

// TestLogRefuses: bad names and subjects are ErrInvalid; a log cannot
// reopen a work queue's stream.
func TestLogRefuses(t *testing.T) {
	c := connect(t, embedded(t, t.TempDir()))
	ctx := testCtx(t)
	if _, err := c.Log(ctx, LogConfig{Name: "bad.name"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := c.Log(ctx, LogConfig{Name: "neg", MaxBytes: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative max bytes: %v", err)
	}
	l := openLog(t, c, LogConfig{Name: "ok"})
	for _, s := range []string{"other.x", "ok.", "ok", "ok..x"} {
		if _, err := l.Read(ctx, s); !errors.Is(err, ErrInvalid) {
			t.Errorf("Read(%q): %v", s, err)
		}
		if _, err := l.Count(ctx, s); !errors.Is(err, ErrInvalid) {
			t.Errorf("Count(%q): %v", s, err)
		}
	}
	if _, err := l.Publish(ctx, "ok.x", "", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("publish without id: %v", err)
	}
	openQueue(t, c, QueueConfig{Name: "work"})
	if _, err := c.Log(ctx, LogConfig{Name: "work"}); err == nil {
		t.Error("a log reopened a work queue's stream")
	}
}
