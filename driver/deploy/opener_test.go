package deploy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/transport/jetstream"
	"github.com/shufflefl/shufflefl/transport/seal"
	"github.com/shufflefl/shufflefl/transport/wire"
)

// openedMsg is one value handed to the role's batch, as openBatch's add
// receives it.
type openedMsg struct {
	label  seal.Label
	values []float64
}

// recorder collects what an opening hands to the batch.
type recorder struct{ got []openedMsg }

func (r *recorder) add(l seal.Label, v []float64) {
	r.got = append(r.got, openedMsg{l, append([]float64(nil), v...)})
}

// sameOpened fails unless a and b hand the same labels and values, bit for
// bit, in the same order.
func sameOpened(t *testing.T, a, b []openedMsg) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d opened messages, want %d", len(b), len(a))
	}
	for i := range a {
		if a[i].label != b[i].label || len(a[i].values) != len(b[i].values) {
			t.Fatalf("message %d: %v (%d values), want %v (%d)", i, b[i].label, len(b[i].values), a[i].label, len(a[i].values))
		}
		for j := range a[i].values {
			if math.Float64bits(a[i].values[j]) != math.Float64bits(b[i].values[j]) {
				t.Fatalf("message %d value %d: %v, want %v", i, j, b[i].values[j], a[i].values[j])
			}
		}
	}
}

// runMatches runs ro and fails unless it hands the batch the values of
// want with the counts wantStats.
func runMatches(t *testing.T, ro *remoteOpen, want []openedMsg, wantStats seal.Stats) {
	t.Helper()
	var r recorder
	got, err := ro.run(context.Background(), r.add)
	if err != nil {
		t.Fatal(err)
	}
	sameOpened(t, want, r.got)
	if got != wantStats {
		t.Fatalf("counts %+v, want %+v", got, wantStats)
	}
}

// openFixture is a run's setup, its credentials and an embedded JetStream
// server.
type openFixture struct {
	st    *Setup
	creds *Credentials
	srv   *jetstream.Server
}

func newOpenFixture(t *testing.T, proto string, opts ...jetstream.Option) *openFixture {
	t.Helper()
	cfg := testConfig(proto, 4, 1)
	st, err := NewSetup(cfg, testSplit(t, cfg), "open-"+proto)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := NewDevCredentials(0, seal.DefaultSuite)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := jetstream.Embedded(t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return &openFixture{st: st, creds: creds, srv: srv}
}

func (f *openFixture) conn(t *testing.T) *jetstream.Conn {
	t.Helper()
	c, err := f.srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// analyzer returns an analyzer of the fixture's run that opens on the
// openers of conn (nil: in process), chunk messages a chunk, logging to
// logf; it is not started (the tests call its opening directly).
func (f *openFixture) analyzer(t *testing.T, conn *jetstream.Conn, chunk int, logf func(string, ...any)) *Analyzer {
	t.Helper()
	a := &Analyzer{cfg: AnalyzerConfig{Setup: f.st, Key: f.creds.HPKE, Openers: conn, OpenerChunk: chunk}, st: f.st, logf: logf}
	if err := a.joinOpeners(); err != nil {
		t.Fatal(err)
	}
	return a
}

// openers runs n in-process openers (one worker each) on the fixture's
// server with ackWait until the test ends; started, if set, is their hook.
func (f *openFixture) openers(t *testing.T, n int, ackWait time.Duration, logf func(string, ...any), started func(string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ops []*Opener
	for i := range n {
		op, err := NewOpener(ctx, OpenerConfig{Conn: f.conn(t), Key: f.creds.HPKE, Workers: 1, AckWait: ackWait, Name: fmt.Sprint("test-", i), Logf: logf, started: started})
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	t.Cleanup(func() { cancel(); wg.Wait() }) // before the connections close
	for _, op := range ops {
		wg.Go(func() { op.Serve(ctx) })
	}
}

// batch seals round 1's messages of reporters clients of the fixture's run
// (every coordinate, the metadata, or a whole report each), adds bad ones
// if bad (garbage, another key, an out-of-range value, two replays), and
// shuffles them with seed.
func (f *openFixture) batch(t *testing.T, reporters int, bad bool, seed uint64) []*wire.SealedMessage {
	t.Helper()
	s, err := seal.NewSealer(f.creds.HPKEPublic, f.st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	d, sp := f.st.Dim(), f.st.Spec()
	var ms []*wire.SealedMessage
	seal1 := func(l seal.Label, v []float64) {
		ct, err := s.Seal(1, l, v)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &wire.SealedMessage{Ciphertext: ct})
	}
	vec := func(n int) []float64 { // values in the spec's range
		v := make([]float64, n)
		for i := range v {
			v[i] = max(sp.Values.Lo, min(sp.Values.Hi, r.NormFloat64()))
			if sp.Integers {
				v[i] = math.Round(v[i])
			}
		}
		return v
	}
	for range reporters {
		switch {
		case sp.Mode == seal.WholeReport:
			seal1(seal.Report, vec(d))
		default:
			for j := range d {
				seal1(seal.Coord(j), vec(1))
			}
		}
		if sp.Meta {
			seal1(seal.Meta, []float64{r.Float64() * 4})
		}
	}
	if bad {
		other, _ := seal.GenerateKey(seal.DefaultSuite)
		so, _ := seal.NewSealer(other.Public(), f.st.RunID)
		l, n := seal.Coord(1), 1
		if sp.Mode == seal.WholeReport {
			l, n = seal.Report, d
		}
		ct, _ := so.Seal(1, l, make([]float64, n))
		far := make([]float64, n)
		far[0] = 10 * ValueBound
		cr, _ := s.Seal(1, l, far)
		ms = append(ms, &wire.SealedMessage{Ciphertext: []byte("garbage")}, &wire.SealedMessage{Ciphertext: ct},
			&wire.SealedMessage{Ciphertext: cr}, &wire.SealedMessage{Ciphertext: cr}, ms[0])
	}
	r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	return ms
}

// local opens ms in process and returns what it handed to the batch and
// its counts.
func (f *openFixture) local(t *testing.T, ms []*wire.SealedMessage) ([]openedMsg, seal.Stats) {
	t.Helper()
	var r recorder
	st, err := f.analyzer(t, nil, 0, t.Logf).openLocal(1, ms, r.add)
	if err != nil {
		t.Fatal(err)
	}
	return r.got, st
}

// TestOpenersEqualLocal: a batch opened on two openers in chunks of 5
// messages hands the role the same values in the same order, bit for bit,
// with the same counts, as the analyzer's own opening, for a
// per-coordinate protocol, one with metadata and a whole-report one; bad
// messages (garbage, another key, a value out of range, a replay within a
// chunk or across chunks, a replayed out-of-range message) are counted by
// the same reasons. The batches stay under 128 messages, which the local
// path opens on one goroutine, so that even which copy of a replay wins is
// the same.
func TestOpenersEqualLocal(t *testing.T) {
	for _, proto := range []string{"ss-double", "apes", "e-apes"} {
		t.Run(proto, func(t *testing.T) {
			f := newOpenFixture(t, proto)
			reporters := max(1, 100/f.st.Dim())
			if f.st.Spec().Mode == seal.WholeReport {
				reporters = 30
			}
			ms := f.batch(t, reporters, true, 3)
			if len(ms) >= 128 {
				t.Fatalf("a batch of %d messages: the local path would open it in parallel", len(ms))
			}
			want, wantStats := f.local(t, ms)
			f.openers(t, 2, 30*time.Second, t.Logf, nil)
			var r recorder
			got, err := f.analyzer(t, f.conn(t), 5, t.Logf).openRemote(context.Background(), 1, ms, r.add)
			if err != nil {
				t.Fatal(err)
			}
			sameOpened(t, want, r.got)
			if got != wantStats {
				t.Fatalf("counts %+v, want %+v", got, wantStats)
			}
			if got.Accepted == 0 || got.Replay != 2 || got.Range != 1 || got.Auth != 1 || got.Malformed != 1 {
				t.Fatalf("counts %+v: want accepted messages and 2 replays, 1 range, 1 auth, 1 malformed", got)
			}
		})
	}
}

// TestOpenersEmptyBatch: a batch without messages needs no opener.
func TestOpenersEmptyBatch(t *testing.T) {
	f := newOpenFixture(t, "ss-double")
	st, err := f.analyzer(t, f.conn(t), 5, t.Logf).openRemote(context.Background(), 1, nil, func(seal.Label, []float64) { t.Fatal("a value from nothing") })
	if err != nil || st != (seal.Stats{}) {
		t.Fatalf("%+v, %v", st, err)
	}
}

// logLines collects log lines (safe for concurrent use).
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
}

func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
