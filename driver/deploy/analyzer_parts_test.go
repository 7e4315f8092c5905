package deploy

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// announceOK is a shuffler control service that acknowledges every
// announcement.
type announceOK struct{}

func (announceOK) Announce(context.Context, *wire.AnnounceRequest, ...grpc.CallOption) (*wire.AnnounceResponse, error) {
	return &wire.AnnounceResponse{}, nil
}

// partsEnv is an analyzer (test mode, seed 7) served on loopback with
// round 1 announced, and the client of its SubmitBatch service the
// shufflers use.
type partsEnv struct {
	an  *Analyzer
	db  *store.DB
	cli wire.AnalyzerClient
}

// partsSetup is the setup of the tests' run (ss-double on blobs, 3
// clients, 1 round) and its credentials; every analyzer of a test shares
// them, so the same sealed batch opens the same at each.
func partsSetup(t *testing.T) *harness {
	t.Helper()
	// ss-simple: the hand-made batch holds every coordinate of the three
	// reports, all the statement counts (an ss-double batch would need
	// the shuffler's padding).
	cfg := testConfig("ss-simple", 3, 1)
	st, err := NewSetup(cfg, testSplit(t, cfg), "parts")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := NewDevCredentials(1, seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{st: st, creds: creds}
}

// newPartsEnv starts an analyzer of a setup like h's (its own: an
// analyzer updates its Setup's accountant) with a fresh database, and
// waits until round 1 is pending.
func newPartsEnv(t *testing.T, h *harness) *partsEnv {
	t.Helper()
	st, err := NewSetup(h.st.Config, testSplit(t, h.st.Config), h.st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "analyzer.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	seed := st.Config.Seed
	an, err := NewAnalyzer(AnalyzerConfig{Setup: st, DB: db, Key: h.creds.HPKE, Shuffler: announceOK{},
		TestSeed: &seed, Workers: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	g := AnalyzerServer(h.creds, an)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	conn, err := DialAnalyzer(h.creds, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go an.Run(ctx)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		an.mu.Lock()
		p := an.pending
		an.mu.Unlock()
		if p == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("round 1 was never announced")
		}
	}
	return &partsEnv{an: an, db: db, cli: wire.NewAnalyzerClient(conn)}
}

// partsCtx is the context of a test's streams: it ends after 30 s, so a
// stream the analyzer never answers fails its test instead of hanging it.
func partsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// send streams one SubmitBatch of header h and messages ms (one chunk, not
// checked here: the analyzer's checks are under test) and returns the
// analyzer's answer.
func (e *partsEnv) send(ctx context.Context, h *wire.BatchHeader, ms []*wire.SealedMessage) (*wire.BatchResponse, error) {
	st, err := e.cli.SubmitBatch(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Send(&wire.BatchChunk{Header: h, Messages: ms}); err != nil {
		_, rerr := st.CloseAndRecv()
		return nil, rerr
	}
	return st.CloseAndRecv()
}

// held returns the number of round t's pieces the analyzer holds and of
// the streams waiting on them.
func (e *partsEnv) held(t int64) (pieces, waiters int) {
	e.an.parts.mu.Lock()
	defer e.an.parts.mu.Unlock()
	if r := e.an.parts.rounds[t]; r != nil {
		return len(r.pieces), len(r.waiters)
	}
	return 0, 0
}

// waitHeld waits until the analyzer holds n pieces of round t and n
// streams wait on them.
func (e *partsEnv) waitHeld(t *testing.T, round int64, n int) {
	t.Helper()
	e.waitHeldWaiting(t, round, n, n)
}

// waitHeldWaiting waits until the analyzer holds n pieces of round t and
// w streams wait on them.
func (e *partsEnv) waitHeldWaiting(t *testing.T, round int64, n, w int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if p, q := e.held(round); p == n && q == w {
			return
		}
		if time.Now().After(deadline) {
			p, q := e.held(round)
			t.Fatalf("round %d: %d pieces held and %d streams waiting, want %d and %d", round, p, q, n, w)
		}
	}
}

// sendAsync sends a piece in the background; the answer arrives on the
// channel returned.
func (e *partsEnv) sendAsync(ctx context.Context, h *wire.BatchHeader, ms []*wire.SealedMessage) <-chan partAnswer {
	out := make(chan partAnswer, 1)
	go func() {
		resp, err := e.send(ctx, h, ms)
		out <- partAnswer{resp, err}
	}()
	return out
}

// partsBatch is round 1's batch of the tests: the three clients' sealed
// reports (values 0.01, -0.02, 0.03) and its header, which counts 2 of
// the messages as dummies.
func partsBatch(t *testing.T, h *harness) (*wire.BatchHeader, []*wire.SealedMessage) {
	t.Helper()
	var ms []*wire.SealedMessage
	for _, v := range []float64{0.01, -0.02, 0.03} {
		ms = append(ms, sealedReport(t, h, 1, v)...)
	}
	return &wire.BatchHeader{Round: 1, RunId: h.st.RunID, Counts: &wire.BatchCounts{Reports: 3, Messages: uint64(len(ms)), Dummies: 2}}, ms
}

// split is batch (hb, ms) as the front's manifest and S = len(cuts)+1
// parts, part s holding ms[cuts[s-2]:cuts[s-1]] and dummies[s-1] of the
// dummies.
func split(hb *wire.BatchHeader, ms []*wire.SealedMessage, cuts []int, dummies []uint64) (*wire.BatchHeader, []*wire.BatchHeader, [][]*wire.SealedMessage) {
	S := uint32(len(cuts) + 1)
	m := proto.Clone(hb).(*wire.BatchHeader)
	m.Shards, m.Counts.Messages, m.Counts.Dummies = S, 0, 0
	bounds := append(append([]int{0}, cuts...), len(ms))
	var hs []*wire.BatchHeader
	var parts [][]*wire.SealedMessage
	for s := uint32(1); s <= S; s++ {
		p := proto.Clone(m).(*wire.BatchHeader)
		p.Shard = s
		part := ms[bounds[s-1]:bounds[s]]
		p.Counts.Messages, p.Counts.Dummies = uint64(len(part)), dummies[s-1]
		hs = append(hs, p)
		parts = append(parts, part)
	}
	return m, hs, parts
}

// released is what an analyzer released for round 1: its model, the
// round log's entry and the answer.
type released struct {
	model []float64
	entry store.RoundEntry
	resp  *wire.BatchResponse
}

func (e *partsEnv) released(t *testing.T, resp *wire.BatchResponse) released {
	t.Helper()
	entry, err := e.db.Round(1)
	if err != nil {
		t.Fatal(err)
	}
	if entry.Status != store.RoundReleased {
		t.Fatalf("round 1 is %v, want released", entry.Status)
	}
	return released{model: e.an.Model(), entry: entry, resp: resp}
}

// same fails unless a and b released the same model bit for bit, the same
// round-log counts and the same answer.
func (a released) same(t *testing.T, what string, b released) {
	t.Helper()
	if len(a.model) != len(b.model) {
		t.Fatalf("%s: %d parameters, want %d", what, len(b.model), len(a.model))
	}
	for j := range a.model {
		if math.Float64bits(a.model[j]) != math.Float64bits(b.model[j]) {
			t.Fatalf("%s: parameter %d is %v, the unsharded round's %v", what, j, b.model[j], a.model[j])
		}
	}
	if !reflect.DeepEqual(a.entry.Counts, b.entry.Counts) {
		t.Fatalf("%s: round log counts %+v, the unsharded round's %+v", what, b.entry.Counts, a.entry.Counts)
	}
	if !proto.Equal(a.resp, b.resp) {
		t.Fatalf("%s: answer %v, the unsharded round's %v", what, b.resp, a.resp)
	}
}

// wantReleased fails unless every stream's answer is the release of
// round 1 and the analyzer released what want did.
func (e *partsEnv) wantReleased(t *testing.T, want released, streams ...<-chan partAnswer) {
	t.Helper()
	for i, ch := range streams {
		ans := <-ch
		if ans.err != nil {
			t.Fatalf("stream %d: %v", i, ans.err)
		}
		want.same(t, fmt.Sprintf("stream %d", i), e.released(t, ans.resp))
	}
}

// unsharded releases round 1 from the whole batch sent as one stream, on
// a fresh analyzer: the reference the sharded rounds must equal.
func unsharded(t *testing.T, h *harness, hb *wire.BatchHeader, ms []*wire.SealedMessage) released {
	t.Helper()
	e := newPartsEnv(t, h)
	resp, err := e.send(partsCtx(t), hb, ms)
	if err != nil {
		t.Fatal(err)
	}
	return e.released(t, resp)
}

// TestShardedRoundEqualsUnsharded: a round sent as the front's manifest
// and the shards' parts (arriving one after another in the order part 2,
// manifest, part 1, or all at once) releases the same model bit for bit,
// the same round-log counts and the same answer on every stream as the
// same batch sent whole by one shuffler; a round missing one message does
// not (the comparison can fail).
func TestShardedRoundEqualsUnsharded(t *testing.T) {
	h := partsSetup(t)
	hb, ms := partsBatch(t, h)
	want := unsharded(t, h, hb, ms)
	if want.resp.Accepted != uint64(len(ms)) || want.entry.Counts.Dummies != 2 {
		t.Fatalf("the unsharded round accepted %d of %d messages with %d dummies", want.resp.Accepted, len(ms), want.entry.Counts.Dummies)
	}
	ctx := partsCtx(t)
	t.Run("in turn", func(t *testing.T) {
		m, hs, parts := split(hb, ms, []int{len(ms) / 3}, []uint64{1, 1})
		e := newPartsEnv(t, h)
		a2 := e.sendAsync(ctx, hs[1], parts[1])
		e.waitHeld(t, 1, 1)
		am := e.sendAsync(ctx, m, nil)
		e.waitHeld(t, 1, 2)
		a1 := e.sendAsync(ctx, hs[0], parts[0])
		e.wantReleased(t, want, a2, am, a1)
		if p, w := e.held(1); p != 0 || w != 0 {
			t.Fatalf("after the release %d pieces are held and %d streams wait, want none", p, w)
		}
	})
	t.Run("at once, an empty part", func(t *testing.T) {
		m, hs, parts := split(hb, ms, []int{len(ms) / 2, len(ms) / 2}, []uint64{0, 0, 2})
		e := newPartsEnv(t, h)
		e.wantReleased(t, want, e.sendAsync(ctx, hs[2], parts[2]), e.sendAsync(ctx, hs[1], parts[1]),
			e.sendAsync(ctx, m, nil), e.sendAsync(ctx, hs[0], parts[0]))
	})
	t.Run("one message short", func(t *testing.T) {
		m, hs, parts := split(hb, ms[1:], []int{len(ms) / 3}, []uint64{1, 1})
		m.Counts.Reports, hs[0].Counts.Reports, hs[1].Counts.Reports = 3, 3, 3
		e := newPartsEnv(t, h)
		a2, am := e.sendAsync(ctx, hs[1], parts[1]), e.sendAsync(ctx, m, nil)
		if _, err := e.send(ctx, hs[0], parts[0]); err != nil {
			t.Fatal(err)
		}
		<-a2
		<-am
		if reflect.DeepEqual(e.an.Model(), want.model) {
			t.Fatal("a round missing one message released the whole round's model: the comparison cannot fail")
		}
	})
}

// modHeader returns a copy of h changed by f.
func modHeader(h *wire.BatchHeader, f func(*wire.BatchHeader)) *wire.BatchHeader {
	c := proto.Clone(h).(*wire.BatchHeader)
	f(c)
	return c
}

// TestShardedRoundRefusals: with the manifest and part 1 held, every
// piece that does not fit the round is refused at once with its status
// and changes nothing held; the right part 2 then releases the round as
// the unsharded batch would, and a piece arriving after the release is
// answered already_released.
func TestShardedRoundRefusals(t *testing.T) {
	h := partsSetup(t)
	hb, ms := partsBatch(t, h)
	want := unsharded(t, h, hb, ms)
	m, hs, parts := split(hb, ms, []int{len(ms) / 2}, []uint64{2, 0})
	e := newPartsEnv(t, h)
	ctx := partsCtx(t)
	am := e.sendAsync(ctx, m, nil)
	e.waitHeld(t, 1, 1)
	a1 := e.sendAsync(ctx, hs[0], parts[0])
	e.waitHeld(t, 1, 2)
	swapped := append([]*wire.SealedMessage{parts[0][1], parts[0][0]}, parts[0][2:]...)
	const bad, unknown = codes.InvalidArgument, codes.NotFound
	malformed := wire.Reason_REASON_MALFORMED
	for _, c := range []struct {
		name   string
		h      *wire.BatchHeader
		ms     []*wire.SealedMessage
		code   codes.Code
		reason wire.Reason
		field  string
		says   string
	}{
		{"shards count", modHeader(hs[1], func(x *wire.BatchHeader) { x.Shards = 3 }), parts[1], bad, malformed, "header.shards", `says 3 shards`},
		{"reports", modHeader(hs[1], func(x *wire.BatchHeader) { x.Counts.Reports = 2 }), parts[1], bad, malformed, "header.counts.reports", `2 reports`},
		{"sample", modHeader(hs[1], func(x *wire.BatchHeader) { x.Counts.Population, x.Counts.Sampled = 3, 3 }), parts[1], bad, malformed, "header.counts.population", `population 3`},
		{"reporter budgets", modHeader(hs[1], func(x *wire.BatchHeader) { x.ReporterEpsilons = []float64{4, 4, 4} }), parts[1], bad, malformed, "header.reporter_epsilons", `epsilons differ`},
		{"a different copy of part 1", hs[0], swapped, bad, malformed, "header.shard", `a different copy of part 1`},
		{"a different manifest", modHeader(m, func(x *wire.BatchHeader) { x.Counts.Rejected = map[string]uint32{"auth": 1} }), nil, bad, malformed, "header.shard", `a different copy of the manifest`},
		{"shard beyond shards", modHeader(hs[1], func(x *wire.BatchHeader) { x.Shard = 3 }), parts[1], bad, malformed, "header.shard", `shard 3 of 2 shards`},
		{"manifest with messages", modHeader(hs[1], func(x *wire.BatchHeader) { x.Shard = 0 }), parts[1], bad, malformed, "header.counts", `carries no messages`},
		{"run id", modHeader(hs[1], func(x *wire.BatchHeader) { x.RunId = "other" }), parts[1], bad, malformed, "header.run_id", `run "other"`},
		{"round not announced", modHeader(hs[1], func(x *wire.BatchHeader) { x.Round = 2 }), parts[1], unknown, wire.Reason_REASON_UNKNOWN_ROUND, "header.round", `not announced`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.send(ctx, c.h, c.ms)
			wantStatus(t, err, c.code, c.reason)
			if d, _ := wire.DetailOf(err); d.GetField() != c.field || !strings.Contains(d.GetMessage(), c.says) {
				t.Fatalf("refused on field %q saying %q, want %q saying %q", d.GetField(), d.GetMessage(), c.field, c.says)
			}
			e.waitHeld(t, 1, 2)
		})
	}
	// An identical copy of part 1 (a retry) joins the one held and waits.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := e.send(short, hs[0], parts[0])
	cancel()
	wantStatus(t, err, codes.DeadlineExceeded, wire.Reason_REASON_UNSPECIFIED)
	e.waitHeld(t, 1, 2)
	e.wantReleased(t, want, am, a1, e.sendAsync(ctx, hs[1], parts[1]))
	for i, p := range []*wire.BatchHeader{hs[0], modHeader(hs[1], func(x *wire.BatchHeader) { x.Counts.Reports = 2 }), m} {
		pm := parts[min(i, 1)]
		if p.Shard == 0 {
			pm = nil
		}
		resp, err := e.send(ctx, p, pm)
		if err != nil || !resp.AlreadyReleased {
			t.Fatalf("shard %d after the release: %v, %v; want already_released", p.Shard, resp, err)
		}
	}
}

// TestShardedWaiterCancelled: a part whose stream ends before the round
// is complete stays held (its sender may be gone for good, or retry): the
// round releases when the manifest and the other part arrive, the same as
// the unsharded batch.
func TestShardedWaiterCancelled(t *testing.T) {
	h := partsSetup(t)
	hb, ms := partsBatch(t, h)
	want := unsharded(t, h, hb, ms)
	m, hs, parts := split(hb, ms, []int{len(ms) / 2}, []uint64{1, 1})
	e := newPartsEnv(t, h)
	ctx := partsCtx(t)
	cctx, cancel := context.WithCancel(ctx)
	a1 := e.sendAsync(cctx, hs[0], parts[0])
	e.waitHeld(t, 1, 1)
	cancel()
	ans := <-a1
	wantStatus(t, ans.err, codes.Canceled, wire.Reason_REASON_UNSPECIFIED)
	e.waitHeldWaiting(t, 1, 1, 0)
	am := e.sendAsync(ctx, m, nil)
	e.waitHeldWaiting(t, 1, 2, 1)
	e.wantReleased(t, want, am, e.sendAsync(ctx, hs[1], parts[1]))
}

// TestShardedManifestDropsParts: a part held before the manifest that
// disagrees with it (another shard count, other facts) is dropped when it
// arrives and its stream refused; the right parts then release the round
// as the unsharded batch would.
func TestShardedManifestDropsParts(t *testing.T) {
	h := partsSetup(t)
	hb, ms := partsBatch(t, h)
	want := unsharded(t, h, hb, ms)
	m, hs, parts := split(hb, ms, []int{len(ms) / 2}, []uint64{1, 1})
	ctx := partsCtx(t)
	for _, c := range []struct {
		name, field string
		h           *wire.BatchHeader
		ms          []*wire.SealedMessage
	}{
		{"shards", "header.shards", modHeader(hs[1], func(x *wire.BatchHeader) { x.Shards, x.Shard = 3, 3 }), parts[1]},
		{"facts", "header.counts.reports", modHeader(hs[0], func(x *wire.BatchHeader) { x.Counts.Reports = 2 }), parts[0]},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newPartsEnv(t, h)
			bad := e.sendAsync(ctx, c.h, c.ms)
			e.waitHeld(t, 1, 1)
			am := e.sendAsync(ctx, m, nil)
			ans := <-bad
			wantStatus(t, ans.err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
			if d, _ := wire.DetailOf(ans.err); d.GetField() != c.field || !strings.Contains(d.GetMessage(), "dropped") {
				t.Fatalf("the held part was refused on %q (%v), want %q", d.GetField(), ans.err, c.field)
			}
			e.waitHeld(t, 1, 1)
			e.wantReleased(t, want, am, e.sendAsync(ctx, hs[1], parts[1]), e.sendAsync(ctx, hs[0], parts[0]))
		})
	}
}

// TestShardedFailureKeepsPieces: when the assembled round is refused (by
// the analyzer's round facts: a sample this run does not draw; by the
// assembled header's check: more reports than the parts' messages), every
// waiting stream gets the error and the pieces stay held; a retry of any
// piece processes the round again.
func TestShardedFailureKeepsPieces(t *testing.T) {
	h := partsSetup(t)
	hb, ms := partsBatch(t, h)
	sampled := modHeader(hb, func(x *wire.BatchHeader) { x.Counts.Population, x.Counts.Sampled = 3, 3 })
	few := modHeader(hb, func(x *wire.BatchHeader) { x.Counts.Messages, x.Counts.Dummies = 2, 0 })
	for _, c := range []struct {
		name, says string
		h          *wire.BatchHeader
		ms         []*wire.SealedMessage
	}{
		{"facts", "without client sampling", sampled, ms},
		{"reports beyond messages", "3 exceed the 2 non-dummy messages", few, ms[:2]},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, hs, parts := split(c.h, c.ms, []int{1}, []uint64{0, c.h.Counts.Dummies})
			e := newPartsEnv(t, h)
			ctx := partsCtx(t)
			refused := func(what string, err error) {
				t.Helper()
				wantStatus(t, err, codes.InvalidArgument, wire.Reason_REASON_MALFORMED)
				if !strings.Contains(err.Error(), c.says) {
					t.Fatalf("%s: %v, want the round refused (%q)", what, err, c.says)
				}
			}
			for i, ch := range []<-chan partAnswer{e.sendAsync(ctx, m, nil), e.sendAsync(ctx, hs[0], parts[0]), e.sendAsync(ctx, hs[1], parts[1])} {
				refused(fmt.Sprintf("stream %d", i), (<-ch).err)
			}
			e.waitHeldWaiting(t, 1, 3, 0)
			_, err := e.send(ctx, hs[1], parts[1])
			refused("a retry of part 2", err)
			e.waitHeldWaiting(t, 1, 3, 0)
			if e.an.Round() != 0 {
				t.Fatalf("round %d finished, want none", e.an.Round())
			}
		})
	}
}
