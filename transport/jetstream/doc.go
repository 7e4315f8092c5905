// Package jetstream is the transport between shufflefl's roles when they run
// as separate processes or machines: durable work queues on NATS JetStream.
//
// It is pure transport and knows nothing of reports, rounds or protocols.
// A [Server] is a NATS server with JetStream embedded in the process, its
// file store under a directory (nothing to install); [Connect] joins an
// external server or cluster instead. On either [Conn], a [Queue] is a
// stream with work-queue retention (a message is removed once a consumer
// acknowledges it) and de-duplication by message id, and a [Consumer] is a
// durable pull-consumer group shared by any number of workers; [Blobs] is
// an object store for what every worker reads (settings, a model).
//
// Guarantees: [Queue.Publish] returns only after the server stored the
// message (a crash of the publisher or of the embedded server's process after
// that loses nothing), and a replayed id within the de-duplication window is
// reported as a duplicate, not stored twice. Delivery is at least once: a
// message not acknowledged within the consumer's AckWait (its worker died, or
// lost its connection) is delivered again, to any worker of the group, so
// processing must be idempotent. A single-replica file store writes every
// message to the operating system before acknowledging it but syncs it to the
// disk only periodically (every two minutes by default; see [WithSyncAlways]):
// an acknowledged message survives a process kill, not a power loss.
package jetstream
