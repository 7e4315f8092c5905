package jetstream

import (
	"context"
	"errors"
	"fmt"

	js "github.com/nats-io/nats.go/jetstream"
)

// ErrNotFound marks a [Blobs.Get] of a name that is not stored (never put,
// or deleted).
var ErrNotFound = errors.New("not found")

// Blobs is a named-object store (a JetStream object store bucket): values of
// any size, stored in chunks, that every connection can read by name until
// they are deleted. Where a [Queue] hands each message to one worker, Blobs
// holds what all workers read (a run's settings, a round's model). It is
// safe for concurrent use.
type Blobs struct {
	bucket string
	store  js.ObjectStore
}

// Blobs creates the object store called name (letters, digits, '-' and
// '_'), or opens it if it exists.
func (c *Conn) Blobs(ctx context.Context, name string) (*Blobs, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("jetstream: blobs %q: %w", name, err)
	}
	st, err := c.js.CreateOrUpdateObjectStore(ctx, js.ObjectStoreConfig{Bucket: name, Storage: js.FileStorage, Replicas: c.replicas})
	if err != nil {
		return nil, fmt.Errorf("jetstream: create blobs %q: %w", name, err)
	}
	return &Blobs{bucket: name, store: st}, nil
}

// Put stores data under name, replacing what was stored there.
func (b *Blobs) Put(ctx context.Context, name string, data []byte) error {
	if name == "" {
		return fmt.Errorf("jetstream: put to blobs %s: %w: empty name", b.bucket, ErrInvalid)
	}
	if _, err := b.store.PutBytes(ctx, name, data); err != nil {
		return fmt.Errorf("jetstream: put %q to blobs %s: %w", name, b.bucket, err)
	}
	return nil
}

// Get returns what is stored under name; a name not stored gives an error
// that [errors.Is] matches with [ErrNotFound].
func (b *Blobs) Get(ctx context.Context, name string) ([]byte, error) {
	data, err := b.store.GetBytes(ctx, name)
	if errors.Is(err, js.ErrObjectNotFound) {
		return nil, fmt.Errorf("jetstream: get %q from blobs %s: %w", name, b.bucket, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: get %q from blobs %s: %w", name, b.bucket, err)
	}
	return data, nil
}

// Delete removes name; deleting a name not stored is not an error.
func (b *Blobs) Delete(ctx context.Context, name string) error {
	err := b.store.Delete(ctx, name)
	if err != nil && !errors.Is(err, js.ErrObjectNotFound) {
		return fmt.Errorf("jetstream: delete %q from blobs %s: %w", name, b.bucket, err)
	}
	return nil
}

// Purge removes every message of the queue on subject (NATS wildcards
// allowed), delivered or not: what is left of an abandoned piece of work.
func (q *Queue) Purge(ctx context.Context, subject string) error {
	if err := q.stream.Purge(ctx, js.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("jetstream: purge %s of %s: %w", subject, q.name, err)
	}
	return nil
}

// DeleteConsumer removes the consumer group name of the queue; removing a
// group that does not exist is not an error.
func (q *Queue) DeleteConsumer(ctx context.Context, name string) error {
	err := q.stream.DeleteConsumer(ctx, name)
	if err != nil && !errors.Is(err, js.ErrConsumerNotFound) {
		return fmt.Errorf("jetstream: delete consumer %s of %s: %w", name, q.name, err)
	}
	return nil
}
