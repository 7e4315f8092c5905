package deploy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// ShufflerConfig configures a shuffler service.
type ShufflerConfig struct {
	Setup *Setup
	// DB is the shuffler's database (inbox).
	DB *store.DB
	// Registry holds the clients' request-signing keys.
	Registry *pki.Registry
	// Verifier bounds the signature checks (pki.DefaultVerifierConfig if
	// zero).
	Verifier pki.VerifierConfig
	// AnalyzerKey is the analyzer's HPKE public key: the shuffler seals its
	// dummies to it. The shuffler holds no private key and decrypts nothing.
	AnalyzerKey *seal.PublicKey
	// Analyzer is the analyzer's batch service (dialled with mutual TLS).
	Analyzer wire.AnalyzerClient
	// Heartbeat is the interval clients are told to keep (5 s if zero).
	Heartbeat time.Duration
	// TestSeed, if set, draws the padding and the permutation from the
	// simulation's streams (rng.Stream(seed, LabelShuffle, round, 0|1)),
	// and a round's client sample from rng.Stream(seed, LabelSampling,
	// round) as the engine does, instead of crypto/rand: test mode only.
	TestSeed *uint64
	// Quorum, under client sampling, is the number of registered clients
	// the shuffler waits for before it accepts the first announcement
	// (Announce answers Unavailable until then; the analyzer retries). 0
	// samples from whoever registered by the announcement.
	Quorum int
	// Logf logs events (log.Printf if nil).
	Logf func(format string, a ...any)
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// ForwardStall is how long a batch stream to the analyzer may make no
	// progress before it is cancelled and retried (one minute if zero);
	// ForwardReply bounds the wait for the analyzer's answer after the
	// last chunk (30 minutes if zero: a per-coordinate batch of millions
	// of messages takes the analyzer minutes to open).
	ForwardStall, ForwardReply time.Duration
	// Progress, if set, receives the rounds' progress (receiving,
	// shuffling, forwarding), at most one intermediate event of a stage
	// per ProgressEvery (250 ms if zero); see Progress.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// MaxConns bounds the client connections open at once (twice the
	// run's clients plus 1,024 if zero); MaxUnauthenticated bounds the
	// signed-header checks running at once (256 if zero). Admission.go
	// says what is refused over each.
	MaxConns, MaxUnauthenticated int
	// ShuffleMemory is the round memory budget in bytes (1 GiB if zero): a
	// round whose sealed messages, dummies included, exceed it is shuffled
	// on disk in SpillDir (spill.go; "spill" next to the database if
	// empty).
	ShuffleMemory int64
	SpillDir      string
	// Shards, if above zero, splits every round's shuffle over that many
	// shuffler shards (`shufflefl shuffler-shard`; shardfront.go): the
	// front routes each closed round over the shard queue on ShardConn,
	// sealed with ShardKey, and forwards the round's manifest.
	Shards    int
	ShardConn *jetstream.Conn
	ShardKey  *ShardKey
	// ShardReroute is how long the front waits for the analyzer's answer
	// to a round's manifest before it routes the round again
	// (defaultShardReroute if zero): chunks purged or deleted from the
	// shard queue reach the shards on the next routing.
	ShardReroute time.Duration
}

// ShufflerStats counts the shuffler's decisions.
type ShufflerStats struct {
	Accepted  int64            `json:"accepted"`
	Retries   int64            `json:"retries"`
	Rejected  map[string]int64 `json:"rejected"`
	Forwarded int64            `json:"forwarded_rounds"`
	Void      int64            `json:"void_rounds"`
	Messages  int64            `json:"messages_forwarded"`
	Bytes     int64            `json:"bytes_received"`
}

// pullInterval is how long a client without a task waits before pulling
// again (it adds jitter).
const pullInterval = 500 * time.Millisecond

// pullHold is how long the shuffler holds a pull that finds no task
// (a long poll): it answers as soon as a round is announced, or after
// pullHold with no task. Without the hold, 1,000 clients waiting for the
// next round made 2,000 signed pulls a second, and on a loaded machine
// their TLS, signature checks and gRPC work starved the batch stream to
// the analyzer (63 MB took 82 s; docs/PERFORMANCE.md, "Deployment load
// test"). It stays well below the clients' 30 s call timeout.
const pullHold = 10 * time.Second

// sround is the round the shuffler is serving.
type sround struct {
	t        int64
	ann      *wire.RoundAnnouncement
	deadline time.Time
	min      int
	// gate: submissions hold it shared while they store and accept; the
	// close takes it exclusively, so everything acknowledged is in live.
	gate   sync.RWMutex
	mu     sync.Mutex // guards live
	live   *role.Shuffler[[]byte]
	closed bool // under gate (exclusive) or atomically read via closing
	// closing is set once the round stops accepting.
	closing atomic.Bool
	timer   *time.Timer // the deadline (under Shuffler.mu)

	// reporters are the accepted senders, in order (under mu).
	reporters []string
	// bytes are the accepted submissions' sealed bytes; spilling is set
	// once they exceed the memory budget (under mu; spill.go).
	bytes    int64
	spilling bool
	// sample is the set of clients offered the round (nil: every
	// registered client), drawn from population registered clients;
	// expected is the count at which the round closes early.
	sample     map[string]bool
	population int
	expected   int
}

// Shuffler is the shuffler service: wire.ShufflerServer for clients (TLS,
// signed requests) and wire.ShufflerControlServer for the analyzer (mutual
// TLS). It drives one role.Shuffler[[]byte] per round over sealed bytes.
type Shuffler struct {
	wire.UnimplementedShufflerServer
	wire.UnimplementedShufflerControlServer

	cfg    ShufflerConfig
	st     *Setup
	ver    *pki.Verifier
	acc    *store.Acceptor
	sealer *seal.Sealer
	logf   func(string, ...any)
	now    func() time.Time
	prog   *meter

	mu         sync.Mutex
	cur        *sround
	registered map[string]time.Time // last heartbeat
	stats      ShufflerStats
	bg         sync.WaitGroup
	ctx        context.Context
	cancel     context.CancelFunc

	// budgets are the durable registrations (under mu): every registered
	// client's budget; the population a round's sample is drawn from.
	budgets map[string]protocol.Budget
	// regMu serializes registrations (the cap check and the durable
	// record).
	regMu sync.Mutex

	// roundChanged is closed (and replaced) when a round is installed:
	// it wakes the pulls held by PullTask.
	roundChanged chan struct{}
	// finished is closed once the run's last round was forwarded (or
	// void) and acknowledged by the analyzer (Finished); made on first
	// use under finMu.
	finMu        sync.Mutex
	finished     chan struct{}
	finishedOnce sync.Once
	// pruned is when report metadata was last pruned (Unix ns; metadata.go).
	pruned atomic.Int64
	// shardq is the shard queue (Shards > 0), reopened (under shardqMu)
	// when it was deleted.
	shardqMu sync.Mutex
	shardq   *shardQueue
	// onSpill, if set, is called at each stage of a disk shuffle (tests).
	onSpill func(stage string)
	// checkHeader replaces wire.CheckHeader in the tap (tests).
	checkHeader func(*pki.Registry, time.Duration, time.Time, string, *pki.SignedRequest) error
	// authWithin replaces authTimeout, the time a connection has to
	// authenticate (tests).
	authWithin time.Duration
}

// NewShuffler starts a shuffler service, resuming the open round of its
// inbox (the acknowledged reports are read back; the round closes and is
// forwarded as it would have been).
func NewShuffler(cfg ShufflerConfig) (*Shuffler, error) {
	if cfg.Setup == nil || cfg.DB == nil || cfg.Registry == nil || cfg.AnalyzerKey == nil || cfg.Analyzer == nil {
		return nil, errf("deploy: shuffler: incomplete configuration")
	}
	if cfg.Verifier == (pki.VerifierConfig{}) {
		cfg.Verifier = pki.DefaultVerifierConfig()
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 5 * time.Second
	}
	ver, err := pki.NewVerifier(cfg.Registry, cfg.Verifier)
	if err != nil {
		return nil, err
	}
	sealer, err := seal.NewSealer(cfg.AnalyzerKey, cfg.Setup.RunID)
	if err != nil {
		return nil, err
	}
	acc, err := cfg.DB.NewAcceptor(256)
	if err != nil {
		return nil, err
	}
	s := &Shuffler{cfg: cfg, st: cfg.Setup, ver: ver, acc: acc, sealer: sealer, logf: cfg.Logf, now: cfg.Now, prog: newMeter(cfg.Progress, cfg.ProgressEvery),
		registered: map[string]time.Time{}, budgets: map[string]protocol.Budget{}, stats: ShufflerStats{Rejected: map[string]int64{}}, roundChanged: make(chan struct{})}
	if s.logf == nil {
		s.logf = log.Printf
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.checkShards(); err != nil {
		s.Close()
		return nil, err
	}
	// No disk shuffle is under way at the start: a crashed one's files go.
	if err := os.RemoveAll(s.spillRoot()); err != nil {
		s.Close()
		return nil, errf("deploy: shuffler: spill directory: %w", err)
	}
	regs, err := cfg.DB.Registrations()
	if err != nil {
		s.Close()
		return nil, err
	}
	for _, r := range regs {
		s.budgets[r.Client] = protocol.Budget{Epsilon: r.Epsilon, Delta: r.Delta}
	}
	if err := s.resume(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Finished is closed once the run's last round is over for the shuffler:
// its batch (or void header) was acknowledged by the analyzer, or the
// analyzer had already finished it. A service exits then unless told to
// keep serving.
func (s *Shuffler) Finished() <-chan struct{} { return s.finishedChan() }

// finishedChan returns the channel Finished closes, making it on first use.
func (s *Shuffler) finishedChan() chan struct{} {
	s.finMu.Lock()
	defer s.finMu.Unlock()
	if s.finished == nil {
		s.finished = make(chan struct{})
	}
	return s.finished
}

// roundOver notes that round t is over for the shuffler.
func (s *Shuffler) roundOver(t int64) {
	if t >= int64(s.st.Config.Rounds) {
		s.finishedOnce.Do(func() { close(s.finishedChan()) })
	}
}

// Close stops the shuffler's background work (timers, forwarding).
func (s *Shuffler) Close() {
	s.cancel()
	s.mu.Lock()
	if s.cur != nil && s.cur.timer != nil {
		s.cur.timer.Stop()
	}
	s.mu.Unlock()
	s.bg.Wait()
	s.acc.Close()
}

// Stats returns the counts so far.
func (s *Shuffler) Stats() ShufflerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.Rejected = map[string]int64{}
	for k, v := range s.stats.Rejected {
		out.Rejected[k] = v
	}
	return out
}

func (s *Shuffler) reject(err error) error {
	reason := "internal"
	if d, ok := wire.DetailOf(err); ok {
		reason = d.Reason.String()
	}
	s.mu.Lock()
	s.stats.Rejected[reason]++
	s.mu.Unlock()
	return err
}

// resume reopens the inbox's open round after a restart.
func (s *Shuffler) resume() error {
	rs, err := s.cfg.DB.InboxRounds()
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Status == store.InboxForwarded {
			s.roundOver(r.Round)
		}
		if r.Status == store.InboxShuffled {
			if err := s.forwardSaved(r.Round); err != nil {
				return err
			}
			continue
		}
		if r.Status != store.InboxOpen {
			continue
		}
		ann := &wire.RoundAnnouncement{}
		if err := proto.Unmarshal(r.Announcement, ann); err != nil {
			return errf("deploy: shuffler: stored announcement of round %d: %w", r.Round, err)
		}
		var smp *store.Sample
		if s.st.Sampling() {
			got, err := s.cfg.DB.InboxSample(r.Round)
			if err != nil {
				return errf("deploy: shuffler: round %d: %w", r.Round, err)
			}
			smp = &got
		}
		sr, err := s.newRound(ann, smp)
		if err != nil {
			return err
		}
		err = s.cfg.DB.EachRoundReport(r.Round, func(rep store.InboxReport) error {
			msgs, err := s.parse(r.Round, toWire(rep.Messages))
			if err == nil {
				_, err = s.addReport(sr, rep.Client, msgs, reportBytes(rep.Messages))
			}
			if err != nil {
				return errf("deploy: shuffler: stored report of %s in round %d: %w", rep.Client, r.Round, err)
			}
			sr.reporters = append(sr.reporters, rep.Client)
			return nil
		})
		if err != nil {
			return err
		}
		s.logf("shuffler: resumed round %d with %d stored reports", r.Round, len(sr.reporters))
		s.install(sr)
		if sr.live.Senders() >= sr.expected {
			s.startClose(sr)
		}
	}
	return nil
}

// reportBytes is the sealed bytes of a report's messages.
func reportBytes(ms []store.SealedMessage) int64 {
	var n int64
	for _, m := range ms {
		n += int64(len(m.Sealed))
	}
	return n
}

func toWire(ms []store.SealedMessage) []*wire.SealedMessage {
	out := make([]*wire.SealedMessage, len(ms))
	for i, m := range ms {
		out[i] = &wire.SealedMessage{Label: m.Label, Ciphertext: m.Sealed}
	}
	return out
}

// newRound builds the round state of an announcement and its sample (nil:
// every registered client is offered the round).
func (s *Shuffler) newRound(ann *wire.RoundAnnouncement, smp *store.Sample) (*sround, error) {
	t := int(ann.Round)
	sh := s.st.Shape(t)
	sh.Participants = 0 // set to the senders when the round closes
	sr := &sround{t: ann.Round, ann: ann, deadline: time.Unix(0, ann.DeadlineUnixNano), min: int(ann.MinReports), expected: s.st.Config.Clients}
	if smp != nil {
		if (len(smp.Clients) == 0 && !s.st.Poisson) || smp.Population < len(smp.Clients) {
			return nil, errf("deploy: shuffler: round %d: sample of %d from %d registered clients", t, len(smp.Clients), smp.Population)
		}
		if len(smp.Clients) == 0 {
			// An empty Poisson sample: nobody can report, so the round
			// closes at once (void below the analyzer's minimum).
			sr.deadline = s.now()
		}
		sr.sample = make(map[string]bool, len(smp.Clients))
		for _, c := range smp.Clients {
			sr.sample[c] = true
		}
		sr.population, sr.expected = smp.Population, len(smp.Clients)
		sh.Population, sh.Sampled = smp.Population, len(smp.Clients)
	}
	live, err := role.NewShuffler[[]byte](s.st.Proto, sh, int(ann.MinReports))
	if err != nil {
		return nil, err
	}
	sr.live = live
	return sr, nil
}

// drawSample draws round t's sample: PerRound of the registered clients
// uniformly without replacement (every registered client when fewer than
// PerRound registered), or under Poisson sampling each registered client
// independently with probability PoissonRate (round.SamplePoisson), with
// crypto/rand, or in test mode with the
// engine's stream rng.Stream(seed, LabelSampling, t) over the registered
// ids in sorted order, which for clients ClientID(0..n-1) is the engine's
// client order, so that the engine's sample is reproduced.
func (s *Shuffler) drawSample(t int64) (store.Sample, error) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.budgets))
	for id := range s.budgets {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	if len(ids) == 0 {
		return store.Sample{}, errf("no client has registered")
	}
	slices.Sort(ids)
	var idx []int
	switch {
	case s.st.Poisson:
		idx = round.SamplePoisson(streams{s.cfg.TestSeed}.get(rng.LabelSampling, uint64(t)), len(ids), s.st.PoissonRate())
	case len(ids) > s.st.PerRound:
		idx = round.SampleFixed(streams{s.cfg.TestSeed}.get(rng.LabelSampling, uint64(t)), len(ids), s.st.PerRound)
	default:
		idx = round.SampleFixed(nil, len(ids), s.st.PerRound)
	}
	smp := store.Sample{Population: len(ids), Clients: make([]string, len(idx))}
	for i, j := range idx {
		smp.Clients[i] = ids[j]
	}
	return smp, nil
}

// install makes sr the current round and arms its deadline.
func (s *Shuffler) install(sr *sround) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = sr
	close(s.roundChanged)
	s.roundChanged = make(chan struct{})
	// The timer is set under mu, which startClose takes to read it: with a
	// deadline already past, the timer fires at once.
	d := sr.deadline.Sub(s.now())
	sr.timer = time.AfterFunc(max(d, 0), func() { s.startClose(sr) })
}

// Announce implements wire.ShufflerControlServer: the analyzer opens a
// round. Announcing the current round again (an analyzer that restarted) is
// acknowledged without change.
func (s *Shuffler) Announce(_ context.Context, req *wire.AnnounceRequest) (*wire.AnnounceResponse, error) {
	ann := req.Announcement
	if ann.RunId != s.st.RunID || ann.Protocol != s.st.Config.Protocol {
		return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "announcement", ann.Round, "announcement of run %q protocol %q; this shuffler serves run %q protocol %q", ann.RunId, ann.Protocol, s.st.RunID, s.st.Config.Protocol)
	}
	if ann.Round < 1 {
		return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "announcement.round", ann.Round, "round must be >= 1")
	}
	resp := &wire.AnnounceResponse{Round: ann.Round, RegisteredClients: uint32(s.st.Config.Clients)}
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur != nil && cur.t == ann.Round {
		return resp, nil
	}
	if cur != nil && ann.Round < cur.t {
		return nil, wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED, "announcement.round", ann.Round, "round %d is older than the current round %d", ann.Round, cur.t)
	}
	if cur != nil && !cur.closing.Load() {
		return nil, wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_INTERNAL, "announcement.round", ann.Round, "round %d is still open", cur.t)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(ann)
	if err != nil {
		return nil, wire.StatusOf(err)
	}
	var smp *store.Sample
	if s.st.Sampling() {
		s.mu.Lock()
		n := len(s.budgets)
		s.mu.Unlock()
		if n < max(s.cfg.Quorum, 1) {
			return nil, wire.Errorf(codes.Unavailable, wire.Reason_REASON_INTERNAL, "announcement.round", ann.Round, "%d clients registered; waiting for %d before sampling", n, max(s.cfg.Quorum, 1))
		}
		got, err := s.drawSample(ann.Round)
		if err != nil {
			return nil, wire.Errorf(codes.Unavailable, wire.Reason_REASON_INTERNAL, "announcement.round", ann.Round, "%v", err)
		}
		smp = &got
		err = s.cfg.DB.OpenSampledInboxRound(ann.Round, b, got)
	} else {
		err = s.cfg.DB.OpenInboxRound(ann.Round, b)
	}
	if err != nil {
		if errors.Is(err, store.ErrRoundExists) {
			return nil, wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED, "announcement.round", ann.Round, "round %d was served before", ann.Round)
		}
		return nil, wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", ann.Round, "%v", err)
	}
	sr, err := s.newRound(ann, smp)
	if err != nil {
		return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "announcement", ann.Round, "%v", err)
	}
	s.install(sr)
	defer s.prog.report(Progress{Role: "shuffler", Round: ann.Round, Stage: StageReceiving, Total: int64(sr.expected)})
	if smp != nil {
		resp.RegisteredClients = uint32(smp.Population)
		s.logf("shuffler: round %d announced to a sample of %d of %d registered clients (deadline %s, minimum %d)", ann.Round, len(smp.Clients), smp.Population, sr.deadline.Format(time.TimeOnly), sr.min)
	} else {
		s.logf("shuffler: round %d announced (deadline %s, minimum %d)", ann.Round, sr.deadline.Format(time.TimeOnly), sr.min)
	}
	return resp, nil
}

// Register implements wire.ShufflerServer: a client whose key is in the
// registry proves it holds it.
func (s *Shuffler) Register(ctx context.Context, req *wire.RegisterRequest) (*wire.RegisterResponse, error) {
	id, err := verify(ctx, s.ver, s.now(), wire.Shuffler_Register_FullMethodName, 0, req)
	if err != nil {
		return nil, s.reject(err)
	}
	key, _ := s.cfg.Registry.Key(id)
	if req.KeyAlgorithm != "ed25519" || string(key) != string(req.PublicKey) {
		return nil, s.reject(wire.Errorf(codes.PermissionDenied, wire.Reason_REASON_NOT_REGISTERED, "public_key", -1, "the key does not match the registered key of %s", id))
	}
	// The declared budget (0: the run's uniform budget) is recorded
	// durably before the answer; a client registers once per run with one
	// budget.
	b, err := s.st.ResolveBudget(req.Epsilon, req.Delta)
	if err != nil {
		return nil, s.reject(wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "epsilon", -1, "%v", err))
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	s.mu.Lock()
	old, known := s.budgets[id]
	full := !known && len(s.budgets) >= s.st.Config.Clients
	s.mu.Unlock()
	if full {
		return nil, s.reject(wire.Errorf(codes.ResourceExhausted, wire.Reason_REASON_NOT_REGISTERED, "", -1, "the run's %d clients have registered", s.st.Config.Clients))
	}
	// A client registered before with this budget (restarted) needs no
	// new record.
	if !known || old != b {
		if _, err := s.cfg.DB.RegisterClient(store.Registration{Client: id, Epsilon: b.Epsilon, Delta: b.Delta}); err != nil {
			if errors.Is(err, store.ErrBudgetChanged) {
				return nil, s.reject(wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_MALFORMED, "epsilon", -1, "%v", err))
			}
			return nil, s.reject(wire.Errorf(codes.Unavailable, wire.Reason_REASON_INTERNAL, "", -1, "recording the registration: %v", err))
		}
	}
	s.mu.Lock()
	s.registered[id] = s.now()
	s.budgets[id] = b
	s.mu.Unlock()
	return &wire.RegisterResponse{ClientId: id, HeartbeatIntervalMillis: s.cfg.Heartbeat.Milliseconds()}, nil
}

// Heartbeat implements wire.ShufflerServer.
func (s *Shuffler) Heartbeat(ctx context.Context, req *wire.HeartbeatRequest) (*wire.HeartbeatResponse, error) {
	id, err := verify(ctx, s.ver, s.now(), wire.Shuffler_Heartbeat_FullMethodName, 0, req)
	if err != nil {
		return nil, s.reject(err)
	}
	s.maybePrune()
	s.mu.Lock()
	s.registered[id] = s.now()
	cur := int64(-1)
	if s.cur != nil && !s.cur.closing.Load() {
		cur = s.cur.t
	}
	s.mu.Unlock()
	return &wire.HeartbeatResponse{HeartbeatIntervalMillis: s.cfg.Heartbeat.Milliseconds(), CurrentRound: cur}, nil
}

// Alive returns the number of clients heard from within three heartbeat
// intervals.
func (s *Shuffler) Alive() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.registered {
		if s.now().Sub(at) < 3*s.cfg.Heartbeat {
			n++
		}
	}
	return n
}

// PullTask implements wire.ShufflerServer: the open round's announcement,
// if newer than after_round and the client is in its sample. Without one
// the pull is held (pullHold) until a round is announced. A client outside
// the sample of the open round is told so (REASON_NOT_SAMPLED with the
// round), so that it waits for the next round, or stops after the last.
func (s *Shuffler) PullTask(ctx context.Context, req *wire.PullTaskRequest) (*wire.PullTaskResponse, error) {
	id, err := verify(ctx, s.ver, s.now(), wire.Shuffler_PullTask_FullMethodName, 0, req)
	if err != nil {
		return nil, s.reject(err)
	}
	var hold <-chan time.Time
	for {
		s.mu.Lock()
		cur, changed := s.cur, s.roundChanged
		s.mu.Unlock()
		if cur != nil && !cur.closing.Load() && cur.t > req.AfterRound {
			if cur.sample != nil && !cur.sample[id] {
				return nil, wire.Errorf(codes.PermissionDenied, wire.Reason_REASON_NOT_SAMPLED, "", cur.t, "client %s is not in round %d's sample", id, cur.t)
			}
			return &wire.PullTaskResponse{Task: cur.ann}, nil
		}
		if hold == nil {
			tm := time.NewTimer(pullHold)
			defer tm.Stop()
			hold = tm.C
		}
		select {
		case <-changed:
			continue
		case <-hold:
		case <-ctx.Done():
		case <-s.ctx.Done():
		}
		return &wire.PullTaskResponse{RetryAfterMillis: pullInterval.Milliseconds()}, nil
	}
}

// parse reads the public headers of a submission's sealed messages (never
// decrypting) and turns them into the role's messages.
func (s *Shuffler) parse(t int64, ms []*wire.SealedMessage) ([]role.Message[[]byte], error) {
	out := make([]role.Message[[]byte], len(ms))
	d := s.st.Dim()
	for i, m := range ms {
		env, err := seal.Parse(m.Ciphertext)
		if err != nil {
			return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, fmt.Sprintf("messages[%d]", i), t, "%v", err)
		}
		field := fmt.Sprintf("messages[%d]", i)
		switch {
		case env.Suite != s.cfg.AnalyzerKey.Suite():
			return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, field, t, "sealed with %v, the analyzer's key is %v", env.Suite, s.cfg.AnalyzerKey.Suite())
		case int64(env.Round) != t:
			return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_REPLAY, field, t, "message sealed for round %d in a report for round %d", env.Round, t)
		case m.Label != wireLabel(env.Label):
			return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, field+".label", t, "label %d disagrees with the sealed label %v", m.Label, env.Label)
		case env.Label.Kind == seal.KindReport && env.Values() != d:
			return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, field, t, "report of %d values for dimension %d", env.Values(), d)
		case env.Label.Kind != seal.KindReport && env.Values() != 1:
			return nil, wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, field, t, "%v message of %d values", env.Label.Kind, env.Values())
		}
		out[i] = role.Message[[]byte]{Label: roleLabel(env.Label), Payload: m.Ciphertext}
	}
	return out, nil
}

// SubmitReport implements wire.ShufflerServer. The report is checked
// (signature, round, sealed headers, the round machine's label rules),
// stored in the inbox and only then counted in the round and acknowledged.
// An identical retry is acknowledged again with duplicate set.
func (s *Shuffler) SubmitReport(ctx context.Context, req *wire.SubmitReportRequest) (*wire.SubmitReportResponse, error) {
	t := req.Round
	id, err := verify(ctx, s.ver, s.now(), wire.Shuffler_SubmitReport_FullMethodName, t, req)
	if err != nil {
		return nil, s.reject(err)
	}
	cur, err := s.admitReport(t, id)
	if err != nil {
		return nil, s.reject(err)
	}
	msgs, err := s.parse(t, req.Messages)
	if err != nil {
		return nil, s.reject(err)
	}
	// The round machine's label rules, checked before anything is stored.
	cur.mu.Lock()
	err = cur.live.Check(msgs)
	cur.mu.Unlock()
	switch {
	case errors.Is(err, role.ErrClosed):
		return nil, s.reject(wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED, "round", t, "round %d is closed", t))
	case err != nil:
		return nil, s.reject(wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "messages", t, "%v", err))
	}
	cur.gate.RLock()
	defer cur.gate.RUnlock()
	if cur.closing.Load() || !s.now().Before(cur.deadline) {
		return nil, s.reject(wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED, "round", t, "round %d is closed", t))
	}
	rep := store.Report{Round: t, Client: id, Nonce: req.Auth.Nonce, Messages: make([]store.SealedMessage, len(req.Messages))}
	var size int64
	for i, m := range req.Messages {
		rep.Messages[i] = store.SealedMessage{Label: m.Label, Sealed: m.Ciphertext}
		size += int64(len(m.Ciphertext))
	}
	retry, err := s.persistReport(rep)
	if err != nil {
		return nil, s.reject(err)
	}
	return s.count(cur, id, msgs, size, retry)
}

// admitReport returns the round a report of sender id for round t may
// join: the open round, which must have sampled the sender, who must have
// registered when the run gives clients their own budgets.
func (s *Shuffler) admitReport(t int64, id string) (*sround, error) {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	switch {
	case cur == nil || t > cur.t:
		return nil, wire.Errorf(codes.NotFound, wire.Reason_REASON_UNKNOWN_ROUND, "round", t, "round %d is not open", t)
	case t < cur.t:
		return nil, wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED, "round", t, "round %d is closed", t)
	case cur.sample != nil && !cur.sample[id]:
		return nil, wire.Errorf(codes.PermissionDenied, wire.Reason_REASON_NOT_SAMPLED, "round", t, "%s is not in round %d's sample", id, t)
	case s.st.OwnBudgets && !s.isRegistered(id):
		return nil, wire.Errorf(codes.PermissionDenied, wire.Reason_REASON_NOT_REGISTERED, "round", t, "%s has not declared its budget (register first)", id)
	}
	return cur, nil
}

// persistReport stores a report in the inbox, the durable record of the
// round's submissions and the one judge of duplicates: retry says the
// store already held this very report (a client's retry). The store's
// answer must be known whatever the client does, so it runs with the
// service's context, not the request's: a client that gave up could leave
// a report committed but not in the round.
func (s *Shuffler) persistReport(rep store.Report) (retry bool, err error) {
	t := rep.Round
	err = s.acc.Accept(s.ctx, rep)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, store.ErrAlreadyAccepted):
		return true, nil
	case errors.Is(err, store.ErrDuplicateReport):
		return false, wire.Errorf(codes.AlreadyExists, wire.Reason_REASON_DUPLICATE_REPORT, "round", t, "%s already reported in round %d", rep.Client, t)
	case errors.Is(err, store.ErrReplay):
		return false, wire.Errorf(codes.AlreadyExists, wire.Reason_REASON_REPLAY, "messages", t, "%v", err)
	case errors.Is(err, store.ErrRoundClosed):
		return false, wire.Errorf(codes.FailedPrecondition, wire.Reason_REASON_ROUND_CLOSED, "round", t, "round %d is closed", t)
	case errors.Is(err, store.ErrUnknownRound):
		return false, wire.Errorf(codes.NotFound, wire.Reason_REASON_UNKNOWN_ROUND, "round", t, "round %d is unknown", t)
	}
	return false, wire.Errorf(codes.Unavailable, wire.Reason_REASON_INTERNAL, "", t, "storing the report: %v", err)
}

// count adds a stored report to the round machine and acknowledges it; a
// report the round already holds is acknowledged as a duplicate (a retry:
// an earlier attempt may have failed, or still be on its way, after the
// store committed). The round closes early once every expected sender is
// in.
func (s *Shuffler) count(cur *sround, id string, msgs []role.Message[[]byte], size int64, retry bool) (*wire.SubmitReportResponse, error) {
	t := cur.t
	cur.mu.Lock()
	// Resubmit even for a first store: the store holds one report per
	// client and round, so a sender the machine already holds is this
	// very report, counted by a concurrent retry that found it stored
	// before this attempt reached the machine.
	ack, err := s.addReport(cur, id, msgs, size)
	if err == nil && !ack.Duplicate {
		cur.reporters = append(cur.reporters, id)
	}
	cur.mu.Unlock()
	if err != nil {
		// Stored but refused by the machine: cannot happen after Check
		// and the store's duplicate check; the stored copy is what counts.
		s.logf("shuffler: round %d: %s: stored report refused by the role: %v", t, id, err)
		return nil, wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", t, "%v", err)
	}
	s.mu.Lock()
	if retry {
		s.stats.Retries++
	}
	if !ack.Duplicate {
		s.stats.Accepted++
		s.stats.Bytes += size
	}
	s.mu.Unlock()
	if !ack.Duplicate {
		s.prog.report(Progress{Role: "shuffler", Round: t, Stage: StageReceiving, Done: int64(ack.Senders), Total: int64(cur.expected)})
	}
	if !ack.Duplicate && ack.Senders >= cur.expected {
		go s.startClose(cur)
	}
	return &wire.SubmitReportResponse{Round: t, StoredMessages: uint32(len(msgs)), Duplicate: retry}, nil
}

// startClose closes sr once: at the expected count or at the deadline.
func (s *Shuffler) startClose(sr *sround) {
	if sr.closing.Swap(true) {
		return
	}
	sr.gate.Lock() // waits for submissions in flight
	sr.gate.Unlock()
	s.mu.Lock()
	tm := sr.timer
	s.mu.Unlock()
	if tm != nil {
		tm.Stop()
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.closeAndForward(sr)
	}()
}

// closeAndForward pads, permutes and forwards the round's batch (or a void
// header below the minimum), retrying until the analyzer acknowledges.
func (s *Shuffler) closeAndForward(sr *sround) {
	if s.cfg.Shards > 0 {
		s.closeSharded(sr)
		return
	}
	sr.mu.Lock()
	spill := s.spills(sr)
	sr.mu.Unlock()
	if spill {
		s.closeSpilled(sr)
		return
	}
	t := sr.t
	gen := streams{s.cfg.TestSeed}
	pad, perm := gen.get(rng.LabelShuffle, uint64(t), 0), gen.get(rng.LabelShuffle, uint64(t), 1)
	dum := newDummies(s.sealer, uint64(t))
	dummy := func(j int, v float64) ([]byte, error) {
		if s.st.Proto.Mode() != protocol.PerCoordinate {
			return nil, errf("dummy reports of whole-report protocols are not supported")
		}
		return dum.add(j, v), nil
	}
	sr.mu.Lock()
	senders := sr.live.Senders()
	batch, err := sr.live.Close(pad, perm, dummy)
	reporters := slices.Clone(sr.reporters)
	sr.mu.Unlock()
	if err == nil {
		shuffling := Progress{Role: "shuffler", Round: t, Stage: StageShuffling, Reports: int64(senders), Total: int64(dum.len())}
		err = dum.seal(goMaxProcs(), func(done int) {
			p := shuffling // the sealing workers call this concurrently
			p.Done = int64(done)
			s.prog.report(p)
		})
	}
	h := s.batchHeader(sr)
	switch {
	case errors.Is(err, role.ErrTooFew):
		s.voidRound(sr, h, senders)
		return
	case err != nil:
		s.logf("shuffler: round %d: closing: %v", t, err)
		return
	}
	ms := batchMessages(batch)
	h.Counts.Reports, h.Counts.Messages, h.Counts.Dummies = uint32(batch.Senders), uint64(len(ms)), uint64(dum.len())
	h.ReporterEpsilons, h.ReporterDeltas = s.reporterBudgets(reporters)
	if err := s.saveBatch(h, ms); err != nil {
		// Never forward a shuffle that is not durable: after a restart a
		// second, different shuffle of the same reports would let the
		// analyzer tell the dummies apart (they are the messages not
		// common to both).
		s.logf("shuffler: round %d: saving the shuffled batch: %v", t, err)
		return
	}
	s.forwardLoop(h, ms, false)
}

// batchHeader is round sr's batch header before its counts: under
// sampling it carries the true sampling rate (the analyzer states the
// round at sampled/population, never at the configured rate).
func (s *Shuffler) batchHeader(sr *sround) *wire.BatchHeader {
	h := &wire.BatchHeader{Round: sr.t, RunId: s.st.RunID, Counts: &wire.BatchCounts{}}
	if sr.sample != nil {
		h.Counts.Population, h.Counts.Sampled = uint32(sr.population), uint32(len(sr.sample))
	}
	return h
}

// voidRound records round sr void (below the minimum at its close) and
// forwards the void header h.
func (s *Shuffler) voidRound(sr *sround, h *wire.BatchHeader, senders int) {
	t := sr.t
	s.logf("shuffler: round %d void: %d of at least %d reports at the deadline", t, senders, sr.min)
	s.prog.report(Progress{Role: "shuffler", Round: t, Stage: StageVoid})
	if err := s.cfg.DB.VoidInboxRound(t); err != nil && !errors.Is(err, store.ErrRoundVoid) {
		s.logf("shuffler: round %d: %v", t, err)
	}
	s.forwardLoop(h, nil, true)
}

// batchMessages lists a closed round's batch as the wire carries it:
// the columns in coordinate order, then the whole reports, then the
// metadata, each group in its permuted order. A payload's wire label is
// its group's (the coordinate, or 0), which the shuffler checked against
// the sealed header when it accepted the payload.
func batchMessages(b *role.Batch[[]byte]) []*wire.SealedMessage {
	n := len(b.Reports) + len(b.Meta)
	for _, col := range b.Columns {
		n += len(col)
	}
	ms := make([]*wire.SealedMessage, 0, n)
	all := make([]wire.SealedMessage, n)
	add := func(label uint32, p []byte) {
		m := &all[len(ms)]
		m.Label, m.Ciphertext = label, p
		ms = append(ms, m)
	}
	for j, col := range b.Columns {
		for _, p := range col {
			add(uint32(j), p)
		}
	}
	for _, p := range b.Reports {
		add(0, p)
	}
	for _, p := range b.Meta {
		add(0, p)
	}
	return ms
}

// reporterBudgets returns the budgets of a batch's reporters as the header
// carries them: for a personalized protocol the epsilons and the deltas,
// each sorted (no identities, no order of arrival); empty when every
// reporter has the uniform budget, and for other protocols. A reporter that never registered (a
// run without sampling accepts reports from any client with credentials)
// has the uniform budget, as a registration without a budget would.
func (s *Shuffler) reporterBudgets(ids []string) (eps, deltas []float64) {
	if !s.st.Personalized {
		return nil, nil
	}
	bs := make([]protocol.Budget, len(ids))
	uniform := true
	s.mu.Lock()
	for i, id := range ids {
		b, ok := s.budgets[id]
		if !ok {
			b = s.st.Budget
		}
		bs[i] = b
		uniform = uniform && b == s.st.Budget
	}
	s.mu.Unlock()
	if uniform && !s.st.OwnBudgets {
		return nil, nil
	}
	return sortedBudgets(bs)
}

// isRegistered says whether id's registration is recorded.
func (s *Shuffler) isRegistered(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.budgets[id]
	return ok
}

// saveBatch stores the round's shuffled batch (store.DB.SaveBatch) before
// its first forward attempt; every retry, and a restarted shuffler,
// forwards the saved batch, never a fresh shuffle.
func (s *Shuffler) saveBatch(h *wire.BatchHeader, ms []*wire.SealedMessage) error {
	hb, err := proto.Marshal(h)
	if err != nil {
		return err
	}
	sms := make([]store.SealedMessage, len(ms))
	for i, m := range ms {
		sms[i] = store.SealedMessage{Label: m.Label, Sealed: m.Ciphertext}
	}
	return s.cfg.DB.SaveBatch(h.Round, hb, sms)
}

// forwardSaved forwards round t's saved batch (a shuffler restarted after
// shuffling and before the analyzer's acknowledgement).
func (s *Shuffler) forwardSaved(t int64) error {
	b, err := s.cfg.DB.SavedBatch(t)
	if err != nil {
		return err
	}
	h := &wire.BatchHeader{}
	if err := proto.Unmarshal(b.Header, h); err != nil {
		return errf("deploy: shuffler: saved batch header of round %d: %w", t, err)
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.forwardStored(h)
	}()
	s.logf("shuffler: round %d: forwarding its saved batch (%d messages, read from the inbox as it is sent) after a restart", t, b.Messages)
	return nil
}

// Batch streams to the analyzer (forwardLoop, forward). A batch travels
// in chunks of at most forwardChunkBytes of ciphertext, each well inside
// the analyzer link's flow-control window (linkStreamWindow), so that a
// chunk never waits for a window update and every chunk handed to the
// transport is observable progress. A stream that makes no progress (no
// chunk accepted) for ShufflerConfig.ForwardStall, or whose answer does
// not come within ShufflerConfig.ForwardReply after the last chunk, is
// cancelled and retried with the same saved batch; a retry is idempotent
// (the analyzer answers already_released for a released round).
const (
	forwardChunkBytes    = 4 << 20
	forwardChunkMessages = 4096
	defaultForwardStall  = time.Minute
	defaultForwardReply  = 30 * time.Minute
)

// errStalled is the cause of a batch stream cancelled by its watchdog.
var errStalled = errors.New("batch stream made no progress")

// forwardLoop sends a round's batch (or void header) to the analyzer,
// retrying until it acknowledges or the shuffler stops.
func (s *Shuffler) forwardLoop(h *wire.BatchHeader, ms []*wire.SealedMessage, void bool) {
	src, err := memorySource(h, ms)
	if err != nil {
		s.logf("shuffler: round %d: %v", h.Round, err)
		return
	}
	s.forwardAttempts(h, src, void)
}

// forwardAttempts sends a round's batch (or void header) from src to the
// analyzer, retrying until it acknowledges or the shuffler stops.
func (s *Shuffler) forwardAttempts(h *wire.BatchHeader, src batchSource, void bool) {
	t := h.Round
	for attempt := 0; ; attempt++ {
		if s.ctx.Err() != nil {
			return
		}
		start := time.Now()
		resp, sent, err := s.forward(t, src)
		if err == nil && src.acked != nil {
			err = src.acked()
		}
		if err == nil {
			if !void {
				if err := s.cfg.DB.MarkForwarded(t); err != nil && !errors.Is(err, store.ErrAlreadyForwarded) {
					s.logf("shuffler: round %d: %v", t, err)
				}
			}
			s.mu.Lock()
			if void {
				s.stats.Void++
			} else {
				s.stats.Forwarded++
				s.stats.Messages += src.messages
			}
			s.mu.Unlock()
			s.logf("shuffler: round %d forwarded: %d reports, %d messages (%d dummies), %d bytes in %d chunks sent in %.2fs, answered %.2fs later (attempt %d); analyzer accepted %d, released before: %v",
				t, h.Counts.Reports, src.messages, h.Counts.Dummies, *src.bytes, src.chunks, sent.Sub(start).Seconds(), time.Since(sent).Seconds(), attempt+1, resp.Accepted, resp.AlreadyReleased)
			s.roundOver(t)
			return
		}
		if d, ok := wire.DetailOf(err); ok && d.Reason == wire.Reason_REASON_ROUND_CLOSED {
			s.logf("shuffler: round %d: the analyzer refused the batch: %v", t, err)
			s.roundOver(t)
			return
		}
		if errors.Is(err, errStalled) || attempt%20 == 0 {
			s.logf("shuffler: round %d: forwarding (attempt %d, %.1fs): %v", t, attempt+1, time.Since(start).Seconds(), err)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// forward streams one attempt of a round's batch under a watchdog: the
// stream is cancelled with an error wrapping errStalled when no chunk is
// accepted for ForwardStall, or when the answer takes longer than
// ForwardReply after the last chunk. It returns the answer and when the
// last chunk was handed to the transport.
func (s *Shuffler) forward(t int64, src batchSource) (*wire.BatchResponse, time.Time, error) {
	stall, reply := s.cfg.ForwardStall, s.cfg.ForwardReply
	if stall <= 0 {
		stall = defaultForwardStall
	}
	if reply <= 0 {
		reply = defaultForwardReply
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	defer cancel(nil)
	var sent atomic.Int64
	var waiting atomic.Bool // all chunks sent; awaiting the answer
	wd := time.AfterFunc(stall, func() {
		if waiting.Load() {
			cancel(fmt.Errorf("%w: no answer %v after the last of %d chunks", errStalled, reply, sent.Load()))
			return
		}
		cancel(fmt.Errorf("%w for %v: %d of %d chunks handed to the transport", errStalled, stall, sent.Load(), src.chunks))
	})
	defer wd.Stop()
	var sentAt time.Time
	fail := func(err error) (*wire.BatchResponse, time.Time, error) {
		if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
			return nil, sentAt, fmt.Errorf("%w (%v)", cause, err)
		}
		return nil, sentAt, err
	}
	st, err := s.cfg.Analyzer.SubmitBatch(ctx)
	if err != nil {
		return fail(err)
	}
	var sendErr error
	err = src.each(func(c *wire.BatchChunk) error {
		if sendErr = st.Send(c); sendErr != nil {
			return sendErr
		}
		n := sent.Add(1)
		wd.Reset(stall)
		s.prog.report(Progress{Role: "shuffler", Round: t, Stage: StageForwarding, Done: n, Total: max(int64(src.chunks), n)})
		return nil
	})
	if sendErr != nil {
		// The stream's status says why (Send only reports io.EOF).
		if _, rerr := st.CloseAndRecv(); rerr != nil {
			err = rerr
		}
		return fail(err)
	}
	if err != nil {
		return fail(err)
	}
	// The analyzer opens, estimates and commits before it answers.
	sentAt = time.Now()
	waiting.Store(true)
	wd.Reset(reply)
	resp, err := st.CloseAndRecv()
	if err != nil {
		return fail(err)
	}
	return resp, sentAt, nil
}
