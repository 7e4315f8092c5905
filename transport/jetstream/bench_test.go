package jetstream

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkPublishConsume moves messages through a queue of the embedded
// server (file store, in-process connection), batch by batch: publish a
// batch and wait for its acknowledgements, fetch it, acknowledge each
// message. It reports messages per second end to end. The sync=always case
// fsyncs every message ([WithSyncAlways]).
func BenchmarkPublishConsume(b *testing.B) {
	cases := []struct {
		size, batch int
		sync        bool
	}{{1 << 10, 1, false}, {1 << 10, 64, false}, {1 << 10, 512, false}, {64 << 10, 64, false}, {1 << 10, 64, true}}
	for _, bc := range cases {
		name := fmt.Sprintf("size=%dKiB/batch=%d", bc.size>>10, bc.batch)
		var opts []Option
		if bc.sync {
			name, opts = "sync=always/"+name, []Option{WithSyncAlways()}
		}
		b.Run(name, func(b *testing.B) { benchPublishConsume(b, bc.size, bc.batch, opts...) })
	}
}

func benchPublishConsume(b *testing.B, size, batch int, opts ...Option) {
	s := embedded(b, b.TempDir(), opts...)
	q := openQueue(b, connect(b, s), QueueConfig{Name: "bench"})
	cons := openConsumer(b, q, ConsumerConfig{Name: "g"})
	ctx := context.Background()
	data := make([]byte, size)
	msgs := make([]Message, batch)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for done := 0; done < b.N; {
		k := min(batch, b.N-done)
		for j := range k {
			msgs[j] = Message{Subject: "bench.x", ID: fmt.Sprint(done + j), Data: data}
		}
		if _, err := q.PublishBatch(ctx, msgs[:k]); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < k; {
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ms, err := cons.Fetch(fctx, k-got)
			cancel()
			if err != nil || len(ms) == 0 {
				b.Fatalf("fetch: %d messages, %v", len(ms), err)
			}
			for _, m := range ms {
				if err := m.Ack(); err != nil {
					b.Fatal(err)
				}
			}
			got += len(ms)
		}
		done += k
	}
	for queueLen(b, q) != 0 { // the last acknowledgements reach the server
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
