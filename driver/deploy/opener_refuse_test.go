package deploy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// marshal encodes m or fails the test.
func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpenerResultsDuplicateAndForeign: results stored before the analyzer
// reads them — a genuine result of chunk 0 stored twice under two ids (as
// when the de-duplication window has passed), garbage, a result of another
// run, of other messages, of a chunk past the batch, with an unknown
// outcome or with a value out of range — are absorbed once (the genuine
// one, whose chunk is then not published) or refused with a log line, and
// the opening equals the analyzer's own.
func TestOpenerResultsDuplicateAndForeign(t *testing.T) {
	f := newOpenFixture(t, "ss-double")
	ms := f.batch(t, 3, false, 5)
	want, wantStats := f.local(t, ms)
	var logs logLines
	a := f.analyzer(t, f.conn(t), 10, logs.logf)
	ro := a.newRemoteOpen(1, ms)
	res := func(c int) *wire.OpenResult {
		r, err := openChunk(f.creds.HPKE, a.openMAC, ro.chunk(c), "test")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ctx := context.Background()
	publish := func(c int, id string, b []byte) {
		if _, err := a.openq.results.Publish(ctx, resultSubject(ro.tag, 1, fmt.Sprint(c)), id, b); err != nil {
			t.Fatal(err)
		}
	}
	// signed re-authenticates a changed result, so that it reaches the
	// check under test.
	signed := func(r *wire.OpenResult) []byte { r.Mac = resultMAC(a.openMAC, r); return marshal(t, r) }
	genuine := marshal(t, res(0))
	publish(0, "genuine-1", genuine)
	publish(0, "genuine-2", genuine)
	publish(1, "garbage", []byte("not a result"))
	other := res(1)
	other.RunId = "another-run"
	publish(1, "other-run", signed(other))
	swapped := res(1)
	swapped.Digest = ro.digests[0]
	publish(1, "other-messages", signed(swapped))
	past := res(1)
	past.Chunk = 999
	publish(1, "past", signed(past))
	unknown := res(1)
	unknown.Outcomes[0] = 7
	publish(1, "unknown-outcome", signed(unknown))
	far := res(1)
	far.Values, _ = wire.PackFloat64s(append([]float64{2 * ValueBound}, make([]float64, len(far.Values)/8-1)...))
	publish(1, "out-of-range", signed(far))
	forged := res(1)
	forged.Values, _ = wire.PackFloat64s(make([]float64, len(forged.Values)/8)) // in range, but not the opener's
	publish(1, "forged", marshal(t, forged))

	f.openers(t, 1, 30*time.Second, t.Logf, nil)
	runMatches(t, ro, want, wantStats)
	if ro.reused != 1 || ro.fresh != len(ro.spans)-1 || ro.duplicates != 1 || ro.refused != 7 {
		t.Fatalf("%d chunks: %d published, %d results reused, %d duplicates, %d refused; want %d, 1, 1, 7",
			len(ro.spans), ro.fresh, ro.reused, ro.duplicates, ro.refused, len(ro.spans)-1)
	}
	for _, why := range []string{"cannot parse", "another-run", "other messages than the chunk's", "chunk 999", "not a label", "outside", "not authenticated"} {
		if logs.count(why) != 1 {
			t.Errorf("no log line refusing the result for %q: %q", why, logs.lines)
		}
	}
}

// TestOpenerRefusesForeignChunks: an opener drops a chunk it cannot decode,
// whose MAC does not verify, or whose subject, id or digest do not match
// its content, and gives back
// one sealed to another key, each with a log line and no result; it goes
// on to answer a genuine chunk.
func TestOpenerRefusesForeignChunks(t *testing.T) {
	f := newOpenFixture(t, "ss-double")
	ms := f.batch(t, 1, false, 7)
	a := f.analyzer(t, f.conn(t), 4, t.Logf)
	ro := a.newRemoteOpen(1, ms)
	ctx := context.Background()
	subject := func(c int) string { return chunkSubject(ro.tag, 1, fmt.Sprint(c)) }
	id := func(c int) string { return chunkID(ro.tag, 1, c, ro.digests[c]) }
	publish := func(subject, id string, m proto.Message, raw []byte) {
		if m != nil {
			raw = marshal(t, m)
		}
		if _, err := a.openq.chunks.Publish(ctx, subject, id, raw); err != nil {
			t.Fatal(err)
		}
	}
	publish(subject(0), "garbage", nil, []byte("not a chunk"))
	foreign := ro.chunk(0)
	other, _ := seal.GenerateKey(seal.DefaultSuite)
	foreign.AnalyzerPublicKey = other.Public().Bytes()
	publish(subject(0), "foreign", foreign, nil)
	publish(subject(1), id(0), ro.chunk(0), nil) // chunk 0 on chunk 1's subject
	publish(subject(0), "wrong-id", ro.chunk(0), nil)
	tampered := ro.chunk(0)
	tampered.Messages[0] = append([]byte(nil), tampered.Messages[0]...)
	tampered.Messages[0][30] ^= 1
	publish(subject(0), id(0)+"x", tampered, nil)
	// Messages of the attacker's choice with a digest to match (the openers
	// as a decryption oracle): the MAC does not verify.
	forged := ro.chunk(2)
	forged.Messages = ro.chunk(3).Messages
	forged.Digest = chunkDigest(forged.Messages)
	publish(subject(2), chunkID(ro.tag, 1, 2, forged.Digest), forged, nil)
	var logs logLines
	f.openers(t, 1, time.Minute, logs.logf, nil)
	for _, why := range []string{"dropping chunk", "another analyzer's key", "its content is", "do not match its digest", "not authenticated"} {
		waitFor(t, why, func() bool { return logs.count(why) > 0 })
	}
	if n := logs.count("dropping chunk"); n != 5 {
		t.Errorf("%d chunks dropped, want 5: %q", n, logs.lines)
	}
	if n, err := a.openq.results.Count(ctx, resultSubject(ro.tag, 1, "*")); err != nil || n != 0 {
		t.Fatalf("%d results of refused chunks (%v)", n, err)
	}
	publish(subject(1), id(1), ro.chunk(1), nil) // (chunk 0's id is taken)
	waitFor(t, "the genuine chunk's result", func() bool {
		n, err := a.openq.results.Count(ctx, resultSubject(ro.tag, 1, "*"))
		return err == nil && n == 1
	})
}
