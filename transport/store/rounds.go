package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// RoundStatus is the state of a round in the analyzer's round log. A round
// moves from RoundOpen to exactly one of RoundReleased and RoundVoid, once.
type RoundStatus string

// The states of a round.
const (
	RoundOpen     RoundStatus = "open"     // announced, nothing released
	RoundReleased RoundStatus = "released" // aggregated; its checkpoint exists
	RoundVoid     RoundStatus = "void"     // closed without a release
)

// Errors of the round log.
var (
	// ErrRoundExists: OpenRound for a round already in the log.
	ErrRoundExists = errors.New("store: round already in the log")
	// ErrUnknownRound: the round was never opened.
	ErrUnknownRound = errors.New("store: unknown round")
	// ErrRoundReleased: the round was already released. Releasing twice is
	// refused by the stored state, so a restarted analyzer that retries a
	// release it had committed gets this error and nothing changes.
	ErrRoundReleased = errors.New("store: round already released")
	// ErrRoundVoid: the round was closed without a release.
	ErrRoundVoid = errors.New("store: round is void")
)

// RoundCounts are a round's message counts in the round log. Every received
// message is either accepted or rejected for exactly one reason:
// Accepted + sum(Rejected) == Received. Dummies (added by the shuffler and
// indistinguishable to the analyzer) are included in Received.
type RoundCounts struct {
	Received int64
	Accepted int64
	Dummies  int64
	Rejected map[string]int64 // by reason; reasons are non-empty, counts > 0
}

func (c RoundCounts) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"received", c.Received}, {"accepted", c.Accepted}, {"dummies", c.Dummies}} {
		if f.v < 0 {
			return checks.Invalidf("round count %s must be >= 0, got %d", f.name, f.v)
		}
	}
	sum := c.Accepted
	for reason, n := range c.Rejected {
		if reason == "" {
			return checks.Invalidf("round reject reason must not be empty")
		}
		if n <= 0 {
			return checks.Invalidf("round reject count for %q must be > 0, got %d", reason, n)
		}
		sum += n
	}
	if sum != c.Received {
		return checks.Invalidf("round counts: accepted %d + rejected %d != received %d", c.Accepted, sum-c.Accepted, c.Received)
	}
	if c.Dummies > c.Received {
		return checks.Invalidf("round counts: dummies %d > received %d", c.Dummies, c.Received)
	}
	return nil
}

// RoundEntry is one line of the round log.
type RoundEntry struct {
	Round  int64
	Status RoundStatus
	Counts RoundCounts
	Opened time.Time
	Closed time.Time // zero while open
}

// Checkpoint is the analyzer's state after releasing a round: the model as
// opaque bytes (e.g. packed float64s), the accountant's state as JSON, and
// the round it follows.
type Checkpoint struct {
	Round      int64
	Model      []byte
	Accountant json.RawMessage
	Created    time.Time // set by the store
}

// OpenRound adds round to the log as open. A round can be opened once;
// opening it again wraps ErrRoundExists.
func (db *DB) OpenRound(round int64) error {
	if round < 0 {
		return fmt.Errorf("store: open round: %w", checks.Invalidf("round must be >= 0, got %d", round))
	}
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		res, err := t.ExecContext(ctx, `INSERT INTO round_log (round, status, opened_ns) VALUES (?, 'open', ?)
			ON CONFLICT (round) DO NOTHING`, round, nowNS())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrRoundExists
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: open round %d: %w", round, err)
	}
	return nil
}

// roundStatus reads the status of round inside t.
func roundStatus(ctx context.Context, t *sql.Tx, round int64) (RoundStatus, error) {
	var s string
	err := t.QueryRowContext(ctx, `SELECT status FROM round_log WHERE round = ?`, round).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrUnknownRound
	}
	return RoundStatus(s), err
}

// closeRound moves an open round to status with counts, inside t.
func closeRound(ctx context.Context, t *sql.Tx, round int64, status RoundStatus, c RoundCounts) error {
	switch s, err := roundStatus(ctx, t, round); {
	case err != nil:
		return err
	case s == RoundReleased:
		return ErrRoundReleased
	case s == RoundVoid:
		return ErrRoundVoid
	}
	if _, err := t.ExecContext(ctx, `UPDATE round_log SET status = ?, received = ?, accepted = ?, dummies = ?, closed_ns = ?
		WHERE round = ? AND status = 'open'`, string(status), c.Received, c.Accepted, c.Dummies, nowNS(), round); err != nil {
		return err
	}
	reasons := make([]string, 0, len(c.Rejected))
	for r := range c.Rejected {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		if _, err := t.ExecContext(ctx, `INSERT INTO round_reject (round, reason, count) VALUES (?, ?, ?)`,
			round, r, c.Rejected[r]); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseRound marks the open round cp.Round released with counts and stores
// cp, in one transaction: after a crash either the round is released and its
// checkpoint exists, or the round is still open and no checkpoint exists.
// A second release of the round wraps ErrRoundReleased (and changes
// nothing); a void round wraps ErrRoundVoid; a round never opened wraps
// ErrUnknownRound. The analyzer acknowledges a batch, and publishes the new
// model, only after ReleaseRound returned nil.
func (db *DB) ReleaseRound(cp Checkpoint, counts RoundCounts) error {
	if err := validateCheckpoint(cp); err != nil {
		return fmt.Errorf("store: release round %d: %w", cp.Round, err)
	}
	if err := counts.validate(); err != nil {
		return fmt.Errorf("store: release round %d: %w", cp.Round, err)
	}
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		if err := closeRound(ctx, t, cp.Round, RoundReleased, counts); err != nil {
			return err
		}
		_, err := t.ExecContext(ctx, `INSERT INTO checkpoint (round, model, accountant, created_ns) VALUES (?, ?, ?, ?)`,
			cp.Round, cp.Model, string(cp.Accountant), nowNS())
		return err
	})
	if err != nil {
		return fmt.Errorf("store: release round %d: %w", cp.Round, err)
	}
	return nil
}

// VoidRound closes the open round without a release (e.g. fewer reports
// than the minimum by the deadline), recording counts. The same state rules
// as ReleaseRound apply.
func (db *DB) VoidRound(round int64, counts RoundCounts) error {
	if err := counts.validate(); err != nil {
		return fmt.Errorf("store: void round %d: %w", round, err)
	}
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error { return closeRound(ctx, t, round, RoundVoid, counts) })
	if err != nil {
		return fmt.Errorf("store: void round %d: %w", round, err)
	}
	return nil
}

func validateCheckpoint(cp Checkpoint) error {
	if cp.Round < 0 {
		return checks.Invalidf("checkpoint round must be >= 0, got %d", cp.Round)
	}
	if len(cp.Model) == 0 {
		return checks.Invalidf("checkpoint model must not be empty")
	}
	if !json.Valid(cp.Accountant) {
		return checks.Invalidf("checkpoint accountant state is not valid JSON")
	}
	return nil
}

// Round returns the log entry of round, or an error wrapping
// ErrUnknownRound.
func (db *DB) Round(round int64) (RoundEntry, error) {
	es, err := db.roundLog(`WHERE round = ?`, round)
	if err != nil {
		return RoundEntry{}, fmt.Errorf("store: round %d: %w", round, err)
	}
	if len(es) == 0 {
		return RoundEntry{}, fmt.Errorf("store: round %d: %w", round, ErrUnknownRound)
	}
	return es[0], nil
}

// RoundLog returns the whole round log in round order.
func (db *DB) RoundLog() ([]RoundEntry, error) {
	es, err := db.roundLog("")
	if err != nil {
		return nil, fmt.Errorf("store: round log: %w", err)
	}
	return es, nil
}

func (db *DB) roundLog(where string, args ...any) ([]RoundEntry, error) {
	rows, err := db.sql.Query(`SELECT round, status, received, accepted, dummies, opened_ns, closed_ns
		FROM round_log `+where+` ORDER BY round`, args...)
	if err != nil {
		return nil, err
	}
	var out []RoundEntry
	for rows.Next() {
		var e RoundEntry
		var s string
		var opened int64
		var closed sql.NullInt64
		if err := rows.Scan(&e.Round, &s, &e.Counts.Received, &e.Counts.Accepted, &e.Counts.Dummies, &opened, &closed); err != nil {
			rows.Close()
			return nil, err
		}
		e.Status = RoundStatus(s)
		e.Opened = time.Unix(0, opened)
		if closed.Valid {
			e.Closed = time.Unix(0, closed.Int64)
		}
		out = append(out, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		rr, err := db.sql.Query(`SELECT reason, count FROM round_reject WHERE round = ?`, out[i].Round)
		if err != nil {
			return nil, err
		}
		for rr.Next() {
			var reason string
			var n int64
			if err := rr.Scan(&reason, &n); err != nil {
				rr.Close()
				return nil, err
			}
			if out[i].Counts.Rejected == nil {
				out[i].Counts.Rejected = map[string]int64{}
			}
			out[i].Counts.Rejected[reason] = n
		}
		rr.Close()
		if err := rr.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Checkpoint returns the checkpoint stored with round's release, or an
// error wrapping ErrNotFound.
func (db *DB) Checkpoint(round int64) (Checkpoint, error) {
	cp, err := db.checkpoint(`WHERE round = ?`, round)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("store: checkpoint of round %d: %w", round, err)
	}
	return cp, nil
}

// LatestCheckpoint returns the checkpoint of the highest released round,
// or an error wrapping ErrNotFound if no round was released: where a
// restarted analyzer resumes.
func (db *DB) LatestCheckpoint() (Checkpoint, error) {
	cp, err := db.checkpoint(`ORDER BY round DESC LIMIT 1`)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("store: latest checkpoint: %w", err)
	}
	return cp, nil
}

func (db *DB) checkpoint(tail string, args ...any) (Checkpoint, error) {
	var cp Checkpoint
	var acc string
	var created int64
	err := db.sql.QueryRow(`SELECT round, model, accountant, created_ns FROM checkpoint `+tail, args...).
		Scan(&cp.Round, &cp.Model, &acc, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Checkpoint{}, ErrNotFound
	}
	if err != nil {
		return Checkpoint{}, err
	}
	cp.Accountant = json.RawMessage(acc)
	cp.Created = time.Unix(0, created)
	return cp, nil
}

// PruneCheckpoints deletes all but the keep most recent checkpoints (the
// round log itself is kept) and returns how many it deleted. keep must be
// at least 1, so a restart always finds the latest.
func (db *DB) PruneCheckpoints(keep int) (int, error) {
	if keep < 1 {
		return 0, fmt.Errorf("store: prune checkpoints: %w", checks.Invalidf("keep must be >= 1, got %d", keep))
	}
	var n int64
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		res, err := t.ExecContext(ctx, `DELETE FROM checkpoint WHERE round NOT IN
			(SELECT round FROM checkpoint ORDER BY round DESC LIMIT ?)`, keep)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune checkpoints: %w", err)
	}
	return int(n), nil
}
