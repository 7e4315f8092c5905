package jetstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fetchOne fetches one message within wait, or fails the test.
func fetchOne(t *testing.T, cons *Consumer, wait time.Duration) *Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	msgs, err := cons.Fetch(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("fetched %d messages within %v, want 1", len(msgs), wait)
	}
	return msgs[0]
}

// fetchNone checks that no message arrives within wait.
func fetchNone(t *testing.T, cons *Consumer, wait time.Duration, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	msgs, err := cons.Fetch(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 0 {
		t.Fatalf("%s: got %s (delivery %d)", why, msgs[0].ID(), msgs[0].Delivered())
	}
}

// TestRedelivery covers what happens to a delivered message a worker does
// not acknowledge: its worker is killed (its connection closed), it asks
// for more time, or it gives the message back.
func TestRedelivery(t *testing.T) {
	const ackWait = 500 * time.Millisecond
	s := embedded(t, t.TempDir())
	cfg := ConsumerConfig{Name: "openers", AckWait: ackWait}
	group := func(c *Conn) *Consumer {
		return openConsumer(t, openQueue(t, c, QueueConfig{Name: "chunks"}), cfg)
	}
	other := group(connect(t, s))
	q := openQueue(t, connect(t, s), QueueConfig{Name: "chunks"})

	t.Run("killed worker", func(t *testing.T) {
		publishN(t, q, 0, 1)
		victim, err := s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		m := fetchOne(t, group(victim), time.Second)
		start := time.Now()
		victim.nc.Close() // a kill: no ack, nothing flushed
		fetchNone(t, other, ackWait/2, "before AckWait")
		again := fetchOne(t, other, 5*ackWait)
		if again.ID() != m.ID() || again.Delivered() != 2 || string(again.Data()) != string(m.Data()) {
			t.Fatalf("redelivered %s (delivery %d), want %s (delivery 2)", again.ID(), again.Delivered(), m.ID())
		}
		if d := time.Since(start); d < ackWait*9/10 {
			t.Fatalf("redelivered after %v, before AckWait %v", d, ackWait)
		}
		if err := again.AckSync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		fetchNone(t, other, 2*ackWait, "after the acknowledgement")
	})
	t.Run("in progress", func(t *testing.T) {
		publishN(t, q, 1, 2)
		worker := group(connect(t, s))
		m := fetchOne(t, worker, time.Second)
		for range 4 { // 4 x AckWait/2: twice AckWait in all
			if err := m.InProgress(); err != nil {
				t.Fatal(err)
			}
			fetchNone(t, other, ackWait/2, "while in progress")
		}
		if err := m.AckSync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		fetchNone(t, other, 2*ackWait, "after the acknowledgement")
	})
	t.Run("nak", func(t *testing.T) {
		publishN(t, q, 2, 3)
		worker := group(connect(t, s))
		m := fetchOne(t, worker, time.Second)
		if err := m.Nak(); err != nil {
			t.Fatal(err)
		}
		again := fetchOne(t, other, ackWait/2) // at once, not after AckWait
		if again.ID() != m.ID() || again.Delivered() != 2 {
			t.Fatalf("after nak: %s (delivery %d), want %s (delivery 2)", again.ID(), again.Delivered(), m.ID())
		}
		if err := again.Term(); err != nil {
			t.Fatal(err)
		}
		fetchNone(t, other, 2*ackWait, "after term")
	})
	if n := queueLen(t, q); n != 0 {
		t.Fatalf("%d messages left", n)
	}
}

// TestMalformed checks that bad input gives a clear error of the right
// kind, before anything is sent.
func TestMalformed(t *testing.T) {
	s := embedded(t, t.TempDir())
	c := connect(t, s)
	q := openQueue(t, c, QueueConfig{Name: "work", MaxMsgSize: 1024})
	ctx := testCtx(t)
	pubs := []struct {
		name, subject, id string
		size              int
		want              error
		text              string
	}{
		{"empty subject", "", "a", 1, ErrInvalid, "empty subject"},
		{"other queue", "inbox.x", "a", 1, ErrInvalid, "not under"},
		{"queue name only", "work.", "a", 1, ErrInvalid, "not under"},
		{"wildcard", "work.*", "a", 1, ErrInvalid, "wildcard"},
		{"blank", "work.a b", "a", 1, ErrInvalid, "blank"},
		{"empty token", "work..a", "a", 1, ErrInvalid, "empty"},
		{"empty id", "work.a", "", 1, ErrInvalid, "empty message id"},
		{"long id", "work.a", strings.Repeat("i", MaxIDLen+1), 1, ErrInvalid, "message id"},
		{"oversize", "work.a", "a", 1025, ErrTooLarge, "1025 bytes"},
	}
	for _, p := range pubs {
		_, err := q.Publish(ctx, p.subject, p.id, make([]byte, p.size))
		if !errors.Is(err, p.want) || !strings.Contains(err.Error(), p.text) {
			t.Errorf("%s: error %v, want %v mentioning %q", p.name, err, p.want, p.text)
		}
		_, err = q.PublishBatch(ctx, []Message{{Subject: "work.ok", ID: "ok", Data: []byte{1}}, {Subject: p.subject, ID: p.id, Data: make([]byte, p.size)}})
		if !errors.Is(err, p.want) || !strings.Contains(err.Error(), "message 1") {
			t.Errorf("%s in a batch: error %v, want %v naming message 1", p.name, err, p.want)
		}
	}
	if n := queueLen(t, q); n != 0 {
		t.Fatalf("malformed publishes stored %d messages", n)
	}
	queues := []struct {
		name string
		cfg  QueueConfig
		text string
	}{
		{"empty name", QueueConfig{}, "empty name"},
		{"dotted name", QueueConfig{Name: "a.b"}, "only letters"},
		{"short window", QueueConfig{Name: "a", DedupWindow: time.Millisecond}, "dedup window"},
		{"over max payload", QueueConfig{Name: "a", MaxMsgSize: DefaultMaxPayload}, "max payload"},
		{"negative bytes", QueueConfig{Name: "a", MaxBytes: -5}, "negative"},
	}
	for _, qc := range queues {
		if _, err := c.Queue(ctx, qc.cfg); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), qc.text) {
			t.Errorf("queue with %s: error %v, want ErrInvalid mentioning %q", qc.name, err, qc.text)
		}
	}
	if _, err := c.Queue(ctx, QueueConfig{Name: "a", Replicas: 3}); err == nil {
		t.Error("3 replicas on a single server: no error")
	}
	consumers := []struct {
		name string
		cfg  ConsumerConfig
	}{
		{"empty name", ConsumerConfig{}},
		{"other subject", ConsumerConfig{Name: "g", Subject: "inbox.>"}},
		{"ack wait", ConsumerConfig{Name: "g", AckWait: time.Microsecond}},
		{"prefetch", ConsumerConfig{Name: "g", Prefetch: -1}},
	}
	for _, cc := range consumers {
		if _, err := q.Consumer(ctx, cc.cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("consumer with %s: error %v, want ErrInvalid", cc.name, err)
		}
	}
	if _, err := openConsumer(t, q, ConsumerConfig{Name: "g"}).Fetch(ctx, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("fetch of 0: error %v, want ErrInvalid", err)
	}
}

// TestServerErrors covers what can go wrong around the server itself.
func TestServerErrors(t *testing.T) {
	dir := t.TempDir()
	s := embedded(t, dir, WithLoopbackPort(0))
	if _, err := Embedded(dir); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second server on one directory: error %v, want 'in use'", err)
	}
	if _, err := Embedded(""); err == nil {
		t.Error("empty directory: no error")
	}
	for _, o := range []Option{WithLoopbackPort(-1), WithMaxPayload(0), WithMaxStore(-1), WithServerName("")} {
		if _, err := Embedded(t.TempDir(), o); err == nil {
			t.Error("bad option: no error")
		}
	}
	if _, err := Connect(""); err == nil {
		t.Error("empty URL: no error")
	}
	if _, err := Connect(s.URL(), WithReplicas(0)); err == nil {
		t.Error("0 replicas: no error")
	}
	// Over the loopback listener, as another process would.
	c, err := Connect(s.URL(), WithName("test"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := openQueue(t, c, QueueConfig{Name: "net"})
	publishN(t, q, 0, 3)
	s.Shutdown()
	if _, err := Embedded(dir); err != nil {
		t.Fatalf("restart after shutdown (lock released?): %v", err)
	}
}

// TestQueueFull fills a small queue: the publish beyond MaxBytes is refused
// with ErrQueueFull, and consuming makes room again.
func TestQueueFull(t *testing.T) {
	s := embedded(t, t.TempDir())
	q := openQueue(t, connect(t, s), QueueConfig{Name: "small", MaxBytes: 16 << 10})
	ctx := testCtx(t)
	data := make([]byte, 1000)
	var i int
	var err error
	for i = 0; i < 100 && err == nil; i++ {
		_, err = q.Publish(ctx, "small.x", "id-"+strings.Repeat("x", i), data)
	}
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("after %d publishes of 1000 bytes to a 16 KiB queue: %v, want ErrQueueFull", i, err)
	}
	t.Logf("refused publish %d: %v", i, err)
	m := fetchOne(t, openConsumer(t, q, ConsumerConfig{Name: "g"}), time.Second)
	if err := m.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Publish(ctx, "small.x", "after", data); err != nil {
		t.Fatalf("after consuming one: %v", err)
	}
}
