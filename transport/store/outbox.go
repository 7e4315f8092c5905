package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// MaxReportBytes bounds one sealed report in the outbox and in the inbox
// (the sum of a report's sealed messages). A per-coordinate report for
// d = 101,770 sealed with X25519/AES-GCM is about 7 MB; the bound leaves
// room for k = 8 such models.
const MaxReportBytes = 64 << 20

// Errors of the client outbox.
var (
	// ErrForeignLedger: ChargeWithReport was given a ledger that is not
	// backed by this DB's LedgerStore, so the report could not be written in
	// the charge's transaction. The charge itself may have been recorded by
	// that other ledger's store.
	ErrForeignLedger = errors.New("store: ledger is not backed by this database's LedgerStore")
	// ErrChargeInProgress: another ChargeWithReport for the same client and
	// round is running.
	ErrChargeInProgress = errors.New("store: a charge for this client and round is in progress")
)

// OutboxEntry is a client's sealed report for one round, with the ledger
// entry that paid for it.
type OutboxEntry struct {
	Client  string
	Round   int64
	Report  []byte          // the exact bytes to send (and to resend)
	Release account.Release // the ledger charge committed with it
	Created time.Time
	Sent    time.Time // zero until MarkSent
}

// ChargeWithReport charges r through l and, in the same SQLite transaction
// as the ledger entry, stores report as the client's sealed report for
// r.Round. l must be an account.Ledger built on db.LedgerStore().
//
// The client's order of operations is: consult the ledger (l.Check),
// randomize and seal, ChargeWithReport, and only then send report. If the
// process dies before the commit, neither the charge nor the report exists
// and the client may randomize afresh (nothing left it); after the commit,
// OutboxReport returns the same bytes and the client resends them instead of
// re-randomizing. Errors from the ledger (cap exceeded, duplicate release,
// invalid release) are returned unchanged and nothing is recorded.
func (db *DB) ChargeWithReport(l *account.Ledger, r account.Release, report []byte) error {
	if l == nil {
		return fmt.Errorf("store: charge with report: %w", checks.Invalidf("ledger must not be nil"))
	}
	if len(report) == 0 || len(report) > MaxReportBytes {
		return fmt.Errorf("store: charge with report: %w",
			checks.Invalidf("report length must be in [1, %d], got %d", MaxReportBytes, len(report)))
	}
	ls := db.LedgerStore()
	key := clientRound{r.Client, int64(r.Round)}
	st := &staged{report: report}
	ls.mu.Lock()
	if _, busy := ls.staged[key]; busy {
		ls.mu.Unlock()
		return fmt.Errorf("store: charge client %q round %d: %w", r.Client, r.Round, ErrChargeInProgress)
	}
	ls.staged[key] = st
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		delete(ls.staged, key)
		ls.mu.Unlock()
	}()
	if err := l.Charge(r); err != nil {
		return err
	}
	ls.mu.Lock()
	written := st.written
	ls.mu.Unlock()
	if !written {
		return fmt.Errorf("store: charge client %q round %d: %w", r.Client, r.Round, ErrForeignLedger)
	}
	return nil
}

// OutboxReport returns the client's stored report for round, or an error
// wrapping ErrNotFound.
func (db *DB) OutboxReport(client string, round int64) (OutboxEntry, error) {
	rows, err := db.sql.Query(outboxSelect+` WHERE o.client = ? AND o.round = ?`, client, round)
	if err != nil {
		return OutboxEntry{}, fmt.Errorf("store: outbox %q round %d: %w", client, round, err)
	}
	es, err := scanOutbox(rows)
	if err != nil {
		return OutboxEntry{}, fmt.Errorf("store: outbox %q round %d: %w", client, round, err)
	}
	if len(es) == 0 {
		return OutboxEntry{}, fmt.Errorf("store: outbox %q round %d: %w", client, round, ErrNotFound)
	}
	return es[0], nil
}

// OutboxPending returns the client's reports not yet marked sent, oldest
// round first: what a restarted client must (re)send.
func (db *DB) OutboxPending(client string) ([]OutboxEntry, error) {
	rows, err := db.sql.Query(outboxSelect+` WHERE o.client = ? AND o.sent_ns IS NULL ORDER BY o.round`, client)
	if err != nil {
		return nil, fmt.Errorf("store: outbox pending %q: %w", client, err)
	}
	es, err := scanOutbox(rows)
	if err != nil {
		return nil, fmt.Errorf("store: outbox pending %q: %w", client, err)
	}
	return es, nil
}

// MarkSent records that the shuffler acknowledged the client's report for
// round. Marking an already sent report again is a no-op (the first time is
// kept); an unknown report wraps ErrNotFound.
func (db *DB) MarkSent(client string, round int64) error {
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		res, err := t.ExecContext(ctx, `UPDATE outbox SET sent_ns = coalesce(sent_ns, ?) WHERE client = ? AND round = ?`,
			nowNS(), client, round)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: mark sent %q round %d: %w", client, round, err)
	}
	return nil
}

const outboxSelect = `SELECT o.client, o.round, o.report, o.created_ns, o.sent_ns,
	l.mechanism, l.local_epsilon, l.local_delta, l.central_epsilon, l.central_delta
	FROM outbox o JOIN ledger_entry l ON l.client = o.client AND l.round = o.round`

func scanOutbox(rows *sql.Rows) ([]OutboxEntry, error) {
	defer rows.Close()
	var out []OutboxEntry
	for rows.Next() {
		var e OutboxEntry
		var created int64
		var sent sql.NullInt64
		if err := rows.Scan(&e.Client, &e.Round, &e.Report, &created, &sent, &e.Release.Mechanism,
			&e.Release.LocalEpsilon, &e.Release.LocalDelta, &e.Release.CentralEpsilon, &e.Release.CentralDelta); err != nil {
			return nil, err
		}
		e.Release.Client, e.Release.Round = e.Client, int(e.Round)
		e.Created = time.Unix(0, created)
		if sent.Valid {
			e.Sent = time.Unix(0, sent.Int64)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// nowNS is the wall clock in Unix nanoseconds, for the informational
// timestamps of the schema (never used for decisions).
func nowNS() int64 { return time.Now().UnixNano() }
