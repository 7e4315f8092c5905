package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/wire"
)

// partHold holds the pieces of sharded rounds (docs/DEPLOYMENT.md,
// "Shuffler shards"): each round's manifest (shard 0, from the front
// shuffler) and parts 1..S (from the shards) until all have arrived, and
// the streams waiting for the round's answer. Its zero value is ready to
// use. Lock order: the Analyzer's mu before mu, and mu is never held while
// taking the Analyzer's (batchCtx holds that for a whole opening).
type partHold struct {
	mu     sync.Mutex
	rounds map[int64]*heldRound
}

// heldRound is one sharded round's pieces and waiting streams.
type heldRound struct {
	shards  uint32
	pieces  map[uint32]*heldPiece // by shard; 0 is the manifest
	waiters map[*partWaiter]struct{}
	// busy is set while the assembled round is processed; cancel ends the
	// processing's context (when every waiting stream has gone).
	busy   bool
	cancel context.CancelFunc
}

// heldPiece is a manifest or a part as received.
type heldPiece struct {
	h      *wire.BatchHeader
	ms     []*wire.SealedMessage
	digest [sha256.Size]byte
}

// partWaiter is a stream waiting for its round's answer: out receives it
// once.
type partWaiter struct {
	shard uint32
	out   chan partAnswer
}

// partAnswer is a waiting stream's answer.
type partAnswer struct {
	resp *wire.BatchResponse
	err  error
}

// submitPart handles a piece of a sharded round (h.Shards > 0): it holds
// the piece and waits until the manifest and every part of the round have
// arrived and the assembled round has been processed (batchCtx, once, for
// every waiting stream), or until ctx ends (the piece stays held). A piece
// that does not fit the round's other pieces is refused at once, and a
// piece of a round already released is answered with already_released.
func (a *Analyzer) submitPart(ctx context.Context, h *wire.BatchHeader, ms []*wire.SealedMessage) (*wire.BatchResponse, error) {
	digest, err := pieceDigest(h, ms)
	if err != nil {
		return nil, wire.Errorf(codes.Internal, wire.Reason_REASON_INTERNAL, "", h.Round, "digest of shard %d: %v", h.Shard, err)
	}
	w, resp, err := a.holdPart(&heldPiece{h: h, ms: ms, digest: digest})
	if w == nil {
		return resp, err
	}
	select {
	case ans := <-w.out:
		return ans.resp, ans.err
	case <-ctx.Done():
		a.parts.leave(h.Round, w)
		select {
		case ans := <-w.out: // answered in between
			return ans.resp, ans.err
		default:
		}
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// holdPart admits piece p's round, adds the piece to it and registers its
// stream as a waiter; the round is processed once complete. It returns the
// waiter, or the stream's answer at once (a refusal, or already_released).
func (a *Analyzer) holdPart(p *heldPiece) (*partWaiter, *wire.BatchResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if resp, err := a.admit(p.h); resp != nil || err != nil {
		return nil, resp, err
	}
	t := p.h.Round // the pending round
	ph := &a.parts
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.dropBefore(t, a.admit)
	if ph.rounds == nil {
		ph.rounds = map[int64]*heldRound{}
	}
	r := ph.rounds[t]
	if r == nil {
		r = &heldRound{shards: p.h.Shards, pieces: map[uint32]*heldPiece{}, waiters: map[*partWaiter]struct{}{}}
		ph.rounds[t] = r
	}
	if err := r.add(p); err != nil {
		return nil, nil, err
	}
	w := &partWaiter{shard: p.h.Shard, out: make(chan partAnswer, 1)}
	r.waiters[w] = struct{}{}
	if r.complete() && !r.busy {
		a.processParts(t, r)
	}
	return w, nil, nil
}

// add checks piece p against the round's other pieces and holds it: every
// piece must have the round's shard count, a part the manifest's facts,
// and a second copy of a piece must be identical to the one held (it then
// joins it). A manifest drops (and refuses) the parts held before it that
// it disagrees with. The caller holds the partHold's lock.
func (r *heldRound) add(p *heldPiece) error {
	t, s := p.h.Round, p.h.Shard
	if old := r.pieces[s]; old != nil {
		if old.digest != p.digest {
			return wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "header.shard", t,
				"round %d: a different copy of %s is held", t, pieceName(s))
		}
		return nil
	}
	if len(r.pieces) == 0 {
		r.shards = p.h.Shards
	}
	m := r.pieces[0]
	switch {
	case s == 0:
		r.adoptManifest(p)
	case p.h.Shards != r.shards:
		return wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "header.shards", t,
			"round %d: %s says %d shards, the round's other pieces %d", t, pieceName(s), p.h.Shards, r.shards)
	case m != nil:
		if field, why := factsMismatch(m.h, p.h); field != "" {
			return wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, field, t, "round %d: %s: %s", t, pieceName(s), why)
		}
	}
	if s != 0 {
		var n uint64
		for _, q := range r.pieces {
			n += uint64(len(q.ms))
		}
		if n+uint64(len(p.ms)) > wire.MaxBatchMessages {
			return wire.Errorf(codes.ResourceExhausted, wire.Reason_REASON_TOO_LARGE, "header.counts.messages", t,
				"round %d: the parts' %d + %d messages exceed %d", t, n, len(p.ms), uint64(wire.MaxBatchMessages))
		}
	}
	r.pieces[s] = p
	return nil
}

// adoptManifest makes manifest m the round's: the round takes its shard
// count, and the parts held that disagree with it are dropped and their
// streams refused.
func (r *heldRound) adoptManifest(m *heldPiece) {
	t := m.h.Round
	for s, p := range r.pieces {
		field, why := factsMismatch(m.h, p.h)
		if p.h.Shards != m.h.Shards {
			field, why = "header.shards", fmt.Sprintf("%d shards, the manifest's %d", p.h.Shards, m.h.Shards)
		}
		if field == "" {
			continue
		}
		delete(r.pieces, s)
		r.answer(int64(s), partAnswer{err: wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, field, t,
			"round %d: %s dropped: %s", t, pieceName(s), why)})
	}
	r.shards = m.h.Shards
}

// complete reports whether the manifest and every part are held.
func (r *heldRound) complete() bool {
	return r.pieces[0] != nil && len(r.pieces) == int(r.shards)+1
}

// answer sends ans to the streams waiting on shard s (every stream if s
// is negative) and forgets them.
func (r *heldRound) answer(s int64, ans partAnswer) {
	for w := range r.waiters {
		if s < 0 || int64(w.shard) == s {
			w.out <- ans
			delete(r.waiters, w)
		}
	}
}

// processParts assembles complete round t and processes it (batchCtx) in
// the background; every stream waiting then gets the answer. On success
// the round's pieces are freed; on an error they stay held, and the next
// piece to arrive (a retry) processes the round again. The caller holds
// the Analyzer's lock and the partHold's: batchCtx starts once the caller
// released them.
func (a *Analyzer) processParts(t int64, r *heldRound) {
	h := proto.Clone(r.pieces[0].h).(*wire.BatchHeader)
	var n, dummies uint64
	for s := uint32(1); s <= r.shards; s++ {
		p := r.pieces[s]
		n += uint64(len(p.ms))
		dummies += p.h.Counts.Dummies
	}
	ms := make([]*wire.SealedMessage, 0, n)
	for s := uint32(1); s <= r.shards; s++ {
		ms = append(ms, r.pieces[s].ms...)
	}
	h.Shards, h.Shard = 0, 0
	h.Counts.Messages, h.Counts.Dummies = n, dummies
	ctx, cancel := context.WithCancel(context.Background())
	r.busy, r.cancel = true, cancel
	a.logf("analyzer: round %d: the manifest and %d parts arrived (%d messages, %d dummies)", t, r.shards, n, dummies)
	go func() {
		defer cancel()
		var ans partAnswer
		if err := h.Validate(); err != nil {
			ans.err = wire.Errorf(codes.InvalidArgument, wire.Reason_REASON_MALFORMED, "header", t, "round %d assembled from %d parts: %v", t, r.shards, err)
		} else {
			ans.resp, ans.err = a.batchCtx(ctx, h, ms)
		}
		a.parts.finish(t, r, ans)
	}()
}

// finish answers round t's waiting streams with ans; a successful round's
// pieces are freed.
func (ph *partHold) finish(t int64, r *heldRound, ans partAnswer) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	r.busy, r.cancel = false, nil
	r.answer(-1, ans)
	if ans.err == nil && ph.rounds[t] == r {
		delete(ph.rounds, t)
	}
}

// leave forgets waiter w of round t, whose stream ended; its piece stays
// held. When no stream waits for a round being processed any more, the
// processing's context ends.
func (ph *partHold) leave(t int64, w *partWaiter) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	r := ph.rounds[t]
	if r == nil {
		return
	}
	delete(r.waiters, w)
	if r.busy && len(r.waiters) == 0 {
		r.cancel()
	}
}

// dropBefore drops the rounds held before round t (the pending one) and
// answers their waiting streams with admit's answer for their round
// (already_released, or the round is finished). The caller holds both
// locks.
func (ph *partHold) dropBefore(t int64, admit func(*wire.BatchHeader) (*wire.BatchResponse, error)) {
	for u, r := range ph.rounds {
		if u >= t {
			continue
		}
		resp, err := admit(r.anyHeader())
		r.answer(-1, partAnswer{resp: resp, err: err})
		if r.cancel != nil {
			r.cancel()
		}
		delete(ph.rounds, u)
	}
}

// anyHeader returns the header of one of the round's pieces.
func (r *heldRound) anyHeader() *wire.BatchHeader {
	for _, p := range r.pieces {
		return p.h
	}
	return &wire.BatchHeader{}
}

// factsMismatch names the first of the round's facts (round, run id,
// reports, population, sample, reporter budgets) on which part p's header
// differs from manifest m's, and says how; "" if they agree.
func factsMismatch(m, p *wire.BatchHeader) (field, why string) {
	mc, pc := m.GetCounts(), p.GetCounts()
	switch {
	case m.Round != p.Round:
		return "header.round", fmt.Sprintf("round %d, the manifest's %d", p.Round, m.Round)
	case m.RunId != p.RunId:
		return "header.run_id", fmt.Sprintf("run %q, the manifest's %q", p.RunId, m.RunId)
	case mc.GetReports() != pc.GetReports():
		return "header.counts.reports", fmt.Sprintf("%d reports, the manifest's %d", pc.GetReports(), mc.GetReports())
	case mc.GetPopulation() != pc.GetPopulation():
		return "header.counts.population", fmt.Sprintf("population %d, the manifest's %d", pc.GetPopulation(), mc.GetPopulation())
	case mc.GetSampled() != pc.GetSampled():
		return "header.counts.sampled", fmt.Sprintf("%d sampled, the manifest's %d", pc.GetSampled(), mc.GetSampled())
	case !slices.Equal(m.ReporterEpsilons, p.ReporterEpsilons):
		return "header.reporter_epsilons", "the reporters' epsilons differ from the manifest's"
	case !slices.Equal(m.ReporterDeltas, p.ReporterDeltas):
		return "header.reporter_deltas", "the reporters' deltas differ from the manifest's"
	}
	return "", ""
}

// pieceName names shard s's piece of a round.
func pieceName(s uint32) string {
	if s == 0 {
		return "the manifest"
	}
	return fmt.Sprintf("part %d", s)
}

// pieceDigest is the SHA-256 digest of a piece: its header's and each
// message's deterministic encoding, each preceded by its length.
func pieceDigest(h *wire.BatchHeader, ms []*wire.SealedMessage) ([sha256.Size]byte, error) {
	d := sha256.New()
	opt := proto.MarshalOptions{Deterministic: true}
	var buf []byte
	put := func(m proto.Message) error {
		var err error
		if buf, err = opt.MarshalAppend(buf[:0], m); err != nil {
			return err
		}
		d.Write(binary.BigEndian.AppendUint64(nil, uint64(len(buf))))
		d.Write(buf)
		return nil
	}
	var sum [sha256.Size]byte
	if err := put(h); err != nil {
		return sum, err
	}
	for _, m := range ms {
		if err := put(m); err != nil {
			return sum, err
		}
	}
	d.Sum(sum[:0])
	return sum, nil
}
