package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/crashtest"
	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// The child of TestOpenerKilledMidChunk: an opener process on the server
// at $SHUFFLEFL_OPENER_URL with the key in $SHUFFLEFL_OPENER_KEY. When it
// starts a chunk it writes the chunk's subject on descriptor 3 and holds
// the chunk, unacknowledged, until it is killed. With
// SHUFFLEFL_OPENER_CHILD=serve it is an ordinary opener on every core
// (TestOpenerThroughput).
const (
	openerChildEnv = "SHUFFLEFL_OPENER_CHILD"
	openerURLEnv   = "SHUFFLEFL_OPENER_URL"
	openerKeyEnv   = "SHUFFLEFL_OPENER_KEY"
	crashAckWait   = time.Second
)

func TestOpenerChild(t *testing.T) {
	if os.Getenv(openerChildEnv) == "" {
		t.Skip("the child of TestOpenerKilledMidChunk")
	}
	pem, err := os.ReadFile(os.Getenv(openerKeyEnv))
	if err != nil {
		t.Fatal(err)
	}
	key, err := seal.ParsePrivateKeyPEM(pem)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := jetstream.Connect(os.Getenv(openerURLEnv))
	if err != nil {
		t.Fatal(err)
	}
	cfg := OpenerConfig{Conn: conn, Key: key, Workers: 1, AckWait: crashAckWait, Logf: t.Logf}
	if os.Getenv(openerChildEnv) == "serve" { // an opener process of TestOpenerThroughput
		cfg.Workers = runtime.GOMAXPROCS(0)
	} else {
		acks := os.NewFile(3, "acks")
		cfg.started = func(subject string) {
			fmt.Fprintln(acks, subject)
			select {} // holds the chunk until killed
		}
	}
	err = ServeOpener(context.Background(), cfg)
	t.Fatalf("the opener returned: %v", err)
}

// TestOpenerKilledMidChunk: an opener process takes a chunk and is killed
// with SIGKILL while it holds it (nothing of it published, nothing
// acknowledged). After AckWait the chunk goes to another opener, and the
// round's opening is the analyzer's own: nothing lost, nothing counted
// twice.
func TestOpenerKilledMidChunk(t *testing.T) {
	f := newOpenFixture(t, "ss-double", jetstream.WithLoopbackPort(0))
	ms := f.batch(t, 1, true, 11) // under 128 messages: see TestOpenersEqualLocal
	want, wantStats := f.local(t, ms)
	keyFile := filepath.Join(t.TempDir(), "analyzer-hpke.key")
	pem, err := f.creds.HPKE.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	a := f.analyzer(t, f.conn(t), 10, t.Logf)
	var r recorder
	var got seal.Stats
	done := make(chan error, 1)
	go func() {
		var err error
		got, err = a.openRemote(context.Background(), 1, ms, r.add)
		done <- err
	}()
	waitFor(t, "chunks on the queue", func() bool {
		n, err := a.openq.chunks.Len(context.Background())
		return err == nil && n > 0
	})
	var held []string
	env := []string{openerChildEnv + "=1", openerURLEnv + "=" + f.srv.URL(), openerKeyEnv + "=" + keyFile}
	if err := crashtest.Kill("^TestOpenerChild$", env, 100*time.Millisecond, func(l string) error { held = append(held, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 {
		t.Fatalf("the killed opener held %q, want one chunk", held)
	}
	var mu sync.Mutex
	var opened []string
	f.openers(t, 1, crashAckWait, t.Logf, func(s string) { mu.Lock(); opened = append(opened, s); mu.Unlock() })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the opening did not finish")
	}
	sameOpened(t, want, r.got)
	if got != wantStats {
		t.Fatalf("counts %+v, want %+v", got, wantStats)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(opened, held[0]) {
		t.Fatalf("the killed opener's chunk %s was not opened again (opened %q)", held[0], opened)
	}
}

// TestOpenerDiesAfterPublishing: an opener publishes a chunk's result and
// dies before acknowledging the chunk; the chunk is delivered again after
// AckWait, opened again, and its second result is not stored: the results
// log holds one result per chunk and the opening equals the analyzer's
// own.
func TestOpenerDiesAfterPublishing(t *testing.T) {
	f := newOpenFixture(t, "apes")
	ms := f.batch(t, 2, false, 13)
	want, wantStats := f.local(t, ms)
	a := f.analyzer(t, f.conn(t), 10, t.Logf)
	ro := a.newRemoteOpen(1, ms)
	ctx := context.Background()
	if err := ro.publish(ctx); err != nil {
		t.Fatal(err)
	}
	dconn := f.conn(t)
	dying, err := NewOpener(ctx, OpenerConfig{Conn: dconn, Key: f.creds.HPKE, AckWait: crashAckWait})
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	msgs, err := dying.cons.Fetch(fctx, 1)
	cancel()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("fetched %d chunks: %v", len(msgs), err)
	}
	var c wire.OpenChunk
	if err := wire.Unmarshal(msgs[0].Data(), &c); err != nil {
		t.Fatal(err)
	}
	res, err := openChunk(f.creds.HPKE, a.openMAC, &c, "dying")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dying.streams.results.Publish(ctx, resultSubject(ro.tag, 1, fmt.Sprint(c.Chunk)), msgs[0].ID(), marshal(t, res)); err != nil {
		t.Fatal(err)
	}
	dconn.Close() // dies without acknowledging
	var mu sync.Mutex
	again := 0
	f.openers(t, 1, crashAckWait, t.Logf, func(s string) {
		if s == chunkSubject(ro.tag, 1, fmt.Sprint(c.Chunk)) {
			mu.Lock()
			again++
			mu.Unlock()
		}
	})
	runMatches(t, ro, want, wantStats)
	waitFor(t, "the chunk's second opening", func() bool { mu.Lock(); defer mu.Unlock(); return again > 0 })
	waitFor(t, "an empty chunk queue", func() bool { n, err := a.openq.chunks.Len(ctx); return err == nil && n == 0 })
	if n, err := a.openq.results.Count(ctx, resultSubject(ro.tag, 1, "*")); err != nil || n != uint64(len(ro.spans)) {
		t.Fatalf("%d results stored for %d chunks (%v)", n, len(ro.spans), err)
	}
	if ro.duplicates != 0 {
		t.Fatalf("%d duplicate results reached the analyzer, want 0 (the log stores one)", ro.duplicates)
	}
}

// TestAnalyzerRestartMidOpening: an analyzer stops (its forward's context
// ends, as when the shuffler gives up or the process dies) after three of
// its chunks were answered; a new analyzer opening the same batch reads the
// stored results instead of publishing their chunks again, finds the
// other chunks still on the queue (its publishes are duplicates: nothing is
// added), and its opening equals the analyzer's own.
func TestAnalyzerRestartMidOpening(t *testing.T) {
	f := newOpenFixture(t, "ss-double")
	ms := f.batch(t, 1, false, 17)
	want, wantStats := f.local(t, ms)
	release := make(chan struct{})
	var mu sync.Mutex
	started := 0
	f.openers(t, 1, 30*time.Second, t.Logf, func(string) {
		mu.Lock()
		started++
		n := started
		mu.Unlock()
		if n == 4 {
			<-release // holds the fourth chunk until the second analyzer runs
		}
	})
	a1 := f.analyzer(t, f.conn(t), 10, t.Logf)
	ctx1, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a1.openRemote(ctx1, 1, ms, func(seal.Label, []float64) {})
		done <- err
	}()
	tag := runTag(f.st.RunID)
	waitFor(t, "three results", func() bool {
		n, err := a1.openq.results.Count(context.Background(), resultSubject(tag, 1, "*"))
		return err == nil && n == 3
	})
	stop()
	if err := <-done; err == nil {
		t.Fatal("the stopped opening returned no error")
	}
	a2 := f.analyzer(t, f.conn(t), 10, t.Logf)
	ro := a2.newRemoteOpen(1, ms)
	close(release)
	runMatches(t, ro, want, wantStats)
	// The opener may answer more chunks between the release and the
	// second analyzer's first read: at least the three are reused.
	if ro.reused < 3 || ro.fresh != 0 {
		t.Fatalf("%d chunks: %d results reused, %d chunks added to the queue; want at least 3 and 0", len(ro.spans), ro.reused, ro.fresh)
	}
}
