package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/internal/rng"
	"github.com/shufflefl/shufflefl/protocol"
	"github.com/shufflefl/shufflefl/role"
	"github.com/shufflefl/shufflefl/role/shard"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// partsAnalyzer records every batch stream it receives in full (each
// attempt) and answers it, or refuses it with Unavailable while refuse is
// set.
type partsAnalyzer struct {
	wire.UnimplementedAnalyzerServer
	refuse atomic.Bool
	mu     sync.Mutex
	got    []shardPart // every attempt read in full
}

// shardPart is one forwarded part: its header and messages, and whether it
// was acknowledged.
type shardPart struct {
	h        *wire.BatchHeader
	ms       []*wire.SealedMessage
	accepted bool
}

func (a *partsAnalyzer) SubmitBatch(st grpc.ClientStreamingServer[wire.BatchChunk, wire.BatchResponse]) error {
	h, ms, err := wire.ReceiveBatch(st)
	if err != nil {
		return err
	}
	refuse := a.refuse.Load()
	a.mu.Lock()
	a.got = append(a.got, shardPart{h: h, ms: ms, accepted: !refuse})
	a.mu.Unlock()
	if refuse {
		return status.Error(codes.Unavailable, "not yet")
	}
	return st.SendAndClose(&wire.BatchResponse{Round: h.Round, Accepted: uint64(len(ms))})
}

// parts returns the acknowledged parts (all attempts if all).
func (a *partsAnalyzer) parts(all bool) []shardPart {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []shardPart
	for _, p := range a.got {
		if all || p.accepted {
			out = append(out, p)
		}
	}
	return out
}

// shardRig is a run's setup, an embedded JetStream server with the shard
// queue, a shard key, and a recording analyzer on the deployment's mutual
// TLS link.
type shardRig struct {
	st     *Setup
	creds  *Credentials
	srv    *jetstream.Server
	q      *shardQueue
	key    *ShardKey
	an     *partsAnalyzer
	link   wire.AnalyzerClient
	sealer *seal.Sealer
	logs   *logLines
	seed   uint64
}

func newShardRig(t testing.TB, proto string, clients int) *shardRig {
	t.Helper()
	cfg := testConfig(proto, clients, 2)
	st, err := NewSetup(cfg, testSplit(t, cfg), "shard-"+proto)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := NewDevCredentials(0, seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := jetstream.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	r := &shardRig{st: st, creds: creds, srv: srv, key: newTestShardKey(t), an: &partsAnalyzer{}, logs: &logLines{}, seed: 11}
	r.link = serveAnalyzerLink(t, creds, r.an)
	if r.sealer, err = seal.NewSealer(creds.HPKEPublic, st.RunID); err != nil {
		t.Fatal(err)
	}
	if r.q, err = openShardQueue(context.Background(), r.conn(t)); err != nil {
		t.Fatal(err)
	}
	return r
}

// newTestShardKey is a fresh shard key.
func newTestShardKey(t testing.TB) *ShardKey {
	t.Helper()
	raw, err := NewShardKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseShardKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (r *shardRig) conn(t testing.TB) *jetstream.Conn {
	t.Helper()
	c, err := r.srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// shard starts shard idx of shards in test mode on the database at path;
// edit, if set, changes its configuration first. It is closed when the
// test ends.
func (r *shardRig) shard(t testing.TB, idx, shards int, path string, edit func(*ShardConfig)) (*ShuffleShard, *store.DB) {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := ShardConfig{Setup: r.st, DB: db, AnalyzerKey: r.creds.HPKEPublic, Analyzer: r.link, Conn: r.conn(t), Key: r.key, Index: idx, Shards: shards,
		TestSeed: &r.seed, Logf: r.logs.logf, ForwardStall: 5 * time.Second, ForwardReply: 5 * time.Second, closeRetry: 50 * time.Millisecond, ShuffleMemory: 64 << 10}
	if edit != nil {
		edit(&cfg)
	}
	s, err := NewShuffleShard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, db
}

// report is one client's sealed messages of a round.
type report []*wire.SealedMessage

// reports seals round t's reports of n clients as the protocol's clients
// send them: k distinct coordinates each (per-coordinate; every coordinate
// for a protocol with metadata, and its metadata value), or one whole
// report.
func (r *shardRig) reports(t testing.TB, round int64, n, k int) []report {
	t.Helper()
	g := rand.New(rand.NewPCG(uint64(round), 5))
	d, sp := r.st.Dim(), r.st.Spec()
	if l, ok := r.st.Proto.(protocol.Laid); ok { // a complete report's k
		lay, err := l.Layout(r.st.Shape(int(round)))
		if err != nil {
			t.Fatal(err)
		}
		k = lay.Coords
	}
	out := make([]report, n)
	add := func(i int, l seal.Label, v []float64) {
		if sp.Integers && l.Kind == seal.KindCoord {
			v = []float64{math.Round(v[0] * sp.Values.Hi)}
		}
		ct, err := r.sealer.Seal(uint64(round), l, v)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = append(out[i], &wire.SealedMessage{Label: wireLabel(l), Ciphertext: ct})
	}
	for i := range out {
		switch {
		case sp.Mode == seal.WholeReport:
			add(i, seal.Report, make([]float64, d))
		case sp.Meta:
			for j := range d {
				add(i, seal.Coord(j), []float64{g.Float64()})
			}
		default:
			for _, j := range g.Perm(d)[:k] {
				add(i, seal.Coord(j), []float64{g.Float64()})
			}
		}
		if sp.Meta {
			add(i, seal.Meta, []float64{1})
		}
	}
	return out
}

// route splits the reports' messages over shards as the front does: a
// coordinate to the shard owning it, metadata to shard 1, a whole report
// to a shard drawn uniformly. It returns each shard's messages (index
// s-1) and the round's per-coordinate counts (nil for whole reports).
func (r *shardRig) route(t testing.TB, reps []report, shards int) ([][]*wire.SealedMessage, []int64) {
	t.Helper()
	rs, err := shard.Ranges(r.st.Dim(), shards)
	if err != nil {
		t.Fatal(err)
	}
	perCoord := r.st.Proto.Mode() == protocol.PerCoordinate
	var counts []int64
	if perCoord {
		counts = make([]int64, r.st.Dim())
	}
	g := rand.New(rand.NewPCG(9, 9))
	out := make([][]*wire.SealedMessage, shards)
	for _, rep := range reps {
		for _, m := range rep {
			env, err := seal.Parse(m.Ciphertext)
			if err != nil {
				t.Fatal(err)
			}
			s := 0
			switch {
			case env.Label.Kind == seal.KindCoord:
				counts[m.Label]++
				for s = 0; int(m.Label) >= rs[s].Hi; s++ {
				}
			case env.Label.Kind == seal.KindReport:
				s = g.IntN(shards)
			}
			out[s] = append(out[s], m)
		}
	}
	return out, counts
}

// closeOf is shard s's close of round t with chunks chunks.
func (r *shardRig) closeOf(round int64, s, shards, chunks, senders int, counts []int64) *wire.ShardClose {
	h := &wire.BatchHeader{Round: round, RunId: r.st.RunID, Counts: &wire.BatchCounts{Reports: uint32(senders)}, Shards: uint32(shards), Shard: uint32(s)}
	return &wire.ShardClose{Header: h, Chunks: uint32(chunks), Senders: uint32(senders), Counts: counts, Min: 1}
}

// publish seals env for subject and id under key and publishes it.
func (r *shardRig) publish(t testing.TB, key *ShardKey, subject, id string, env *wire.ShardEnvelope) {
	t.Helper()
	data, err := key.seal(subject, id, env)
	if err != nil {
		t.Fatal(err)
	}
	r.publishRaw(t, subject, id, data)
}

func (r *shardRig) publishRaw(t testing.TB, subject, id string, data []byte) {
	t.Helper()
	if _, err := r.q.q.Publish(context.Background(), subject, id, data); err != nil {
		t.Fatal(err)
	}
}

// queued is a sealed queue message.
type queued struct {
	subject, id string
	env         *wire.ShardEnvelope
}

// chunks cuts ms into shard s's chunks of round t, per messages a chunk.
func (r *shardRig) chunks(round int64, s int, ms []*wire.SealedMessage, per int) []queued {
	tag := runTag(r.st.RunID)
	var out []queued
	for lo := 0; lo < len(ms); lo += per {
		n := len(out)
		c := &wire.ShardChunk{Round: round, Shard: uint32(s), Index: uint32(n), Messages: ms[lo:min(lo+per, len(ms))]}
		out = append(out, queued{shardSubject(tag, s, round), shardChunkID(tag, round, s, n), &wire.ShardEnvelope{Body: &wire.ShardEnvelope_Chunk{Chunk: c}}})
	}
	return out
}

func (r *shardRig) publishAll(t testing.TB, qs []queued) {
	t.Helper()
	for _, q := range qs {
		r.publish(t, r.key, q.subject, q.id, q.env)
	}
}

func (r *shardRig) publishClose(t testing.TB, cl *wire.ShardClose) {
	t.Helper()
	tag, s, round := runTag(r.st.RunID), int(cl.Header.Shard), cl.Header.Round
	r.publish(t, r.key, shardSubject(tag, s, round), shardCloseID(tag, round, s), &wire.ShardEnvelope{Body: &wire.ShardEnvelope_Close{Close: cl}})
}

// waitParts waits until the analyzer acknowledged n parts.
func (r *shardRig) waitParts(t testing.TB, n int) []shardPart {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(r.an.parts(false)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d parts acknowledged; the shards logged:\n%s", len(r.an.parts(false)), n, r.logs.all())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r.an.parts(false)
}

func (l *logLines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	for _, s := range l.lines {
		b.WriteString(s + "\n")
	}
	return b.String()
}

// dummy is an opened dummy: its coordinate and value.
type dummy struct {
	j int
	v float64
}

// checkPart checks a forwarded part against the close and the routed
// messages: its header is the close's with the part's counts; it holds
// every routed message once, and dummies of its own range only, as many
// as the header says, each a coordinate message sealed for the round
// (opened with the analyzer's key). It returns the opened dummies.
func (r *shardRig) checkPart(t *testing.T, p shardPart, cl *wire.ShardClose, routed []*wire.SealedMessage, own shard.Range) []dummy {
	t.Helper()
	h := proto.Clone(p.h).(*wire.BatchHeader)
	h.Counts.Messages, h.Counts.Dummies = 0, 0
	if !proto.Equal(h, cl.Header) {
		t.Fatalf("part header %v, want the close's %v", p.h, cl.Header)
	}
	if int(p.h.Counts.Messages) != len(p.ms) || int(p.h.Counts.Dummies) != len(p.ms)-len(routed) {
		t.Fatalf("part of %d messages, header counts %d messages and %d dummies, %d routed", len(p.ms), p.h.Counts.Messages, p.h.Counts.Dummies, len(routed))
	}
	real := map[string]uint32{}
	for _, m := range routed {
		real[string(m.Ciphertext)] = m.Label
	}
	op, err := seal.NewOpener(r.creds.HPKE, r.st.RunID, uint64(cl.Header.Round), r.st.Spec())
	if err != nil {
		t.Fatal(err)
	}
	var ds []dummy
	for _, m := range p.ms {
		if l, ok := real[string(m.Ciphertext)]; ok {
			if l != m.Label {
				t.Fatalf("a routed message of label %d forwarded with label %d", l, m.Label)
			}
			delete(real, string(m.Ciphertext))
			continue
		}
		l, v, err := op.Open(m.Ciphertext)
		if err != nil || l.Kind != seal.KindCoord || m.Label != l.Index || int(l.Index) < own.Lo || int(l.Index) >= own.Hi {
			t.Fatalf("a message that is not routed: %v %v (label %d), %v; the shard owns [%d, %d)", l, v, m.Label, err, own.Lo, own.Hi)
		}
		ds = append(ds, dummy{int(l.Index), v[0]})
	}
	if len(real) != 0 {
		t.Fatalf("%d routed messages missing from the part", len(real))
	}
	return ds
}

// closeDummies is what one role.Shuffler.Close draws for the reports with
// the single shuffler's padding stream of the test seed.
func (r *shardRig) closeDummies(t *testing.T, round int64, reps []report) []dummy {
	t.Helper()
	sh := r.st.Shape(int(round))
	sh.Participants = 0
	live, err := role.NewShuffler[[]byte](r.st.Proto, sh, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, rep := range reps {
		ms, err := (&Shuffler{st: r.st, cfg: ShufflerConfig{AnalyzerKey: r.creds.HPKEPublic}}).parse(round, rep)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := live.Accept(fmt.Sprint(i), ms); err != nil {
			t.Fatal(err)
		}
	}
	var ds []dummy
	_, err = live.Close(rng.Stream(r.seed, rng.LabelShuffle, uint64(round), 0), rand.New(rand.NewPCG(1, 1)), func(j int, v float64) ([]byte, error) {
		ds = append(ds, dummy{j, v})
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func sortDummies(ds []dummy) []dummy {
	slices.SortFunc(ds, func(a, b dummy) int {
		if a.j != b.j {
			return a.j - b.j
		}
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	return ds
}

// TestShardParts: two shards, each fed its chunks and close as the front
// routes a round, forward parts that hold exactly the routed messages
// plus the dummies of their coordinates, under the close's header with
// the part's counts; in test mode the two shards' dummies together are
// the dummies one role.Shuffler.Close draws from the same padding stream
// (same coordinates, same values). ss-double pads; apes sends metadata
// (to shard 1); e-apes sends whole reports (to a shard drawn uniformly)
// and pads nothing; with one client a shard gets no message (a close of
// no chunks) and forwards an empty part.
func TestShardParts(t *testing.T) {
	for _, c := range []struct {
		proto   string
		clients int
	}{{"ss-double", 12}, {"apes", 4}, {"e-apes", 6}, {"e-apes", 1}} {
		t.Run(fmt.Sprint(c.proto, "-", c.clients), func(t *testing.T) {
			r := newShardRig(t, c.proto, c.clients)
			const shards = 2
			reps := r.reports(t, 1, c.clients, 3)
			routed, counts := r.route(t, reps, shards)
			rs, err := shard.Ranges(r.st.Dim(), shards)
			if err != nil {
				t.Fatal(err)
			}
			if c.clients == 1 && len(routed[0]) > 0 && len(routed[1]) > 0 {
				t.Fatal("every shard has messages: the case tests no empty part")
			}
			dir := t.TempDir()
			closes := make([]*wire.ShardClose, shards)
			for s := 1; s <= shards; s++ {
				r.shard(t, s, shards, filepath.Join(dir, fmt.Sprintf("shard-%d.db", s)), nil)
				qs := r.chunks(1, s, routed[s-1], max(3, len(routed[s-1])/4))
				r.publishAll(t, qs)
				closes[s-1] = r.closeOf(1, s, shards, len(qs), c.clients, counts)
				r.publishClose(t, closes[s-1])
			}
			var got []dummy
			for _, p := range r.waitParts(t, shards) {
				s := int(p.h.Shard)
				own := rs[s-1]
				if r.st.Proto.Mode() != protocol.PerCoordinate {
					own = shard.Range{Lo: 0, Hi: r.st.Dim()}
				}
				got = append(got, r.checkPart(t, p, closes[s-1], routed[s-1], own)...)
			}
			want := r.closeDummies(t, 1, reps)
			if c.proto == "ss-double" && len(want) == 0 {
				t.Fatal("the reference draws no dummies: the test checks nothing")
			}
			if !slices.Equal(sortDummies(got), sortDummies(want)) {
				t.Fatalf("the shards drew %d dummies, one shuffler %d (or other values)", len(got), len(want))
			}
		})
	}
}

// TestShardRefusesBadMessages: queue messages that do not open under the
// shard key, were tampered with, are not this shard's or not where their
// content says, carry a coordinate of another shard or a label that
// disagrees with the sealed one, or name a round outside the run are
// refused (terminated and logged); the shard keeps going and forwards
// the round's part as if they had never been sent.
func TestShardRefusesBadMessages(t *testing.T) {
	r := newShardRig(t, "ss-double", 8)
	const shards = 2
	reps := r.reports(t, 1, 8, 3)
	routed, counts := r.route(t, reps, shards)
	rs, _ := shard.Ranges(r.st.Dim(), shards)
	tag := runTag(r.st.RunID)
	subj := shardSubject(tag, 1, 1)
	chunk := func(idx int, shard uint32, round int64, ms []*wire.SealedMessage) *wire.ShardEnvelope {
		return &wire.ShardEnvelope{Body: &wire.ShardEnvelope_Chunk{Chunk: &wire.ShardChunk{Round: round, Shard: shard, Index: uint32(idx), Messages: ms}}}
	}
	mine := routed[0][:1]
	other := testShardKey(t)
	r.publish(t, other, subj, shardChunkID(tag, 1, 1, 90), chunk(90, 1, 1, mine))
	sealed, err := r.key.seal(subj, shardChunkID(tag, 1, 1, 91), chunk(91, 1, 1, mine))
	if err != nil {
		t.Fatal(err)
	}
	sealed[len(sealed)/2] ^= 1
	r.publishRaw(t, subj, shardChunkID(tag, 1, 1, 91), sealed)
	r.publishRaw(t, subj, "garbage", []byte("not a sealed message at all"))
	r.publish(t, r.key, subj, shardChunkID(tag, 1, 1, 92), chunk(92, 2, 1, mine))
	r.publish(t, r.key, subj, shardChunkID(tag, 1, 1, 94), chunk(93, 1, 1, mine))
	r.publish(t, r.key, subj, shardChunkID(tag, 1, 1, 95), chunk(95, 1, 1, routed[1][:1]))
	relabelled := proto.Clone(mine[0]).(*wire.SealedMessage)
	relabelled.Label = uint32(rs[0].Hi - 1 - int(mine[0].Label)%2)
	r.publish(t, r.key, subj, shardChunkID(tag, 1, 1, 96), chunk(96, 1, 1, []*wire.SealedMessage{relabelled}))
	r.publish(t, r.key, shardSubject(tag, 1, 9), shardChunkID(tag, 9, 1, 0), chunk(0, 1, 9, mine))
	const bad = 8
	r.shard(t, 1, shards, filepath.Join(t.TempDir(), "shard.db"), nil)
	qs := r.chunks(1, 1, routed[0], 5)
	r.publishAll(t, qs)
	cl := r.closeOf(1, 1, shards, len(qs), 8, counts)
	r.publishClose(t, cl)
	parts := r.waitParts(t, 1)
	r.checkPart(t, parts[0], cl, routed[0], rs[0])
	if n := r.logs.count("refusing the queue message"); n != bad {
		t.Fatalf("%d messages refused, want %d; the shard logged:\n%s", n, bad, r.logs.all())
	}
}

// TestShardCloseWaitsForChunks: a close that arrives before its chunks
// waits for them (delivered again later), and the part is then forwarded
// whole; the run's last round acknowledged, the shard is finished.
func TestShardCloseWaitsForChunks(t *testing.T) {
	r := newShardRig(t, "ss-double", 6)
	const last = 2 // the rig's run has two rounds
	reps := r.reports(t, last, 6, 3)
	routed, counts := r.route(t, reps, 1)
	s, _ := r.shard(t, 1, 1, filepath.Join(t.TempDir(), "shard.db"), nil)
	qs := r.chunks(last, 1, routed[0], 4)
	cl := r.closeOf(last, 1, 1, len(qs), 6, counts)
	r.publishClose(t, cl)
	waitFor(t, "the close to wait", func() bool { return r.logs.count("waits for its chunks") > 0 })
	r.publishAll(t, qs[:len(qs)-1])
	time.Sleep(200 * time.Millisecond) // the close comes again, one chunk short
	select {
	case <-s.Finished():
		t.Fatal("finished before the last round's part was forwarded")
	default:
	}
	if n := len(r.an.parts(true)); n != 0 {
		t.Fatalf("%d parts forwarded before the round's chunks were in", n)
	}
	r.publishAll(t, qs[len(qs)-1:])
	r.checkPart(t, r.waitParts(t, 1)[0], cl, routed[0], shard.Range{Lo: 0, Hi: r.st.Dim()})
	select {
	case <-s.Finished():
	case <-time.After(5 * time.Second):
		t.Fatal("not finished after the last round's part was acknowledged")
	}
}

// TestShardChunkRedelivered: a chunk stored and then delivered again
// (its acknowledgement lost) is stored once, and the part holds its
// messages once.
func TestShardChunkRedelivered(t *testing.T) {
	r := newShardRig(t, "ss-double", 6)
	reps := r.reports(t, 1, 6, 3)
	routed, counts := r.route(t, reps, 1)
	qs := r.chunks(1, 1, routed[0], 4)
	var deliveries atomic.Int64
	_, db := r.shard(t, 1, 1, filepath.Join(t.TempDir(), "shard.db"), func(c *ShardConfig) {
		c.AckWait = 200 * time.Millisecond
		c.skipAck = func(id string) bool { return id == qs[0].id && deliveries.Add(1) < 3 }
	})
	r.publishAll(t, qs[:1])
	waitFor(t, "chunk 0's third delivery", func() bool { return deliveries.Load() >= 3 })
	r.publishAll(t, qs[1:])
	waitFor(t, "every chunk stored", func() bool {
		ir, err := db.InboxRound(1)
		return err == nil && ir.Reports == int64(len(qs))
	})
	cl := r.closeOf(1, 1, 1, len(qs), 6, counts)
	r.publishClose(t, cl)
	r.checkPart(t, r.waitParts(t, 1)[0], cl, routed[0], shard.Range{Lo: 0, Hi: r.st.Dim()})
	ir, err := db.InboxRound(1)
	if err != nil || ir.Reports != int64(len(qs)) || ir.Messages != int64(len(routed[0])) {
		t.Fatalf("inbox holds %d chunks of %d messages (%v), want %d of %d", ir.Reports, ir.Messages, err, len(qs), len(routed[0]))
	}
}

// TestShardRestartForwardsSaved: a shard stopped after saving its part
// and before the analyzer acknowledged it forwards, once reopened on the
// same database, the saved part unchanged (the same bytes in the same
// order), never a second shuffle.
func TestShardRestartForwardsSaved(t *testing.T) {
	r := newShardRig(t, "ss-double", 6)
	reps := r.reports(t, 1, 6, 3)
	routed, counts := r.route(t, reps, 1)
	path := filepath.Join(t.TempDir(), "shard.db")
	r.an.refuse.Store(true)
	s, db := r.shard(t, 1, 1, path, nil)
	qs := r.chunks(1, 1, routed[0], 4)
	r.publishAll(t, qs)
	cl := r.closeOf(1, 1, 1, len(qs), 6, counts)
	r.publishClose(t, cl)
	waitFor(t, "a refused attempt", func() bool { return len(r.an.parts(true)) > 0 })
	saved, err := db.Batch(1)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db.Close()
	r.an.refuse.Store(false)
	r.shard(t, 1, 1, path, nil)
	p := r.waitParts(t, 1)[0]
	r.checkPart(t, p, cl, routed[0], shard.Range{Lo: 0, Hi: r.st.Dim()})
	first := r.an.parts(true)[0]
	if len(p.ms) != len(saved.Messages) || !proto.Equal(p.h, first.h) {
		t.Fatalf("forwarded %d messages after the restart, %d saved", len(p.ms), len(saved.Messages))
	}
	for i, m := range p.ms {
		if !bytes.Equal(m.Ciphertext, saved.Messages[i].Sealed) || !bytes.Equal(m.Ciphertext, first.ms[i].Ciphertext) {
			t.Fatalf("message %d forwarded after the restart differs from the saved part", i)
		}
	}
}

// TestShardsBehindFront: the front shuffler (ShufflerConfig.Shards) routes
// a closed round of ss-double reports to two shards, which forward parts
// that together hold every report's messages once, and in test mode the
// dummies one shuffler would draw with the same stream; the front's
// manifest carries the round's facts and no messages.
func TestShardsBehindFront(t *testing.T) {
	const clients, shards = 10, 2
	r := newShardRig(t, "ss-double", clients)
	dir := t.TempDir()
	for s := 1; s <= shards; s++ {
		r.shard(t, s, shards, filepath.Join(dir, fmt.Sprintf("shard-%d.db", s)), nil)
	}
	reps := r.frontRound(t, dir, clients, shards, 0)
	r.checkShardedRound(t, reps, clients, shards)
}

// frontRound starts a sharded front shuffler (routing again every reroute;
// 0: the default), announces round 1 and has clients report to it; the
// last report closes the round, which the front routes to the shards.
func (r *shardRig) frontRound(t *testing.T, dir string, clients, shards int, reroute time.Duration) []report {
	t.Helper()
	fdb, err := store.Open(filepath.Join(dir, "front.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fdb.Close() })
	front, err := NewShuffler(ShufflerConfig{Setup: r.st, DB: fdb, Registry: r.creds.Registry, AnalyzerKey: r.creds.HPKEPublic, Analyzer: r.link,
		TestSeed: &r.seed, Logf: r.logs.logf, Shards: shards, ShardConn: r.conn(t), ShardKey: r.key, ShardReroute: reroute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.Close)
	ann := &wire.RoundAnnouncement{Round: 1, RunId: r.st.RunID, Protocol: r.st.Config.Protocol, DeadlineUnixNano: time.Now().Add(time.Minute).UnixNano(), MinReports: 1}
	if _, err := front.Announce(context.Background(), &wire.AnnounceRequest{Announcement: ann}); err != nil {
		t.Fatal(err)
	}
	reps := r.reports(t, 1, clients, 3)
	for i, rep := range reps {
		msgs, err := front.parse(1, rep)
		if err != nil {
			t.Fatal(err)
		}
		sr := store.Report{Round: 1, Client: ClientID(i), Nonce: []byte(fmt.Sprintf("nonce-%08d", i))}
		for _, m := range rep {
			sr.Messages = append(sr.Messages, store.SealedMessage{Label: m.Label, Sealed: m.Ciphertext})
		}
		if _, err := front.persistReport(sr); err != nil {
			t.Fatal(err)
		}
		front.mu.Lock()
		cur := front.cur
		front.mu.Unlock()
		if _, err := front.count(cur, ClientID(i), msgs, 0, false); err != nil {
			t.Fatal(err)
		}
		cur.mu.Lock()
		counted := cur.spilling
		cur.mu.Unlock()
		if !counted {
			t.Fatalf("report %d: the sharded front holds the payloads in memory; it routes from the inbox and should only count them", i)
		}
	}
	return reps
}

// checkShardedRound waits for the manifest and every shard's part of
// round 1 and checks them against one shuffler's: the routed messages,
// and the same dummies.
func (r *shardRig) checkShardedRound(t *testing.T, reps []report, clients, shards int) {
	t.Helper()
	rs, _ := shard.Ranges(r.st.Dim(), shards)
	var got []dummy
	parts := r.waitParts(t, shards+1)
	routed, _ := r.route(t, reps, shards)
	for _, p := range parts {
		if p.h.Shard == 0 {
			if len(p.ms) != 0 || int(p.h.Shards) != shards || int(p.h.Counts.Reports) != clients {
				t.Fatalf("manifest %v with %d messages", p.h, len(p.ms))
			}
			continue
		}
		s := int(p.h.Shard)
		cl := &wire.ShardClose{Header: proto.Clone(p.h).(*wire.BatchHeader)}
		cl.Header.Counts.Messages, cl.Header.Counts.Dummies = 0, 0
		got = append(got, r.checkPart(t, p, cl, routed[s-1], rs[s-1])...)
	}
	if want := r.closeDummies(t, 1, reps); len(want) == 0 || !slices.Equal(sortDummies(got), sortDummies(want)) {
		t.Fatalf("the shards drew %d dummies, one shuffler %d (or other values)", len(got), len(want))
	}
}

// TestShardVoidRound: a close below the round's minimum voids the round
// at the shard (nothing forwarded); the run's last round void, the shard
// is finished.
func TestShardVoidRound(t *testing.T) {
	r := newShardRig(t, "ss-double", 4)
	s, db := r.shard(t, 1, 1, filepath.Join(t.TempDir(), "shard.db"), nil)
	cl := r.closeOf(2, 1, 1, 0, 0, make([]int64, r.st.Dim()))
	r.publishClose(t, cl)
	select {
	case <-s.Finished():
	case <-time.After(10 * time.Second):
		t.Fatalf("not finished after the last round's void close; the shard logged:\n%s", r.logs.all())
	}
	if ir, err := db.InboxRound(2); err != nil || ir.Status != store.InboxVoid || len(r.an.parts(true)) != 0 {
		t.Fatalf("round 2 %v (%v), %d parts forwarded; want void and none", ir.Status, err, len(r.an.parts(true)))
	}
}

// TestShardConfigRefused: a shard index outside 1..shards, more shards
// than coordinates, and a protocol that does not shuffle are refused at
// the start, with a usage error.
func TestShardConfigRefused(t *testing.T) {
	r := newShardRig(t, "ss-double", 4)
	cfg := testConfig("ldp-laplace", 4, 1)
	noShuffle, err := NewSetup(cfg, testSplit(t, cfg), "shard-ldp")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		st            *Setup
		index, shards int
		want          string
	}{
		{r.st, 0, 2, "shard 0 of 2"},
		{r.st, 3, 2, "shard 3 of 2"},
		{r.st, 1, wire.MaxShards + 1, "shard 1 of 257"},
		{r.st, 1, r.st.Dim() + 1, "must own at least one"},
		{noShuffle, 1, 1, "does not shuffle"},
	} {
		_, err := shardRange(c.st, c.index, c.shards)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("shard %d of %d (%s): %v, want a usage error with %q", c.index, c.shards, c.st.Config.Protocol, err, c.want)
		}
	}
}

// BenchmarkShardRound feeds one shard a round of ss-simple (1,000
// clients, every coordinate: 90,000 sealed messages, no padding) in
// chunks of 4,096 messages and times the intake (published to stored)
// and the close (published to the analyzer's acknowledgement of the saved
// part: the disk shuffle, the save and the forward); run with
// -benchtime=1x.
func BenchmarkShardRound(b *testing.B) {
	for range b.N {
		benchShardRound(b)
	}
}

func benchShardRound(b *testing.B) {
	b.StopTimer()
	r := newShardRig(b, "ss-simple", 1000)
	reps := r.reports(b, 1, 1000, r.st.Dim())
	routed, counts := r.route(b, reps, 1)
	_, db := r.shard(b, 1, 1, filepath.Join(b.TempDir(), "shard.db"), func(c *ShardConfig) { c.ShuffleMemory = 1 << 30 })
	qs := r.chunks(1, 1, routed[0], 4096)
	b.StartTimer()
	start := time.Now()
	r.publishAll(b, qs)
	for deadline := start.Add(time.Minute); ; time.Sleep(time.Millisecond) {
		ir, err := db.InboxRound(1)
		if err == nil && ir.Reports == int64(len(qs)) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d chunks not stored within a minute; the shard logged:\n%s", len(qs), r.logs.all())
		}
	}
	stored := time.Since(start)
	start = time.Now()
	r.publishClose(b, r.closeOf(1, 1, 1, len(qs), 1000, counts))
	r.waitParts(b, 1)
	closed := time.Since(start)
	n := float64(len(routed[0]))
	b.ReportMetric(n/stored.Seconds(), "stored-msgs/s")
	b.ReportMetric(n/closed.Seconds(), "closed-msgs/s")
}
