package jetstream

import (
	"context"
	"fmt"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
)

// Defaults of a [ConsumerConfig].
const (
	DefaultAckWait  = 30 * time.Second
	DefaultPrefetch = 1
)

// ConsumerConfig describes a consumer group. Zero fields take the defaults.
type ConsumerConfig struct {
	// Name names the group (letters, digits, '-' and '_'): every worker
	// that opens a consumer of this name on the queue shares its messages,
	// each message going to one worker at a time.
	Name string
	// Subject, if set, restricts the group to the queue's messages on
	// matching subjects (NATS wildcards '*' and '>' allowed). On a work
	// queue the subjects of two groups must not overlap.
	Subject string
	// AckWait is how long a delivered message may stay unacknowledged
	// before it is delivered again (default [DefaultAckWait]);
	// [Msg.InProgress] restarts the clock for long work.
	AckWait time.Duration
	// MaxDeliver caps the deliveries of one message (default: no cap).
	MaxDeliver int
	// Prefetch is how many messages [Consumer.Consume] buffers ahead of
	// the handler (default [DefaultPrefetch]). Buffered messages count
	// against AckWait: keep it small when a message takes long to process.
	Prefetch int
}

// Consumer is one worker's handle on a durable pull-consumer group of a
// [Queue]. It is safe for concurrent use.
type Consumer struct {
	name     string
	queue    string
	cons     js.Consumer
	prefetch int
}

// Consumer creates the consumer group cfg describes on the queue, or joins
// it if it exists (its settings are then updated to cfg's). Messages need
// explicit acknowledgement.
func (q *Queue) Consumer(ctx context.Context, cfg ConsumerConfig) (*Consumer, error) {
	cc, prefetch, err := q.consumerConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("jetstream: consumer %q of %s: %w", cfg.Name, q.name, err)
	}
	cons, err := q.stream.CreateOrUpdateConsumer(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: create consumer %q of %s: %w", cfg.Name, q.name, err)
	}
	return &Consumer{name: cfg.Name, queue: q.name, cons: cons, prefetch: prefetch}, nil
}

func (q *Queue) consumerConfig(cfg ConsumerConfig) (js.ConsumerConfig, int, error) {
	if err := validName(cfg.Name); err != nil {
		return js.ConsumerConfig{}, 0, err
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = DefaultAckWait
	}
	if cfg.MaxDeliver == 0 {
		cfg.MaxDeliver = -1
	}
	if cfg.Prefetch == 0 {
		cfg.Prefetch = DefaultPrefetch
	}
	switch {
	case cfg.Subject != "" && (len(cfg.Subject) <= len(q.prefix) || cfg.Subject[:len(q.prefix)] != q.prefix):
		return js.ConsumerConfig{}, 0, fmt.Errorf("%w: subject %q is not under the queue's %q", ErrInvalid, cfg.Subject, q.prefix+">")
	case cfg.AckWait < time.Millisecond:
		return js.ConsumerConfig{}, 0, fmt.Errorf("%w: ack wait %v is under 1ms", ErrInvalid, cfg.AckWait)
	case cfg.MaxDeliver < -1:
		return js.ConsumerConfig{}, 0, fmt.Errorf("%w: max deliver %d is negative", ErrInvalid, cfg.MaxDeliver)
	case cfg.Prefetch < 0:
		return js.ConsumerConfig{}, 0, fmt.Errorf("%w: prefetch %d is negative", ErrInvalid, cfg.Prefetch)
	}
	return js.ConsumerConfig{
		Durable:       cfg.Name,
		FilterSubject: cfg.Subject,
		AckPolicy:     js.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		DeliverPolicy: js.DeliverAllPolicy,
	}, cfg.Prefetch, nil
}

// Fetch returns up to max messages: those available at once or, when there
// are none, the first to arrive before ctx is done (then nil and no error).
// Each must be acknowledged, negatively acknowledged or left to AckWait.
// Give ctx a deadline rather than cancelling it: the server's pull request
// then expires with it, while after a cancellation a message the server
// sends to the abandoned request waits out its AckWait before it is
// delivered again.
func (c *Consumer) Fetch(ctx context.Context, max int) ([]*Msg, error) {
	if max < 1 {
		return nil, fmt.Errorf("jetstream: fetch from %s/%s: %w: max %d is under 1", c.queue, c.name, ErrInvalid, max)
	}
	for {
		msgs, err := c.fetchNoWait(max, nil)
		if err != nil || len(msgs) > 0 || done(ctx) {
			return msgs, err
		}
		b, err := c.cons.Fetch(1, js.FetchContext(ctx))
		if err == nil {
			msgs, err = c.collect(b, nil)
		}
		switch {
		case done(ctx):
			return msgs, nil // a message that came with the cancellation is returned
		case err != nil:
			return msgs, err
		case len(msgs) == 0:
			continue // the pull request expired before ctx: ask again
		case max == 1:
			return msgs, nil
		}
		return c.fetchNoWait(max-1, msgs)
	}
}

// done reports whether ctx is done or has under 10ms left: too little to
// issue a pull request.
func done(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && time.Until(d) < 10*time.Millisecond
}

// fetchNoWait appends to msgs up to max messages available now.
func (c *Consumer) fetchNoWait(max int, msgs []*Msg) ([]*Msg, error) {
	b, err := c.cons.FetchNoWait(max)
	if err != nil {
		return msgs, fmt.Errorf("jetstream: fetch from %s/%s: %w", c.queue, c.name, err)
	}
	return c.collect(b, msgs)
}

// collect appends the messages of b to msgs.
func (c *Consumer) collect(b js.MessageBatch, msgs []*Msg) ([]*Msg, error) {
	for m := range b.Messages() {
		w, err := wrap(m)
		if err != nil {
			return msgs, fmt.Errorf("jetstream: fetch from %s/%s: %w", c.queue, c.name, err)
		}
		msgs = append(msgs, w)
	}
	if err := b.Error(); err != nil {
		return msgs, fmt.Errorf("jetstream: fetch from %s/%s: %w", c.queue, c.name, err)
	}
	return msgs, nil
}

// Consume calls handle with each message of the group as it arrives, one at
// a time, until ctx is done (then it returns nil) or the connection fails.
// handle must acknowledge each message, or negatively acknowledge it, or
// leave it to be delivered again after AckWait. Messages buffered ahead of
// handle (see [ConsumerConfig.Prefetch]) when Consume returns are delivered
// again after AckWait.
func (c *Consumer) Consume(ctx context.Context, handle func(*Msg)) error {
	it, err := c.cons.Messages(js.PullMaxMessages(c.prefetch))
	if err != nil {
		return fmt.Errorf("jetstream: consume from %s/%s: %w", c.queue, c.name, err)
	}
	defer it.Stop()
	for {
		m, err := it.Next(js.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("jetstream: consume from %s/%s: %w", c.queue, c.name, err)
		}
		w, err := wrap(m)
		if err != nil {
			return fmt.Errorf("jetstream: consume from %s/%s: %w", c.queue, c.name, err)
		}
		handle(w)
	}
}

// Msg is a message delivered to a consumer.
type Msg struct {
	m    js.Msg
	meta *js.MsgMetadata
}

func wrap(m js.Msg) (*Msg, error) {
	meta, err := m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("message on %s: %w", m.Subject(), err)
	}
	return &Msg{m: m, meta: meta}, nil
}

// Subject returns the subject the message was published on.
func (m *Msg) Subject() string { return m.m.Subject() }

// ID returns the message id it was published with.
func (m *Msg) ID() string { return m.m.Headers().Get(js.MsgIDHeader) }

// Data returns the message data.
func (m *Msg) Data() []byte { return m.m.Data() }

// Sequence returns the message's position in its queue's stream.
func (m *Msg) Sequence() uint64 { return m.meta.Sequence.Stream }

// Delivered returns how many times the message has been delivered, this
// time included: above 1, an earlier delivery was not acknowledged in time.
func (m *Msg) Delivered() uint64 { return m.meta.NumDelivered }

// Ack acknowledges the message: the queue deletes it. Ack does not wait for
// the server; an acknowledgement lost with the connection leaves the message
// to be delivered again after AckWait.
func (m *Msg) Ack() error { return m.wrapErr("ack", m.m.Ack()) }

// AckSync acknowledges the message and waits until the server confirms
// it: the message will not be delivered again.
func (m *Msg) AckSync(ctx context.Context) error { return m.wrapErr("ack", m.m.DoubleAck(ctx)) }

// Nak gives the message back for immediate delivery to any worker.
func (m *Msg) Nak() error { return m.wrapErr("nak", m.m.Nak()) }

// NakDelay gives the message back for delivery after delay.
func (m *Msg) NakDelay(delay time.Duration) error {
	return m.wrapErr("nak", m.m.NakWithDelay(delay))
}

// InProgress tells the server the message is still being worked on: its
// AckWait starts again.
func (m *Msg) InProgress() error { return m.wrapErr("in-progress", m.m.InProgress()) }

// Term drops the message for good without processing it: it is never
// delivered again.
func (m *Msg) Term() error { return m.wrapErr("term", m.m.Term()) }

func (m *Msg) wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("jetstream: %s %s (seq %d): %w", op, m.m.Subject(), m.meta.Sequence.Stream, err)
}
