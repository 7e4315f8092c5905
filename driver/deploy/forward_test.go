package deploy

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/shufflefl/shufflefl/transport/pki"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/store"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// scriptedAnalyzer is an analyzer endpoint whose behaviour per attempt is
// scripted: stall(attempt, stream) runs before the stream is read (it may
// block until the stream is cancelled).
type scriptedAnalyzer struct {
	wire.UnimplementedAnalyzerServer
	attempts atomic.Int64
	// before runs before the stream is read; after, once all of it was read
	// and before the answer. Either may block until the stream ends.
	before, after func(attempt int64, ctx context.Context)
	mu            sync.Mutex
	got           [][]*wire.SealedMessage // completed batches
}

func (a *scriptedAnalyzer) SubmitBatch(st grpc.ClientStreamingServer[wire.BatchChunk, wire.BatchResponse]) error {
	n := a.attempts.Add(1)
	if a.before != nil {
		a.before(n, st.Context())
	}
	h, ms, err := wire.ReceiveBatch(st)
	if err != nil {
		return err
	}
	if a.after != nil {
		a.after(n, st.Context())
	}
	if st.Context().Err() != nil {
		return st.Context().Err()
	}
	a.mu.Lock()
	a.got = append(a.got, ms)
	a.mu.Unlock()
	return st.SendAndClose(&wire.BatchResponse{Round: h.Round, Accepted: uint64(len(ms))})
}

// forwardRig is a shuffler (no client side) whose round 1 is shuffled and
// saved, dialled to a scripted analyzer over the deployment's mutual TLS
// link.
type forwardRig struct {
	db    *store.DB
	saved []store.SealedMessage // round 1's saved batch
	sh    *Shuffler
	an    *scriptedAnalyzer
	logs  func() string
}

func newForwardRig(t *testing.T, an *scriptedAnalyzer, msgs, size int, stall, reply time.Duration) *forwardRig {
	t.Helper()
	creds, err := NewDevCredentials(1, seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	analyzer := serveAnalyzerLink(t, creds, an)
	db, err := store.Open(filepath.Join(t.TempDir(), "shuffler.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ann, err := proto.Marshal(&wire.RoundAnnouncement{Round: 1, RunId: "forward-test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.OpenInboxRound(1, ann); err != nil {
		t.Fatal(err)
	}
	ms := make([]store.SealedMessage, msgs)
	for i := range ms {
		ms[i] = store.SealedMessage{Sealed: make([]byte, size)}
		ms[i].Sealed[0] = byte(i)
	}
	hb, err := proto.Marshal(&wire.BatchHeader{Round: 1, RunId: "forward-test", Counts: &wire.BatchCounts{Reports: uint32(msgs), Messages: uint64(msgs)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveBatch(1, hb, ms); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	logf := func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(f, a...))
	}
	st := &Setup{RunID: "forward-test"}
	s := &Shuffler{cfg: ShufflerConfig{Setup: st, DB: db, Analyzer: analyzer, ForwardStall: stall, ForwardReply: reply},
		st: st, logf: logf, now: time.Now, registered: map[string]time.Time{}, stats: ShufflerStats{Rejected: map[string]int64{}}, finished: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { s.cancel(); s.bg.Wait() })
	return &forwardRig{db: db, saved: ms, sh: s, an: an, logs: func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(logs, "\n")
	}}
}

// serveAnalyzerLink serves an on loopback with the analyzer's side of the
// deployment's mutual TLS link and returns a client dialled to it as the
// shuffler dials the analyzer.
func serveAnalyzerLink(t testing.TB, creds *Credentials, an wire.AnalyzerServer) wire.AnalyzerClient {
	t.Helper()
	g := grpc.NewServer(append(append(wire.ServerOptions(0), linkServerOptions()...),
		grpc.Creds(credentials.NewTLS(pki.MutualServerConfig(creds.Analyzer, creds.Roots, pki.RoleShuffler))))...)
	wire.RegisterAnalyzerServer(g, an)
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(l)
	t.Cleanup(g.Stop)
	conn, err := DialAnalyzer(creds, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return wire.NewAnalyzerClient(conn)
}

// waitForwarded waits until the rig's round 1 is marked forwarded.
func (r *forwardRig) waitForwarded(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		rs, err := r.db.InboxRounds()
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 1 && rs[0].Status == store.InboxForwarded {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("round 1 was not forwarded within %v; the shuffler logged:\n%s", within, r.logs())
}

// TestForwardWatchdog: a batch stream that makes no progress is cancelled
// and retried with the same saved batch, and the reason is logged: once
// when the analyzer reads nothing (the sender blocks on flow control, the
// stall seen in the 1,000-client load test), once when it reads the batch
// and never answers.
func TestForwardWatchdog(t *testing.T) {
	cases := []struct {
		name          string
		msgs, size    int
		before, after func(int64, context.Context)
		want          string
	}{
		{
			// 24 MB: more than the link's windows (16 MB a stream), so the
			// sender blocks on flow control while nothing is read.
			name: "sender blocked", msgs: 96, size: 256 << 10,
			before: func(n int64, ctx context.Context) {
				if n == 1 {
					<-ctx.Done()
				}
			},
			want: "chunks handed to the transport",
		},
		{
			name: "no answer", msgs: 8, size: 1000,
			after: func(n int64, ctx context.Context) {
				if n == 1 {
					<-ctx.Done()
				}
			},
			want: "no answer",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			an := &scriptedAnalyzer{before: c.before, after: c.after}
			r := newForwardRig(t, an, c.msgs, c.size, 300*time.Millisecond, 300*time.Millisecond)
			if err := r.sh.forwardSaved(1); err != nil {
				t.Fatal(err)
			}
			r.waitForwarded(t, 20*time.Second)
			logs := r.logs()
			if !strings.Contains(logs, "made no progress") || !strings.Contains(logs, c.want) {
				t.Errorf("the stalled attempt was not logged with its reason (%q); the shuffler logged:\n%s", c.want, logs)
			}
			if n := an.attempts.Load(); n < 2 {
				t.Errorf("%d attempts, want a retry after the stalled one", n)
			}
			an.mu.Lock()
			defer an.mu.Unlock()
			if len(an.got) != 1 || len(an.got[0]) != len(r.saved) {
				t.Fatalf("the analyzer completed %d batches, want 1 of %d messages", len(an.got), len(r.saved))
			}
			for i, m := range an.got[0] {
				if string(m.Ciphertext) != string(r.saved[i].Sealed) {
					t.Fatalf("message %d of the retried batch differs from the saved one", i)
				}
			}
		})
	}
}

// TestForwardChunksWithinLinkWindow: every chunk of a large batch (1,000
// whole reports of d = 7,850, 63 MB) fits the link's stream window with
// room for the next, so no chunk waits for a window update.
func TestForwardChunksWithinLinkWindow(t *testing.T) {
	ms := make([]*wire.SealedMessage, 1000)
	for i := range ms {
		ms[i] = &wire.SealedMessage{Ciphertext: make([]byte, 62869)}
	}
	h := &wire.BatchHeader{Round: 1, RunId: "r", Counts: &wire.BatchCounts{Reports: 1000, Messages: 1000}}
	chunks, err := wire.ChunkBatchBytes(h, ms, forwardChunkMessages, forwardChunkBytes)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range chunks {
		if n := proto.Size(c) + 5; 2*n > linkStreamWindow || n > wire.DefaultMaxMessageBytes {
			t.Fatalf("chunk %d is %d bytes on the wire; the link's stream window is %d", i, n, linkStreamWindow)
		}
	}
	if linkConnWindow < linkStreamWindow {
		t.Fatalf("connection window %d below the stream window %d", linkConnWindow, linkStreamWindow)
	}
}
