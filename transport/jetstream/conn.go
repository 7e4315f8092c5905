package jetstream

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// Conn is a connection to a JetStream server or cluster, from which queues
// are opened. It is safe for concurrent use.
type Conn struct {
	nc       *nats.Conn
	js       js.JetStream
	replicas int
}

// ConnOption configures a [Conn].
type ConnOption func(*connConfig) error

type connConfig struct {
	replicas int
	name     string
	seed     []byte         // user NKey seed (WithUserSeed)
	roots    *x509.CertPool // WithRootCAs: TLS required (nil: none)
}

// MaxReplicas is the most servers JetStream stores a stream on.
const MaxReplicas = 5

// WithReplicas sets how many servers of a cluster store each stream this
// connection creates (default 1; a queue's [QueueConfig.Replicas]
// overrides it), 1 to [MaxReplicas]. A single server accepts only 1.
func WithReplicas(n int) ConnOption {
	return func(c *connConfig) error {
		if n < 1 || n > MaxReplicas {
			return fmt.Errorf("replicas %d is not in [1, %d]", n, MaxReplicas)
		}
		c.replicas = n
		return nil
	}
}

// WithName names the connection as the server's monitoring shows it.
func WithName(name string) ConnOption {
	return func(c *connConfig) error {
		c.name = name
		return nil
	}
}

func connConfigOf(opts []ConnOption) (connConfig, error) {
	cfg := connConfig{replicas: 1}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func (c connConfig) natsOptions() []nats.Option {
	o := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if c.name != "" {
		o = append(o, nats.Name(c.name))
	}
	if c.roots != nil {
		o = append(o, c.tlsOption())
	}
	return o
}

// natsOptionsAuth is natsOptions with the user's NKey proof, if any.
func (c connConfig) natsOptionsAuth() ([]nats.Option, error) {
	o := c.natsOptions()
	if c.seed != nil {
		nk, err := nkeyOption(c.seed)
		if err != nil {
			return nil, err
		}
		o = append(o, nk)
	}
	return o, nil
}

// Connect connects to the NATS server or cluster at url (for a cluster, a
// comma-separated list of nats:// URLs), which must have JetStream enabled.
// The connection reconnects by itself after a server restart or failover.
func Connect(url string, opts ...ConnOption) (*Conn, error) {
	if url == "" {
		return nil, errors.New("jetstream: connect: empty server URL")
	}
	cfg, err := connConfigOf(opts)
	if err != nil {
		return nil, fmt.Errorf("jetstream: connect to %s: %w", url, err)
	}
	no, err := cfg.natsOptionsAuth()
	if err != nil {
		return nil, fmt.Errorf("jetstream: connect to %s: %w", url, err)
	}
	nc, err := nats.Connect(url, no...)
	if err != nil {
		return nil, fmt.Errorf("jetstream: connect to %s: %w", url, err)
	}
	c, err := newConn(nc, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.waitJetStream(10 * time.Second); err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: connect to %s: JetStream not available: %w", url, err)
	}
	return c, nil
}

// waitJetStream asks for the account's JetStream information until it
// answers or within has passed. A cluster's API does not answer until its
// nodes have elected a meta leader (a second or two after they start), so
// each ask has a short timeout of its own rather than one long one.
func (c *Conn) waitJetStream(within time.Duration) error {
	end := time.Now().Add(within)
	for {
		ask := min(time.Until(end), time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), ask)
		_, err := c.js.AccountInfo(ctx)
		cancel()
		if err == nil || errors.Is(err, js.ErrJetStreamNotEnabled) || errors.Is(err, js.ErrJetStreamNotEnabledForAccount) || time.Until(end) < 100*time.Millisecond {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func newConn(nc *nats.Conn, cfg connConfig) (*Conn, error) {
	j, err := js.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: JetStream context: %w", err)
	}
	return &Conn{nc: nc, js: j, replicas: cfg.replicas}, nil
}

// MaxPayload returns the largest message, in bytes, the connected server
// accepts.
func (c *Conn) MaxPayload() int64 { return c.nc.MaxPayload() }

// Close sends what is buffered (acknowledgements included, within a second)
// and closes the connection. Messages delivered to it and not acknowledged
// are delivered again after their AckWait.
func (c *Conn) Close() {
	if c.nc.IsConnected() {
		_ = c.nc.FlushTimeout(time.Second) // best effort: it may go down meanwhile
	}
	c.nc.Close()
}
