package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// FailoverWait bounds how long a publish keeps retrying while a cluster
// fails over: a node of an R3 stream's is lost and the others elect a new
// stream leader (a few seconds), or the connection moves to another node.
// Retrying is safe because every publish carries its de-duplication id:
// a message that was stored before the failure is acknowledged again as a
// duplicate, not stored twice.
const FailoverWait = 30 * time.Second

// failoverRetry is the pause between tries during a failover.
const failoverRetry = 250 * time.Millisecond

// transient reports whether err is what a publish sees during a failover
// (no stream leader answers yet, the request's own timeout ran out, the
// connection is moving to another node) rather than a refusal, and ctx,
// the caller's, still allows a try.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, ErrStreamGone) {
		return false
	}
	var apiErr *js.APIError
	if errors.As(err, &apiErr) {
		// 503s: "JetStream system temporarily unavailable", "cluster not
		// available", no leader yet; but not a full store (also a 503).
		return apiErr.Code == 503 && !errors.Is(classify(err), ErrQueueFull)
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, js.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, js.ErrAsyncPublishTimeout)
}

// tryTimeout bounds one try of a publish during a failover: a request
// sent to a leader that died is never answered, and waiting for it to the
// caller's deadline would leave no time for a try with the new leader.
const tryTimeout = 5 * time.Second

// withFailover runs try, each time with a context of at most tryTimeout,
// until it succeeds, fails for good, ctx ends or FailoverWait has passed
// since the first transient failure.
func withFailover[T any](ctx context.Context, try func(context.Context) (T, error)) (T, error) {
	var start time.Time
	for {
		tctx, cancel := context.WithTimeout(ctx, tryTimeout)
		v, err := try(tctx)
		cancel()
		if err == nil || !transient(ctx, err) {
			return v, err
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) > FailoverWait {
			return v, err
		}
		t := time.NewTimer(failoverRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
	}
}

// ErrStreamGone marks a publish to a stream that no longer exists (it was
// deleted while in use): no failover brings it back.
var ErrStreamGone = errors.New("the stream no longer exists (deleted?)")

// gone returns err marked with ErrStreamGone when err is transient and
// the stream name is not found, else err.
func (c *Conn) gone(ctx context.Context, name string, err error) error {
	if err == nil || !transient(ctx, err) {
		return err
	}
	ictx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, serr := c.js.Stream(ictx, name); errors.Is(serr, js.ErrStreamNotFound) {
		return fmt.Errorf("%w: %s: %w", ErrStreamGone, name, err)
	}
	return err
}
