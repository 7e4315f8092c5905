package account

import (
	"fmt"
	"sync"
)

// Cap is a client's total privacy budget: the sum of the local epsilons and
// the sum of the local deltas of all its releases may not exceed it. It is a
// Budget (one (epsilon, delta) pair type; the name says what it limits).
type Cap = Budget

// Store is the persistence behind a Ledger, in the manner of etcd raft's
// Storage: the ledger decides, the store remembers. The ledger calls a store
// only with validated values and never calls Append twice concurrently for
// the same client; calls for different clients may be concurrent, so an
// implementation must be safe for concurrent use.
//
// Durability contract: Append and SetCap must not return nil before the
// record is durable (for a disk-backed store: written and synced). The
// ledger returns from Charge only after Append returned nil, and a caller
// releases a report only after Charge returned nil, so every released report
// has a durable charge. If Append returns an error, the release must not have
// been recorded (or the store must report it again from Entries on restart,
// in which case the charge counts, which errs on the safe side).
type Store interface {
	// Append records one release durably.
	Append(r Release) error
	// Entries returns the client's releases in the order they were
	// appended; nil (and no error) for an unknown client. The caller owns
	// the returned slice.
	Entries(client string) ([]Release, error)
	// SetCap records the client's cap durably, replacing any previous one.
	SetCap(client string, c Cap) error
	// Cap returns the client's cap; ok is false if none was set.
	Cap(client string) (c Cap, ok bool, err error)
}

// MemoryStore is an in-memory Store for tests and simulations. Nothing
// survives the process, so its "durable" means "in memory". It is safe for
// concurrent use. The zero value is ready to use.
type MemoryStore struct {
	mu      sync.RWMutex
	entries map[string][]Release
	caps    map[string]Cap
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Append implements Store.
func (s *MemoryStore) Append(r Release) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[string][]Release{}
	}
	s.entries[r.Client] = append(s.entries[r.Client], r)
	return nil
}

// Entries implements Store.
func (s *MemoryStore) Entries(client string) ([]Release, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.entries[client]
	if e == nil {
		return nil, nil
	}
	out := make([]Release, len(e))
	copy(out, e)
	return out, nil
}

// SetCap implements Store.
func (s *MemoryStore) SetCap(client string, c Cap) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.caps == nil {
		s.caps = map[string]Cap{}
	}
	s.caps[client] = c
	return nil
}

// Cap implements Store.
func (s *MemoryStore) Cap(client string) (Cap, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.caps[client]
	return c, ok, nil
}

// Len returns the number of releases recorded for client (a test helper).
func (s *MemoryStore) Len(client string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.entries[client])
}

// String summarises the store for debugging.
func (s *MemoryStore) String() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, e := range s.entries {
		n += len(e)
	}
	return fmt.Sprintf("MemoryStore{%d clients with caps, %d releases}", len(s.caps), n)
}
