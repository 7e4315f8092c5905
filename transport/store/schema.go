package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migration is one step of the schema: the statements that take the schema
// from version-1 to version. Migrations are append-only: a released
// migration is never edited, a change is a new migration.
type migration struct {
	version int
	stmts   []string
}

// migrations is the schema history. DURABILITY.md reproduces the current
// schema.
var migrations = []migration{
	{1, []string{
		// Ledger (account.Store). seq orders a client's entries; the
		// unique key is a second line of defence behind the ledger's own
		// one-release-per-round rule.
		`CREATE TABLE ledger_entry (
			seq            INTEGER PRIMARY KEY AUTOINCREMENT,
			client         TEXT    NOT NULL CHECK (client <> ''),
			round          INTEGER NOT NULL CHECK (round >= 0),
			mechanism      TEXT    NOT NULL CHECK (mechanism <> ''),
			local_epsilon  REAL    NOT NULL,
			local_delta    REAL    NOT NULL,
			central_epsilon REAL   NOT NULL,
			central_delta  REAL    NOT NULL,
			UNIQUE (client, round)
		)`,
		`CREATE TABLE ledger_cap (
			client  TEXT PRIMARY KEY CHECK (client <> ''),
			epsilon REAL NOT NULL,
			delta   REAL NOT NULL
		)`,
		// Analyzer: the round log and the checkpoints.
		`CREATE TABLE round_log (
			round      INTEGER PRIMARY KEY CHECK (round >= 0),
			status     TEXT    NOT NULL CHECK (status IN ('open', 'released', 'void')),
			received   INTEGER NOT NULL DEFAULT 0 CHECK (received >= 0),
			accepted   INTEGER NOT NULL DEFAULT 0 CHECK (accepted >= 0),
			dummies    INTEGER NOT NULL DEFAULT 0 CHECK (dummies >= 0),
			opened_ns  INTEGER NOT NULL,
			closed_ns  INTEGER
		)`,
		`CREATE TABLE round_reject (
			round  INTEGER NOT NULL REFERENCES round_log (round),
			reason TEXT    NOT NULL CHECK (reason <> ''),
			count  INTEGER NOT NULL CHECK (count > 0),
			PRIMARY KEY (round, reason)
		)`,
		`CREATE TABLE checkpoint (
			round      INTEGER PRIMARY KEY REFERENCES round_log (round),
			model      BLOB    NOT NULL,
			accountant TEXT    NOT NULL,
			created_ns INTEGER NOT NULL
		)`,
		// Shuffler: rounds as the shuffler sees them, accepted reports (their
		// sealed messages packed in one blob: label and length as uvarints,
		// then the bytes; digest is SHA-256 of that blob), and the nonces of
		// signed requests.
		`CREATE TABLE inbox_round (
			round        INTEGER PRIMARY KEY CHECK (round >= 0),
			status       TEXT    NOT NULL CHECK (status IN ('open', 'shuffled', 'forwarded', 'void')),
			announcement BLOB    NOT NULL,
			opened_ns    INTEGER NOT NULL,
			closed_ns    INTEGER
		)`,
		`CREATE TABLE inbox_report (
			id          INTEGER PRIMARY KEY AUTOINCREMENT,
			round       INTEGER NOT NULL REFERENCES inbox_round (round),
			client      TEXT    NOT NULL CHECK (client <> ''),
			nonce       BLOB    NOT NULL UNIQUE,
			digest      BLOB    NOT NULL UNIQUE,
			n_messages  INTEGER NOT NULL CHECK (n_messages > 0),
			messages    BLOB    NOT NULL,
			received_ns INTEGER NOT NULL,
			UNIQUE (round, client)
		)`,
		// The shuffled batch of a round, saved once before the first forward
		// attempt so that every retry sends the same permutation and the
		// same dummies; packed like inbox_report.messages, in chunks.
		`CREATE TABLE inbox_batch (
			round      INTEGER PRIMARY KEY REFERENCES inbox_round (round),
			header     BLOB    NOT NULL,
			n_messages INTEGER NOT NULL CHECK (n_messages >= 0),
			n_chunks   INTEGER NOT NULL CHECK (n_chunks >= 0),
			created_ns INTEGER NOT NULL
		)`,
		`CREATE TABLE inbox_batch_chunk (
			round      INTEGER NOT NULL REFERENCES inbox_batch (round),
			seq        INTEGER NOT NULL CHECK (seq >= 0),
			n_messages INTEGER NOT NULL CHECK (n_messages > 0),
			messages   BLOB    NOT NULL,
			PRIMARY KEY (round, seq)
		) WITHOUT ROWID`,
		`CREATE TABLE request_nonce (
			client  TEXT    NOT NULL CHECK (client <> ''),
			nonce   BLOB    NOT NULL,
			at_ns   INTEGER NOT NULL,
			PRIMARY KEY (client, nonce)
		) WITHOUT ROWID`,
		`CREATE INDEX request_nonce_at ON request_nonce (at_ns)`,
		// Client: the sealed report paid for by the ledger entry of the same
		// (client, round), written in the same transaction.
		`CREATE TABLE outbox (
			client     TEXT    NOT NULL,
			round      INTEGER NOT NULL,
			report     BLOB    NOT NULL,
			created_ns INTEGER NOT NULL,
			sent_ns    INTEGER,
			PRIMARY KEY (client, round),
			FOREIGN KEY (client, round) REFERENCES ledger_entry (client, round)
		) WITHOUT ROWID`,
	}},
	{2, []string{
		// Shuffler: every client's registration with the budget it declared
		// (registry.go), and each sampled round's sample (the clients
		// offered the round, newline-separated, and the registered
		// population it was drawn from), written with the round's opening.
		`CREATE TABLE client_registration (
			client        TEXT    PRIMARY KEY CHECK (client <> ''),
			epsilon       REAL    NOT NULL CHECK (epsilon > 0),
			delta         REAL    NOT NULL CHECK (delta >= 0 AND delta < 1),
			registered_ns INTEGER NOT NULL
		)`,
		`CREATE TABLE inbox_sample (
			round      INTEGER PRIMARY KEY REFERENCES inbox_round (round),
			population INTEGER NOT NULL CHECK (population >= 0),
			clients    TEXT    NOT NULL
		)`,
	}},
}

// LatestSchemaVersion is the schema version Open migrates a database to.
var LatestSchemaVersion = migrations[len(migrations)-1].version

// migrate applies the migrations above the database's version, each in its
// own transaction together with the version bump.
func (db *DB) migrate(ctx context.Context) error {
	cur, err := db.SchemaVersion()
	if err != nil {
		return err
	}
	if cur > LatestSchemaVersion {
		return fmt.Errorf("%w: version %d, latest known %d", ErrSchemaTooNew, cur, LatestSchemaVersion)
	}
	for _, m := range migrations {
		if m.version <= cur {
			continue
		}
		err := db.tx(ctx, func(t *sql.Tx) error {
			for _, s := range m.stmts {
				if _, err := t.ExecContext(ctx, s); err != nil {
					return fmt.Errorf("migration %d: %w", m.version, err)
				}
			}
			// PRAGMAs cannot take parameters; the values are constants.
			if _, err := t.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
				return fmt.Errorf("migration %d: setting user_version: %w", m.version, err)
			}
			if _, err := t.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
				return fmt.Errorf("migration %d: setting application_id: %w", m.version, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
