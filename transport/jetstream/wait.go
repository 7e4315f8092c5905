package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultConnectDeadline is how long ConnectWait keeps trying by default.
const DefaultConnectDeadline = 5 * time.Minute

// ConnectWait is Connect for a service that may start before its server:
// it retries with exponential backoff (250 ms doubling to 10 s), logging
// one line a retry ("waiting for NATS URL (retry 3): ...") through logf
// when it is not nil, until it connects, ctx ends, or deadline (0:
// DefaultConnectDeadline) has passed, when it gives up with the last
// error and the time waited.
func ConnectWait(ctx context.Context, url string, deadline time.Duration, logf func(string, ...any), opts ...ConnOption) (*Conn, error) {
	if deadline <= 0 {
		deadline = DefaultConnectDeadline
	}
	// A bad option (replicas out of range, a malformed key) does not get
	// better by waiting: refused at once.
	cfg, err := connConfigOf(opts)
	if err == nil {
		_, err = cfg.natsOptionsAuth()
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: connect to %s: %w", url, err)
	}
	start := time.Now()
	wait := 250 * time.Millisecond
	for retry := 0; ; retry++ {
		c, err := Connect(url, opts...)
		if err == nil {
			if retry > 0 && logf != nil {
				logf("connected to NATS %s after %d retries", url, retry)
			}
			return c, nil
		}
		if errors.Is(err, nats.ErrAuthorization) {
			// A refused key does not get better by waiting.
			return nil, fmt.Errorf("%w (the server refuses this key: configure it with the deployment's nats/nats-server.conf, or give the role its key)", err)
		}
		if time.Since(start)+wait > deadline {
			return nil, fmt.Errorf("%w (gave up after %v, the connect deadline)", err, time.Since(start).Round(time.Millisecond))
		}
		if logf != nil {
			logf("waiting for NATS %s (retry %d): %v", url, retry+1, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("jetstream: connect to %s: %w", url, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// Retry calls fn until it succeeds, ctx ends, or deadline (0:
// DefaultConnectDeadline) has passed, with ConnectWait's backoff and one
// line a retry through logf ("waiting for WHAT (retry 3): ..."): for the
// setup a service does once connected (creating or joining a stream of a
// cluster still electing its leader, or one another service creates).
func Retry(ctx context.Context, what string, deadline time.Duration, logf func(string, ...any), fn func() error) error {
	if deadline <= 0 {
		deadline = DefaultConnectDeadline
	}
	start := time.Now()
	wait := 250 * time.Millisecond
	for retry := 0; ; retry++ {
		err := fn()
		if err == nil {
			if retry > 0 && logf != nil {
				logf("%s: ready after %d retries", what, retry)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (%v)", what, ctx.Err(), err)
		}
		if time.Since(start)+wait > deadline {
			return fmt.Errorf("%w (gave up after %v)", err, time.Since(start).Round(time.Millisecond))
		}
		if logf != nil {
			logf("waiting for %s (retry %d): %v", what, retry+1, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}
