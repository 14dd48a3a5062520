// Package store is the durable state of a workspace: one SQLite database (WAL mode) that
// every server process and operator command on the workspace opens at once, its schema
// migrations, and the queries over runners, sessions and task graphs.
//
// Several processes share the file (two MCP clients open on one project, plus the operator
// CLI), so every transaction that writes starts with BEGIN IMMEDIATE and waits on a busy
// timeout rather than failing, and the schema is migrated under the write lock.
//
// The store is SQL only: where the database lives is the workspace's layout
// (internal/workspace), and the identities of the processes it records are read by
// internal/procid.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DefaultBusyTimeout is how long SQLite itself waits for another process's write lock. It
// is long enough that a burst of writes from several runners queues up instead of failing.
const DefaultBusyTimeout = 5 * time.Second

// Options tune Open. The zero value is the default.
type Options struct {
	// BusyTimeout is how long one attempt at a write waits for another process's write
	// lock (default DefaultBusyTimeout); a write makes several attempts (see write). Tests
	// shorten it to hold the lock past it in seconds rather than minutes.
	BusyTimeout time.Duration
}

// ErrBusy reports a write given up because another process held the database's write lock
// for longer than the caller could wait (an operator's sqlite3 shell, a backup, a slow
// disk). Nothing was written: the same call can be made again.
var ErrBusy = errors.New("the workspace database is locked by another process")

// ErrSchemaTooNew is returned by Open when the database was migrated by a newer binary.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// SchemaError says which schema version a database has and which this binary knows.
type SchemaError struct {
	Path  string
	Have  int
	Known int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s has schema version %d but this binary knows versions up to %d: upgrade mcp-harness (or point --state-dir elsewhere)", e.Path, e.Have, e.Known)
}

// Unwrap makes errors.Is(err, ErrSchemaTooNew) true.
func (e *SchemaError) Unwrap() error { return ErrSchemaTooNew }

// DB is an open workspace database.
type DB struct {
	sql  *sql.DB
	path string
	// updateTask is prepared once: the task engine runs it for every state change, and
	// preparing it again in every transaction was a measurable share of its CPU.
	updateTask *sql.Stmt
}

// Open opens (creating it if needed, with mode 0600) the database at path and migrates it
// to the newest schema. It is safe for several processes to open a fresh file at once.
func Open(ctx context.Context, path string) (*DB, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, opt Options) (*DB, error) {
	if opt.BusyTimeout <= 0 {
		opt.BusyTimeout = DefaultBusyTimeout
	}
	// Refuse before touching the file system: a build without the driver must leave no
	// empty database behind.
	if err := driverErr(); err != nil {
		return nil, fmt.Errorf("store.Open %s: %w", path, err)
	}
	if err := createPrivateFile(path); err != nil {
		return nil, fmt.Errorf("store.Open: %w", err)
	}
	// _txlock=immediate makes every BeginTx a BEGIN IMMEDIATE: a writer takes the write lock
	// up front, so two processes never both read and then fail to upgrade (SQLITE_BUSY
	// without waiting). The busy timeout is applied before journal_mode, so switching a
	// fresh file to WAL also waits for a concurrent opener instead of failing.
	//
	// _stmt_cache_size keeps each connection's statements prepared once they are closed, so
	// a query run again (a graph's version bump, a waiter's probe, BEGIN and COMMIT
	// themselves) is not compiled again: re-preparing them was about a tenth of the task
	// engine's CPU per task.
	dsn := fmt.Sprintf("file:%s?_foreign_keys=on&_busy_timeout=%d&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate&_stmt_cache_size=%d",
		escapeDSNPath(path), opt.BusyTimeout.Milliseconds(), stmtCacheSize)
	sqldb, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("store.Open %s: %w", path, err)
	}
	// database/sql keeps two idle connections by default and closes any other connection
	// as soon as it is returned: the task engine's writer, its starts and the readers
	// together use more than two at once, so connections (each a WAL open, a schema read
	// and its statement cache) were opened and closed again all the time. Keep as many
	// idle as are usually in use; the idle time limit closes them once the burst is over.
	sqldb.SetMaxIdleConns(maxIdleConns)
	sqldb.SetConnMaxIdleTime(connMaxIdleTime)
	db := &DB{sql: sqldb, path: path}
	if err := db.migrate(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("store.Open %s: %w", path, err)
	}
	if db.updateTask, err = sqldb.PrepareContext(ctx, updateTaskSQL); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("store.Open %s: %w", path, err)
	}
	return db, nil
}

// The pool's idle limits (see OpenWith). The number of open connections is not capped:
// a caller holding a transaction while another reads must never wait on the pool.
const (
	maxIdleConns    = 8
	connMaxIdleTime = time.Minute
)

// stmtCacheSize is how many closed statements each connection keeps prepared: more than
// the distinct queries of the engine's hot paths.
const stmtCacheSize = 64

// Close closes the database.
func (db *DB) Close() error {
	db.updateTask.Close()
	return db.sql.Close()
}

// Path is the database file's path.
func (db *DB) Path() string { return db.path }

// SchemaVersion is the number of migrations applied to the database.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.sql.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// IntegrityCheck runs PRAGMA integrity_check and returns its first line ("ok" when sound).
func (db *DB) IntegrityCheck(ctx context.Context) (string, error) {
	var s string
	err := db.sql.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&s)
	return s, err
}

// migrationNames lists the embedded migration files in the order they apply.
func migrationNames() ([]string, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// migrate applies the pending migrations one transaction each. The version is read inside
// the write transaction: another process may have moved it since we last looked.
func (db *DB) migrate(ctx context.Context) error {
	names, err := migrationNames()
	if err != nil {
		return err
	}
	for {
		done, err := db.migrateStep(ctx, names)
		if err != nil || done {
			return err
		}
	}
}

func (db *DB) migrateStep(ctx context.Context, names []string) (done bool, err error) {
	err = db.write(ctx, func(tx *sql.Tx) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		switch {
		case v > len(names):
			return &SchemaError{Path: db.path, Have: v, Known: len(names)}
		case v == len(names):
			done = true
			return nil
		}
		body, err := migrationFS.ReadFile(names[v])
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("migration %s: %w", names[v], err)
		}
		// PRAGMA takes no bound parameters; v+1 is our own integer.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
			return fmt.Errorf("migration %s: set version: %w", names[v], err)
		}
		return nil
	})
	return done, err
}

// maxBusyRetries bounds how often write retries a transaction that SQLite refused as busy
// even after its own busy timeout: a client must never see "database is locked", but a
// wedged database must not hang a call forever either.
const maxBusyRetries = 5

// write runs fn in a BEGIN IMMEDIATE transaction and commits it, retrying the whole
// transaction when another process held the lock for longer than the busy timeout. A lock
// held through every attempt, or until ctx ends while waiting for it, is ErrBusy: the
// caller decides whether to wait longer (the task engine's writer does, for ever) or to
// answer a retryable error (tasks_run).
func (db *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	start := time.Now()
	var err error
	for attempt := 0; attempt <= maxBusyRetries; attempt++ {
		err = db.writeOnce(ctx, fn)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil && (isBusy(err) || errors.Is(err, ctx.Err())):
			// The caller stopped waiting while another process held the lock.
			return fmt.Errorf("%w (waited %s; nothing was written, try again later): %v", ErrBusy, time.Since(start).Round(time.Millisecond), err)
		case !isBusy(err):
			return err
		}
	}
	return fmt.Errorf("%w (waited %s over %d attempts; nothing was written, try again later): %v", ErrBusy, time.Since(start).Round(time.Millisecond), maxBusyRetries+1, err)
}

func (db *DB) writeOnce(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// createPrivateFile makes sure path exists with mode 0600 before SQLite opens it: SQLite
// creates a missing file with 0644 less the umask, and gives its -wal and -shm files the
// mode of the database file, so creating the file first makes all three private.
func createPrivateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// escapeDSNPath escapes the characters that would end the file name in a SQLite URI.
func escapeDSNPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// millis converts a time to the unix milliseconds the schema stores.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis converts stored unix milliseconds back to a UTC time.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
