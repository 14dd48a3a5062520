package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
)

// SessionRow is the durable trace of a PTY session: enough to find and kill its process
// group after the runner that owned it died.
type SessionRow struct {
	RunnerID string
	ID       string
	Name     string
	Command  string
	Cwd      string
	procid.Identity
	Pgid      int
	StartedAt time.Time
	ClosedAt  *time.Time
}

// InsertSession records an open session.
func (db *DB) InsertSession(ctx context.Context, s SessionRow) error {
	return db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions
			(runner_id, id, name, command, cwd, pid, pgid, proc_start, started_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.RunnerID, s.ID, s.Name, s.Command, s.Cwd, s.Pid, s.Pgid, int64(s.ProcStart), millis(s.StartedAt))
		if err != nil {
			return fmt.Errorf("insert session %s: %w", s.ID, err)
		}
		return nil
	})
}

// CloseSession marks a session closed.
func (db *DB) CloseSession(ctx context.Context, runnerID, id string) error {
	return db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET closed_at = ?
			WHERE runner_id = ? AND id = ? AND closed_at IS NULL`, millis(time.Now()), runnerID, id)
		if err != nil {
			return fmt.Errorf("close session %s: %w", id, err)
		}
		return nil
	})
}

// OpenSessions lists the sessions of a runner that were never closed, oldest first.
func (db *DB) OpenSessions(ctx context.Context, runnerID string) ([]SessionRow, error) {
	out, err := queryAll(ctx, db.sql, func(row scanner) (SessionRow, error) {
		var s SessionRow
		var procStart, started int64
		err := row.Scan(&s.RunnerID, &s.ID, &s.Name, &s.Command, &s.Cwd, &s.Pid, &s.Pgid,
			&procStart, &s.BootID, &started)
		s.ProcStart = uint64(procStart)
		s.StartedAt = fromMillis(started)
		return s, err
	}, `SELECT s.runner_id, s.id, s.name, s.command, s.cwd,
		s.pid, s.pgid, s.proc_start, r.boot_id, s.started_at
		FROM sessions s JOIN runners r ON r.id = s.runner_id
		WHERE s.runner_id = ? AND s.closed_at IS NULL ORDER BY s.started_at, s.id`, runnerID)
	if err != nil {
		return nil, fmt.Errorf("open sessions of %s: %w", runnerID, err)
	}
	return out, nil
}
