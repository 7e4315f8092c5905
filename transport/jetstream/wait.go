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
	var c *Conn
	retries, end, err := backoff(ctx, deadline, func() (bool, error) {
		var err error
		c, err = Connect(url, opts...)
		return errors.Is(err, nats.ErrAuthorization), err
	}, func(retry int, err error) {
		if logf != nil {
			logf("waiting for NATS %s (retry %d): %v", url, retry, err)
		}
	})
	switch end {
	case endPermanent: // a refused key does not get better by waiting
		return nil, fmt.Errorf("%w (the server refuses this key: configure it with the deployment's nats/nats-server.conf, or give the role its key)", err)
	case endDeadline:
		return nil, fmt.Errorf("%w (gave up after %v, the connect deadline)", err, time.Since(start).Round(time.Millisecond))
	case endContext:
		return nil, fmt.Errorf("jetstream: connect to %s: %w", url, ctx.Err())
	}
	if retries > 0 && logf != nil {
		logf("connected to NATS %s after %d retries", url, retries)
	}
	return c, nil
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
	retries, end, err := backoff(ctx, deadline, func() (bool, error) { return false, fn() }, func(retry int, err error) {
		if logf != nil {
			logf("waiting for %s (retry %d): %v", what, retry, err)
		}
	})
	switch end {
	case endDeadline:
		return fmt.Errorf("%w (gave up after %v)", err, time.Since(start).Round(time.Millisecond))
	case endContext:
		return fmt.Errorf("%s: %w (%v)", what, ctx.Err(), err)
	}
	if retries > 0 && logf != nil {
		logf("%s: ready after %d retries", what, retries)
	}
	return nil
}

// How a backoff loop ended.
const (
	endDone      = iota // the attempt succeeded
	endPermanent        // the attempt failed with an error that waiting does not mend
	endDeadline         // the next wait would pass the deadline
	endContext          // ctx ended
)

// backoff is the loop of ConnectWait and Retry: it calls try until it
// succeeds or fails permanently, ctx ends, or the next wait (250 ms
// doubling to 10 s) would end past deadline, calling waiting with the
// retry's number and the error before each wait. It returns the retries
// made, how it ended and the last error.
func backoff(ctx context.Context, deadline time.Duration, try func() (permanent bool, err error), waiting func(retry int, err error)) (int, int, error) {
	start := time.Now()
	wait := 250 * time.Millisecond
	for retry := 0; ; retry++ {
		permanent, err := try()
		switch {
		case err == nil:
			return retry, endDone, nil
		case permanent:
			return retry, endPermanent, err
		case ctx.Err() != nil:
			return retry, endContext, err
		case time.Since(start)+wait > deadline:
			return retry, endDeadline, err
		}
		waiting(retry+1, err)
		select {
		case <-ctx.Done():
			return retry, endContext, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}
