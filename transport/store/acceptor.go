package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
)

// ErrAcceptorClosed: Accept was called on a closed Acceptor.
var ErrAcceptorClosed = errors.New("store: acceptor closed")

// Acceptor group-commits the shuffler's inbox: concurrent Accept calls that
// arrive while a commit is in progress are stored together by the next
// AcceptBatch, so many clients share one fsync. Each caller still returns
// only after its own report is durable (or refused), so the shuffler's
// "acknowledge only what is stored" contract is unchanged. Under no
// contention a batch has one report and the latency is that of DB.Accept.
type Acceptor struct {
	db       *DB
	maxBatch int
	reqs     chan acceptReq
	done     chan struct{}

	mu     sync.RWMutex
	closed bool
}

type acceptReq struct {
	r   Report
	out chan error
}

// NewAcceptor starts an Acceptor that commits at most maxBatch reports per
// transaction. Close it to stop its goroutine.
func (db *DB) NewAcceptor(maxBatch int) (*Acceptor, error) {
	if maxBatch < 1 {
		return nil, fmt.Errorf("store: new acceptor: %w", checks.Invalidf("max batch must be >= 1, got %d", maxBatch))
	}
	a := &Acceptor{db: db, maxBatch: maxBatch, reqs: make(chan acceptReq, maxBatch), done: make(chan struct{})}
	go a.loop()
	return a, nil
}

func (a *Acceptor) loop() {
	defer close(a.done)
	batch := make([]acceptReq, 0, a.maxBatch)
	for first := range a.reqs {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < a.maxBatch {
			select {
			case r, ok := <-a.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		rs := make([]Report, len(batch))
		for i, q := range batch {
			rs[i] = q.r
		}
		errs, err := a.db.AcceptBatch(rs)
		for i, q := range batch {
			if err != nil {
				q.out <- err
			} else {
				q.out <- errs[i]
			}
		}
	}
}

// Accept stores r as DB.Accept does, possibly in one transaction with
// other concurrent calls, and returns after the commit. If ctx ends first,
// Accept returns ctx.Err() and the report may or may not be stored (a retry
// then gets nil or ErrAlreadyAccepted).
func (a *Acceptor) Accept(ctx context.Context, r Report) error {
	out := make(chan error, 1)
	a.mu.RLock()
	if a.closed {
		a.mu.RUnlock()
		return ErrAcceptorClosed
	}
	select {
	case a.reqs <- acceptReq{r, out}:
	case <-ctx.Done():
		a.mu.RUnlock()
		return ctx.Err()
	}
	a.mu.RUnlock()
	select {
	case err := <-out:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting, waits for the reports already queued to be
// committed, and stops the goroutine. It is safe to call more than once.
func (a *Acceptor) Close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.reqs)
	}
	a.mu.Unlock()
	<-a.done
}
