package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// ErrDuplicateCharge: the store already holds a ledger entry for this
// (client, round). account.Ledger never asks for one (it refuses a second
// release in a round itself); the store's unique key is a second line of
// defence, e.g. against two ledgers over one database.
var ErrDuplicateCharge = errors.New("store: ledger entry for this client and round already recorded")

// LedgerStore is the account.Store of a DB: the ledger's entries and caps in
// the tables ledger_entry and ledger_cap. Append and SetCap commit before
// returning (WAL fsynced), which is the durability contract of account.Store.
// Obtain it with DB.LedgerStore; it is safe for concurrent use.
//
// Besides plain Append, a LedgerStore can attach a sealed report to the entry
// it appends (see DB.ChargeWithReport): the report and the charge are then
// committed in one transaction, so after a crash either both exist or
// neither does.
type LedgerStore struct {
	db *DB

	mu     sync.Mutex
	staged map[clientRound]*staged // reports waiting for their Append
}

// staged is a report waiting for the Append of its charge.
type staged struct {
	report  []byte
	written bool // set by Append after its commit
}

type clientRound struct {
	client string
	round  int64
}

var _ account.Store = (*LedgerStore)(nil)

// LedgerStore returns the DB's account.Store (always the same value). Build
// exactly one account.Ledger on it per process: the ledger caches totals, so
// two ledgers over one store would not see each other's charges until
// restart (the store's unique key still refuses a double charge per round).
func (db *DB) LedgerStore() *LedgerStore {
	db.ledgerOnce.Do(func() {
		db.ledger = &LedgerStore{db: db, staged: map[clientRound]*staged{}}
	})
	return db.ledger
}

// validateRelease repeats account.Release's checks that the schema relies on
// (SQLite would store NaN as NULL).
func validateRelease(r account.Release) error {
	if r.Client == "" {
		return checks.Invalidf("release client ID must not be empty")
	}
	if r.Round < 0 {
		return checks.Invalidf("release round must be >= 0, got %d", r.Round)
	}
	if r.Mechanism == "" {
		return checks.Invalidf("release mechanism name must not be empty")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"local epsilon", r.LocalEpsilon}, {"local delta", r.LocalDelta},
		{"central epsilon", r.CentralEpsilon}, {"central delta", r.CentralDelta},
	} {
		if err := checks.Finite("release "+f.name, f.v); err != nil {
			return err
		}
		if f.v < 0 {
			return checks.Invalidf("release %s must be >= 0, got %v", f.name, f.v)
		}
	}
	return nil
}

// Append implements account.Store: it commits the release (and the report
// staged for its client and round, if any) before returning.
func (s *LedgerStore) Append(r account.Release) error {
	if err := validateRelease(r); err != nil {
		return fmt.Errorf("store: ledger append: %w", err)
	}
	key := clientRound{r.Client, int64(r.Round)}
	s.mu.Lock()
	st := s.staged[key]
	s.mu.Unlock()
	hasReport := st != nil
	ctx := context.Background()
	err := s.db.tx(ctx, func(t *sql.Tx) error {
		var n int
		if err := t.QueryRowContext(ctx, `SELECT count(*) FROM ledger_entry WHERE client = ? AND round = ?`,
			r.Client, r.Round).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return ErrDuplicateCharge
		}
		if _, err := t.ExecContext(ctx, `INSERT INTO ledger_entry
			(client, round, mechanism, local_epsilon, local_delta, central_epsilon, central_delta)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			r.Client, r.Round, r.Mechanism, r.LocalEpsilon, r.LocalDelta, r.CentralEpsilon, r.CentralDelta); err != nil {
			return err
		}
		if hasReport {
			if _, err := t.ExecContext(ctx, `INSERT INTO outbox (client, round, report, created_ns) VALUES (?, ?, ?, ?)`,
				r.Client, r.Round, st.report, nowNS()); err != nil {
				return fmt.Errorf("outbox: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: ledger append client %q round %d: %w", r.Client, r.Round, err)
	}
	if hasReport {
		s.mu.Lock()
		st.written = true
		s.mu.Unlock()
	}
	return nil
}

// Entries implements account.Store.
func (s *LedgerStore) Entries(client string) ([]account.Release, error) {
	rows, err := s.db.sql.Query(`SELECT round, mechanism, local_epsilon, local_delta, central_epsilon, central_delta
		FROM ledger_entry WHERE client = ? ORDER BY seq`, client)
	if err != nil {
		return nil, fmt.Errorf("store: ledger entries of %q: %w", client, err)
	}
	defer rows.Close()
	var out []account.Release
	for rows.Next() {
		r := account.Release{Client: client}
		if err := rows.Scan(&r.Round, &r.Mechanism, &r.LocalEpsilon, &r.LocalDelta, &r.CentralEpsilon, &r.CentralDelta); err != nil {
			return nil, fmt.Errorf("store: ledger entries of %q: %w", client, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: ledger entries of %q: %w", client, err)
	}
	return out, nil
}

// SetCap implements account.Store.
func (s *LedgerStore) SetCap(client string, c account.Cap) error {
	if client == "" {
		return fmt.Errorf("store: set cap: %w", checks.Invalidf("client ID must not be empty"))
	}
	if err := checks.EpsilonOrZero("cap epsilon", c.Epsilon); err != nil {
		return fmt.Errorf("store: set cap of %q: %w", client, err)
	}
	if err := checks.DeltaOrZero("cap delta", c.Delta); err != nil {
		return fmt.Errorf("store: set cap of %q: %w", client, err)
	}
	ctx := context.Background()
	err := s.db.tx(ctx, func(t *sql.Tx) error {
		_, err := t.ExecContext(ctx, `INSERT INTO ledger_cap (client, epsilon, delta) VALUES (?, ?, ?)
			ON CONFLICT (client) DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta`,
			client, c.Epsilon, c.Delta)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: set cap of %q: %w", client, err)
	}
	return nil
}

// Cap implements account.Store.
func (s *LedgerStore) Cap(client string) (account.Cap, bool, error) {
	var c account.Cap
	err := s.db.sql.QueryRow(`SELECT epsilon, delta FROM ledger_cap WHERE client = ?`, client).Scan(&c.Epsilon, &c.Delta)
	if errors.Is(err, sql.ErrNoRows) {
		return account.Cap{}, false, nil
	}
	if err != nil {
		return account.Cap{}, false, fmt.Errorf("store: cap of %q: %w", client, err)
	}
	return c, true, nil
}

// Totals returns, for every client with at least one entry, the basic
// composition of its local guarantees (sum of local epsilons and deltas):
// what account.Ledger.Spent reports after a restart. Crash tests compare it
// with what was released.
func (s *LedgerStore) Totals() (map[string]account.Budget, error) {
	rows, err := s.db.sql.Query(`SELECT client, local_epsilon, local_delta FROM ledger_entry ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("store: ledger totals: %w", err)
	}
	defer rows.Close()
	out := map[string]account.Budget{}
	for rows.Next() {
		var c string
		var e, d float64
		if err := rows.Scan(&c, &e, &d); err != nil {
			return nil, fmt.Errorf("store: ledger totals: %w", err)
		}
		b := out[c]
		b.Epsilon += e
		b.Delta += d
		out[c] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: ledger totals: %w", err)
	}
	return out, nil
}
