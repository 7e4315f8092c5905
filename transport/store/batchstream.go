package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/shufflefl/shufflefl/checks"
)

// Streaming access to a round's reports and shuffled batch, for a round
// too large to hold in memory (the shuffler's disk spill): the reports are
// read in pages and the batch one stored chunk at a time, each in a short
// query of its own, so that the database's one connection is never held
// while the caller works.

// reportPage is the number of reports EachRoundReport reads per query (a
// dense report at d = 7,850 is about 0.5 MB).
const reportPage = 16

// SaveBatchFunc is SaveBatch for a batch produced as a stream: each calls
// put with the batch's messages in order, and they are stored in chunks as
// they come, in the one transaction that also closes the round (open ->
// shuffled) and deletes its reports' sealed messages. A message that is
// empty, or an error of each, rolls everything back. The errors are
// SaveBatch's.
func (db *DB) SaveBatchFunc(round int64, header []byte, each func(put func(SealedMessage) error) error) error {
	if header == nil {
		header = []byte{}
	}
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		if err := batchOpen(ctx, t, round); err != nil {
			return err
		}
		if _, err := t.ExecContext(ctx, `INSERT INTO inbox_batch (round, header, n_messages, n_chunks, created_ns) VALUES (?, ?, 0, 0, ?)`,
			round, header, nowNS()); err != nil {
			return err
		}
		var cur []byte
		n, total, seq := 0, 0, 0
		flush := func() error {
			if n == 0 {
				return nil
			}
			if _, err := t.ExecContext(ctx, `INSERT INTO inbox_batch_chunk (round, seq, n_messages, messages) VALUES (?, ?, ?, ?)`,
				round, seq, n, cur); err != nil {
				return err
			}
			cur, n = nil, 0
			seq++
			return nil
		}
		put := func(m SealedMessage) error {
			if len(m.Sealed) == 0 {
				return checks.Invalidf("message %d is empty", total)
			}
			if len(cur) > 0 && len(cur)+len(m.Sealed) > batchChunkBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			cur = binary.AppendUvarint(cur, uint64(m.Label))
			cur = binary.AppendUvarint(cur, uint64(len(m.Sealed)))
			cur = append(cur, m.Sealed...)
			n++
			total++
			return nil
		}
		if err := each(put); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if _, err := t.ExecContext(ctx, `UPDATE inbox_batch SET n_messages = ?, n_chunks = ? WHERE round = ?`, total, seq, round); err != nil {
			return err
		}
		if _, err := t.ExecContext(ctx, `UPDATE inbox_round SET status = 'shuffled' WHERE round = ?`, round); err != nil {
			return err
		}
		return expireReports(ctx, t, round)
	})
	if err != nil {
		return fmt.Errorf("store: save batch of round %d: %w", round, err)
	}
	db.scrub()
	return nil
}

// batchOpen checks inside t that round is open: a batch may be saved.
func batchOpen(ctx context.Context, t *sql.Tx, round int64) error {
	var s string
	err := t.QueryRowContext(ctx, `SELECT status FROM inbox_round WHERE round = ?`, round).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrUnknownRound
	}
	if err != nil {
		return err
	}
	switch InboxStatus(s) {
	case InboxShuffled:
		return ErrBatchSaved
	case InboxForwarded, InboxVoid:
		return fmt.Errorf("%w (%s)", ErrRoundClosed, s)
	}
	return nil
}

// BatchInfo is a saved batch's header and size.
type BatchInfo struct {
	Header           []byte
	Messages, Chunks int
}

// SavedBatch returns round's saved batch's header and size, without its
// messages; ErrNoBatch if none was saved, ErrExpired if it was forwarded.
func (db *DB) SavedBatch(round int64) (BatchInfo, error) {
	var info BatchInfo
	var status string
	err := db.sql.QueryRow(`SELECT b.header, b.n_messages, b.n_chunks, r.status FROM inbox_batch b JOIN inbox_round r ON r.round = b.round
		WHERE b.round = ?`, round).Scan(&info.Header, &info.Messages, &info.Chunks, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return BatchInfo{}, fmt.Errorf("store: batch of round %d: %w", round, ErrNoBatch)
	}
	if err != nil {
		return BatchInfo{}, fmt.Errorf("store: batch of round %d: %w", round, err)
	}
	if InboxStatus(status) != InboxShuffled {
		return BatchInfo{}, fmt.Errorf("store: batch of round %d (%s): %w", round, status, ErrExpired)
	}
	return info, nil
}

// EachBatchChunk calls fn with round's saved batch, one stored chunk (at
// most 8 MiB of ciphertext) at a time, in order, after returning nothing
// but errors for a batch that cannot be read: ErrNoBatch (never saved),
// ErrExpired (forwarded). It checks that the chunks hold the saved count.
// fn's error ends the walk and is returned as is.
func (db *DB) EachBatchChunk(round int64, fn func(BatchInfo, []SealedMessage) error) error {
	info, err := db.SavedBatch(round)
	if err != nil {
		return err
	}
	seen := 0
	for seq := range info.Chunks {
		var k int
		var packed []byte
		var status string
		err := db.sql.QueryRow(`SELECT c.n_messages, c.messages, r.status FROM inbox_batch_chunk c JOIN inbox_round r ON r.round = c.round
			WHERE c.round = ? AND c.seq = ?`, round, seq).Scan(&k, &packed, &status)
		if err != nil {
			return fmt.Errorf("store: batch of round %d, chunk %d: %w", round, seq, err)
		}
		if InboxStatus(status) != InboxShuffled {
			return fmt.Errorf("store: batch of round %d (%s): %w", round, status, ErrExpired)
		}
		ms, err := unpackMessages(packed, k)
		if err != nil {
			return fmt.Errorf("store: batch of round %d, chunk %d: %w", round, seq, err)
		}
		seen += len(ms)
		if err := fn(info, ms); err != nil {
			return err
		}
	}
	if seen != info.Messages {
		return fmt.Errorf("store: batch of round %d: %d messages in its chunks, want %d", round, seen, info.Messages)
	}
	return nil
}

// EachRoundReport calls fn with each report accepted in round, in
// acceptance order, as RoundReports returns them, reading them a page at
// a time. fn's error ends the walk and is returned as is.
func (db *DB) EachRoundReport(round int64, fn func(InboxReport) error) error {
	r, err := db.InboxRound(round)
	if err != nil {
		return err
	}
	if r.Status != InboxOpen {
		return fmt.Errorf("store: reports of round %d (%s): %w", round, r.Status, ErrExpired)
	}
	after := int64(-1)
	for {
		page, last, err := db.reportPage(round, after)
		if err != nil {
			return err
		}
		for _, rep := range page {
			if err := fn(rep); err != nil {
				return err
			}
		}
		if len(page) < reportPage {
			return nil
		}
		after = last
	}
}

// reportPage reads the next reportPage reports of round with an id above
// after, and the last id read.
func (db *DB) reportPage(round, after int64) ([]InboxReport, int64, error) {
	rows, err := db.sql.Query(`SELECT id, client, nonce, n_messages, messages, received_ns FROM inbox_report
		WHERE round = ? AND id > ? ORDER BY id LIMIT ?`, round, after, reportPage)
	if err != nil {
		return nil, 0, fmt.Errorf("store: reports of round %d: %w", round, err)
	}
	defer rows.Close()
	var out []InboxReport
	for rows.Next() {
		r := InboxReport{Report: Report{Round: round}}
		var n int
		var packed []byte
		var recv int64
		if err := rows.Scan(&after, &r.Client, &r.Nonce, &n, &packed, &recv); err != nil {
			return nil, 0, fmt.Errorf("store: reports of round %d: %w", round, err)
		}
		ms, err := unpackMessages(packed, n)
		if err != nil {
			return nil, 0, fmt.Errorf("store: reports of round %d, client %q: %w", round, r.Client, err)
		}
		r.Messages, r.Received = ms, time.Unix(0, recv)
		out = append(out, r)
	}
	return out, after, rows.Err()
}
