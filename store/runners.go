package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/procid"
)

// ErrNotFound is returned when a row asked for by id does not exist.
var ErrNotFound = errors.New("not found")

// ErrLeaseLost reports a write refused because the runner it is made for no longer holds
// its lease: another runner judged it gone (it stalled past its lease) and took over its
// graphs, or it stopped, or its lease ran out before it renewed it. A runner that gets it
// renews its lease, or registers again as a new runner (Reregister), before it accepts
// anything more.
var ErrLeaseLost = errors.New("this runner's lease is lost")

// Runner is one server process serving the workspace.
type Runner struct {
	ID string // the runner's epoch
	procid.Identity
	Hostname       string
	Version        string
	StartedAt      time.Time
	HeartbeatAt    time.Time
	LeaseExpiresAt time.Time
	StoppedAt      *time.Time
}

// RegisterRunner records the calling process as a new runner whose lease runs for lease.
func (db *DB) RegisterRunner(ctx context.Context, version string, lease time.Duration) (Runner, error) {
	return db.RegisterRunnerAs(ctx, NewRunnerID(), version, lease)
}

// NewRunnerID is a new runner id, for RegisterRunnerAs.
func NewRunnerID() string { return NewID("r-") }

// RegisterRunnerAs is RegisterRunner with the id chosen beforehand (NewRunnerID): a
// server that opens its store while it already answers its client logs under the id it
// will have.
func (db *DB) RegisterRunnerAs(ctx context.Context, id, version string, lease time.Duration) (Runner, error) {
	r := newRunner(id, version, lease, time.Now().UTC())
	if err := db.write(ctx, func(tx *sql.Tx) error { return insertRunner(ctx, tx, r) }); err != nil {
		return Runner{}, fmt.Errorf("register runner: %w", err)
	}
	return r, nil
}

// newRunner is the record of the calling process as runner id, started at now.
func newRunner(id, version string, lease time.Duration, now time.Time) Runner {
	host, _ := os.Hostname()
	return Runner{
		ID:             id,
		Identity:       procid.Identify(os.Getpid()),
		Hostname:       host,
		Version:        version,
		StartedAt:      now,
		HeartbeatAt:    now,
		LeaseExpiresAt: now.Add(lease),
	}
}

// insertRunner stores r as a new row.
func insertRunner(ctx context.Context, tx *sql.Tx, r Runner) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO runners
		(id, pid, proc_start, boot_id, hostname, version, started_at, heartbeat_at, lease_expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Pid, int64(r.ProcStart), r.BootID, r.Hostname, r.Version,
		millis(r.StartedAt), millis(r.HeartbeatAt), millis(r.LeaseExpiresAt))
	return err
}

// RenewLease extends a live runner's lease to lease from now. A runner that is stopped
// (judged gone by another, or reaped) cannot renew: the error is ErrLeaseLost (and
// ErrNotFound).
func (db *DB) RenewLease(ctx context.Context, id string, lease time.Duration) error {
	return db.write(ctx, func(tx *sql.Tx) error {
		// The time is read under the write lock: a renewal that waited for the lock must not
		// record a lease that started while it waited.
		now := time.Now()
		res, err := tx.ExecContext(ctx, `UPDATE runners SET heartbeat_at = ?, lease_expires_at = ?
			WHERE id = ? AND stopped_at IS NULL`, millis(now), millis(now.Add(lease)), id)
		if err != nil {
			return fmt.Errorf("renew lease of %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("renew lease of %s: %w: %w", id, ErrLeaseLost, ErrNotFound)
		}
		return nil
	})
}

// Reregister records the calling process as a new runner (a new epoch) in place of old,
// whose lease it lost, in one transaction with the hand-over: the unfinished graphs old
// still owns move to the new runner, and so do old's open PTY session rows. Graphs another
// runner adopted meanwhile are not touched; moved lists the ones that moved. old is left
// stopped. Every unfinished graph old owns is the calling process's own (it stored them,
// and its states for them may still be on their way), since a runner stores no graph once
// it is stopped.
func (db *DB) Reregister(ctx context.Context, old, version string, lease time.Duration) (r Runner, moved []string, err error) {
	err = db.write(ctx, func(tx *sql.Tx) error {
		moved = moved[:0]
		now := time.Now().UTC()
		r = newRunner(NewRunnerID(), version, lease, now)
		if err := insertRunner(ctx, tx, r); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runners SET stopped_at = COALESCE(stopped_at, ?) WHERE id = ?`, millis(now), old); err != nil {
			return err
		}
		ids, err := queryAll(ctx, tx, scanID, `UPDATE graphs SET runner_id = ?, version = version + 1
			WHERE runner_id = ? AND finished_at IS NULL RETURNING id`, r.ID, old)
		if err != nil {
			return err
		}
		moved = ids
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET runner_id = ? WHERE runner_id = ? AND closed_at IS NULL`, r.ID, old)
		return err
	})
	if err != nil {
		return Runner{}, nil, fmt.Errorf("register again after losing the lease of %s: %w", old, err)
	}
	return r, moved, nil
}

// StopRunner marks a runner as stopped cleanly.
func (db *DB) StopRunner(ctx context.Context, id string) error {
	now := millis(time.Now())
	return db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE runners SET stopped_at = ?, lease_expires_at = ?
			WHERE id = ? AND stopped_at IS NULL`, now, now, id)
		if err != nil {
			return fmt.Errorf("stop runner %s: %w", id, err)
		}
		return nil
	})
}

// GetRunner reads one runner by id.
func (db *DB) GetRunner(ctx context.Context, id string) (Runner, error) {
	rows, err := db.sql.QueryContext(ctx, runnerSelect+` WHERE id = ?`, id)
	if err != nil {
		return Runner{}, fmt.Errorf("get runner %s: %w", id, err)
	}
	rs, err := collect(rows, scanRunner)
	if err != nil {
		return Runner{}, fmt.Errorf("get runner %s: %w", id, err)
	}
	if len(rs) == 0 {
		return Runner{}, fmt.Errorf("get runner %s: %w", id, ErrNotFound)
	}
	return rs[0], nil
}

// ListRunners lists every runner the workspace has had, oldest first.
func (db *DB) ListRunners(ctx context.Context) ([]Runner, error) {
	rows, err := db.sql.QueryContext(ctx, runnerSelect+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	return collect(rows, scanRunner)
}

const runnerSelect = `SELECT id, pid, proc_start, boot_id, hostname, version, started_at,
	heartbeat_at, lease_expires_at, stopped_at FROM runners`

func scanRunner(row scanner) (Runner, error) {
	var r Runner
	var procStart, started, heartbeat, lease int64
	var stopped sql.NullInt64
	if err := row.Scan(&r.ID, &r.Pid, &procStart, &r.BootID, &r.Hostname, &r.Version,
		&started, &heartbeat, &lease, &stopped); err != nil {
		return Runner{}, err
	}
	r.ProcStart = uint64(procStart)
	r.StartedAt, r.HeartbeatAt, r.LeaseExpiresAt = fromMillis(started), fromMillis(heartbeat), fromMillis(lease)
	if stopped.Valid {
		t := fromMillis(stopped.Int64)
		r.StoppedAt = &t
	}
	return r, nil
}

// Live reports whether the runner still serves its workspace: not stopped, its lease not
// expired, and its process still the same process. Any one failing means it is gone.
func (r Runner) Live(now time.Time) bool {
	return r.StoppedAt == nil && now.Before(r.LeaseExpiresAt) && r.Alive()
}
