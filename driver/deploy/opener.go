package deploy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// OpenerConfig configures an opener (ServeOpener).
type OpenerConfig struct {
	// Conn is the connection to the analyzer's JetStream server.
	Conn *jetstream.Conn
	// Key is the analyzer's HPKE private key.
	Key *seal.PrivateKey
	// Workers is how many chunks the opener opens at once (GOMAXPROCS if
	// zero).
	Workers int
	// AckWait is how long a chunk may stay unanswered before the server
	// gives it to another opener (30 s if zero); every opener of the
	// queue should use the same. A chunk being opened is kept alive
	// meanwhile.
	AckWait time.Duration
	// Name names the opener in its results (host and pid if empty).
	Name string
	// Logf logs refusals and failures (log.Printf if nil).
	Logf func(format string, a ...any)
	// Restricted says the connection proves the opener's NATS key, which
	// may publish results but neither read nor reconfigure their log: the
	// opener then waits for the analyzer to create the log instead of
	// creating it (natsauth.go).
	Restricted bool
	// Wait is how long ServeOpener retries a queue it cannot create or
	// join yet (jetstream.DefaultConnectDeadline if zero).
	Wait time.Duration

	// started, if set, is called as the opening of a chunk starts (tests:
	// it may block, holding the chunk unacknowledged).
	started func(subject string)
}

// Opener is a stateless opener of the analyzer's chunks; see ServeOpener.
type Opener struct {
	cfg     OpenerConfig
	streams *openStreams
	cons    *jetstream.Consumer
	pub     []byte
	mac     []byte // the key of the queue's MACs
	logf    func(string, ...any)
}

// NewOpener joins the openers' consumer group on the analyzer's opener
// queue (creating the queue and the results log if the analyzer has not).
func NewOpener(ctx context.Context, cfg OpenerConfig) (*Opener, error) {
	o, err := newOpener(cfg)
	if err != nil {
		return nil, err
	}
	if err := o.join(ctx); err != nil {
		return nil, err
	}
	return o, nil
}

// newOpener checks cfg and builds the opener, without joining the queue.
func newOpener(cfg OpenerConfig) (*Opener, error) {
	if cfg.Conn == nil || cfg.Key == nil {
		return nil, errf("deploy: opener: a connection and the analyzer's key are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = jetstream.DefaultAckWait
	}
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	o := &Opener{cfg: cfg, pub: cfg.Key.Public().Bytes(), logf: cfg.Logf}
	if o.logf == nil {
		o.logf = log.Printf
	}
	var err error
	if o.mac, err = openerMACKey(cfg.Key); err != nil {
		return nil, err
	}
	return o, nil
}

// join opens the opener queue and its results log (creating them unless
// the opener is restricted) and joins the openers' consumer group.
func (o *Opener) join(ctx context.Context) error {
	var err error
	if o.streams, err = openOpenerStreams(ctx, o.cfg.Conn, !o.cfg.Restricted); err != nil {
		return err
	}
	if o.cons, err = o.streams.chunks.Consumer(ctx, jetstream.ConsumerConfig{Name: openerGroup, AckWait: o.cfg.AckWait}); err != nil {
		return fmt.Errorf("deploy: opener: %w", err)
	}
	return nil
}

// ServeOpener opens the analyzer's chunks until ctx ends: it takes a chunk
// from the opener queue, opens every message with the analyzer's key,
// publishes the chunk's result (de-duplicated by the chunk's id) and only
// then acknowledges the chunk. An opener killed at any point loses nothing:
// its unacknowledged chunk goes to another opener after AckWait, and a
// result it published twice is stored once. It keeps no state between
// chunks. A queue it cannot create or join yet (a cluster still electing
// its leader, an analyzer not yet up) is retried, a line a retry, for
// cfg.Wait; a bad configuration is refused at once.
func ServeOpener(ctx context.Context, cfg OpenerConfig) error {
	o, err := newOpener(cfg)
	if err != nil {
		return err
	}
	if err := jetstream.Retry(ctx, "the opener queue", cfg.Wait, o.logf, func() error { return o.join(ctx) }); err != nil {
		return err
	}
	return o.Serve(ctx)
}

// Serve runs the opener's workers until ctx ends.
func (o *Opener) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	for range o.cfg.Workers {
		wg.Go(func() { o.work(ctx) })
	}
	wg.Wait()
	return nil
}

// work takes one chunk at a time until ctx ends.
func (o *Opener) work(ctx context.Context) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msgs, err := o.cons.Fetch(fctx, 1)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			o.logf("opener: %v", err)
			sleepCtx(ctx, time.Second)
		}
		for _, m := range msgs {
			o.handle(ctx, m)
		}
	}
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// errForeignKey marks a chunk sealed to another analyzer's key.
var errForeignKey = errors.New("sealed to another analyzer's key")

// handle opens one delivered chunk and answers it. A chunk that cannot be
// decoded, or whose subject or id does not match its content, is dropped
// for good (it can never be answered); one sealed to another key is given
// back for an opener that holds it.
func (o *Opener) handle(ctx context.Context, m *jetstream.Msg) {
	var c wire.OpenChunk
	err := wire.Unmarshal(m.Data(), &c)
	if err == nil {
		err = o.check(&c, m.Subject(), m.ID())
	}
	switch {
	case errors.Is(err, errForeignKey):
		o.logf("opener: refusing chunk %s: %v (is this opener given the analyzer's key?)", m.Subject(), err)
		_ = m.NakDelay(o.cfg.AckWait)
		return
	case err != nil:
		o.logf("opener: dropping chunk %s (seq %d): %v", m.Subject(), m.Sequence(), err)
		_ = m.Term()
		return
	}
	if o.cfg.started != nil {
		o.cfg.started(m.Subject())
	}
	stop := keepAlive(m, o.cfg.AckWait/3)
	res, err := openChunk(o.cfg.Key, o.mac, &c, o.cfg.Name)
	stop()
	var b []byte
	if err == nil {
		b, err = proto.Marshal(res)
	}
	if err != nil {
		o.logf("opener: chunk %s: %v", m.Subject(), err)
		_ = m.Term()
		return
	}
	if _, err := o.streams.results.Publish(ctx, resultSubject(runTag(c.RunId), c.Round, fmt.Sprint(c.Chunk)), m.ID(), b); err != nil {
		o.logf("opener: chunk %s: publishing its result: %v", m.Subject(), err)
		_ = m.Nak()
		return
	}
	actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.AckSync(actx); err != nil {
		// The result is stored: the chunk's next delivery answers it
		// again, and the duplicate is not stored.
		o.logf("opener: chunk %s: acknowledging: %v", m.Subject(), err)
	}
}

// check verifies a decoded chunk against its subject, its id and the
// opener's key.
func (o *Opener) check(c *wire.OpenChunk, subject, id string) error {
	if !bytes.Equal(c.AnalyzerPublicKey, o.pub) {
		return errForeignKey
	}
	if !hmac.Equal(c.Mac, chunkMAC(o.mac, c)) {
		return errf("not authenticated by the analyzer's key (a MAC that does not verify)")
	}
	tag := runTag(c.RunId)
	if want := chunkSubject(tag, c.Round, fmt.Sprint(c.Chunk)); subject != want {
		return fmt.Errorf("published on %s, its content is %s's", subject, want)
	}
	d := chunkDigest(c.Messages)
	if !bytes.Equal(d, c.Digest) {
		return errf("its messages do not match its digest")
	}
	if want := chunkID(tag, c.Round, int(c.Chunk), d); id != want {
		return fmt.Errorf("id %q, its content's is %q", id, want)
	}
	return specOf(c.Spec).Validate()
}

// keepAlive tells the server every period that m is still being worked on,
// until the returned function is called.
func keepAlive(m *jetstream.Msg, period time.Duration) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(max(period, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// openChunk opens a checked chunk's messages in order, with one
// seal.Opener for the chunk (so a replay within the chunk is refused as
// the analyzer's own opener refuses it), and returns its result,
// authenticated with mac.
func openChunk(key *seal.PrivateKey, mac []byte, c *wire.OpenChunk, name string) (*wire.OpenResult, error) {
	op, err := seal.NewOpener(key, c.RunId, uint64(c.Round), specOf(c.Spec))
	if err != nil {
		return nil, err
	}
	res := &wire.OpenResult{RunId: c.RunId, Round: c.Round, Chunk: c.Chunk, Digest: c.Digest, Outcomes: make([]byte, len(c.Messages)), Opener: name}
	vals := make([]float64, 0, len(c.Messages))
	for i, msg := range c.Messages {
		l, v, err := op.Open(msg)
		if err != nil {
			r, ok := seal.ReasonOf(err)
			if !ok {
				r = seal.ReasonMalformed
			}
			res.Outcomes[i] = outcomeRejected | byte(r)
			continue
		}
		res.Outcomes[i] = byte(l.Kind)
		if l.Kind == seal.KindCoord {
			res.Coordinates = append(res.Coordinates, l.Index)
		}
		vals = append(vals, v...)
	}
	if res.Values, err = wire.PackFloat64s(vals); err != nil {
		return nil, err
	}
	res.Mac = resultMAC(mac, res)
	return res, nil
}
