package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
)

// LogConfig describes a [Log]. Zero fields take the defaults.
type LogConfig struct {
	// Name names the stream: letters, digits, '-' and '_'. The log owns
	// every subject that starts with Name + ".".
	Name string
	// DedupWindow is how long a message id is remembered (default
	// [DefaultDedupWindow]).
	DedupWindow time.Duration
	// MaxMsgSize is the largest message data in bytes (default
	// [DefaultMaxMsgSize]).
	MaxMsgSize int
	// MaxBytes caps the bytes the log holds (default: no cap but the
	// server's store); a publish beyond it fails with [ErrQueueFull].
	MaxBytes int64
	// Replicas is how many cluster servers store the log (default: the
	// connection's).
	Replicas int
}

// Log is a durable stream of messages that stay until they are purged:
// unlike a [Queue]'s, a message is not removed when it is read, and any
// number of readers read a subject's messages, each from the first, in the
// order they were stored. Publishing de-duplicates by message id as a
// Queue's does. It is safe for concurrent use.
type Log struct{ q *Queue }

// Entry is a message read from a [Log].
type Entry struct {
	Subject  string
	ID       string // the id it was published with
	Data     []byte
	Sequence uint64 // its position in the log's stream
}

// Log creates the log cfg describes, or opens it if it exists (its limits
// are then updated to cfg's). A stream of the same name with another
// retention (a [Queue]) is an error.
func (c *Conn) Log(ctx context.Context, cfg LogConfig) (*Log, error) {
	sc, err := c.streamConfig(QueueConfig{Name: cfg.Name, DedupWindow: cfg.DedupWindow, MaxMsgSize: cfg.MaxMsgSize, MaxBytes: cfg.MaxBytes, Replicas: cfg.Replicas})
	if err != nil {
		return nil, fmt.Errorf("jetstream: log %q: %w", cfg.Name, err)
	}
	sc.Retention = js.LimitsPolicy
	if cfg.MaxBytes == 0 {
		sc.MaxBytes = -1
	}
	st, err := c.js.CreateOrUpdateStream(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: create log %q: %w%s", cfg.Name, err, placementHint(err, sc.Replicas))
	}
	return &Log{q: &Queue{conn: c, stream: st, name: cfg.Name, prefix: cfg.Name + ".", maxMsg: int(sc.MaxMsgSize) - headerAllowance}}, nil
}

// Name returns the log's stream name.
func (l *Log) Name() string { return l.q.name }

// Publish stores data on subject under the message id, as [Queue.Publish]
// does: once stored it stays until purged, and an id already stored within
// the de-duplication window stores nothing (the Ack says Duplicate).
func (l *Log) Publish(ctx context.Context, subject, id string, data []byte) (Ack, error) {
	return l.q.Publish(ctx, subject, id, data)
}

// filter checks a subject filter of the log: under its prefix, with NATS
// wildcards allowed.
func (l *Log) filter(subject string) error {
	if !strings.HasPrefix(subject, l.q.prefix) || len(subject) == len(l.q.prefix) {
		return fmt.Errorf("%w: subject %q is not under the log's %q", ErrInvalid, subject, l.q.prefix+">")
	}
	for _, tok := range strings.Split(subject, ".") {
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
			return fmt.Errorf("%w: subject %q has an empty or blank token", ErrInvalid, subject)
		}
	}
	return nil
}

// Count returns how many messages the log holds on the subjects matching
// subject (NATS wildcards allowed).
func (l *Log) Count(ctx context.Context, subject string) (uint64, error) {
	if err := l.filter(subject); err != nil {
		return 0, fmt.Errorf("jetstream: count %s: %w", l.q.name, err)
	}
	info, err := l.q.stream.Info(ctx, js.WithSubjectFilter(subject))
	if err != nil {
		return 0, fmt.Errorf("jetstream: count %s of %s: %w", subject, l.q.name, err)
	}
	var n uint64
	for _, k := range info.State.Subjects {
		n += k
	}
	return n, nil
}

// Reader reads a [Log]'s messages on some subjects in order; see
// [Log.Read].
type Reader struct {
	log string
	it  js.MessagesContext
}

// Read returns a reader of the log's messages on the subjects matching
// subject (NATS wildcards allowed): first those stored, in order, then
// those published while it reads. Close it when done.
func (l *Log) Read(ctx context.Context, subject string) (*Reader, error) {
	if err := l.filter(subject); err != nil {
		return nil, fmt.Errorf("jetstream: read %s: %w", l.q.name, err)
	}
	oc, err := l.q.stream.OrderedConsumer(ctx, js.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, fmt.Errorf("jetstream: read %s of %s: %w", subject, l.q.name, err)
	}
	it, err := oc.Messages()
	if err != nil {
		return nil, fmt.Errorf("jetstream: read %s of %s: %w", subject, l.q.name, err)
	}
	return &Reader{log: l.q.name, it: it}, nil
}

// Next returns the next message, waiting for one until ctx is done (then
// it returns ctx's error).
func (r *Reader) Next(ctx context.Context) (Entry, error) {
	m, err := r.it.Next(js.NextContext(ctx))
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, js.ErrMsgIteratorClosed) {
			return Entry{}, fmt.Errorf("jetstream: read %s: %w", r.log, ctx.Err())
		}
		return Entry{}, fmt.Errorf("jetstream: read %s: %w", r.log, err)
	}
	e := Entry{Subject: m.Subject(), ID: m.Headers().Get(js.MsgIDHeader), Data: m.Data()}
	if meta, err := m.Metadata(); err == nil {
		e.Sequence = meta.Sequence.Stream
	}
	return e, nil
}

// Close stops the reader; a Next waiting meanwhile returns an error.
func (r *Reader) Close() { r.it.Stop() }

// Purge removes the log's messages on subject (NATS wildcards allowed).
func (l *Log) Purge(ctx context.Context, subject string) error { return l.q.Purge(ctx, subject) }

// Delete removes the log and its messages.
func (l *Log) Delete(ctx context.Context) error { return l.q.Delete(ctx) }

// OpenLog opens the existing log name without creating or changing it
// (a JetStream STREAM.INFO request only), for a user whose permissions
// allow it to publish on the log but not to manage it. Until the log is
// created it waits, retrying every 250 ms, until ctx ends.
func (c *Conn) OpenLog(ctx context.Context, name string) (*Log, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("jetstream: log %q: %w", name, err)
	}
	for {
		st, err := c.js.Stream(ctx, name)
		if err == nil {
			info := st.CachedInfo()
			if info.Config.Retention != js.LimitsPolicy {
				return nil, fmt.Errorf("jetstream: %q is not a log (retention %v)", name, info.Config.Retention)
			}
			return &Log{q: &Queue{conn: c, stream: st, name: name, prefix: name + ".", maxMsg: int(info.Config.MaxMsgSize) - headerAllowance}}, nil
		}
		if !errors.Is(err, js.ErrStreamNotFound) {
			return nil, fmt.Errorf("jetstream: open log %q: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("jetstream: open log %q: it was never created: %w", name, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
