package data

import "io"

// readAhead runs the reads of src in a goroutine, chunkSize bytes at a time
// and up to depth chunks ahead, so that decompression (the goroutine) and
// the caller's decoding overlap on two cores. Close must be called; it
// stops the goroutine and waits for it.
type readAhead struct {
	full chan aheadChunk
	free chan []byte
	stop chan struct{}
	done chan struct{}
	cur  aheadChunk
	off  int
}

type aheadChunk struct {
	b   []byte
	err error
}

func newReadAhead(src io.Reader, chunkSize, depth int) *readAhead {
	ra := &readAhead{
		full: make(chan aheadChunk, depth),
		free: make(chan []byte, depth+1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	for range depth + 1 {
		ra.free <- make([]byte, chunkSize)
	}
	go ra.fill(src)
	return ra
}

func (ra *readAhead) fill(src io.Reader) {
	defer close(ra.done)
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		case <-ra.stop:
			return
		}
		n, err := io.ReadFull(src, buf)
		if err == io.ErrUnexpectedEOF {
			err = io.EOF // a short last chunk is not an error here
		}
		select {
		case ra.full <- aheadChunk{buf[:n], err}:
		case <-ra.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read implements io.Reader.
func (ra *readAhead) Read(p []byte) (int, error) {
	for ra.off == len(ra.cur.b) {
		if ra.cur.err != nil {
			return 0, ra.cur.err
		}
		if ra.cur.b != nil {
			ra.free <- ra.cur.b[:cap(ra.cur.b)]
		}
		ra.cur, ra.off = <-ra.full, 0
	}
	n := copy(p, ra.cur.b[ra.off:])
	ra.off += n
	return n, nil
}

// Close stops the reading goroutine and waits for it to exit.
func (ra *readAhead) Close() {
	close(ra.stop)
	<-ra.done
}
