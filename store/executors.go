package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// This file holds what remote executors (a pod on Kubernetes) need of the store beyond a
// task's own row: the workspace snapshot a graph's remote tasks get.

// SetGraphSnapshot records the snapshot (its sha256) a graph's remote tasks get, unless
// one is recorded already, and returns the one recorded: a graph gets one snapshot, the
// same for every remote task and for a runner that takes the graph over.
func (db *DB) SetGraphSnapshot(ctx context.Context, graphID, sha string) (string, error) {
	var got string
	err := db.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE graphs SET snapshot = ? WHERE id = ? AND snapshot IS NULL`, sha, graphID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COALESCE(snapshot, '') FROM graphs WHERE id = ?`, graphID).Scan(&got)
	})
	if err != nil {
		return "", fmt.Errorf("record the snapshot of graph %s: %w", graphID, err)
	}
	return got, nil
}

// SnapshotsInUse lists the snapshots recorded on unfinished graphs: the ones a remote
// task may still need.
func (db *DB) SnapshotsInUse(ctx context.Context) ([]string, error) {
	out, err := queryAll(ctx, db.sql, scanID, `SELECT DISTINCT snapshot FROM graphs WHERE finished_at IS NULL AND snapshot IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("snapshots in use: %w", err)
	}
	return out, nil
}

// TaskAttempt reads a task's status and attempt count: enough to tell whether a remote
// attempt found on a cluster is still the one the store has running.
func (db *DB) TaskAttempt(ctx context.Context, graphID, taskID string) (status string, attempt int, err error) {
	err = db.sql.QueryRowContext(ctx, `SELECT status, attempt FROM tasks WHERE graph_id = ? AND id = ?`, graphID, taskID).Scan(&status, &attempt)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, fmt.Errorf("task %s/%s: %w", graphID, taskID, ErrNotFound)
	}
	return status, attempt, err
}
