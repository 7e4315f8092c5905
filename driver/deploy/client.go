package deploy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/learning/fl"
	"github.com/shufflefl/shufflefl/privacy/account"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/trainer"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// ClientConfig configures one client.
type ClientConfig struct {
	Setup *Setup
	// Index is the client's 0-based index: its shard, and in test mode its
	// random streams (the simulation's client index).
	Index int
	// Signer signs the client's requests (its id is the ledger's name).
	Signer *pki.Signer
	// AnalyzerKey is the analyzer's HPKE public key, configured out of band:
	// the client seals to it, never to a key an announcement names.
	AnalyzerKey *seal.PublicKey
	// DB is the client's database (ledger and outbox).
	DB *store.DB
	// Shuffler is the shuffler's client service (TLS).
	Shuffler wire.ShufflerClient
	// TestSeed, if set, draws training and noise from the simulation's
	// streams (rng.Stream(seed, LabelTraining|LabelNoise, round, index)):
	// test mode only; it makes the client's noise predictable.
	TestSeed *uint64
	// Logf logs events (log.Printf if nil).
	Logf func(format string, a ...any)
	// ShufflerAddr names the shuffler in the lines of a registration that
	// waits for it; ConnectDeadline is how long registration retries a
	// shuffler that is not up yet (0: 5 minutes).
	ShufflerAddr    string
	ConnectDeadline time.Duration
	// Trainer, if set, trains the client instead of the in-process
	// fl.Trainer; its failure makes the client sit the round out.
	Trainer Trainer
}

// Client is one client's driver: registration, heartbeats, pulling tasks,
// and for each round its ledger check, local training, encoding through
// role.Client, sealing, the durable charge with the sealed report, and the
// (re)sending of exactly those bytes.
type Client struct {
	cfg    ClientConfig
	st     *Setup
	sealer *seal.Sealer
	ledger *account.Ledger
	role   *role.Client // ledger check, staged encoding, durable commit
	tr     *fl.Trainer
	// sub holds a clustered client's shard for its choice of model.
	sub fl.Examples
	// charges: the client keeps a ledger, of (epsilon, delta) or of
	// d-privacy leakage (Setup.DLevel).
	charges bool
	nonce   *rand.Rand
	logf    func(string, ...any)
	last    int64
	hb      time.Duration
}

// NewClient builds a client; its ledger is the DB's (durable), capped at
// the configuration's client-cap (no cap if zero).
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Setup == nil || cfg.Signer == nil || cfg.AnalyzerKey == nil || cfg.DB == nil || cfg.Shuffler == nil {
		return nil, errf("deploy: client: incomplete configuration")
	}
	st := cfg.Setup
	if cfg.Index < 0 || cfg.Index >= len(st.Shards) {
		return nil, checks.Invalidf("deploy: client index %d outside [0, %d)", cfg.Index, len(st.Shards))
	}
	sealer, err := seal.NewSealer(cfg.AnalyzerKey, st.RunID)
	if err != nil {
		return nil, err
	}
	l := account.NewLedger(cfg.DB.LedgerStore())
	capEps := st.Config.ClientCap
	if capEps == 0 {
		capEps = math.MaxFloat64
	}
	if err := l.SetDefaultCap(account.Cap{Epsilon: capEps, Delta: math.Nextafter(1, 0)}); err != nil {
		return nil, err
	}
	id := cfg.Signer.ID()
	c := &Client{cfg: cfg, st: st, sealer: sealer, ledger: l, tr: fl.NewTrainer(st.Model), nonce: rng.NewCrypto(), logf: cfg.Logf, hb: 5 * time.Second}
	cc := role.ClientConfig{ID: id, Budget: st.ClientBudget(cfg.Index), Protocol: st.Proto, LocalDelta: st.LocalDelta}
	if st.Charges {
		cc.Ledger = l
	}
	if st.Clustered() != nil {
		if st.DLevel > 0 {
			// The client's own d-privacy ledger: every release charges
			// the level n/nu (the role's budget), the ledger adds the
			// levels (Theorem 1) and refuses a release past the cap.
			cc.Budget, cc.LocalDelta, cc.Ledger = protocol.Budget{Epsilon: st.DLevel}, false, l
		}
	}
	c.charges = cc.Ledger != nil
	c.role = role.NewClient(cc)
	if c.logf == nil {
		c.logf = log.Printf
	}
	return c, nil
}

func (c *Client) auth() *wire.RequestAuth { return &wire.RequestAuth{ClientId: c.cfg.Signer.ID()} }

func (c *Client) sign(method string, round int64, req wire.AuthRequest) error {
	return sign(c.cfg.Signer, c.nonce, time.Now(), method, round, req)
}

// register registers the client, retrying with backoff a shuffler that
// is not up yet or is busy, with a line a retry ("waiting for shuffler
// ADDR (retry 3): ..."), until ConnectDeadline has passed.
func (c *Client) register(ctx context.Context, reg *wire.RegisterRequest) error {
	deadline := c.cfg.ConnectDeadline
	if deadline <= 0 {
		deadline = 5 * time.Minute
	}
	addr := c.cfg.ShufflerAddr
	if addr == "" {
		addr = "(its address)"
	}
	start := time.Now()
	for retry := 0; ; retry++ {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.sign(wire.Shuffler_Register_FullMethodName, 0, reg)
		var r *wire.RegisterResponse
		if err == nil {
			r, err = c.cfg.Shuffler.Register(cctx, reg)
		}
		cancel()
		if err == nil {
			if r.HeartbeatIntervalMillis > 0 {
				c.hb = time.Duration(r.HeartbeatIntervalMillis) * time.Millisecond
			}
			if retry > 0 {
				c.logf("client %s: registered with shuffler %s after %d retries", c.cfg.Signer.ID(), addr, retry)
			}
			return nil
		}
		if !retryable(err) || ctx.Err() != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		wait := min(time.Duration(1<<min(retry, 5))*250*time.Millisecond, 5*time.Second)
		if time.Since(start)+wait > deadline {
			return fmt.Errorf("shuffler %s not reachable for %v (the connect deadline): %w", addr, time.Since(start).Round(time.Second), err)
		}
		c.logf("client %s: waiting for shuffler %s (retry %d): %v", c.cfg.Signer.ID(), addr, retry+1, status.Convert(err).Message())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// retryable reports whether a call may succeed if repeated.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted, codes.Canceled:
		return true
	case codes.Unauthenticated:
		// A stale timestamp or a nonce the shuffler forgot: sign afresh.
		if d, ok := wire.DetailOf(err); ok {
			return d.Reason == wire.Reason_REASON_STALE_TIMESTAMP
		}
	}
	return false
}

func (c *Client) call(ctx context.Context, f func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := f(cctx)
		cancel()
		if err == nil || !retryable(err) || ctx.Err() != nil {
			if ctx.Err() != nil && err != nil {
				return ctx.Err()
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// Run registers, resends any report its outbox holds unsent, then serves
// rounds until it has handled the run's last round or ctx ends.
//
// The order of one round is the role's staged path: the ledger is
// consulted (role.Client.Check), the update is trained and encoded
// (role.Client.Stage), every message is sealed, the ledger charge and the
// sealed report are committed in one transaction
// (store.DB.ChargeWithReport), and the machine confirms the charge
// (role.Client.Advance) before any byte is sent; only the stored bytes are
// ever sent.
func (c *Client) Run(ctx context.Context) error {
	id := c.cfg.Signer.ID()
	b := c.st.ClientBudget(c.cfg.Index) // declared: the shuffler forwards it for the statement
	reg := &wire.RegisterRequest{Auth: c.auth(), PublicKey: c.cfg.Signer.Public(), KeyAlgorithm: "ed25519", Epsilon: b.Epsilon, Delta: b.Delta}
	err := c.register(ctx, reg)
	if err != nil {
		return errf("client %s: register: %w", id, err)
	}
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	go c.heartbeats(hctx)
	pend, err := c.cfg.DB.OutboxPending(id)
	if err != nil {
		return err
	}
	for _, e := range pend {
		c.logf("client %s: resending the stored report of round %d", id, e.Round)
		if err := c.send(ctx, e.Round, e.Report); err != nil {
			return err
		}
		c.last = max(c.last, e.Round)
	}
	if sent, err := c.lastCharged(); err == nil {
		c.last = max(c.last, sent)
	}
	for c.last < int64(c.st.Config.Rounds) {
		task, pulled, err := c.pull(ctx)
		if errors.Is(err, errRunOver) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := c.round(ctx, task, pulled); err != nil {
			return err
		}
		c.last = task.Round
	}
	return nil
}

// lastCharged is the latest round the ledger charged (a restarted client
// never reports twice in a round).
func (c *Client) lastCharged() (int64, error) {
	es, err := c.cfg.DB.LedgerStore().Entries(c.cfg.Signer.ID())
	if err != nil {
		return 0, err
	}
	var t int64
	for _, e := range es {
		t = max(t, int64(e.Round))
	}
	return t, nil
}

func (c *Client) heartbeats(ctx context.Context) {
	r := rng.NewCrypto() // this goroutine's own generator (c.nonce is Run's)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.hb):
		}
		req := &wire.HeartbeatRequest{Auth: c.auth()}
		if err := sign(c.cfg.Signer, r, time.Now(), wire.Shuffler_Heartbeat_FullMethodName, 0, req); err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _ = c.cfg.Shuffler.Heartbeat(cctx, req)
		cancel()
	}
}

// errRunOver: the client was not sampled in the run's last round.
var errRunOver = errors.New("the run's last round does not sample this client")

// pull waits for a task newer than the last round handled. A round whose
// sample leaves the client out (REASON_NOT_SAMPLED) is skipped; after the
// run's last round pull returns errRunOver.
func (c *Client) pull(ctx context.Context) (*wire.RoundAnnouncement, time.Time, error) {
	for {
		req := &wire.PullTaskRequest{Auth: c.auth(), AfterRound: c.last}
		var resp *wire.PullTaskResponse
		err := c.call(ctx, func(ctx context.Context) error {
			if err := c.sign(wire.Shuffler_PullTask_FullMethodName, 0, req); err != nil {
				return err
			}
			var err error
			resp, err = c.cfg.Shuffler.PullTask(ctx, req)
			return err
		})
		if d, ok := wire.DetailOf(err); ok && d.Reason == wire.Reason_REASON_NOT_SAMPLED && d.Round > c.last {
			// Not in this round's sample: wait for the next round, or
			// stop after the run's last.
			c.last = d.Round
			c.logf("client %s: not sampled in round %d", c.cfg.Signer.ID(), d.Round)
			if c.last >= int64(c.st.Config.Rounds) {
				return nil, time.Time{}, errRunOver
			}
			continue
		}
		if err != nil {
			return nil, time.Time{}, errf("client %s: pull: %w", c.cfg.Signer.ID(), err)
		}
		if resp.Task != nil {
			return resp.Task, time.Now(), nil
		}
		// Jitter (0.5 to 1.5 times the hint) spreads the clients' pulls.
		wait := time.Duration(float64(max(resp.RetryAfterMillis, 20)) * (0.5 + c.nonce.Float64()) * float64(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// checkTask refuses an announcement that does not match the client's own
// Setup (run, protocol, parameters, model dimension, analyzer key).
func (c *Client) checkTask(a *wire.RoundAnnouncement) error {
	if a.RunId != c.st.RunID || a.Protocol != c.st.Config.Protocol {
		return checks.Invalidf("task of run %q protocol %q, expected run %q protocol %q", a.RunId, a.Protocol, c.st.RunID, c.st.Config.Protocol)
	}
	want := Params(c.st)
	if len(want) != len(a.Params) {
		return checks.Invalidf("task has %d parameters, expected %d", len(a.Params), len(want))
	}
	for i := range want {
		if !proto.Equal(want[i], a.Params[i]) {
			return checks.Invalidf("task parameter %v differs from the agreed %v", a.Params[i], want[i])
		}
	}
	if len(a.Models) != c.st.K {
		return checks.Invalidf("task has %d models, expected %d", len(a.Models), c.st.K)
	}
	for h, m := range a.Models {
		if int(m.Dimension) != c.st.Dim() || len(m.Weights) != 8*c.st.Dim() {
			return checks.Invalidf("task's model %d has dimension %d (%d bytes), expected %d", h, m.Dimension, len(m.Weights), c.st.Dim())
		}
	}
	if string(a.AnalyzerPublicKey) != string(c.cfg.AnalyzerKey.Bytes()) {
		return checks.Invalidf("task names another analyzer key than the configured one")
	}
	if a.Round < 1 || a.Round > int64(c.st.Config.Rounds) {
		return checks.Invalidf("task for round %d outside [1, %d]", a.Round, c.st.Config.Rounds)
	}
	return nil
}

// round handles one announced round, pulled at the given time. A task
// whose time-to-live has passed by the time the report is sealed is
// dropped before anything is charged or sent (the client sits the round
// out).
func (c *Client) round(ctx context.Context, task *wire.RoundAnnouncement, pulled time.Time) error {
	id, t := c.cfg.Signer.ID(), task.Round
	if err := c.checkTask(task); err != nil {
		c.logf("client %s: refusing round %d: %v", id, t, err)
		return nil
	}
	if e, err := c.cfg.DB.OutboxReport(id, t); err == nil {
		return c.send(ctx, t, e.Report) // a retry resends the stored bytes
	}
	if err := c.role.Check(int(t)); err != nil {
		if errors.Is(err, account.ErrCapExceeded) || errors.Is(err, account.ErrDuplicateRelease) {
			c.logf("client %s: sitting out round %d: %v", id, t, err)
			return nil
		}
		return errf("client %s: round %d: ledger: %w", id, t, err)
	}
	models := make([][]float64, len(task.Models))
	for h, m := range task.Models {
		var err error
		if models[h], err = wire.UnpackFloat64s(nil, m.Weights, c.st.Dim()); err != nil {
			return errf("client %s: round %d: model %d: %w", id, t, h, err)
		}
	}
	w := models[0]
	shard := c.st.Shards[c.cfg.Index]
	clustered := c.st.Clustered() != nil
	if clustered {
		// Every participant receives the k models and trains the one with
		// the lowest loss on its own shard; the choice never leaves it.
		h, err := round.ChooseHypothesis(c.st.Model, models, c.st.Train, shard, &c.sub)
		if err != nil {
			return errf("client %s: round %d: choosing a model: %w", id, t, err)
		}
		w = models[h]
	}
	gen := streams{c.cfg.TestSeed}
	idx := uint64(c.cfg.Index)
	update := make([]float64, c.st.Dim())
	if err := c.localUpdate(update, w, t, gen.get(rng.LabelTraining, uint64(t), idx), shard); err != nil {
		if errors.Is(err, trainer.ErrTrainer) {
			// Trained before anything is charged: nothing is spent.
			c.logf("client %s: sitting out round %d: local update: %v", id, t, err)
			return nil
		}
		return errf("client %s: round %d: local update: %w", id, t, err)
	}
	var rep protocol.Report
	var rd role.ClientReady
	var err error
	if clustered {
		rd, err = c.role.StageModel(gen.get(rng.LabelNoise, uint64(t), idx), c.st.Shape(int(t)), w, update, &rep)
	} else {
		rd, err = c.role.Stage(gen.get(rng.LabelNoise, uint64(t), idx), c.st.Shape(int(t)), update, &rep)
	}
	if err != nil {
		if errors.Is(err, account.ErrCapExceeded) {
			c.logf("client %s: sitting out round %d: %v", id, t, err)
			return nil
		}
		return errf("client %s: round %d: %w", id, t, err)
	}
	body, err := c.sealReport(t, &rep)
	if err != nil {
		return errf("client %s: round %d: sealing: %w", id, t, err)
	}
	if ttl := time.Duration(task.TtlMillis) * time.Millisecond; time.Since(pulled) > ttl {
		c.logf("client %s: round %d: the task expired (time-to-live %v) before the report was ready; nothing sent", id, t, ttl)
		return nil
	}
	if rd.Charge {
		if err := c.cfg.DB.ChargeWithReport(c.ledger, rd.Release, body); err != nil {
			return errf("client %s: round %d: charge: %w", id, t, err)
		}
	}
	if err := c.role.Advance(rd); err != nil {
		return errf("client %s: round %d: %w", id, t, err)
	}
	return c.send(ctx, t, body)
}

// sealReport seals a report's messages and encodes them as the body of a
// SubmitReportRequest (without auth): the outbox's bytes.
func (c *Client) sealReport(t int64, rep *protocol.Report) ([]byte, error) {
	msgs := role.Messages(c.st.Proto.Mode(), rep, nil)
	req := &wire.SubmitReportRequest{Round: t, Messages: make([]*wire.SealedMessage, len(msgs))}
	for i, m := range msgs {
		var l seal.Label
		var vals []float64
		switch {
		case m.Label == role.MetaLabel:
			l, vals = seal.Meta, []float64{m.Payload.Value}
		case m.Label == role.ReportLabel:
			if m.Payload.Report.Coords != nil {
				return nil, checks.Invalidf("sparse whole report")
			}
			l, vals = seal.Report, m.Payload.Report.Values
		default:
			l, vals = seal.Coord(int(m.Label)), []float64{m.Payload.Value}
		}
		ct, err := c.sealer.Seal(uint64(t), l, vals)
		if err != nil {
			return nil, err
		}
		req.Messages[i] = &wire.SealedMessage{Label: wireLabel(l), Ciphertext: ct}
	}
	return proto.Marshal(req)
}

// send submits the stored report body for round t, signing each attempt
// afresh (new timestamp and nonce, the same sealed bytes), and marks it
// sent once acknowledged — or once the round is gone (closed, unknown):
// the report is spent either way.
func (c *Client) send(ctx context.Context, t int64, body []byte) error {
	id := c.cfg.Signer.ID()
	req := &wire.SubmitReportRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		return errf("client %s: stored report of round %d: %w", id, t, err)
	}
	req.Auth = c.auth()
	err := c.call(ctx, func(ctx context.Context) error {
		if err := c.sign(wire.Shuffler_SubmitReport_FullMethodName, t, req); err != nil {
			return err
		}
		_, err := c.cfg.Shuffler.SubmitReport(ctx, req)
		return err
	})
	if err != nil {
		d, ok := wire.DetailOf(err)
		if !ok || (d.Reason != wire.Reason_REASON_ROUND_CLOSED && d.Reason != wire.Reason_REASON_UNKNOWN_ROUND && d.Reason != wire.Reason_REASON_DUPLICATE_REPORT) {
			return errf("client %s: round %d: submit: %w", id, t, err)
		}
		c.logf("client %s: round %d: report not taken: %v", id, t, err)
	}
	if c.charges {
		if err := c.cfg.DB.MarkSent(id, t); err != nil {
			return err
		}
	}
	return nil
}
