package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// PruneReportMetadata deletes what the inbox still holds of the reports of
// every round that was forwarded or voided before closedBefore: each
// report's row (client id, request nonce, digest, message count, arrival
// time; the sealed messages went at the status change). It returns how
// many reports it deleted, and runs the store's checkpoint so that the
// deleted rows leave the write-ahead log too (secure_delete zeroes them in
// the file).
//
// The rows are the inbox's replay checks, and a closed round no longer
// needs them: the store refuses every report for a round that is not open
// (ErrRoundClosed) before it looks at nonces or digests, and a message
// sealed for the round is refused in any other round by the shuffler's
// header check. The caller passes closedBefore = now minus the signed
// requests' timestamp window, so that every request signed before the
// round closed also fails the timestamp check.
//
// This is separate from the inbox's status changes on purpose (they
// delete the sealed messages in the transaction that ends their use);
// InboxRounds counts no reports for a pruned round.
func (db *DB) PruneReportMetadata(closedBefore time.Time) (int, error) {
	var n int64
	ctx := context.Background()
	err := db.tx(ctx, func(t *sql.Tx) error {
		res, err := t.ExecContext(ctx, `DELETE FROM inbox_report WHERE round IN (SELECT round FROM inbox_round
			WHERE status IN (?, ?) AND closed_ns IS NOT NULL AND closed_ns < ?)`,
			string(InboxForwarded), string(InboxVoid), closedBefore.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune report metadata: %w", err)
	}
	if n > 0 {
		db.scrub()
	}
	return int(n), nil
}
