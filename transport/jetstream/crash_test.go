package jetstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/shufflefl/shufflefl/internal/crashtest"
	"github.com/shufflefl/shufflefl/internal/longtest"
)

// The crash test re-executes the test binary as a child (TestCrashChild with
// crashChildEnv set) that holds the embedded server and publishes to one
// queue, alternately one message at a time and in batches, reporting each
// acknowledged message on file descriptor 3. The parent SIGKILLs it at a
// random moment, restarts the server on the same directory and checks that
// every acknowledged message is there, intact, once. The next child first
// replays the last ids stored, which must come back as duplicates.

const (
	crashChildEnv = "SHUFFLEFL_JETSTREAM_CRASH_CHILD" // store directory for the child
	crashLieEnv   = "SHUFFLEFL_JETSTREAM_CRASH_LIE"   // child: acknowledge messages before publishing them
	crashQueue    = "crash"
	crashReplay   = 20 // ids a child replays
	crashBatch    = 16 // messages of a batch publish
)

// crashPayload is the deterministic data of message i: 32 B to 8 KiB, so
// that a kill may land inside a write.
func crashPayload(i int) []byte {
	h := sha256.Sum256([]byte(fmt.Sprint("crash/", i)))
	return bytes.Repeat(h[:], 1+int(h[0])%256)
}

func crashID(i int) string { return fmt.Sprintf("m-%08d", i) }

func openCrashQueue(c *Conn) (*Queue, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Queue(ctx, QueueConfig{Name: crashQueue, DedupWindow: time.Hour})
}

// TestCrashChild is the child process; it does nothing unless run by
// TestCrashPublish.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("child of TestCrashPublish only")
	}
	if err := crashChild(dir, os.NewFile(3, "ack")); err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
}

func crashChild(dir string, ack *os.File) error {
	s, err := Embedded(dir)
	if err != nil {
		return err
	}
	c, err := s.Connect()
	if err != nil {
		return err
	}
	q, err := openCrashQueue(c)
	if err != nil {
		return err
	}
	ctx := context.Background()
	lie := os.Getenv(crashLieEnv) != ""
	stored, err := q.Len(ctx)
	if err != nil {
		return err
	}
	n := int(stored) // one publisher, in order, nothing consumed: ids 0..n-1
	for i := max(0, n-crashReplay); i < n; i++ {
		a, err := q.Publish(ctx, crashQueue+".x", crashID(i), crashPayload(i))
		if err != nil {
			return err
		}
		if !a.Duplicate || a.Sequence != uint64(i+1) {
			return fmt.Errorf("replay of stored %s: %+v, want a duplicate of sequence %d", crashID(i), a, i+1)
		}
		fmt.Fprintf(ack, "D %d\n", i)
	}
	for i := n; ; {
		k := 1
		if (i/crashBatch)%2 == 1 {
			k = crashBatch
		}
		batch := make([]Message, k)
		for j := range batch {
			batch[j] = Message{Subject: crashQueue + ".x", ID: crashID(i + j), Data: crashPayload(i + j)}
		}
		acks, err := q.PublishBatch(ctx, batch)
		if err != nil {
			return err
		}
		for j, a := range acks {
			if a.Duplicate || a.Sequence != uint64(i+j+1) {
				return fmt.Errorf("publish of %s: %+v, want new at sequence %d", crashID(i+j), a, i+j+1)
			}
			fmt.Fprintf(ack, "A %d\n", i+j) // one write(2): atomic on a pipe
		}
		if lie {
			fmt.Fprintf(ack, "A %d\n", i+k+crashBatch) // not published yet
		}
		i += k
	}
}

// crashAcks is what the children acknowledged.
type crashAcks struct {
	acked      int // 1 + the highest acknowledged index
	replays    int // duplicates reported
	lines      int
	iterations int
}

func (a *crashAcks) add(line string) error {
	var kind byte
	var i int
	if _, err := fmt.Sscanf(line, "%c %d", &kind, &i); err != nil {
		return fmt.Errorf("ack line %q: %v", line, err)
	}
	a.lines++
	switch kind {
	case 'A':
		a.acked = max(a.acked, i+1)
	case 'D':
		a.replays++
	default:
		return fmt.Errorf("ack line %q", line)
	}
	return nil
}

// TestCrashPublish kills the process holding the embedded server while it
// publishes and checks that no acknowledged message is lost or damaged.
func TestCrashPublish(t *testing.T) {
	iters := 3
	if longtest.Enabled() {
		iters = 10
	}
	dir := t.TempDir()
	a := &crashAcks{}
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 3))
	verified := 0
	for it := range iters {
		before := a.lines
		from := max(0, verified-1000) // the tail of the last check on; all of it at the end
		if it == iters-1 {
			from = 0
		}
		delay := time.Duration(20+rng.IntN(300)) * time.Millisecond
		if err := runCrashChild(dir, delay, a); err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		stored, err := verifyCrash(t, dir, a, from)
		verified = stored
		if err != nil {
			t.Fatalf("iteration %d (killed %v after its first ack, %d acks): %v", it, delay, a.lines-before, err)
		}
		t.Logf("iteration %d: killed %v after its first ack; %d acks; %d acknowledged, %d stored", it, delay, a.lines-before, a.acked, stored)
	}
	if a.acked == 0 || a.replays == 0 {
		t.Fatalf("%d messages acknowledged, %d replays checked: the test exercised nothing", a.acked, a.replays)
	}
}

// TestCrashDetectsLoss is the negative control of TestCrashPublish: a child
// that acknowledges messages before it publishes them must be caught.
func TestCrashDetectsLoss(t *testing.T) {
	dir := t.TempDir()
	a := &crashAcks{}
	if err := runCrashChild(dir, 50*time.Millisecond, a, crashLieEnv+"=1"); err != nil {
		t.Fatal(err)
	}
	_, err := verifyCrash(t, dir, a, 0)
	if err == nil {
		t.Fatal("acknowledgements of unpublished messages were not detected")
	}
	t.Logf("detected: %v", err)
}

// runCrashChild starts a child on dir, collects its acknowledgements, and
// SIGKILLs it delay after the first one.
func runCrashChild(dir string, delay time.Duration, a *crashAcks, env ...string) error {
	return crashtest.Kill("^TestCrashChild$", append([]string{crashChildEnv + "=" + dir}, env...), delay, a.add)
}

// verifyCrash restarts the server on dir and checks that the stream holds
// messages 0..n-1 in order, with n covering every acknowledged one, and that
// those from on are intact.
func verifyCrash(t *testing.T, dir string, a *crashAcks, from int) (int, error) {
	s, err := Embedded(dir)
	if err != nil {
		return 0, err
	}
	defer s.Shutdown()
	c, err := s.Connect()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	q, err := openCrashQueue(c)
	if err != nil {
		return 0, err
	}
	ctx := testCtx(t)
	info, err := q.stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	st := info.State
	n := int(st.Msgs)
	if n < a.acked {
		return n, fmt.Errorf("%d messages stored, %d acknowledged", n, a.acked)
	}
	if st.FirstSeq != 1 || st.LastSeq != uint64(n) || st.NumDeleted != 0 {
		return n, fmt.Errorf("stream state %+v: want sequences 1..%d without gaps", st, n)
	}
	for i := from; i < n; i++ {
		m, err := q.stream.GetMsg(ctx, uint64(i+1))
		if err != nil {
			return n, fmt.Errorf("message %d: %w", i, err)
		}
		if id := m.Header.Get(js.MsgIDHeader); id != crashID(i) || !bytes.Equal(m.Data, crashPayload(i)) {
			return n, fmt.Errorf("sequence %d: id %q with %d bytes, want %s with %d", i+1, id, len(m.Data), crashID(i), len(crashPayload(i)))
		}
	}
	return n, nil
}
