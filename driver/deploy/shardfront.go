package deploy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/role/shard"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// The front of a sharded shuffle (shardq.go says what travels). The front
// keeps everything a single shuffler does up to a round's close: the
// client port, the inbox, the sample and the void decision. At the close it
// routes the inbox's reports to the shards, then forwards the round's
// manifest to the analyzer, which answers it once every shard's part
// arrived and the round was released. The inbox keeps the round's sealed
// messages until that answer: a front restarted at any point routes the
// round again, and the routing is a function of the inbox and the shard key
// only (the inbox in its stored order, the whole-report draws from
// ShardKey.draws), so every chunk is published again with the same id and
// content and the shards' de-duplication keeps one copy.

// shardChunkMessages bounds the messages of one chunk.
const shardChunkMessages = 1 << 16

// shardPublishWindow is how many chunks the front publishes at once.
const shardPublishWindow = 16

// checkShards checks a sharded configuration at the start (NewShuffler)
// and opens the shard queue.
func (s *Shuffler) checkShards() error {
	n := s.cfg.Shards
	switch {
	case n == 0:
		return nil
	case n < 0 || n > wire.MaxShards:
		return errf("deploy: shuffler: %d shards: want 1..%d", n, wire.MaxShards)
	case s.cfg.ShardConn == nil || s.cfg.ShardKey == nil:
		return errf("deploy: shuffler: %d shards need the shard queue's connection and the shard key", n)
	}
	switch s.st.Proto.Mode() {
	case protocol.PerCoordinate:
		if _, err := shard.Ranges(s.st.Dim(), n); err != nil {
			return errf("deploy: shuffler: %w", err)
		}
	case protocol.WholeReport:
	default:
		return errf("deploy: shuffler: %s does not shuffle: nothing to shard", s.st.Proto.Name())
	}
	q, err := openShardQueue(s.ctx, s.cfg.ShardConn)
	if err != nil {
		return err
	}
	s.shardq = q
	return nil
}

// defaultShardReroute is ShufflerConfig.ShardReroute's default.
const defaultShardReroute = time.Minute

// queue is the shard queue; after a publish found it deleted
// (jetstream.ErrStreamGone), reopen creates it again.
func (s *Shuffler) queue() *shardQueue {
	s.shardqMu.Lock()
	defer s.shardqMu.Unlock()
	return s.shardq
}

// reopen creates the shard queue again after it was deleted.
func (s *Shuffler) reopen(err error) error {
	if !errors.Is(err, jetstream.ErrStreamGone) {
		return err
	}
	q, oerr := openShardQueue(s.ctx, s.cfg.ShardConn)
	if oerr != nil {
		return fmt.Errorf("%w; reopening it: %w", err, oerr)
	}
	s.shardqMu.Lock()
	s.shardq = q
	s.shardqMu.Unlock()
	return fmt.Errorf("%w (the shard queue was created again)", err)
}

// rerouting routes round sr again, as generation 1, 2, … of its queue
// messages, every ShardReroute until stop is called: a shard queue purged
// or deleted while the round's chunks waited in it (an operator, a
// retention limit) would otherwise leave the shards waiting for chunks
// that never come and the round hanging. Routing is idempotent at the
// shards (a chunk already stored is acknowledged again), and each
// generation has fresh message ids, which the queue's de-duplication
// window (which survives a purge) would otherwise drop.
func (s *Shuffler) rerouting(sr *sround, h *wire.BatchHeader, counts []int64) (stop func()) {
	every := s.cfg.ShardReroute
	if every <= 0 {
		every = defaultShardReroute
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for gen := 1; ; gen++ {
			select {
			case <-done:
				return
			case <-s.ctx.Done():
				return
			case <-time.After(every):
			}
			s.logf("shuffler: round %d: no answer to the manifest after %v: routing the round again (generation %d)", sr.t, every, gen)
			if err := s.reopen(s.route(sr, h, counts, gen)); err != nil {
				s.logf("shuffler: round %d: routing again: %v", sr.t, err)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// closeSharded is closeAndForward for a sharded round: the void decision
// as one shuffler takes it, then the routing and the manifest.
func (s *Shuffler) closeSharded(sr *sround) {
	t := sr.t
	sr.mu.Lock()
	senders, reporters, counts := sr.live.Senders(), slices.Clone(sr.reporters), sr.live.PadCounts()
	_, err := sr.live.ClosePadding()
	sr.mu.Unlock()
	h := s.batchHeader(sr)
	if s.st.Proto.Mode() != protocol.PerCoordinate {
		counts = nil
	}
	switch {
	case errors.Is(err, role.ErrTooFew):
		s.voidSharded(sr, h, senders, counts)
		return
	case err != nil:
		s.logf("shuffler: round %d: closing: %v", t, err)
		return
	}
	h.Counts.Reports = uint32(senders)
	h.ReporterEpsilons, h.ReporterDeltas = s.reporterBudgets(reporters)
	h.Shards = uint32(s.cfg.Shards)
	if s.untilDone(t, "routing to the shards", func() error { return s.reopen(s.route(sr, h, counts, 0)) }) {
		stop := s.rerouting(sr, h, counts)
		s.forwardManifest(h)
		stop()
	}
}

// untilDone calls f until it succeeds (true) or the shuffler stops
// (false), a second apart, logging each failure of round t's step what.
// Every step it retries is idempotent on the shard queue (the same ids,
// the same contents).
func (s *Shuffler) untilDone(t int64, what string, f func() error) bool {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return true
		}
		s.logf("shuffler: round %d: %s (attempt %d): %v", t, what, attempt, err)
		select {
		case <-s.ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
}

// voidSharded tells every shard that round sr is void (a close of no
// chunks with its senders below the minimum: the shard voids the round
// and, after the run's last, exits), then voids it as one shuffler does.
func (s *Shuffler) voidSharded(sr *sround, h *wire.BatchHeader, senders int, counts []int64) {
	vh := proto.Clone(h).(*wire.BatchHeader)
	vh.Counts.Reports, vh.Shards = uint32(senders), uint32(s.cfg.Shards)
	if s.untilDone(sr.t, "telling the shards the round is void", func() error {
		r := &router{ctx: s.ctx, q: s.queue(), key: s.cfg.ShardKey, tag: runTag(s.st.RunID), t: sr.t}
		return s.reopen(r.closes(vh, counts, sr.min, make([]int, s.cfg.Shards)))
	}) {
		s.voidRound(sr, h, senders)
	}
}

// forwardManifest forwards the round's manifest (h, no messages) until
// the analyzer answers; then the manifest is saved as the round's batch
// and the round marked forwarded (its reports' sealed messages deleted).
func (s *Shuffler) forwardManifest(h *wire.BatchHeader) {
	src, err := memorySource(h, nil)
	if err != nil {
		s.logf("shuffler: round %d: %v", h.Round, err)
		return
	}
	src.acked = func() error {
		hb, err := proto.Marshal(h)
		if err != nil {
			return err
		}
		if err := s.cfg.DB.SaveBatch(h.Round, hb, nil); err != nil && !errors.Is(err, store.ErrBatchSaved) {
			return err
		}
		return nil
	}
	s.forwardAttempts(h, src, false)
}

// router cuts each shard's messages into chunks and publishes them.
type router struct {
	ctx     context.Context
	q       *shardQueue
	key     *ShardKey
	tag     string
	t       int64
	gen     int // the routing's generation (withGeneration)
	bufs    [][]*wire.SealedMessage
	sizes   []int
	next    []int
	pending []jetstream.Message
	routed  int64
}

// route publishes round sr's reports to the shards, then each shard's
// close (header h as the part's, counts the padding counts), under the
// message ids of generation gen (0: the first routing).
func (s *Shuffler) route(sr *sround, h *wire.BatchHeader, counts []int64, gen int) error {
	t, n := sr.t, s.cfg.Shards
	r := &router{ctx: s.ctx, q: s.queue(), key: s.cfg.ShardKey, tag: runTag(s.st.RunID), t: t, gen: gen,
		bufs: make([][]*wire.SealedMessage, n), sizes: make([]int, n), next: make([]int, n)}
	var ranges []shard.Range
	var pick *rand.Rand
	if s.st.Proto.Mode() == protocol.PerCoordinate {
		ranges, _ = shard.Ranges(s.st.Dim(), n) // checked at the start
	} else {
		pick = shardDraws(s.cfg.TestSeed, s.cfg.ShardKey, s.st.RunID, t, "scatter", 2)
	}
	total := int64(0)
	if ir, err := s.cfg.DB.InboxRound(t); err == nil {
		total = ir.Messages
	}
	prog := Progress{Role: "shuffler", Round: t, Stage: StageRouting, Reports: int64(h.Counts.Reports), Total: total}
	err := s.cfg.DB.EachRoundReport(t, func(rep store.InboxReport) error {
		msgs, err := s.parse(t, toWire(rep.Messages))
		if err != nil {
			return fmt.Errorf("stored report of %s: %w", rep.Client, err)
		}
		for _, m := range msgs {
			k := 0
			switch {
			case m.Label == role.MetaLabel:
			case ranges != nil:
				k = shard.Owner(ranges, int(m.Label))
			default:
				k = pick.IntN(n)
			}
			if err := r.add(k, groupLabel(m.Label), m.Payload); err != nil {
				return err
			}
		}
		prog.Done = r.routed
		s.prog.report(prog)
		return nil
	})
	if err != nil {
		return err
	}
	for k := range n {
		if err := r.flush(k); err != nil {
			return err
		}
	}
	if err := r.closes(h, counts, sr.min, r.next); err != nil {
		return err
	}
	s.logf("shuffler: round %d: routed %d messages of %d reports to %d shards in %d chunks", t, r.routed, h.Counts.Reports, n, sum(r.next))
	return nil
}

// closes publishes every shard's close of the round: header h as the
// part's, chunks[k] chunks for shard k, the padding counts and the
// minimum; then sends what is queued.
func (r *router) closes(h *wire.BatchHeader, counts []int64, min int, chunks []int) error {
	for k := range chunks {
		ph := proto.Clone(h).(*wire.BatchHeader)
		ph.Shard = uint32(k + 1)
		c := &wire.ShardClose{Header: ph, Chunks: uint32(chunks[k]), Senders: h.Counts.Reports, Counts: counts, Min: uint32(min)}
		if err := r.publish(k, withGeneration(shardCloseID(r.tag, r.t, k+1), r.gen), &wire.ShardEnvelope{Body: &wire.ShardEnvelope_Close{Close: c}}); err != nil {
			return err
		}
	}
	return r.send()
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// add appends a message to shard k's chunk, publishing the chunk first if
// the message would overfill it.
func (r *router) add(k int, label uint32, p []byte) error {
	if len(r.bufs[k]) > 0 && (r.sizes[k]+len(p)+8 > r.q.maxChunk || len(r.bufs[k]) >= shardChunkMessages) {
		if err := r.flush(k); err != nil {
			return err
		}
	}
	r.bufs[k] = append(r.bufs[k], &wire.SealedMessage{Label: label, Ciphertext: p})
	r.sizes[k] += len(p) + 8
	r.routed++
	return nil
}

// flush publishes shard k's current chunk (none if empty).
func (r *router) flush(k int) error {
	if len(r.bufs[k]) == 0 {
		return nil
	}
	i := r.next[k]
	c := &wire.ShardChunk{Round: r.t, Shard: uint32(k + 1), Index: uint32(i), Messages: r.bufs[k]}
	if err := r.publish(k, withGeneration(shardChunkID(r.tag, r.t, k+1, i), r.gen), &wire.ShardEnvelope{Body: &wire.ShardEnvelope_Chunk{Chunk: c}}); err != nil {
		return err
	}
	r.next[k]++
	r.bufs[k], r.sizes[k] = nil, 0
	return nil
}

// publish seals env for shard k under id and queues it, sending the queue
// once it holds shardPublishWindow messages.
func (r *router) publish(k int, id string, env *wire.ShardEnvelope) error {
	subj := shardSubject(r.tag, k+1, r.t)
	data, err := r.key.seal(subj, id, env)
	if err != nil {
		return err
	}
	r.pending = append(r.pending, jetstream.Message{Subject: subj, ID: id, Data: data})
	if len(r.pending) >= shardPublishWindow {
		return r.send()
	}
	return nil
}

// send publishes the queued messages and waits for the server's
// acknowledgements (a duplicate id is a message already stored).
func (r *router) send() error {
	if len(r.pending) == 0 {
		return nil
	}
	if _, err := r.q.q.PublishBatch(r.ctx, r.pending); err != nil {
		return fmt.Errorf("publishing to the shard queue: %w", err)
	}
	r.pending = r.pending[:0]
	return nil
}
