package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRetry: fn is retried, a line a retry, until it succeeds; past the
// deadline or after ctx ends the last error is returned.
func TestRetry(t *testing.T) {
	errBusy := errors.New("jetstream: no meta leader")
	for _, c := range []struct {
		name     string
		fails    int
		deadline time.Duration
		cancel   bool
		want     string // "" for success
		lines    int
	}{
		{"first call", 0, time.Minute, false, "", 0},
		{"after two failures", 2, time.Minute, false, "", 3},
		{"past the deadline", 100, 600 * time.Millisecond, false, "no meta leader (gave up after", 1},
		{"context ended", 100, time.Minute, true, "context canceled", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				cancel()
			}
			calls := 0
			var lines []string
			err := Retry(ctx, "the queue", c.deadline, func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }, func() error {
				calls++
				if calls <= c.fails {
					return errBusy
				}
				return nil
			})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if c.want == "" && calls != c.fails+1 {
				t.Errorf("%d calls, want %d", calls, c.fails+1)
			}
			if !c.cancel && len(lines) != c.lines {
				t.Errorf("lines %q, want %d", lines, c.lines)
			}
			if c.fails > 0 && c.want == "" && !strings.HasPrefix(lines[0], "waiting for the queue (retry 1): jetstream: no meta leader") {
				t.Errorf("first line %q", lines[0])
			}
		})
	}
}
