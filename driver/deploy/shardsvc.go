package deploy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/driver/round"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/role/shard"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// A shuffler shard (`shufflefl shuffler-shard`; docs/DEPLOYMENT.md,
// "Shuffler shards") takes its part of each round from the shard queue
// (shardq.go): it stores every chunk the front routes to it in its own
// inbox (one inbox "report" per chunk, so a redelivered chunk is stored
// once), and at the round's close pads the coordinates it owns (the
// protocol's padding drawn on the round's counts from the stream every
// shard shares, keeping the dummies of its own range), shuffles its part
// on disk (spill.go's two-stage shuffle, with generators of its own),
// saves it and only then acknowledges the close and forwards the saved
// part to the analyzer as part s of S. As for one shuffler, a part is
// never forwarded unless saved: after a restart the saved part is
// forwarded as it was, never a second shuffle.

// ShardConfig configures a shuffler shard (NewShuffleShard).
type ShardConfig struct {
	Setup *Setup
	// DB is the shard's own database: its inbox of chunks and its saved
	// parts.
	DB *store.DB
	// AnalyzerKey is the analyzer's HPKE public key (the dummies are
	// sealed to it); Analyzer the analyzer's batch service.
	AnalyzerKey *seal.PublicKey
	Analyzer    wire.AnalyzerClient
	// Conn is the connection to the NATS JetStream server of the shard
	// queue; Key the shuffler's shard key.
	Conn *jetstream.Conn
	Key  *ShardKey
	// Index is the shard's index s in 1..Shards.
	Index, Shards int
	// TestSeed, if set, draws the padding from the single shuffler's
	// stream rng.Stream(seed, LabelShuffle, round, 0) and the shard's
	// scatter and permutation from streams of the seed (test mode only);
	// otherwise the padding comes from the shard key's draws and the
	// shuffle from crypto/rand.
	TestSeed *uint64
	// Logf logs events (log.Printf if nil).
	Logf func(format string, a ...any)
	// Progress and ProgressEvery are ShufflerConfig's.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// ShuffleMemory is the budget one spill file is sized to (a quarter
	// of it; 1 GiB if zero); SpillDir the directory of the spill files
	// ("spill-shard-<s>" next to the database if empty).
	ShuffleMemory int64
	SpillDir      string
	// ForwardStall and ForwardReply are ShufflerConfig's.
	ForwardStall, ForwardReply time.Duration
	// AckWait is how long a delivered queue message may stay
	// unacknowledged before the server delivers it again
	// (jetstream.DefaultAckWait if zero); a close is kept alive while
	// its part is shuffled.
	AckWait time.Duration

	// closeRetry is how long a close waits for its chunks before it is
	// delivered again (one second if zero; tests).
	closeRetry time.Duration
	// skipAck, if set and true for a stored chunk's id, leaves the chunk
	// unacknowledged (tests: a redelivery).
	skipAck func(id string) bool
}

// ShuffleShard is a shuffler shard; see NewShuffleShard.
type ShuffleShard struct {
	cfg  ShardConfig
	sh   *Shuffler // forwarding, spilling and parsing, as the shuffler's
	cons *jetstream.Consumer
	tag  string
	own  shard.Range // the coordinates this shard pads
	role string      // the shard's name in logs and progress

	ctx    context.Context
	cancel context.CancelFunc
	loop   sync.WaitGroup
	// waiting are the rounds whose close waited for chunks (logged once;
	// only the consuming goroutine uses it).
	waiting map[int64]bool
}

// errBadPart marks a round's part this shard can never shuffle as sent:
// its close is refused rather than retried.
var errBadPart = errors.New("inconsistent part")

// NewShuffleShard starts shard cfg.Index of cfg.Shards: it forwards the
// parts its database holds saved but not acknowledged, then takes its
// messages from the shard queue (a durable consumer, so that whatever it
// did not acknowledge before a crash is delivered again) until Close.
func NewShuffleShard(cfg ShardConfig) (*ShuffleShard, error) {
	if cfg.Setup == nil || cfg.DB == nil || cfg.AnalyzerKey == nil || cfg.Analyzer == nil || cfg.Conn == nil || cfg.Key == nil {
		return nil, errf("deploy: shuffler shard: incomplete configuration")
	}
	own, err := shardRange(cfg.Setup, cfg.Index, cfg.Shards)
	if err != nil {
		return nil, fmt.Errorf("deploy: shuffler shard: %w", err)
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = jetstream.DefaultAckWait
	}
	if cfg.closeRetry <= 0 {
		cfg.closeRetry = time.Second
	}
	s := &ShuffleShard{cfg: cfg, tag: runTag(cfg.Setup.RunID), own: own, role: fmt.Sprintf("shard %d/%d", cfg.Index, cfg.Shards), waiting: map[int64]bool{}}
	if s.sh, err = s.newShuffler(); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// No disk shuffle is under way at the start: a crashed one's files go.
	if err := os.RemoveAll(s.sh.spillRoot()); err != nil {
		s.Close()
		return nil, fmt.Errorf("deploy: shuffler shard: spill directory: %w", err)
	}
	if err := s.resume(); err != nil {
		s.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	err = s.consume(ctx)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("deploy: shuffler shard: %w", err)
	}
	s.loop.Go(s.run)
	what := fmt.Sprintf("coordinates [%d, %d)", own.Lo, own.Hi)
	if cfg.Setup.Proto.Mode() != protocol.PerCoordinate {
		what = "whole reports"
	}
	s.sh.logf("serving shard %d of %d (%s) on %s", cfg.Index, cfg.Shards, what, shardFilter(s.tag, cfg.Index))
	return s, nil
}

// shardRange returns the coordinates shard index of shards pads: its
// range of shard.Ranges for a per-coordinate protocol, every coordinate
// otherwise (whole-report protocols pad nothing).
func shardRange(st *Setup, index, shards int) (shard.Range, error) {
	if shards < 1 || shards > wire.MaxShards || index < 1 || index > shards {
		return shard.Range{}, checks.Invalidf("shard %d of %d: want 1 <= shard <= shards <= %d", index, shards, wire.MaxShards)
	}
	switch st.Proto.Mode() {
	case protocol.NoShuffle:
		return shard.Range{}, checks.Invalidf("%s does not shuffle: nothing to shard", st.Proto.Name())
	case protocol.WholeReport:
		return shard.Range{Lo: 0, Hi: st.Dim()}, nil
	}
	rs, err := shard.Ranges(st.Dim(), shards)
	if err != nil {
		return shard.Range{}, err
	}
	return rs[index-1], nil
}

// newShuffler builds the shard's internal Shuffler: the fields its
// forwarding (forwardAttempts, forwardStored, forwardSaved), its disk
// shuffle (spillRoot, shuffleMemory), parse and roundOver read. It serves
// no client and is never closed with Shuffler.Close (it has no acceptor).
func (s *ShuffleShard) newShuffler() (*Shuffler, error) {
	cfg := s.cfg
	sealer, err := seal.NewSealer(cfg.AnalyzerKey, cfg.Setup.RunID)
	if err != nil {
		return nil, err
	}
	base := cfg.Logf
	if base == nil {
		base = log.Printf
	}
	// The Shuffler's lines ("shuffler: round 3 forwarded ...") are the
	// shard's.
	prefix := s.role + ": "
	logf := func(format string, a ...any) { base(prefix+strings.TrimPrefix(format, "shuffler: "), a...) }
	var prog func(Progress)
	if cfg.Progress != nil {
		prog = func(p Progress) {
			p.Role = s.role
			cfg.Progress(p)
		}
	}
	spillDir := cfg.SpillDir
	if spillDir == "" {
		spillDir = filepath.Join(filepath.Dir(cfg.DB.Path()), fmt.Sprintf("spill-shard-%d", cfg.Index))
	}
	sc := ShufflerConfig{Setup: cfg.Setup, DB: cfg.DB, AnalyzerKey: cfg.AnalyzerKey, Analyzer: cfg.Analyzer, TestSeed: cfg.TestSeed, Logf: logf,
		ForwardStall: cfg.ForwardStall, ForwardReply: cfg.ForwardReply, ShuffleMemory: cfg.ShuffleMemory, SpillDir: spillDir}
	sh := &Shuffler{cfg: sc, st: cfg.Setup, sealer: sealer, logf: logf, now: time.Now, prog: newMeter(prog, cfg.ProgressEvery),
		registered: map[string]time.Time{}, budgets: map[string]protocol.Budget{}, stats: ShufflerStats{Rejected: map[string]int64{}}, roundChanged: make(chan struct{})}
	sh.ctx, sh.cancel = context.WithCancel(context.Background())
	return sh, nil
}

// resume forwards the parts saved and not acknowledged before a restart,
// and notes the rounds already over; the open rounds wait for their close
// on the queue.
func (s *ShuffleShard) resume() error {
	rs, err := s.cfg.DB.InboxRounds()
	if err != nil {
		return err
	}
	for _, r := range rs {
		switch r.Status {
		case store.InboxForwarded, store.InboxVoid:
			s.sh.roundOver(r.Round)
		case store.InboxShuffled:
			if err := s.sh.forwardSaved(r.Round); err != nil {
				return err
			}
		}
	}
	return nil
}

// Finished is closed once the run's last round is over for the shard: its
// part was acknowledged by the analyzer (or the round was void).
func (s *ShuffleShard) Finished() <-chan struct{} { return s.sh.Finished() }

// Stats returns the shard's counts (forwarded rounds and messages).
func (s *ShuffleShard) Stats() ShufflerStats { return s.sh.Stats() }

// Close stops taking messages and the forwarding; what is not
// acknowledged is delivered again to the next shard on the queue.
func (s *ShuffleShard) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.loop.Wait()
	s.sh.cancel()
	s.sh.bg.Wait()
}

// consume opens (creating it if missing) the shard queue and this
// shard's consumer on it.
func (s *ShuffleShard) consume(ctx context.Context) error {
	q, err := openShardQueue(ctx, s.cfg.Conn)
	if err != nil {
		return err
	}
	c, err := q.q.Consumer(ctx, jetstream.ConsumerConfig{Name: fmt.Sprintf("shard-%s-%d", s.tag, s.cfg.Index), Subject: shardFilter(s.tag, s.cfg.Index), AckWait: s.cfg.AckWait})
	if err != nil {
		return err // the consumer in use, if any, stays: run fetches and retries on it
	}
	s.cons = c
	return nil
}

// run takes the shard's messages one at a time until Close. A fetch that
// fails (the queue or the consumer was deleted) opens them again, so that
// the chunks the front routes again reach the shard.
func (s *ShuffleShard) run() {
	for s.ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		msgs, err := s.cons.Fetch(fctx, 1)
		cancel()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.sh.logf("shard queue: %v", err)
			sleepCtx(s.ctx, time.Second)
			octx, ocancel := context.WithTimeout(s.ctx, 10*time.Second)
			if oerr := s.consume(octx); oerr != nil && s.ctx.Err() == nil {
				s.sh.logf("shard queue: opening it again: %v", oerr)
			}
			ocancel()
		}
		for _, m := range msgs {
			s.handle(m)
		}
	}
}

// handle opens one queue message and serves it; a message that does not
// open under the shard key, or whose content is not its subject's and
// id's, is refused for good.
func (s *ShuffleShard) handle(m *jetstream.Msg) {
	env, err := s.cfg.Key.open(m.Subject(), m.ID(), m.Data())
	if err == nil {
		err = s.checkPlace(env, m.Subject(), m.ID())
	}
	if err != nil {
		s.refuse(m, err)
		return
	}
	if c := env.GetChunk(); c != nil {
		s.chunk(m, c)
		return
	}
	s.closeRound(m, env.GetClose())
}

// checkPlace checks that an envelope is one of this shard's, of a round
// of the run, published on its subject under its id.
func (s *ShuffleShard) checkPlace(env *wire.ShardEnvelope, subject, id string) error {
	var t int64
	var sh uint32
	var want string
	if c := env.GetChunk(); c != nil {
		t, sh, want = c.Round, c.Shard, shardChunkID(s.tag, c.Round, s.cfg.Index, int(c.Index))
	} else {
		h := env.GetClose().Header
		t, sh, want = h.Round, h.Shard, shardCloseID(s.tag, h.Round, s.cfg.Index)
		if h.RunId != s.cfg.Setup.RunID || int(h.Shards) != s.cfg.Shards {
			return fmt.Errorf("a close of run %q with %d shards; this shard serves run %q with %d", h.RunId, h.Shards, s.cfg.Setup.RunID, s.cfg.Shards)
		}
	}
	switch {
	case int(sh) != s.cfg.Index:
		return fmt.Errorf("a message for shard %d", sh)
	case t < 1 || t > int64(s.cfg.Setup.Config.Rounds):
		return fmt.Errorf("round %d is not a round of the run (1..%d)", t, s.cfg.Setup.Config.Rounds)
	}
	if base, ok := baseID(id); subject != shardSubject(s.tag, s.cfg.Index, t) || !ok || base != want {
		return fmt.Errorf("content of round %d (id %s) published on %s under id %s", t, want, subject, id)
	}
	return nil
}

// refuse drops a message for good and logs why.
func (s *ShuffleShard) refuse(m *jetstream.Msg, err error) {
	s.sh.logf("refusing the queue message %s (id %q, seq %d): %v", m.Subject(), m.ID(), m.Sequence(), err)
	if err := m.Term(); err != nil {
		s.sh.logf("refusing %s: %v", m.ID(), err)
	}
}

// retry gives a message back for a later delivery after a failure that
// may pass (the database's).
func (s *ShuffleShard) retry(m *jetstream.Msg, err error) {
	s.sh.logf("%s: %v (retrying)", m.ID(), err)
	_ = m.NakDelay(s.cfg.closeRetry)
}

// ack acknowledges a served message and waits for the server's answer.
func (s *ShuffleShard) ack(m *jetstream.Msg) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := m.AckSync(ctx); err != nil {
		// Served: its next delivery is recognised and acknowledged again.
		s.sh.logf("acknowledging %s: %v", m.ID(), err)
	}
}

// chunk stores one chunk durably in the round's inbox, then acknowledges
// it; a chunk of a round this shard already shuffled is dropped.
func (s *ShuffleShard) chunk(m *jetstream.Msg, c *wire.ShardChunk) {
	t := c.Round
	if len(c.Messages) == 0 {
		s.refuse(m, errf("chunk %d of round %d is empty (the front sends no empty chunk)", c.Index, t))
		return
	}
	if _, err := s.ownMessages(t, c.Messages); err != nil {
		s.refuse(m, fmt.Errorf("chunk %d of round %d: %w", c.Index, t, err))
		return
	}
	status, err := s.inboxStatus(t)
	if err != nil {
		s.retry(m, err)
		return
	}
	if status == store.InboxOpen {
		// The nonce is the base id's: the same chunk routed again (another
		// generation) is the same submission, acknowledged as stored.
		base, _ := baseID(m.ID()) // checked by checkPlace
		rep := store.Report{Round: t, Client: chunkClient(int(c.Index)), Nonce: chunkNonce(base), Messages: make([]store.SealedMessage, len(c.Messages))}
		for i, msg := range c.Messages {
			rep.Messages[i] = store.SealedMessage{Label: msg.Label, Sealed: msg.Ciphertext}
		}
		err = s.cfg.DB.Accept(rep)
	}
	switch {
	case err == nil, errors.Is(err, store.ErrAlreadyAccepted), errors.Is(err, store.ErrRoundClosed):
		// Stored now, stored before (a redelivery), or the round was
		// shuffled meanwhile.
	case errors.Is(err, store.ErrDuplicateReport), errors.Is(err, store.ErrReplay), errors.Is(err, checks.ErrInvalid):
		s.refuse(m, err)
		return
	default:
		s.retry(m, err)
		return
	}
	if s.cfg.skipAck != nil && s.cfg.skipAck(m.ID()) {
		return
	}
	s.ack(m)
}

// inboxStatus returns round t's state in the inbox, opening it if new.
func (s *ShuffleShard) inboxStatus(t int64) (store.InboxStatus, error) {
	r, err := s.cfg.DB.InboxRound(t)
	if errors.Is(err, store.ErrUnknownRound) {
		if err := s.cfg.DB.OpenInboxRound(t, nil); err != nil && !errors.Is(err, store.ErrRoundExists) {
			return "", err
		}
		return store.InboxOpen, nil
	}
	return r.Status, err
}

// chunkClient is chunk i's "client" in the inbox; chunkIndex reads it.
func chunkClient(i int) string { return fmt.Sprintf("chunk-%06d", i) }

func chunkIndex(client string) (int, error) {
	s, ok := strings.CutPrefix(client, "chunk-")
	i, err := strconv.Atoi(s)
	if !ok || err != nil || i < 0 {
		return 0, fmt.Errorf("%w: %q is not a chunk of the shard queue", errBadPart, client)
	}
	return i, nil
}

// chunkNonce is a chunk's nonce in the inbox: the SHA-256 of its id,
// unique to the run, round, shard and index.
func chunkNonce(id string) []byte {
	h := sha256.Sum256([]byte("shufflefl shard chunk\x00" + id))
	return h[:]
}

// ownMessages parses a chunk's sealed messages (their public headers, as
// the shuffler checks a report's) and checks that each is this shard's:
// a coordinate of its range, metadata on shard 1 only, a whole report of
// a whole-report protocol on any shard.
func (s *ShuffleShard) ownMessages(t int64, ms []*wire.SealedMessage) ([]role.Message[[]byte], error) {
	msgs, err := s.sh.parse(t, ms)
	if err != nil {
		return nil, err
	}
	perCoord := s.cfg.Setup.Proto.Mode() == protocol.PerCoordinate
	for i, m := range msgs {
		switch l := int(m.Label); {
		case m.Label == role.MetaLabel && s.cfg.Index != 1:
			return nil, fmt.Errorf("message %d: metadata goes to shard 1, not %d", i, s.cfg.Index)
		case m.Label == role.ReportLabel && perCoord, m.Label >= 0 && !perCoord:
			return nil, fmt.Errorf("message %d: label %d in a %v protocol's round", i, m.Label, s.cfg.Setup.Proto.Mode())
		case m.Label >= 0 && (l < s.own.Lo || l >= s.own.Hi):
			return nil, fmt.Errorf("message %d: coordinate %d is not in this shard's [%d, %d)", i, l, s.own.Lo, s.own.Hi)
		}
	}
	return msgs, nil
}

// closeRound serves a round's close once the inbox holds its chunks
// 0..chunks-1 (until then it is delivered again later): it shuffles and
// saves the part, acknowledges the close and forwards the saved part. A
// close of a round already shuffled is acknowledged (a redelivery).
func (s *ShuffleShard) closeRound(m *jetstream.Msg, cl *wire.ShardClose) {
	t := cl.Header.Round
	if err := s.checkClose(cl); err != nil {
		s.refuse(m, err)
		return
	}
	r, err := s.cfg.DB.InboxRound(t)
	if errors.Is(err, store.ErrUnknownRound) {
		if cl.Chunks > 0 {
			s.wait(m, t, 0, cl.Chunks)
			return
		}
		// No message of the round is this shard's: its part is the
		// dummies alone.
		if _, err = s.inboxStatus(t); err == nil {
			r, err = s.cfg.DB.InboxRound(t)
		}
	}
	switch {
	case err != nil:
		s.retry(m, err)
		return
	case r.Status != store.InboxOpen:
		s.ack(m)
		return
	case r.Reports < int64(cl.Chunks):
		s.wait(m, t, r.Reports, cl.Chunks)
		return
	case r.Reports > int64(cl.Chunks):
		s.refuse(m, fmt.Errorf("round %d: the inbox holds %d chunks, the close says %d", t, r.Reports, cl.Chunks))
		return
	}
	stop := keepAlive(m, s.cfg.AckWait/3)
	h, err := s.shuffle(cl, r.Messages)
	stop()
	switch {
	case errors.Is(err, role.ErrTooFew):
		s.sh.logf("round %d void: %v", t, err)
		if err := s.cfg.DB.VoidInboxRound(t); err != nil && !errors.Is(err, store.ErrRoundVoid) {
			s.retry(m, err)
			return
		}
		s.ack(m)
		s.sh.roundOver(t)
		return
	case errors.Is(err, errBadPart):
		s.refuse(m, fmt.Errorf("round %d: %w", t, err))
		return
	case err != nil:
		// Nothing is forwarded: the part is shuffled afresh when the
		// close comes again.
		s.retry(m, fmt.Errorf("round %d: shuffling: %w", t, err))
		return
	}
	s.ack(m)
	s.sh.bg.Go(func() { s.sh.forwardStored(h) })
}

// checkClose checks a close's counts against the run.
func (s *ShuffleShard) checkClose(cl *wire.ShardClose) error {
	d := s.cfg.Setup.Dim()
	if n := len(cl.Counts); n != d && (n != 0 || s.cfg.Setup.Proto.Mode() == protocol.PerCoordinate) {
		return fmt.Errorf("a close of round %d with %d counts for dimension %d", cl.Header.Round, n, d)
	}
	return nil
}

// wait gives back a close whose chunks are not all in yet.
func (s *ShuffleShard) wait(m *jetstream.Msg, t, have int64, want uint32) {
	if !s.waiting[t] {
		s.waiting[t] = true
		s.sh.logf("round %d: the close waits for its chunks (%d of %d stored)", t, have, want)
	}
	_ = m.NakDelay(s.cfg.closeRetry)
}

// shuffle pads, shuffles and saves round cl's part (stored messages real
// messages in the inbox) and returns its header: cl's with the part's
// counts of messages and dummies.
func (s *ShuffleShard) shuffle(cl *wire.ShardClose, stored int64) (*wire.BatchHeader, error) {
	t, st := cl.Header.Round, s.cfg.Setup
	if cl.Senders < cl.Min {
		return nil, fmt.Errorf("%d of at least %d reports: %w", cl.Senders, cl.Min, role.ErrTooFew)
	}
	counts := cl.Counts
	if len(counts) == 0 { // whole reports: each counts for every coordinate
		counts = make([]int64, st.Dim())
		for j := range counts {
			counts[j] = int64(cl.Senders)
		}
	}
	live, err := s.machine(cl)
	if err != nil {
		return nil, err
	}
	nd, err := s.dryDummies(cl, counts)
	if err != nil {
		return nil, err
	}
	kind, values := seal.KindCoord, 1
	if st.Proto.Mode() != protocol.PerCoordinate {
		kind, values = seal.KindReport, st.Dim()
	}
	suite := s.sh.sealer.Suite()
	total := stored*int64(seal.MessageSize(suite, kind, values)) + nd*int64(seal.MessageSize(suite, seal.KindCoord, 1))
	pick, perm := s.shuffleStreams(t)
	sp, err := newSpill(filepath.Join(s.sh.spillRoot(), "round-"+strconv.FormatInt(t, 10)), spillFiles(total, s.sh.shuffleMemory()), pick)
	if err != nil {
		return nil, err
	}
	defer sp.remove()
	err = s.scatterChunks(cl, sp)
	if err == nil {
		err = s.scatterDummies(cl, live, counts, sp)
	}
	if err = errors.Join(err, sp.finish()); err != nil {
		return nil, err
	}
	h := proto.Clone(cl.Header).(*wire.BatchHeader)
	h.Counts.Messages, h.Counts.Dummies = uint64(sp.n), uint64(sp.dummies)
	hb, err := proto.Marshal(h)
	if err == nil {
		err = s.cfg.DB.SaveBatchFunc(t, hb, func(put func(store.SealedMessage) error) error { return sp.gather(perm, put) })
	}
	if err != nil {
		return nil, fmt.Errorf("saving the shuffled part: %w", err)
	}
	s.sh.logf("round %d: part shuffled on disk and saved: %d messages (%d dummies) through %d spill files", t, sp.n, sp.dummies, len(sp.paths))
	return h, nil
}

// machine is round cl's role.Shuffler with the round's shape: the
// sample's population and size from the header when sampled,
// participants set to the senders when it closes.
func (s *ShuffleShard) machine(cl *wire.ShardClose) (*role.Shuffler[[]byte], error) {
	sh := s.cfg.Setup.Shape(int(cl.Header.Round))
	sh.Participants = 0
	if c := cl.Header.Counts; c.Population != 0 {
		sh.Population, sh.Sampled = int(c.Population), int(c.Sampled)
	}
	return role.NewShuffler[[]byte](s.cfg.Setup.Proto, sh, int(cl.Min))
}

// dryDummies counts the dummies of this shard's range the padding draws
// on counts with a generator of the shard's own (the round's stream is
// untouched): it sizes the spill files.
func (s *ShuffleShard) dryDummies(cl *wire.ShardClose, counts []int64) (int64, error) {
	live, err := s.machine(cl)
	if err != nil {
		return 0, err
	}
	var n int64
	err = live.CloseCounts(rand.New(rand.NewPCG(1, 2)), int(cl.Senders), counts, func(j int, _ float64) {
		if j >= s.own.Lo && j < s.own.Hi {
			n++
		}
	})
	return n, err
}

// shuffleStreams returns the generators of round t's scatter (the spill
// file of each message) and of the files' permutations: in test mode
// streams of the seed of this shard's own, else crypto/rand. They are
// never the shard key's draws, which the front holds.
func (s *ShuffleShard) shuffleStreams(t int64) (pick, perm *rand.Rand) {
	if s.cfg.TestSeed == nil {
		return rng.NewCrypto(), rng.NewCrypto()
	}
	idx := uint64(s.cfg.Index)
	return shardDraws(s.cfg.TestSeed, nil, "", t, "scatter", 1, idx, 0), shardDraws(s.cfg.TestSeed, nil, "", t, "permute", 1, idx, 1)
}

// scatterChunks sends the round's stored chunks to the spill files,
// checking that they are chunks 0..chunks-1 and, for a per-coordinate
// protocol, that they hold counts[j] messages of each coordinate j of the
// shard's range.
func (s *ShuffleShard) scatterChunks(cl *wire.ShardClose, sp *spill) error {
	t := cl.Header.Round
	got := make([]int64, s.cfg.Setup.Dim())
	err := s.cfg.DB.EachRoundReport(t, func(rep store.InboxReport) error {
		i, err := chunkIndex(rep.Client)
		if err != nil {
			return err
		}
		if i >= int(cl.Chunks) {
			return fmt.Errorf("%w: chunk %d stored, the close says %d chunks", errBadPart, i, cl.Chunks)
		}
		msgs, err := s.ownMessages(t, toWire(rep.Messages))
		if err != nil {
			return fmt.Errorf("%w: stored chunk %d: %v", errBadPart, i, err)
		}
		for _, m := range msgs {
			if m.Label >= 0 {
				got[m.Label]++
			}
			if err := sp.add(groupLabel(m.Label), m.Payload); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || s.cfg.Setup.Proto.Mode() != protocol.PerCoordinate {
		return err
	}
	for j := s.own.Lo; j < s.own.Hi; j++ {
		if got[j] != cl.Counts[j] {
			return fmt.Errorf("%w: %d messages of coordinate %d, the close counts %d", errBadPart, got[j], j, cl.Counts[j])
		}
	}
	return nil
}

// scatterDummies draws the round's padding on counts from the stream
// every shard shares and sends the dummies of this shard's coordinates,
// sealed a block at a time, to the spill files. A whole-report protocol
// draws none in a deployment (as one shuffler refuses them).
func (s *ShuffleShard) scatterDummies(cl *wire.ShardClose, live *role.Shuffler[[]byte], counts []int64, sp *spill) error {
	t := cl.Header.Round
	shuffling := Progress{Role: "shuffler", Round: t, Stage: StageShuffling, Reports: int64(cl.Senders)}
	ds := newDummySpill(s.sh.sealer, uint64(t), sp, func(n int64) {
		shuffling.Done, shuffling.Total = n, n
		s.sh.prog.report(shuffling)
	})
	perCoord := s.cfg.Setup.Proto.Mode() == protocol.PerCoordinate
	var derr error
	pad := shardDraws(s.cfg.TestSeed, s.cfg.Key, s.cfg.Setup.RunID, t, "pad", 0)
	err := live.CloseCounts(pad, int(cl.Senders), counts, func(j int, v float64) {
		switch {
		case !perCoord:
			derr = fmt.Errorf("%w: dummy reports of whole-report protocols are not supported", errBadPart)
		case j >= s.own.Lo && j < s.own.Hi:
			ds.add(j, v)
		}
	})
	return errors.Join(err, derr, ds.flush())
}

// ShardServiceOptions are the settings of `shufflefl shuffler-shard`:
// the service options it reads (Certs, Analyzer, DB, NATS, RunID, Serve,
// ShuffleMemory, Log, ProgressEvery) and the shard's own.
type ShardServiceOptions struct {
	// ServiceOptions' ShardKey is the file of the shard key
	// (WriteShardKey) the front shuffler and every shard share.
	ServiceOptions
	// Index is the shard's index s in 1..Shards.
	Index, Shards int
	// TestSeed, if set, is ShardConfig.TestSeed (test mode only).
	TestSeed *uint64
}

// ServeShuffleShard runs shard o.Index of o.Shards of the run cfg until
// the run's last round is over (its part acknowledged by the analyzer;
// with o.Serve, until ctx ends) or ctx ends: it takes its messages from
// the shard queue on the NATS server at o.NATS and forwards its parts to
// the analyzer at o.Analyzer with the shuffler's credentials.
func ServeShuffleShard(ctx context.Context, cfg round.Config, o ShardServiceOptions) (ShufflerStats, error) {
	if o.Log == nil {
		o.Log = log.Default()
	}
	key, err := ReadShardKey(o.ShardKey)
	if err != nil {
		return ShufflerStats{}, err
	}
	p, err := openShufflerParty(cfg, o.ServiceOptions)
	if err != nil {
		return ShufflerStats{}, err
	}
	defer p.close()
	if _, err := shardRange(p.st, o.Index, o.Shards); err != nil {
		return ShufflerStats{}, err
	}
	nopts, err := o.natsAuth(NATSShard)
	if err != nil {
		return ShufflerStats{}, err
	}
	nc, err := jetstream.ConnectWait(ctx, o.NATS, o.ConnectDeadline, o.logf("shuffler-shard"), append(nopts, jetstream.WithName(fmt.Sprintf("shufflefl shuffler-shard %d/%d", o.Index, o.Shards)))...)
	if err != nil {
		return ShufflerStats{}, err
	}
	defer nc.Close()
	prog, every := o.progressLog()
	s, err := NewShuffleShard(ShardConfig{Setup: p.st, DB: p.db, AnalyzerKey: p.creds.HPKEPublic, Analyzer: wire.NewAnalyzerClient(p.conn), Conn: nc, Key: key,
		Index: o.Index, Shards: o.Shards, TestSeed: o.TestSeed, Logf: o.Log.Printf, Progress: prog, ProgressEvery: every, ShuffleMemory: o.ShuffleMemory})
	if err != nil {
		return ShufflerStats{}, err
	}
	defer s.Close()
	finished := s.Finished()
	if o.Serve {
		finished = nil
	}
	select {
	case <-ctx.Done():
	case <-finished:
		o.Log.Printf("shard %d/%d: the run's last round is over; exiting", o.Index, o.Shards)
	}
	return s.Stats(), nil
}
