package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// This file holds the lookups a person's short-hands need (an id prefix) and the question
// "who holds the slots" that a ready task waiting to start raises.

// GraphIDsWithPrefix returns up to limit ids of the graphs whose id starts with prefix, in
// id order. Ids are plain ASCII and the primary key is ordered, so the prefix is a range
// scan: it costs what it returns, not the workspace.
func (db *DB) GraphIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	out, err := queryAll(ctx, db.sql, scanID, `SELECT id FROM graphs WHERE id >= ? AND id < ? ORDER BY id LIMIT ?`,
		prefix, prefix+"\x7f", limit)
	if err != nil {
		return nil, fmt.Errorf("graphs with prefix %q: %w", prefix, err)
	}
	return out, nil
}

// RunningTask is a task recorded running, since when, and where ("" = local).
type RunningTask struct {
	GraphID   string
	ID        string
	StartedAt *time.Time
	Executor  string
}

// RunningTasks lists the tasks recorded running in the unfinished graphs runnerID owns,
// oldest start first: the tasks that hold that runner's slots.
func (db *DB) RunningTasks(ctx context.Context, runnerID string) ([]RunningTask, error) {
	out, err := queryAll(ctx, db.sql, func(row scanner) (RunningTask, error) {
		var t RunningTask
		var started sql.NullInt64
		err := row.Scan(&t.GraphID, &t.ID, &started, &t.Executor)
		t.StartedAt = timePtr(started)
		return t, err
	}, `SELECT t.graph_id, t.id, t.started_at, COALESCE(t.executor, '') FROM graphs g
		JOIN tasks t ON t.graph_id = g.id AND t.status = 'running'
		WHERE g.runner_id = ? AND g.finished_at IS NULL ORDER BY t.started_at, t.graph_id, t.seq`, runnerID)
	if err != nil {
		return nil, fmt.Errorf("running tasks of %s: %w", runnerID, err)
	}
	return out, nil
}
