package jetstream_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/shufflefl/shufflefl/transport/jetstream"
)

// Example runs an embedded server, publishes three chunks (one of them
// twice) and has a worker take them from the queue.
func Example() {
	dir, err := os.MkdirTemp("", "jetstream-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := jetstream.Embedded(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown()
	conn, err := srv.Connect()
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := conn.Queue(ctx, jetstream.QueueConfig{Name: "chunks"})
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"round1-chunk0", "round1-chunk1", "round1-chunk1", "round1-chunk2"} {
		ack, err := q.Publish(ctx, "chunks.round1", id, []byte("sealed messages of "+id))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("published %s: duplicate=%v\n", id, ack.Duplicate)
	}

	worker, err := q.Consumer(ctx, jetstream.ConsumerConfig{Name: "openers", AckWait: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	msgs, err := worker.Fetch(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("opened %s: %q\n", m.ID(), m.Data())
		if err := m.AckSync(ctx); err != nil {
			log.Fatal(err)
		}
	}
	n, err := q.Len(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("left in the queue:", n)
	// Output:
	// published round1-chunk0: duplicate=false
	// published round1-chunk1: duplicate=false
	// published round1-chunk1: duplicate=true
	// published round1-chunk2: duplicate=false
	// opened round1-chunk0: "sealed messages of round1-chunk0"
	// opened round1-chunk1: "sealed messages of round1-chunk1"
	// opened round1-chunk2: "sealed messages of round1-chunk2"
	// left in the queue: 0
}
