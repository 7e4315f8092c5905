package wire

import (
	"errors"
	"fmt"
	"io"

	"github.com/shufflefl/shufflefl/checks"
)

// BatchAssembler checks a SubmitBatch stream as the analyzer receives it:
// the first chunk and only the first carries the header, every chunk is
// valid, and the messages add up to exactly the header's count. The zero
// value is ready to use; it is not safe for concurrent use.
type BatchAssembler struct {
	header   *BatchHeader
	messages []*SealedMessage
	chunks   int
}

// Add checks chunk c and appends its messages. An error wraps
// checks.ErrInvalid; the stream should then be abandoned.
func (a *BatchAssembler) Add(c *BatchChunk) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("wire: batch chunk %d: %w", a.chunks, err)
	}
	switch {
	case a.chunks == 0 && c.Header == nil:
		return fmt.Errorf("wire: batch chunk 0: %w", checks.Invalidf("the first chunk must carry the header"))
	case a.chunks > 0 && c.Header != nil:
		return fmt.Errorf("wire: batch chunk %d: %w", a.chunks, checks.Invalidf("only the first chunk may carry a header"))
	}
	if c.Header != nil {
		a.header = c.Header
	}
	if uint64(len(a.messages))+uint64(len(c.Messages)) > a.header.Counts.Messages {
		return fmt.Errorf("wire: batch chunk %d: %w", a.chunks,
			checks.Invalidf("more messages than the header's %d", a.header.Counts.Messages))
	}
	a.messages = append(a.messages, c.Messages...)
	a.chunks++
	return nil
}

// Finish returns the header and all messages once the stream has ended,
// or an error wrapping checks.ErrInvalid if no header arrived or the
// messages fall short of the header's count.
func (a *BatchAssembler) Finish() (*BatchHeader, []*SealedMessage, error) {
	if a.header == nil {
		return nil, nil, fmt.Errorf("wire: batch: %w", checks.Invalidf("stream ended without a header"))
	}
	if got := uint64(len(a.messages)); got != a.header.Counts.Messages {
		return nil, nil, fmt.Errorf("wire: batch: %w", checks.Invalidf("%d messages, header says %d", got, a.header.Counts.Messages))
	}
	return a.header, a.messages, nil
}

// ChunkBatch splits a round's shuffled messages into the chunks of a
// SubmitBatch stream, the header in the first, at most perChunk messages
// (and MaxChunkBytes of ciphertext) each. h.Counts.Messages must equal
// len(ms).
func ChunkBatch(h *BatchHeader, ms []*SealedMessage, perChunk int) ([]*BatchChunk, error) {
	return ChunkBatchBytes(h, ms, perChunk, MaxChunkBytes)
}

// ChunkBatchBytes is ChunkBatch with at most maxBytes (in [1,
// MaxChunkBytes]) of ciphertext a chunk; a message larger than maxBytes
// travels alone in its chunk. Small chunks let a sender observe the
// stream's progress chunk by chunk and keep each gRPC message within the
// receiver's flow-control window.
func ChunkBatchBytes(h *BatchHeader, ms []*SealedMessage, perChunk, maxBytes int) ([]*BatchChunk, error) {
	if err := h.Validate(); err != nil {
		return nil, err
	}
	if perChunk < 1 || perChunk > MaxMessagesPerChunk {
		return nil, fmt.Errorf("wire: chunk batch: %w", checks.Invalidf("per-chunk count must be in [1, %d], got %d", MaxMessagesPerChunk, perChunk))
	}
	if maxBytes < 1 || maxBytes > MaxChunkBytes {
		return nil, fmt.Errorf("wire: chunk batch: %w", checks.Invalidf("per-chunk bytes must be in [1, %d], got %d", MaxChunkBytes, maxBytes))
	}
	if uint64(len(ms)) != h.Counts.Messages {
		return nil, fmt.Errorf("wire: chunk batch: %w", checks.Invalidf("%d messages, header says %d", len(ms), h.Counts.Messages))
	}
	chunks := []*BatchChunk{{Header: h}}
	size := 0
	for _, m := range ms {
		cur := chunks[len(chunks)-1]
		n := len(m.GetCiphertext())
		if len(cur.Messages) == perChunk || (len(cur.Messages) > 0 && size+n > maxBytes) {
			cur = &BatchChunk{}
			chunks = append(chunks, cur)
			size = 0
		}
		cur.Messages = append(cur.Messages, m)
		size += n
	}
	return chunks, nil
}

// ReceiveBatch reads a SubmitBatch stream to its end and assembles the
// batch (BatchAssembler); a malformed stream's error is a status
// (StatusOf), a transport error is returned as is.
func ReceiveBatch(stream interface{ Recv() (*BatchChunk, error) }) (*BatchHeader, []*SealedMessage, error) {
	var asm BatchAssembler
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if err := asm.Add(c); err != nil {
			return nil, nil, StatusOf(err)
		}
	}
	h, ms, err := asm.Finish()
	if err != nil {
		return nil, nil, StatusOf(err)
	}
	return h, ms, nil
}
