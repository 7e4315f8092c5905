package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// Limits of the shuffler inbox.
const (
	// MaxMessagesPerReport bounds the sealed messages of one report (a
	// per-coordinate report has d of them; 2^22 covers k = 32 models of
	// d = 101,770 with room to spare).
	MaxMessagesPerReport = 1 << 22
	// MaxClientIDBytes bounds a client identifier.
	MaxClientIDBytes = 256
	// MinNonceBytes and MaxNonceBytes bound a request nonce.
	MinNonceBytes, MaxNonceBytes = 8, 64
)

// Errors of the shuffler inbox. Each refusal has its own error so that the
// shuffler can answer with a precise status.
var (
	// ErrDuplicateReport: the client already has a different report in this
	// round.
	ErrDuplicateReport = errors.New("store: client already reported in this round")
	// ErrAlreadyAccepted: the client's report in this round is already
	// stored with exactly these sealed messages: a retry after a lost
	// acknowledgement. Nothing is stored twice; the shuffler should
	// acknowledge again.
	ErrAlreadyAccepted = errors.New("store: identical report already accepted")
	// ErrReplay: the request nonce was used before, or the same sealed
	// messages were already accepted from another client or round.
	ErrReplay = errors.New("store: replayed request or report")
	// ErrRoundClosed: the round is no longer accepting reports (forwarded or
	// void).
	ErrRoundClosed = errors.New("store: round is closed")
	// ErrAlreadyForwarded: MarkForwarded on a round already forwarded.
	ErrAlreadyForwarded = errors.New("store: round already forwarded")
	// ErrBatchSaved: SaveBatch on a round whose batch is already saved, or
	// VoidInboxRound on such a round (it must be forwarded as saved).
	ErrBatchSaved = errors.New("store: round's shuffled batch already saved")
	// ErrNoBatch: MarkForwarded on a round whose batch was never saved.
	ErrNoBatch = errors.New("store: round has no saved batch")
	// ErrExpired: the sealed messages asked for were deleted by the
	// retention rule (see SaveBatch, MarkForwarded and VoidInboxRound).
	ErrExpired = errors.New("store: sealed messages expired")
)

// InboxStatus is the state of a round at the shuffler: it accepts reports
// while open; then either it is voided, or its shuffled batch is saved
// (shuffled) and, once the analyzer acknowledged it, forwarded. Each move
// happens once.
type InboxStatus string

// The states of a shuffler round.
const (
	InboxOpen      InboxStatus = "open"
	InboxShuffled  InboxStatus = "shuffled"
	InboxForwarded InboxStatus = "forwarded"
	InboxVoid      InboxStatus = "void"
)

// SealedMessage is one sealed message with its public label (e.g. the
// coordinate it carries; 0 for a whole-report protocol). The shuffler never
// opens Sealed.
type SealedMessage struct {
	Label  uint32
	Sealed []byte
}

// Report is what the shuffler stores for one accepted SubmitReport: the
// authenticated client, the request nonce and the sealed messages.
type Report struct {
	Round    int64
	Client   string
	Nonce    []byte
	Messages []SealedMessage
}

// InboxRound is a round as the shuffler's inbox knows it.
type InboxRound struct {
	Round        int64
	Status       InboxStatus
	Announcement []byte // opaque (the encoded announcement the shuffler relays)
	Reports      int64  // accepted reports
	Messages     int64  // their sealed messages
	Opened       time.Time
	Closed       time.Time // zero while open
}

func validateClient(c string) error {
	if c == "" || len(c) > MaxClientIDBytes {
		return checks.Invalidf("client ID length must be in [1, %d], got %d", MaxClientIDBytes, len(c))
	}
	return nil
}

func validateNonce(n []byte) error {
	if len(n) < MinNonceBytes || len(n) > MaxNonceBytes {
		return checks.Invalidf("nonce length must be in [%d, %d], got %d", MinNonceBytes, MaxNonceBytes, len(n))
	}
	return nil
}

// validate checks a report's fields and returns its packed messages.
func (r Report) validate() ([]byte, error) {
	if r.Round < 0 {
		return nil, checks.Invalidf("report round must be >= 0, got %d", r.Round)
	}
	if err := validateClient(r.Client); err != nil {
		return nil, err
	}
	if err := validateNonce(r.Nonce); err != nil {
		return nil, err
	}
	if len(r.Messages) == 0 || len(r.Messages) > MaxMessagesPerReport {
		return nil, checks.Invalidf("report must have between 1 and %d messages, got %d", MaxMessagesPerReport, len(r.Messages))
	}
	size := 0
	for i, m := range r.Messages {
		if len(m.Sealed) == 0 {
			return nil, checks.Invalidf("report message %d is empty", i)
		}
		size += len(m.Sealed)
		if size > MaxReportBytes {
			return nil, checks.Invalidf("report sealed bytes exceed %d", MaxReportBytes)
		}
	}
	return packMessages(r.Messages), nil
}

// packMessages encodes messages as (uvarint label, uvarint length, bytes)*.
func packMessages(ms []SealedMessage) []byte {
	n := 0
	for _, m := range ms {
		n += 2*binary.MaxVarintLen32 + len(m.Sealed)
	}
	b := make([]byte, 0, n)
	for _, m := range ms {
		b = binary.AppendUvarint(b, uint64(m.Label))
		b = binary.AppendUvarint(b, uint64(len(m.Sealed)))
		b = append(b, m.Sealed...)
	}
	return b
}

// unpackMessages decodes packMessages' output, checking it is exactly n
// well-formed messages.
func unpackMessages(b []byte, n int) ([]SealedMessage, error) {
	out := make([]SealedMessage, 0, n)
	for len(b) > 0 {
		label, k := binary.Uvarint(b)
		if k <= 0 || label > 1<<32-1 || k != uvarintLen(label) {
			return nil, fmt.Errorf("corrupt packed label")
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l == 0 || l > uint64(len(b)-k) || k != uvarintLen(l) {
			return nil, fmt.Errorf("corrupt packed length")
		}
		b = b[k:]
		out = append(out, SealedMessage{Label: uint32(label), Sealed: bytes.Clone(b[:l])})
		b = b[l:]
	}
	if len(out) != n {
		return nil, fmt.Errorf("packed messages: got %d, want %d", len(out), n)
	}
	return out, nil
}

// uvarintLen is the length of the canonical (shortest) uvarint encoding
// of x; the decoder refuses any other, so that packing is a bijection.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// OpenInboxRound adds round to the inbox as open, with the announcement the
// shuffler relays to clients. Opening a round twice wraps ErrRoundExists.
func (db *DB) OpenInboxRound(round int64, announcement []byte) error {
	return db.openInboxRound(round, announcement, nil)
}

// openInboxRound opens round with its announcement in one transaction
// with also(t), if not nil (e.g. the round's sample).
func (db *DB) openInboxRound(round int64, announcement []byte, also func(*sql.Tx) error) error {
	if round < 0 {
		return fmt.Errorf("store: open inbox round: %w", checks.Invalidf("round must be >= 0, got %d", round))
	}
	if announcement == nil {
		announcement = []byte{}
	}
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		res, err := t.ExecContext(ctx, `INSERT INTO inbox_round (round, status, announcement, opened_ns) VALUES (?, 'open', ?, ?)
			ON CONFLICT (round) DO NOTHING`, round, announcement, nowNS())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrRoundExists
		}
		if also != nil {
			return also(t)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: open inbox round %d: %w", round, err)
	}
	return nil
}

// Accept stores r durably and returns nil only after the commit; the
// shuffler acknowledges the client only then. Refusals (nothing stored):
// ErrUnknownRound, ErrRoundClosed, ErrAlreadyAccepted (an identical retry:
// acknowledge again), ErrDuplicateReport, ErrReplay, or an error wrapping
// checks.ErrInvalid.
func (db *DB) Accept(r Report) error {
	errs, err := db.AcceptBatch([]Report{r})
	if err != nil {
		return err
	}
	return errs[0]
}

// AcceptBatch stores several reports in one transaction (one fsync), each
// with its own outcome: errs[i] is Accept's answer for rs[i], and the
// refused reports leave no trace. The returned error is set if the
// transaction itself failed, in which case nothing was stored and errs is
// nil. Batching concurrent submissions this way (group commit) is how the
// shuffler amortizes the fsync over many clients.
func (db *DB) AcceptBatch(rs []Report) (errs []error, err error) {
	errs = make([]error, len(rs))
	packed := make([][]byte, len(rs))
	for i, r := range rs {
		p, err := r.validate()
		if err != nil {
			errs[i] = fmt.Errorf("store: accept: %w", err)
			continue
		}
		packed[i] = p
	}
	ctx := context.Background()
	err = db.tx(ctx, func(t *sql.Tx) error {
		for i, r := range rs {
			if packed[i] == nil {
				continue
			}
			if _, err := t.ExecContext(ctx, `SAVEPOINT report`); err != nil {
				return err
			}
			e, err := acceptOne(ctx, t, r, packed[i])
			if err != nil {
				return err
			}
			if e != nil {
				errs[i] = fmt.Errorf("store: accept client %q round %d: %w", r.Client, r.Round, e)
				if _, err := t.ExecContext(ctx, `ROLLBACK TO report`); err != nil {
					return err
				}
			}
			if _, err := t.ExecContext(ctx, `RELEASE report`); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: accept batch: %w", err)
	}
	return errs, nil
}

// acceptOne runs the checks and the insert of one report inside t. It
// returns a refusal as e, and a database failure as err.
func acceptOne(ctx context.Context, t *sql.Tx, r Report, packed []byte) (e, err error) {
	var status string
	err = t.QueryRowContext(ctx, `SELECT status FROM inbox_round WHERE round = ?`, r.Round).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrUnknownRound, nil
	}
	if err != nil {
		return nil, err
	}
	if InboxStatus(status) != InboxOpen {
		return fmt.Errorf("%w (%s)", ErrRoundClosed, status), nil
	}
	digest := sha256.Sum256(packed)
	var old []byte
	err = t.QueryRowContext(ctx, `SELECT digest FROM inbox_report WHERE round = ? AND client = ?`, r.Round, r.Client).Scan(&old)
	switch {
	case err == nil && bytes.Equal(old, digest[:]):
		return ErrAlreadyAccepted, nil
	case err == nil:
		return ErrDuplicateReport, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	var n int
	if err := t.QueryRowContext(ctx, `SELECT count(*) FROM inbox_report WHERE nonce = ?`, r.Nonce).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		return fmt.Errorf("%w: nonce already used", ErrReplay), nil
	}
	if err := t.QueryRowContext(ctx, `SELECT count(*) FROM inbox_report WHERE digest = ?`, digest[:]).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		return fmt.Errorf("%w: these sealed messages were already accepted", ErrReplay), nil
	}
	_, err = t.ExecContext(ctx, `INSERT INTO inbox_report (round, client, nonce, digest, n_messages, messages, received_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, r.Round, r.Client, r.Nonce, digest[:], len(r.Messages), packed, nowNS())
	return nil, err
}

// InboxReport is an accepted report read back from the inbox.
type InboxReport struct {
	Report
	Received time.Time
}

// RoundReports returns the reports accepted in round, in acceptance order,
// with their sealed messages: what the shuffler strips of identities,
// completes with dummies, permutes and forwards. An unknown round wraps
// ErrUnknownRound; a round no longer open ErrExpired (its reports' sealed
// messages were deleted when it was shuffled or voided).
func (db *DB) RoundReports(round int64) ([]InboxReport, error) {
	r, err := db.InboxRound(round)
	if err != nil {
		return nil, err
	}
	if r.Status != InboxOpen {
		return nil, fmt.Errorf("store: reports of round %d (%s): %w", round, r.Status, ErrExpired)
	}
	rows, err := db.sql.Query(`SELECT client, nonce, n_messages, messages, received_ns FROM inbox_report
		WHERE round = ? ORDER BY id`, round)
	if err != nil {
		return nil, fmt.Errorf("store: reports of round %d: %w", round, err)
	}
	defer rows.Close()
	var out []InboxReport
	for rows.Next() {
		r := InboxReport{Report: Report{Round: round}}
		var n int
		var packed []byte
		var recv int64
		if err := rows.Scan(&r.Client, &r.Nonce, &n, &packed, &recv); err != nil {
			return nil, fmt.Errorf("store: reports of round %d: %w", round, err)
		}
		ms, err := unpackMessages(packed, n)
		if err != nil {
			return nil, fmt.Errorf("store: reports of round %d, client %q: %w", round, r.Client, err)
		}
		r.Messages, r.Received = ms, time.Unix(0, recv)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reports of round %d: %w", round, err)
	}
	return out, nil
}

// InboxRound returns the shuffler's view of round, or an error wrapping
// ErrUnknownRound.
func (db *DB) InboxRound(round int64) (InboxRound, error) {
	rs, err := db.inboxRounds(`WHERE r.round = ?`, round)
	if err != nil {
		return InboxRound{}, fmt.Errorf("store: inbox round %d: %w", round, err)
	}
	if len(rs) == 0 {
		return InboxRound{}, fmt.Errorf("store: inbox round %d: %w", round, ErrUnknownRound)
	}
	return rs[0], nil
}

// InboxRounds returns every round the inbox knows, in round order; a
// restarted shuffler resumes the open ones.
func (db *DB) InboxRounds() ([]InboxRound, error) {
	rs, err := db.inboxRounds("")
	if err != nil {
		return nil, fmt.Errorf("store: inbox rounds: %w", err)
	}
	return rs, nil
}

func (db *DB) inboxRounds(where string, args ...any) ([]InboxRound, error) {
	rows, err := db.sql.Query(`SELECT r.round, r.status, r.announcement, r.opened_ns, r.closed_ns,
		count(p.id), coalesce(sum(p.n_messages), 0)
		FROM inbox_round r LEFT JOIN inbox_report p ON p.round = r.round `+where+`
		GROUP BY r.round ORDER BY r.round`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []InboxRound
	for rows.Next() {
		var r InboxRound
		var s string
		var opened int64
		var closed sql.NullInt64
		if err := rows.Scan(&r.Round, &s, &r.Announcement, &opened, &closed, &r.Reports, &r.Messages); err != nil {
			return nil, err
		}
		r.Status, r.Opened = InboxStatus(s), time.Unix(0, opened)
		if closed.Valid {
			r.Closed = time.Unix(0, closed.Int64)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// batchChunkBytes bounds one stored chunk of a shuffled batch (SQLite's
// default maximum blob is 10^9 bytes; a round's batch can be larger).
const batchChunkBytes = 8 << 20

// Batch is a round's shuffled batch as saved by SaveBatch.
type Batch struct {
	Round    int64
	Header   []byte // opaque, e.g. the encoded wire.BatchHeader
	Messages []SealedMessage
}

// SaveBatch stores the round's shuffled batch -- identities stripped,
// dummies added, permuted -- and closes the round to reports (open ->
// shuffled), in one transaction. The shuffler calls it before its first
// attempt to forward, and every retry (after a lost acknowledgement or a
// restart) sends Batch(round), never a fresh shuffle: two different shuffles
// of the same reports would let the analyzer tell the dummies apart (they
// are the messages not common to both). A second SaveBatch wraps
// ErrBatchSaved; a void or forwarded round ErrRoundClosed.
//
// Retention: the same transaction deletes the sealed messages of the
// round's reports (they are in the batch, stripped of identities, and a
// shuffled round is never shuffled again), so from here on no stored
// ciphertext is linked to a client.
func (db *DB) SaveBatch(round int64, header []byte, ms []SealedMessage) error {
	for i, m := range ms {
		if len(m.Sealed) == 0 {
			return fmt.Errorf("store: save batch of round %d: %w", round, checks.Invalidf("message %d is empty", i))
		}
	}
	return db.SaveBatchFunc(round, header, func(put func(SealedMessage) error) error {
		for _, m := range ms {
			if err := put(m); err != nil {
				return err
			}
		}
		return nil
	})
}

// expireReports deletes the sealed messages of round's accepted reports
// inside t, keeping each report's client, nonce, digest and count: the
// durable replay checks (nonce, digest) and the round's counts stay.
func expireReports(ctx context.Context, t *sql.Tx, round int64) error {
	_, err := t.ExecContext(ctx, `UPDATE inbox_report SET messages = X'' WHERE round = ?`, round)
	return err
}

// scrub moves the freed pages out of the write-ahead log after a
// retention step: the pages of deleted messages are zeroed
// (secure_delete) when the checkpoint copies them into the database file,
// and the log, which still holds the earlier images of those pages, is
// truncated. It is best effort: a failed checkpoint leaves the deleted
// messages in the log until the next one, and never affects what is
// committed.
func (db *DB) scrub() {
	_, _ = db.sql.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
}

// Batch returns the round's saved shuffled batch, or an error wrapping
// ErrNoBatch (never saved) or ErrExpired (forwarded: deleted).
func (db *DB) Batch(round int64) (Batch, error) {
	b := Batch{Round: round}
	var n, nc int
	err := db.sql.QueryRow(`SELECT header, n_messages, n_chunks FROM inbox_batch WHERE round = ?`, round).Scan(&b.Header, &n, &nc)
	if errors.Is(err, sql.ErrNoRows) {
		return Batch{}, fmt.Errorf("store: batch of round %d: %w", round, ErrNoBatch)
	}
	if err != nil {
		return Batch{}, fmt.Errorf("store: batch of round %d: %w", round, err)
	}
	var status string
	if err := db.sql.QueryRow(`SELECT status FROM inbox_round WHERE round = ?`, round).Scan(&status); err != nil {
		return Batch{}, fmt.Errorf("store: batch of round %d: %w", round, err)
	}
	if InboxStatus(status) != InboxShuffled {
		return Batch{}, fmt.Errorf("store: batch of round %d (%s): %w", round, status, ErrExpired)
	}
	rows, err := db.sql.Query(`SELECT seq, n_messages, messages FROM inbox_batch_chunk WHERE round = ? ORDER BY seq`, round)
	if err != nil {
		return Batch{}, fmt.Errorf("store: batch of round %d: %w", round, err)
	}
	defer rows.Close()
	b.Messages = make([]SealedMessage, 0, n)
	seen := 0
	for rows.Next() {
		var seq, k int
		var packed []byte
		if err := rows.Scan(&seq, &k, &packed); err != nil {
			return Batch{}, fmt.Errorf("store: batch of round %d: %w", round, err)
		}
		if seq != seen {
			return Batch{}, fmt.Errorf("store: batch of round %d: chunk %d missing", round, seen)
		}
		ms, err := unpackMessages(packed, k)
		if err != nil {
			return Batch{}, fmt.Errorf("store: batch of round %d, chunk %d: %w", round, seq, err)
		}
		b.Messages = append(b.Messages, ms...)
		seen++
	}
	if err := rows.Err(); err != nil {
		return Batch{}, fmt.Errorf("store: batch of round %d: %w", round, err)
	}
	if seen != nc || len(b.Messages) != n {
		return Batch{}, fmt.Errorf("store: batch of round %d: %d chunks and %d messages, want %d and %d", round, seen, len(b.Messages), nc, n)
	}
	return b, nil
}

// MarkForwarded records that the analyzer acknowledged the round's saved
// batch (shuffled -> forwarded) and, in the same transaction, deletes the
// batch's sealed messages (the header and counts stay): a crash leaves
// either a shuffled round with its batch intact, which a restarted
// shuffler forwards again as saved (the analyzer answers
// already_released), or a forwarded round without ciphertexts, which
// nothing forwards or shuffles again. A second call wraps
// ErrAlreadyForwarded; a round without a saved batch ErrNoBatch; a void
// round ErrRoundVoid; an unknown one ErrUnknownRound.
func (db *DB) MarkForwarded(round int64) error {
	return db.closeInboxRound(round, InboxForwarded)
}

// VoidInboxRound closes the open round without forwarding anything (below
// the minimum count at the deadline) and, in the same transaction, deletes
// the sealed messages of its reports. It wraps ErrBatchSaved if the batch
// was saved (the round must then be forwarded as saved), ErrAlreadyForwarded
// or ErrRoundVoid if closed, ErrUnknownRound if unknown.
func (db *DB) VoidInboxRound(round int64) error {
	return db.closeInboxRound(round, InboxVoid)
}

func (db *DB) closeInboxRound(round int64, to InboxStatus) error {
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		var s string
		err := t.QueryRowContext(ctx, `SELECT status FROM inbox_round WHERE round = ?`, round).Scan(&s)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrUnknownRound
		}
		if err != nil {
			return err
		}
		switch from := InboxStatus(s); {
		case from == InboxForwarded:
			return ErrAlreadyForwarded
		case from == InboxVoid:
			return ErrRoundVoid
		case to == InboxForwarded && from == InboxOpen:
			return ErrNoBatch
		case to == InboxVoid && from == InboxShuffled:
			return ErrBatchSaved
		}
		if _, err := t.ExecContext(ctx, `UPDATE inbox_round SET status = ?, closed_ns = ? WHERE round = ?`, string(to), nowNS(), round); err != nil {
			return err
		}
		if _, err := t.ExecContext(ctx, `DELETE FROM inbox_batch_chunk WHERE round = ?`, round); err != nil {
			return err
		}
		return expireReports(ctx, t, round)
	})
	if err != nil {
		return fmt.Errorf("store: close inbox round %d as %s: %w", round, to, err)
	}
	db.scrub()
	return nil
}

// UseNonce records the nonce of a signed request from client, durably,
// and wraps ErrReplay if the client used it before (and it was not pruned).
// The shuffler calls it for every signed request after checking the
// signature and the timestamp window, and prunes nonces older than the
// window with PruneNonces.
func (db *DB) UseNonce(client string, nonce []byte, at time.Time) error {
	if err := validateClient(client); err != nil {
		return fmt.Errorf("store: use nonce: %w", err)
	}
	if err := validateNonce(nonce); err != nil {
		return fmt.Errorf("store: use nonce: %w", err)
	}
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		res, err := t.ExecContext(ctx, `INSERT INTO request_nonce (client, nonce, at_ns) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`, client, nonce, at.UnixNano())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("%w: nonce already used by this client", ErrReplay)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: use nonce of %q: %w", client, err)
	}
	return nil
}

// PruneNonces forgets request nonces recorded before t and returns how many.
func (db *DB) PruneNonces(before time.Time) (int, error) {
	var n int64
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		res, err := t.ExecContext(ctx, `DELETE FROM request_nonce WHERE at_ns < ?`, before.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune nonces: %w", err)
	}
	return int(n), nil
}
