package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// Defaults of a [QueueConfig].
const (
	DefaultDedupWindow = 2 * time.Minute
	DefaultMaxMsgSize  = 1 << 20
	DefaultMaxBytes    = 1 << 30
	// MaxIDLen is the longest message id [Queue.Publish] accepts.
	MaxIDLen = 256
	// BatchWindow is how many messages [Queue.PublishBatch] has in
	// flight.
	BatchWindow = 1024
	// headerAllowance is what the stream's size limit adds to MaxMsgSize
	// for the headers (the message id) that travel with the data.
	headerAllowance = 1 << 10
)

// Errors a caller may test for with [errors.Is].
var (
	// ErrInvalid marks a malformed argument: an empty or ill-formed
	// subject or id, a bad configuration.
	ErrInvalid = errors.New("invalid argument")
	// ErrTooLarge marks a message over its queue's MaxMsgSize.
	ErrTooLarge = errors.New("message too large")
	// ErrQueueFull marks a publish refused because the queue holds its
	// MaxBytes: nothing is discarded to make room.
	ErrQueueFull = errors.New("queue full")
)

// QueueConfig describes a work queue. Zero fields take the defaults.
type QueueConfig struct {
	// Name names the stream: letters, digits, '-' and '_'. The queue owns
	// every subject that starts with Name + ".".
	Name string
	// DedupWindow is how long a message id is remembered: a publish with
	// an id seen within it is reported as a duplicate and not stored
	// (default [DefaultDedupWindow]).
	DedupWindow time.Duration
	// MaxMsgSize is the largest message data in bytes (default
	// [DefaultMaxMsgSize]); with the id's header it must fit the server's
	// max payload.
	MaxMsgSize int
	// MaxBytes caps the bytes the queue holds (default [DefaultMaxBytes]);
	// a publish beyond it fails with [ErrQueueFull].
	MaxBytes int64
	// Replicas is how many cluster servers store the queue (default: the
	// connection's, see [WithReplicas]).
	Replicas int
}

// Queue is a durable work queue: a stream with work-queue retention (a
// message is deleted once a consumer acknowledges it) and de-duplication by
// message id. It is safe for concurrent use.
type Queue struct {
	conn   *Conn
	stream js.Stream
	name   string
	prefix string // name + "."
	maxMsg int
}

// Ack is the server's acknowledgement of a published message.
type Ack struct {
	// Sequence is the message's position in the stream (of the earlier
	// message with the same id when Duplicate).
	Sequence uint64
	// Duplicate reports that a message with the same id was already
	// stored within the de-duplication window: nothing new was stored.
	Duplicate bool
}

// Message is one message of a [Queue.PublishBatch].
type Message struct {
	Subject string
	ID      string
	Data    []byte
}

// Queue creates the work queue cfg describes, or opens it if it exists (its
// limits are then updated to cfg's). A queue's retention cannot change: a
// stream of the same name that is not a work queue is an error.
func (c *Conn) Queue(ctx context.Context, cfg QueueConfig) (*Queue, error) {
	sc, err := c.streamConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("jetstream: queue %q: %w", cfg.Name, err)
	}
	st, err := c.js.CreateOrUpdateStream(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: create queue %q: %w%s", cfg.Name, err, placementHint(err, sc.Replicas))
	}
	return &Queue{conn: c, stream: st, name: cfg.Name, prefix: cfg.Name + ".", maxMsg: int(sc.MaxMsgSize) - headerAllowance}, nil
}

// errNoPeers is JetStream's error code for a stream that no set of
// servers can store ("no suitable peers for placement").
const errNoPeers = 10005

// placementHint explains a stream creation's err when the cluster could
// not place the stream's replicas ("" otherwise).
func placementHint(err error, replicas int) string {
	var apiErr *js.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != errNoPeers {
		return ""
	}
	return fmt.Sprintf(" (%d replicas: fewer servers of the cluster can store the stream, or they are not all up)", replicas)
}

// streamConfig validates cfg, fills its defaults and returns the stream
// configuration.
func (c *Conn) streamConfig(cfg QueueConfig) (js.StreamConfig, error) {
	if err := validName(cfg.Name); err != nil {
		return js.StreamConfig{}, err
	}
	if cfg.DedupWindow == 0 {
		cfg.DedupWindow = DefaultDedupWindow
	}
	if cfg.MaxMsgSize == 0 {
		cfg.MaxMsgSize = DefaultMaxMsgSize
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = c.replicas
	}
	switch {
	case cfg.DedupWindow < 100*time.Millisecond:
		return js.StreamConfig{}, fmt.Errorf("%w: dedup window %v is under 100ms", ErrInvalid, cfg.DedupWindow)
	case cfg.MaxMsgSize < 0:
		return js.StreamConfig{}, fmt.Errorf("%w: negative max message size %d", ErrInvalid, cfg.MaxMsgSize)
	case int64(cfg.MaxMsgSize)+headerAllowance > c.MaxPayload():
		return js.StreamConfig{}, fmt.Errorf("%w: max message size %d bytes (+%d for headers) exceeds the server's max payload %d",
			ErrInvalid, cfg.MaxMsgSize, headerAllowance, c.MaxPayload())
	case cfg.MaxBytes < 0:
		return js.StreamConfig{}, fmt.Errorf("%w: negative max bytes %d", ErrInvalid, cfg.MaxBytes)
	case cfg.Replicas < 1 || cfg.Replicas > MaxReplicas:
		return js.StreamConfig{}, fmt.Errorf("%w: replicas %d is not in [1, %d]", ErrInvalid, cfg.Replicas, MaxReplicas)
	}
	return js.StreamConfig{
		Name:       cfg.Name,
		Subjects:   []string{cfg.Name + ".>"},
		Retention:  js.WorkQueuePolicy,
		Storage:    js.FileStorage,
		Discard:    js.DiscardNew,
		MaxMsgs:    -1,
		MaxBytes:   cfg.MaxBytes,
		MaxMsgSize: int32(cfg.MaxMsgSize + headerAllowance),
		Duplicates: cfg.DedupWindow,
		Replicas:   cfg.Replicas,
	}, nil
}

// validName checks a queue or consumer name: non-empty, letters, digits,
// '-' and '_' only.
func validName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalid)
	}
	if len(name) > 128 {
		return fmt.Errorf("%w: name of %d bytes is over 128", ErrInvalid, len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%w: name %q has %q (only letters, digits, '-' and '_')", ErrInvalid, name, r)
		}
	}
	return nil
}

// Name returns the queue's stream name.
func (q *Queue) Name() string { return q.name }

// check validates one message before it is sent.
func (q *Queue) check(subject, id string, data []byte) error {
	if subject == "" {
		return fmt.Errorf("%w: empty subject", ErrInvalid)
	}
	if !strings.HasPrefix(subject, q.prefix) || len(subject) == len(q.prefix) {
		return fmt.Errorf("%w: subject %q is not under the queue's %q", ErrInvalid, subject, q.prefix+"*")
	}
	for _, tok := range strings.Split(subject, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return fmt.Errorf("%w: subject %q has an empty, wildcard or blank token", ErrInvalid, subject)
		}
	}
	if id == "" {
		return fmt.Errorf("%w: empty message id (de-duplication needs one)", ErrInvalid)
	}
	if len(id) > MaxIDLen || strings.ContainsAny(id, "\r\n") {
		return fmt.Errorf("%w: message id of %d bytes is over %d or has a line break", ErrInvalid, len(id), MaxIDLen)
	}
	if len(data) > q.maxMsg {
		return fmt.Errorf("%w: %d bytes on %s, over the queue's max of %d", ErrTooLarge, len(data), subject, q.maxMsg)
	}
	return nil
}

// Publish stores data on subject (which must start with the queue's name and
// a dot) under the message id, and returns once the server has stored it;
// an id already stored within the de-duplication window gives an Ack with
// Duplicate set and stores nothing. During a cluster's failover it
// retries, with the same id, for up to [FailoverWait]. After an error the
// message may or may not be stored: publishing again with the same id is
// safe.
func (q *Queue) Publish(ctx context.Context, subject, id string, data []byte) (Ack, error) {
	if err := q.check(subject, id, data); err != nil {
		return Ack{}, fmt.Errorf("jetstream: publish to %s: %w", q.name, err)
	}
	pa, err := withFailover(ctx, func(tctx context.Context) (*js.PubAck, error) {
		pa, err := q.conn.js.Publish(tctx, subject, data, js.WithMsgID(id), js.WithExpectStream(q.name))
		return pa, q.conn.gone(ctx, q.name, err)
	})
	if err != nil {
		return Ack{}, fmt.Errorf("jetstream: publish %q to %s: %w", id, subject, classify(err))
	}
	return Ack{Sequence: pa.Sequence, Duplicate: pa.Duplicate}, nil
}

// PublishBatch publishes msgs without waiting for each acknowledgement in
// turn (up to [BatchWindow] at a time in flight), and returns once the
// server has acknowledged them all, with their Acks in order. On error, the
// Acks of the messages before the first failure are filled in; any message
// may have been stored, and publishing the batch again is safe.
func (q *Queue) PublishBatch(ctx context.Context, msgs []Message) ([]Ack, error) {
	for i, m := range msgs {
		if err := q.check(m.Subject, m.ID, m.Data); err != nil {
			return nil, fmt.Errorf("jetstream: publish batch to %s: message %d: %w", q.name, i, err)
		}
	}
	acks := make([]Ack, 0, len(msgs))
	var failing time.Time // the first failure of a failover
	for len(acks) < len(msgs) {
		var err error
		if acks, err = q.publishWindow(ctx, msgs, acks); err != nil {
			err = q.conn.gone(ctx, q.name, err)
			if transient(ctx, err) && (failing.IsZero() || time.Since(failing) < FailoverWait) {
				if failing.IsZero() {
					failing = time.Now()
				}
				time.Sleep(failoverRetry) // then the window again, from its first unacknowledged message
				continue
			}
			return acks, fmt.Errorf("jetstream: publish batch to %s: %w", q.name, err)
		}
	}
	return acks, nil
}

// publishWindow publishes the next BatchWindow messages of msgs after those
// acks holds, and appends their Acks.
func (q *Queue) publishWindow(ctx context.Context, msgs []Message, acks []Ack) ([]Ack, error) {
	from := len(acks)
	window := msgs[from:min(len(msgs), from+BatchWindow)]
	futures := make([]js.PubAckFuture, len(window))
	for i, m := range window {
		nm := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: nats.Header{}}
		f, err := q.conn.js.PublishMsgAsync(nm, js.WithMsgID(m.ID), js.WithExpectStream(q.name))
		if err != nil {
			return acks, fmt.Errorf("message %d (%q): %w", from+i, m.ID, classify(err))
		}
		futures[i] = f
	}
	for i, f := range futures {
		select {
		case pa := <-f.Ok():
			acks = append(acks, Ack{Sequence: pa.Sequence, Duplicate: pa.Duplicate})
		case err := <-f.Err():
			return acks, fmt.Errorf("message %d (%q): %w", from+i, window[i].ID, classify(err))
		case <-ctx.Done():
			return acks, fmt.Errorf("waiting for message %d: %w", from+i, ctx.Err())
		}
	}
	return acks, nil
}

// Server error codes that classify maps (nats-server's
// jetstream_errors_generated.go).
const (
	codeStoreFailed   = 10077 // "maximum bytes exceeded", "maximum messages exceeded", ...
	codeInsufficient  = 10023 // the server's store is full
	codeMsgTooLarge   = 10054 // over the stream's MaxMsgSize
	fullDescriptionOf = "maximum"
)

// classify marks server refusals that callers may want to tell apart.
func classify(err error) error {
	var apiErr *js.APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.ErrorCode == codeStoreFailed && strings.Contains(apiErr.Description, fullDescriptionOf),
			apiErr.ErrorCode == codeInsufficient:
			return fmt.Errorf("%w: %w", ErrQueueFull, err)
		case apiErr.ErrorCode == codeMsgTooLarge:
			return fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return err
}

// Len returns the number of messages in the queue: published and not yet
// acknowledged by a consumer.
func (q *Queue) Len(ctx context.Context) (uint64, error) {
	info, err := q.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("jetstream: queue %s: info: %w", q.name, err)
	}
	return info.State.Msgs, nil
}

// Delete removes the queue, its messages and its consumers.
func (q *Queue) Delete(ctx context.Context) error {
	if err := q.conn.js.DeleteStream(ctx, q.name); err != nil {
		return fmt.Errorf("jetstream: delete queue %s: %w", q.name, err)
	}
	return nil
}
