package jetstream

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCtx is a context for one test step.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// embedded starts a server on dir, shut down at the end of the test.
func embedded(t testing.TB, dir string, opts ...Option) *Server {
	t.Helper()
	s, err := Embedded(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// connect opens an in-process connection, closed at the end of the test.
func connect(t testing.TB, s *Server) *Conn {
	t.Helper()
	c, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func openQueue(t testing.TB, c *Conn, cfg QueueConfig) *Queue {
	t.Helper()
	q, err := c.Queue(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func openConsumer(t testing.TB, q *Queue, cfg ConsumerConfig) *Consumer {
	t.Helper()
	cons, err := q.Consumer(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cons
}

func payload(i int) []byte { return []byte(fmt.Sprintf("chunk %d %s", i, strings.Repeat("x", i%97))) }

func publishN(t testing.TB, q *Queue, from, to int) {
	t.Helper()
	ctx := testCtx(t)
	for i := from; i < to; i++ {
		ack, err := q.Publish(ctx, q.Name()+".chunk", fmt.Sprint("m-", i), payload(i))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate {
			t.Fatalf("message %d reported a duplicate", i)
		}
	}
}

func queueLen(t testing.TB, q *Queue) uint64 {
	t.Helper()
	n, err := q.Len(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// drain fetches and acknowledges (synchronously) every message available,
// checking each against payload, and returns the ids.
func drain(t testing.TB, cons *Consumer) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		msgs, err := cons.Fetch(ctx, 64)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return seen
		}
		for _, m := range msgs {
			var i int
			if _, err := fmt.Sscanf(m.ID(), "m-%d", &i); err != nil {
				t.Fatalf("id %q: %v", m.ID(), err)
			}
			if string(m.Data()) != string(payload(i)) {
				t.Fatalf("message %s: data %q", m.ID(), m.Data())
			}
			seen[m.ID()]++
			if err := m.AckSync(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRestartKeepsMessages publishes, shuts the embedded server down,
// restarts it on the same directory and finds every message, the
// de-duplication memory and, after a second restart, the acknowledgements.
func TestRestartKeepsMessages(t *testing.T) {
	t.Run("default", func(t *testing.T) { testRestart(t) })
	t.Run("sync always", func(t *testing.T) { testRestart(t, WithSyncAlways()) })
}

func testRestart(t *testing.T, opts ...Option) {
	dir := t.TempDir()
	const n = 50
	s := embedded(t, dir, opts...)
	publishN(t, openQueue(t, connect(t, s), QueueConfig{Name: "work"}), 0, n)
	s.Shutdown()

	s = embedded(t, dir, opts...)
	q := openQueue(t, connect(t, s), QueueConfig{Name: "work"})
	if got := queueLen(t, q); got != n {
		t.Fatalf("after restart: %d messages, want %d", got, n)
	}
	ack, err := q.Publish(testCtx(t), "work.chunk", "m-7", payload(7))
	if err != nil || !ack.Duplicate {
		t.Fatalf("replay of m-7 after restart: %+v, %v; want a duplicate", ack, err)
	}
	seen := drain(t, openConsumer(t, q, ConsumerConfig{Name: "openers"}))
	if len(seen) != n {
		t.Fatalf("consumed %d distinct messages, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("%s consumed %d times", id, k)
		}
	}
	s.Shutdown()

	s = embedded(t, dir, opts...)
	if got := queueLen(t, openQueue(t, connect(t, s), QueueConfig{Name: "work"})); got != 0 {
		t.Fatalf("after acknowledging all and restarting: %d messages left", got)
	}
}

// TestDedup replays ids: within the window a replay is a duplicate, even
// after the original was consumed and deleted; after the window it is new.
func TestDedup(t *testing.T) {
	s := embedded(t, t.TempDir())
	c := connect(t, s)
	pub := func(q *Queue, i int) Ack {
		t.Helper()
		a, err := q.Publish(testCtx(t), q.Name()+".report", fmt.Sprint("m-", i), payload(i))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	long := openQueue(t, c, QueueConfig{Name: "inbox", DedupWindow: time.Minute})
	cons := openConsumer(t, long, ConsumerConfig{Name: "shuffler"})
	const short = 200 * time.Millisecond
	brief := openQueue(t, c, QueueConfig{Name: "brief", DedupWindow: short})
	first := pub(long, 1)
	pub(brief, 1)
	steps := []struct {
		name string
		q    *Queue
		do   func()
		i    int
		dup  bool
	}{
		{"replay at once", long, func() {}, 1, true},
		{"another id", long, func() {}, 2, false},
		{"replay after consumption", long, func() {
			if n := len(drain(t, cons)); n != 2 {
				t.Fatalf("consumed %d messages, want 2", n)
			}
		}, 1, true},
		{"replay after the window", brief, func() { time.Sleep(3 * short) }, 1, false},
	}
	for _, st := range steps {
		st.do()
		a := pub(st.q, st.i)
		if a.Duplicate != st.dup {
			t.Fatalf("%s: duplicate=%v, want %v", st.name, a.Duplicate, st.dup)
		}
		if st.dup && st.i == 1 && a.Sequence != first.Sequence {
			t.Fatalf("%s: duplicate acknowledged with sequence %d, want the original's %d", st.name, a.Sequence, first.Sequence)
		}
	}
}

// TestGroupSplitsQueue has two workers on separate connections share a
// queue: every message is processed exactly once, and both get work.
func TestGroupSplitsQueue(t *testing.T) {
	const n = 200
	s := embedded(t, t.TempDir())
	q := openQueue(t, connect(t, s), QueueConfig{Name: "chunks"})
	publishN(t, q, 0, n)
	var mu sync.Mutex
	seen := map[string]int{}
	per := [2]int{}
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wq := openQueue(t, connect(t, s), QueueConfig{Name: "chunks"})
		cons := openConsumer(t, wq, ConsumerConfig{Name: "openers", AckWait: 10 * time.Second})
		wg.Go(func() {
			errs <- cons.Consume(ctx, func(m *Msg) {
				time.Sleep(time.Millisecond) // work, so that both workers get some
				if err := m.AckSync(ctx); err != nil {
					return // cancelled at the end: the message stays in the queue
				}
				mu.Lock()
				seen[m.ID()]++
				per[w]++
				if len(seen) == n {
					cancel()
				}
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("%s processed %d times", id, k)
		}
	}
	if len(seen) != n || per[0] == 0 || per[1] == 0 {
		t.Fatalf("processed %d distinct messages (want %d), split %v", len(seen), n, per)
	}
	if got := queueLen(t, q); got != 0 {
		t.Fatalf("%d messages left after all were acknowledged", got)
	}
	t.Logf("split between the workers: %v", per)
}

// TestPublishBatch publishes a batch larger than BatchWindow that repeats
// some ids: the repeats come back as duplicates of the first, in order.
func TestPublishBatch(t *testing.T) {
	const n = 2*BatchWindow + 100
	s := embedded(t, t.TempDir())
	q := openQueue(t, connect(t, s), QueueConfig{Name: "batch"})
	msgs := make([]Message, n)
	for j := range msgs {
		i := j
		if j%500 == 499 {
			i = j - 1 // a replay of the message just before
		}
		msgs[j] = Message{Subject: "batch.x", ID: fmt.Sprint("m-", i), Data: payload(i)}
	}
	acks, err := q.PublishBatch(testCtx(t), msgs)
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for j, a := range acks {
		want := j%500 == 499
		if a.Duplicate != want || (want && a.Sequence != acks[j-1].Sequence) {
			t.Fatalf("message %d: %+v, duplicate should be %v", j, a, want)
		}
		if want {
			dups++
		}
	}
	if got := queueLen(t, q); got != uint64(n-dups) {
		t.Fatalf("%d messages stored, want %d", got, n-dups)
	}
}

// TestConsumeEndsWithServer checks that Consume returns an error, not
// hangs, when the embedded server shuts down under it.
func TestConsumeEndsWithServer(t *testing.T) {
	s := embedded(t, t.TempDir())
	cons := openConsumer(t, openQueue(t, connect(t, s), QueueConfig{Name: "q"}), ConsumerConfig{Name: "g"})
	errc := make(chan error, 1)
	go func() { errc <- cons.Consume(context.Background(), func(m *Msg) { m.Ack() }) }()
	time.Sleep(100 * time.Millisecond)
	s.Shutdown()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Consume returned nil after the server shut down")
		}
		t.Logf("Consume: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Consume still running 10 s after the server shut down")
	}
}
