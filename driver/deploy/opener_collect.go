package deploy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// Opening on the openers (AnalyzerConfig.Openers). The openers return each
// chunk's opened values, not a partial sum: floating-point addition is not
// associative, so sums per chunk merged afterwards would differ in the last
// bits from the sums the analyzer forms over the whole batch, and the
// released model would no longer be bit-identical to opening in the
// analyzer (nor to 'run --faithful' as closely as it is). Opening (about
// 70 µs a message) is what scales out; what stays with the analyzer is one
// pass over the opened values in batch order, the additions the role makes
// either way.

// replayKey identifies a message's encapsulation as seal.Opener does: the
// first 16 bytes of its SHA-256.
type replayKey [16]byte

// chunkOpened is a chunk's checked result, with the replay keys of its
// authenticated messages (opened, or refused for their values) in order.
type chunkOpened struct {
	outcomes []byte
	coords   []uint32
	values   []float64
	keys     []replayKey
}

// remoteOpen is one round's opening on the openers.
type remoteOpen struct {
	// emptySince is when lost first found the round's chunks gone.
	emptySince time.Time
	a          *Analyzer
	t          int64
	tag        string
	ms         []*wire.SealedMessage
	spec       seal.Spec
	spans      []span
	digests    [][]byte
	results    []*chunkOpened
	published  []bool
	got        int   // chunks answered
	opened     int64 // messages in them
	inflight   int   // bytes of chunks published and unanswered
	// fresh counts the chunks this opening stored on the queue (not
	// duplicates), reused the results it found without publishing their
	// chunk, duplicates and refused the results it ignored.
	fresh, reused, duplicates, refused int
	// by are the openers that answered.
	by map[string]bool
}

// openRemote opens ms on the openers: it publishes the chunks (at most
// OpenWindow bytes unanswered at a time, skipping those whose result is
// already stored), collects one checked result per chunk, and passes the
// opened values to add in batch order. It returns the opening's counts. A
// replay of an encapsulation across chunks is refused here, as the local
// opener refuses it within the batch.
func (a *Analyzer) openRemote(ctx context.Context, t int64, ms []*wire.SealedMessage, add func(seal.Label, []float64)) (seal.Stats, error) {
	return a.newRemoteOpen(t, ms).run(ctx, add)
}

// newRemoteOpen cuts ms into chunks.
func (a *Analyzer) newRemoteOpen(t int64, ms []*wire.SealedMessage) *remoteOpen {
	ro := &remoteOpen{a: a, t: t, tag: runTag(a.st.RunID), ms: ms, spec: a.st.Spec(),
		spans: splitChunks(ms, a.cfg.OpenerChunk, a.openq.maxChunk), by: map[string]bool{}}
	ro.results, ro.published = make([]*chunkOpened, len(ro.spans)), make([]bool, len(ro.spans))
	for _, s := range ro.spans {
		ro.digests = append(ro.digests, chunkDigest(ro.ciphertexts(s)))
	}
	return ro
}

// run collects the chunks' results and assembles them.
func (ro *remoteOpen) run(ctx context.Context, add func(seal.Label, []float64)) (seal.Stats, error) {
	if len(ro.spans) == 0 {
		return seal.Stats{}, nil
	}
	start := time.Now()
	if err := ro.collect(ctx); err != nil {
		return seal.Stats{}, err
	}
	st := ro.assemble(add)
	ro.a.logf("analyzer: round %d: %d messages opened on %d openers in %.2fs: %d chunks (%d published, %d results found stored; %d duplicate and %d refused results ignored)",
		ro.t, len(ro.ms), len(ro.by), time.Since(start).Seconds(), len(ro.spans), ro.fresh, ro.reused, ro.duplicates, ro.refused)
	return st, nil
}

func (ro *remoteOpen) ciphertexts(s span) [][]byte {
	out := make([][]byte, 0, s.to-s.from)
	for _, m := range ro.ms[s.from:s.to] {
		out = append(out, m.GetCiphertext())
	}
	return out
}

// openerSilence is how long the analyzer waits for a result before it
// logs that it is waiting (and again every as long).
const openerSilence = 30 * time.Second

// collect publishes the chunks and reads the results until every chunk has
// one. It first reads the results already stored (a restarted analyzer, a
// retried forward), so that it publishes only the chunks still unanswered.
func (ro *remoteOpen) collect(ctx context.Context) error {
	a := ro.a
	subject := resultSubject(ro.tag, ro.t, "*")
	stored, err := a.openq.results.Count(ctx, subject)
	if err != nil {
		return ro.fail(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rd, err := a.openq.results.Read(rctx, subject)
	if err != nil {
		return ro.fail(err)
	}
	defer rd.Close()
	entries, rerr := make(chan jetstream.Entry, 64), make(chan error, 1)
	go func() {
		for {
			e, err := rd.Next(rctx)
			if err != nil {
				rerr <- err
				return
			}
			select {
			case entries <- e:
			case <-rctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start, news := time.Now(), time.Now()
	for ro.got < len(ro.spans) {
		if stored == 0 {
			if err := ro.publish(ctx); err != nil {
				return ro.fail(err)
			}
		}
		select {
		case e := <-entries:
			stored -= min(stored, 1)
			if ro.absorb(e) {
				news = time.Now()
			}
		case err := <-rerr:
			return ro.fail(err)
		case <-ctx.Done():
			return ro.fail(ctx.Err())
		case <-tick.C:
			if time.Since(start) > 5*time.Second {
				stored = 0 // the stored results are slow to come: publish meanwhile
			}
			if err := ro.lost(ctx, news); err != nil {
				return ro.fail(err)
			}
			if time.Since(news) > openerSilence {
				a.logf("analyzer: round %d: %d of %d chunks opened, none for %v: are openers running on the queue?", ro.t, ro.got, len(ro.spans), openerSilence)
				news = time.Now()
			}
		}
	}
	return nil
}

// lostChunkWait is how long the analyzer waits, with no result coming
// and chunks unanswered, before it checks that the opener queue still
// holds them; it gives up when they stay gone as long again (a variable
// for the tests).
var lostChunkWait = 5 * time.Second

// lost returns an error when chunks of the round were published and not
// answered, none came for lostChunkWait since news, and for lostChunkWait
// more the chunk queue has held nothing (the chunks were purged: an
// operator, a retention limit) or it or the results log could not be read
// (deleted): waiting would only hang the round until its
// deadline, so it fails at once, with the reason.
func (ro *remoteOpen) lost(ctx context.Context, news time.Time) error {
	unanswered := 0
	for c := range ro.spans {
		if ro.published[c] && ro.results[c] == nil {
			unanswered++
		}
	}
	if unanswered == 0 || time.Since(news) < lostChunkWait {
		ro.emptySince = time.Time{}
		return nil
	}
	var why string
	if _, err := ro.a.openq.results.Count(ctx, resultSubject(ro.tag, ro.t, "*")); err != nil {
		why = fmt.Sprintf("the results log %s cannot be read (deleted?): %v", openLogName, err)
	} else if n, err := ro.a.openq.chunks.Len(ctx); err != nil {
		why = fmt.Sprintf("the chunk queue %s cannot be read (deleted?): %v", openQueueName, err)
	} else if n == 0 {
		why = fmt.Sprintf("the chunk queue %s is empty: they were removed from it (purged?)", openQueueName)
	}
	switch {
	case why == "":
		ro.emptySince = time.Time{}
	case ro.emptySince.IsZero():
		ro.emptySince = time.Now()
	case time.Since(ro.emptySince) >= lostChunkWait:
		return fmt.Errorf("%d of round %d's %d chunks were published and not answered for %v, and %s", unanswered, ro.t, len(ro.spans), time.Since(news).Round(time.Second), why)
	}
	return nil
}

func (ro *remoteOpen) fail(err error) error {
	return wire.Errorf(codes.Unavailable, wire.Reason_REASON_INTERNAL, "", ro.t, "opening on the openers: %v", err)
}

// publish publishes the next unanswered chunks while the window has room.
func (ro *remoteOpen) publish(ctx context.Context) error {
	a := ro.a
	window := a.cfg.OpenWindow
	for c := range ro.spans {
		if ro.inflight > 0 && ro.inflight >= window {
			return nil
		}
		if ro.published[c] || ro.results[c] != nil {
			continue
		}
		b, err := proto.Marshal(ro.chunk(c))
		if err != nil {
			return err
		}
		ack, err := a.openq.chunks.Publish(ctx, chunkSubject(ro.tag, ro.t, fmt.Sprint(c)), chunkID(ro.tag, ro.t, c, ro.digests[c]), b)
		if err != nil {
			return err
		}
		if !ack.Duplicate {
			ro.fresh++
		}
		ro.published[c] = true
		ro.inflight += ro.spans[c].bytes
	}
	return nil
}

// chunk is chunk c as the openers receive it.
func (ro *remoteOpen) chunk(c int) *wire.OpenChunk {
	oc := &wire.OpenChunk{RunId: ro.a.st.RunID, Round: ro.t, Chunk: uint32(c), Chunks: uint32(len(ro.spans)), AnalyzerPublicKey: ro.a.cfg.Key.Public().Bytes(),
		Spec: specWire(ro.spec), Digest: ro.digests[c], Messages: ro.ciphertexts(ro.spans[c])}
	oc.Mac = chunkMAC(ro.a.openMAC, oc)
	return oc
}

// absorb takes one entry of the results log: a result for a chunk still
// unanswered is checked and kept (true); a duplicate is ignored, and a
// result that is malformed, of another run or round, of other messages
// than the chunk's or inconsistent with them is refused with a log line.
func (ro *remoteOpen) absorb(e jetstream.Entry) bool {
	var res wire.OpenResult
	err := wire.Unmarshal(e.Data, &res)
	c := int(res.GetChunk())
	switch {
	case err != nil:
	case !hmac.Equal(res.Mac, resultMAC(ro.a.openMAC, &res)):
		err = errf("not authenticated by the analyzer's key (a MAC that does not verify)")
	case res.RunId != ro.a.st.RunID || res.Round != ro.t:
		err = fmt.Errorf("a result of run %q round %d", res.RunId, res.Round)
	case c >= len(ro.spans):
		err = fmt.Errorf("chunk %d of a batch of %d chunks", c, len(ro.spans))
	case !bytes.Equal(res.Digest, ro.digests[c]):
		err = fmt.Errorf("chunk %d: the result is of other messages than the chunk's", c)
	case ro.results[c] != nil:
		ro.duplicates++
		return false // answered twice: absorbed once
	}
	var co *chunkOpened
	if err == nil {
		co, err = ro.check(&res, ro.spans[c])
	}
	if err != nil {
		ro.a.logf("analyzer: round %d: refusing the result %s (seq %d): %v", ro.t, e.Subject, e.Sequence, err)
		ro.refused++
		return false
	}
	ro.results[c] = co
	ro.by[res.Opener] = true
	ro.got++
	s := ro.spans[c]
	ro.opened += int64(s.to - s.from)
	if ro.published[c] {
		ro.inflight -= s.bytes
	} else {
		ro.reused++
	}
	ro.a.prog.report(Progress{Role: "analyzer", Round: ro.t, Stage: StageOpening, Done: ro.opened, Total: int64(len(ro.ms))})
	return true
}

// check verifies a result against its chunk s and the round's spec (one
// outcome a message, known kinds and reasons, labels the spec allows,
// every coordinate and value used exactly once, values in range) and
// computes the replay keys of its authenticated messages.
func (ro *remoteOpen) check(res *wire.OpenResult, s span) (*chunkOpened, error) {
	if len(res.Outcomes) != s.to-s.from {
		return nil, fmt.Errorf("%d outcomes for %d messages", len(res.Outcomes), s.to-s.from)
	}
	vals, err := wire.UnpackFloat64s(nil, res.Values, len(res.Values)/8)
	if err != nil {
		return nil, err
	}
	co := &chunkOpened{outcomes: res.Outcomes, coords: res.Coordinates, values: vals}
	sp := ro.spec
	ci, vi := 0, 0
	for i, o := range res.Outcomes {
		n, rng, err := outcomeShape(o, sp)
		switch {
		case err != nil:
			return nil, fmt.Errorf("message %d: %w", i, err)
		case n < 0:
			continue // refused before authentication
		case seal.Kind(o) == seal.KindCoord:
			if ci == len(res.Coordinates) || int64(res.Coordinates[ci]) >= int64(sp.Dim) {
				return nil, fmt.Errorf("message %d: no coordinate below %d", i, sp.Dim)
			}
			ci++
		}
		if vi+n > len(vals) {
			return nil, fmt.Errorf("message %d: %d values short", i, vi+n-len(vals))
		}
		for _, v := range vals[vi : vi+n] {
			if !rng.Contains(v) {
				return nil, fmt.Errorf("message %d: value %v outside [%v, %v]", i, v, rng.Lo, rng.Hi)
			}
		}
		vi += n
		env, err := seal.Parse(ro.ms[s.from+i].GetCiphertext())
		if err != nil {
			return nil, fmt.Errorf("message %d: opened, but %v", i, err)
		}
		co.keys = append(co.keys, replayKey(sha256Sum16(env.Enc)))
	}
	if ci != len(res.Coordinates) || vi != len(vals) {
		return nil, fmt.Errorf("%d coordinates and %d values left over", len(res.Coordinates)-ci, len(vals)-vi)
	}
	return co, nil
}

func sha256Sum16(b []byte) [16]byte {
	h := sha256.Sum256(b)
	return [16]byte(h[:16])
}

// outcomeShape is what an outcome byte means under spec: the values an
// opened message carries and their range, 0 for a message refused for its
// values after authentication (NonFinite, Range), or -1 for one refused
// before; an unknown outcome or a label the spec does not allow is an
// error.
func outcomeShape(o byte, sp seal.Spec) (int, seal.Range, error) {
	if o&outcomeRejected != 0 {
		r := seal.Reason(o &^ outcomeRejected)
		switch {
		case r < seal.ReasonMalformed || r > seal.ReasonRange:
			return 0, seal.Range{}, fmt.Errorf("unknown reason %d", r)
		case r == seal.ReasonNonFinite || r == seal.ReasonRange:
			return 0, seal.AnyFinite, nil
		}
		return -1, seal.Range{}, nil
	}
	switch k := seal.Kind(o); {
	case k == seal.KindCoord && sp.Mode == seal.PerCoordinate:
		return 1, sp.Values, nil
	case k == seal.KindMeta && sp.Meta:
		return 1, sp.MetaValues, nil
	case k == seal.KindReport && sp.Mode == seal.WholeReport:
		return sp.Dim, sp.Values, nil
	default:
		return 0, seal.Range{}, fmt.Errorf("outcome %#x is not a label the round expects", o)
	}
}

// assemble passes the opened values to add in batch order (chunk by chunk)
// and counts the outcomes. An authenticated message whose encapsulation
// came earlier in the batch is a replay, as for the local opener.
func (ro *remoteOpen) assemble(add func(seal.Label, []float64)) seal.Stats {
	var st seal.Stats
	seen := make(map[replayKey]struct{}, len(ro.ms))
	for _, co := range ro.results {
		ki, ci, vi := 0, 0, 0
		for _, o := range co.outcomes {
			n, _, _ := outcomeShape(o, ro.spec) // checked by check
			if n < 0 {
				countReason(&st, seal.Reason(o&^outcomeRejected))
				continue
			}
			k := co.keys[ki]
			ki++
			_, dup := seen[k]
			seen[k] = struct{}{}
			l := seal.Label{Kind: seal.Kind(o)}
			if l.Kind == seal.KindCoord {
				l.Index = co.coords[ci]
				ci++
			}
			v := co.values[vi : vi+n : vi+n]
			vi += n
			switch {
			case dup:
				st.Replay++
			case o&outcomeRejected != 0:
				countReason(&st, seal.Reason(o&^outcomeRejected))
			default:
				st.Accepted++
				add(l, v)
			}
		}
	}
	return st
}

// countReason counts one refusal for reason r.
func countReason(st *seal.Stats, r seal.Reason) {
	for _, f := range []struct {
		r seal.Reason
		n *int64
	}{{seal.ReasonMalformed, &st.Malformed}, {seal.ReasonSuite, &st.Suite}, {seal.ReasonRound, &st.Round}, {seal.ReasonLabel, &st.Label},
		{seal.ReasonLength, &st.Length}, {seal.ReasonReplay, &st.Replay}, {seal.ReasonAuth, &st.Auth}, {seal.ReasonNonFinite, &st.NonFinite},
		{seal.ReasonRange, &st.Range}} {
		if f.r == r {
			*f.n++
		}
	}
}

// checkOpenerPayload reports whether a whole report of the run's dimension
// fits one chunk on the server (per-coordinate messages always do).
func (a *Analyzer) checkOpenerPayload() error {
	if a.st.Spec().Mode != seal.WholeReport {
		return nil
	}
	if n := seal.MessageSize(a.cfg.Key.Suite(), seal.KindReport, a.st.Dim()) + 8; n > a.openq.maxChunk {
		return errf("deploy: analyzer: a sealed report of d = %d is %d bytes, over the %d a chunk may carry on the NATS server (raise its max_payload to %d)",
			a.st.Dim(), n, a.openq.maxChunk, n+openChunkSlack+4<<10)
	}
	return nil
}

// purgeOpening removes round t's chunks and results from the opener queue
// (after the round was released or voided).
func (a *Analyzer) purgeOpening(t int64) {
	if a.openq == nil || t <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tag := runTag(a.st.RunID)
	if err := a.openq.chunks.Purge(ctx, chunkSubject(tag, t, "*")); err != nil {
		a.logf("analyzer: round %d: purging the opener queue: %v", t, err)
	}
	if err := a.openq.results.Purge(ctx, resultSubject(tag, t, "*")); err != nil {
		a.logf("analyzer: round %d: purging the openers' results: %v", t, err)
	}
}
