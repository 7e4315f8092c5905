package deploy

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/longtest"

	"github.com/shufflefl/shufflefl/transport/seal"
)

// TestOpenerStreamsPurgedOrDeleted: an operator (or a retention limit)
// purges or deletes the opener queue's chunk queue or results log while
// a round's opening is in flight. The opening never hangs past its
// deadline: it either finishes with the analyzer's own opening (nothing
// lost, nothing counted twice) or fails with an error that names what was
// lost, in time for the round to be voided by its deadline.
func TestOpenerStreamsPurgedOrDeleted(t *testing.T) {
	longtest.Skip(t) // about 12 s: the openers' 5 s fetches end with each case
	const deadline = 10 * time.Second
	defer func(w time.Duration) { lostChunkWait = w }(lostChunkWait)
	lostChunkWait = 300 * time.Millisecond
	cases := []struct {
		name string
		// reason is what a failure must say ("": it must not fail).
		reason string
		// fault is done once the first chunk reaches an opener.
		fault func(ctx context.Context, a *Analyzer) error
		// recovers: the opening must finish and equal the local one.
		recovers bool
	}{
		{"purge chunk queue", "purged?", func(ctx context.Context, a *Analyzer) error { return a.openq.chunks.Purge(ctx, openQueueName+".>") }, false},
		{"delete chunk queue", "deleted?", func(ctx context.Context, a *Analyzer) error { return a.openq.chunks.Delete(ctx) }, false},
		{"purge results log", "", func(ctx context.Context, a *Analyzer) error { return a.openq.results.Purge(ctx, openLogName+".>") }, true},
		{"delete results log", "deleted?", func(ctx context.Context, a *Analyzer) error { return a.openq.results.Delete(ctx) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newOpenFixture(t, "ss-double")
			ms := f.batch(t, 2, false, 31)
			want, wantStats := f.local(t, ms)
			a := f.analyzer(t, f.conn(t), 10, t.Logf)
			hit, release := make(chan struct{}), make(chan struct{})
			var first atomic.Bool
			f.openers(t, 1, crashAckWait, t.Logf, func(string) {
				if first.CompareAndSwap(false, true) {
					close(hit)
					<-release
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			var r recorder
			var got seal.Stats
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				var err error
				got, err = a.openRemote(ctx, 1, ms, r.add)
				done <- err
			}()
			select {
			case <-hit:
			case <-time.After(10 * time.Second):
				t.Fatal("no chunk reached the opener")
			}
			if err := c.fault(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			close(release)
			var err error
			select {
			case err = <-done:
			case <-time.After(deadline + 5*time.Second):
				t.Fatalf("the opening hung %v past its deadline", 5*time.Second)
			}
			t.Logf("%s: after %v: %v", c.name, time.Since(start).Round(time.Millisecond), err)
			switch {
			case err == nil:
				sameOpened(t, want, r.got)
				if got != wantStats {
					t.Fatalf("counts %+v, want %+v", got, wantStats)
				}
			case c.recovers:
				t.Fatalf("the opening failed: %v, want it to recover", err)
			case !strings.Contains(err.Error(), c.reason):
				t.Fatalf("the opening failed with %v, want the reason %q", err, c.reason)
			case time.Since(start) > deadline-2*time.Second: // a publish try may take up to 5 s before the stream is found gone
				t.Fatalf("the opening failed after %v, near its deadline of %v: the loss was not noticed", time.Since(start), deadline)
			}
		})
	}
}
