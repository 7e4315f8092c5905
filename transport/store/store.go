// Package store is the durable state of the shufflefl roles: an embedded
// SQLite database (modernc.org/sqlite, pure Go, no cgo) holding, depending on
// the role that opens it,
//
//   - the per-client privacy ledger behind account.Ledger (LedgerStore, an
//     account.Store whose Append and SetCap return only after the record is
//     on disk);
//   - the analyzer's round log and checkpoints (model, accountant state and
//     round number committed atomically with the round-log entry; a round is
//     released at most once, enforced by its state);
//   - the shuffler's inbox (each accepted report and its sealed messages are
//     committed before the shuffler acknowledges them; a second report from a
//     client in a round and a replayed nonce or ciphertext are refused with
//     distinct errors; the shuffled batch of a round is saved once, before
//     the first forward attempt, so a retry resends the same permutation
//     and dummies);
//   - the client's outbox (the sealed report for a round committed in the
//     same transaction as the ledger charge that pays for it, so a retry
//     resends the same bytes and never re-randomizes).
//
// Ordering contracts, the schema and the crash tests are described in
// docs/DURABILITY.md. In short: every mutating method returns nil only after
// its transaction has committed with synchronous=FULL in WAL mode, i.e. after
// the write-ahead log has been fsynced; a caller may send the message that
// depends on the write only after that.
//
// A DB is safe for concurrent use. Writes are serialized by SQLite (one
// writer); the package holds a single connection so that no write ever waits
// on SQLITE_BUSY from within the same process. Several processes may open the
// same file (SQLite's file locks and a busy timeout arbitrate), but a role's
// database is meant to be opened by that role only.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/shufflefl/shufflefl/checks"
)

// ApplicationID is stored in the SQLite header (PRAGMA application_id) of
// every database created by this package, so that Open refuses a file that
// belongs to something else. It is "SFL1" in ASCII.
const ApplicationID = 0x53464c31

// Errors returned by the package; test with errors.Is. Invalid arguments
// wrap checks.ErrInvalid instead.
var (
	// ErrNotShufflefl: the file is an SQLite database of another application.
	ErrNotShufflefl = errors.New("store: not a shufflefl database")
	// ErrSchemaTooNew: the database was written by a newer version of this
	// package (its schema version is higher than the latest migration known).
	ErrSchemaTooNew = errors.New("store: database schema is newer than this program")
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("store: database is closed")
	// ErrNotFound: the requested record does not exist.
	ErrNotFound = errors.New("store: not found")
)

// DB is an open shufflefl database. Create it with Open; close it with
// Close. All methods are safe for concurrent use.
type DB struct {
	sql  *sql.DB
	path string

	ledgerOnce sync.Once
	ledger     *LedgerStore
}

// Open opens (creating if needed) the database at path, with the settings
// DURABILITY.md justifies: journal_mode=WAL, synchronous=FULL, foreign keys
// on, secure_delete on, a 10 s busy timeout and BEGIN IMMEDIATE
// transactions. It then applies
// any pending schema migrations in one transaction each and checks the
// result. The directory containing path must exist.
func Open(path string) (*DB, error) {
	if path == "" {
		return nil, fmt.Errorf("store: open: %w", checks.Invalidf("database path must not be empty"))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("store: open %q: %s is not a directory", path, filepath.Dir(abs))
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	// Deleted content is overwritten with zeros, so that expired sealed
	// messages (see DB.MarkForwarded) do not linger in free pages.
	q.Add("_pragma", "secure_delete(1)")
	q.Add("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	// One connection: writes are serialized by SQLite anyway, and a single
	// connection makes the per-connection pragmas certain and avoids
	// intra-process SQLITE_BUSY.
	sdb.SetMaxOpenConns(1)
	sdb.SetMaxIdleConns(1)
	sdb.SetConnMaxLifetime(0)
	db := &DB{sql: sdb, path: abs}
	if err := db.init(context.Background()); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	return db, nil
}

// init checks the durability settings and migrates the schema.
func (db *DB) init(ctx context.Context) error {
	var mode string
	if err := db.sql.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("reading journal_mode: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	var sync int
	if err := db.sql.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return fmt.Errorf("reading synchronous: %w", err)
	}
	if sync != 2 {
		return fmt.Errorf("synchronous is %d, want 2 (FULL)", sync)
	}
	var app int64
	if err := db.sql.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return fmt.Errorf("reading application_id: %w", err)
	}
	ver, err := db.SchemaVersion()
	if err != nil {
		return err
	}
	switch {
	case app == ApplicationID:
	case app == 0 && ver == 0:
		var n int
		if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
			return fmt.Errorf("inspecting schema: %w", err)
		}
		if n != 0 {
			return fmt.Errorf("%w: file has %d schema objects and no shufflefl application id", ErrNotShufflefl, n)
		}
	default:
		return fmt.Errorf("%w: application_id is %#x", ErrNotShufflefl, app)
	}
	return db.migrate(ctx)
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Close closes the database. Every write that returned nil is already
// durable; Close only releases the file.
func (db *DB) Close() error {
	if err := db.sql.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// SchemaVersion returns the schema version recorded in the database
// (PRAGMA user_version); after Open it equals LatestSchemaVersion.
func (db *DB) SchemaVersion() (int, error) {
	var v int
	if err := db.sql.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("store: reading schema version: %w", err)
	}
	return v, nil
}

// tx runs f in a write transaction (BEGIN IMMEDIATE) and commits it. With
// synchronous=FULL in WAL mode, the commit returns after the WAL is fsynced,
// so when tx returns nil the effects of f are durable. If f returns an
// error, the transaction is rolled back and nothing of it is recorded.
func (db *DB) tx(ctx context.Context, f func(*sql.Tx) error) error {
	t, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		if errors.Is(err, sql.ErrConnDone) || err.Error() == "sql: database is closed" {
			return ErrClosed
		}
		return fmt.Errorf("begin: %w", err)
	}
	if err := f(t); err != nil {
		if rerr := t.Rollback(); rerr != nil {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// CheckPath checks, without opening or creating anything, that path can be
// a database: its directory exists, and the file is absent, empty or a
// SQLite database (its first 16 bytes). It is what a command checks before
// any work, so that `--db /etc/passwd` is refused at once as bad input.
func CheckPath(path string) error {
	if path == "" {
		return checks.Invalidf("database path must not be empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return checks.Invalidf("database %q: %v", path, err)
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return checks.Invalidf("database %q: directory %s does not exist", path, filepath.Dir(abs))
	}
	f, err := os.Open(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return checks.Invalidf("database %q: %v", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.IsDir() {
		return checks.Invalidf("database %q is a directory", path)
	}
	head := make([]byte, len(sqliteMagic))
	n, _ := io.ReadFull(f, head)
	if n == 0 {
		return nil
	}
	if string(head[:n]) != sqliteMagic {
		return checks.Invalidf("database %q is not a SQLite database (is it the right file?)", path)
	}
	return nil
}
