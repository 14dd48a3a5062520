package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// UnreapedRunners lists the runners other than self that no living runner has reconciled
// yet, oldest first, and the reconciled ones that still own an unfinished graph (a runner
// reconciled while it went on accepting graphs, as one that stalled did before it checked
// its lease when storing a graph, or one that exited with states it could not record):
// every unfinished graph must have a live owner or be found here. Whether each is gone is
// for the caller to judge (Runner.Live).
func (db *DB) UnreapedRunners(ctx context.Context, self string) ([]Runner, error) {
	rows, err := db.sql.QueryContext(ctx, runnerSelect+` WHERE id != ? AND (reaped_at IS NULL
		OR EXISTS (SELECT 1 FROM graphs WHERE graphs.runner_id = runners.id AND graphs.finished_at IS NULL))
		ORDER BY id`, self)
	if err != nil {
		return nil, fmt.Errorf("unreaped runners: %w", err)
	}
	return collect(rows, scanRunner)
}

// MarkReaped records that a gone runner has been reconciled.
func (db *DB) MarkReaped(ctx context.Context, id string) error {
	now := millis(time.Now())
	return db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE runners SET reaped_at = ?, stopped_at = COALESCE(stopped_at, ?) WHERE id = ?`, now, now, id)
		return err
	})
}

// Takeover is what AdoptGraphs did to one graph of a gone runner.
type Takeover struct {
	Graph     GraphRow
	Restarted []TaskRow // local tasks that were running under the gone runner, now failed
	// Remote are the remote tasks (a pod on Kubernetes) that were running under the gone
	// runner: still running, since their work does not die with a runner, for the adopter
	// to re-attach to.
	Remote []TaskRow
}

// localTask selects, in SQL, the tasks whose processes run on this machine (a task
// recorded before executors existed is one).
const localTask = `COALESCE(executor, 'local') = 'local'`

// ErrRenewed reports an adoption given up because the runner judged gone renewed its lease
// after it was judged: it is alive after all, and keeps its graphs.
var ErrRenewed = errors.New("the runner renewed its lease after it was judged gone")

// AdoptGraphs moves every unfinished graph of the gone runner to the runner adopter, in one
// transaction: its running local tasks become failed with errorCode code and message (a
// remote task keeps running, and is listed for the adopter to re-attach to), and the
// graph's runner changes. A graph another runner adopted first is left out, so exactly one
// runner adopts each graph even when several reconcile at once.
//
// The same transaction marks the gone runner stopped, provided its lease is still the one
// it was judged by (gone.LeaseExpiresAt) or it is stopped already: a runner that renewed
// meanwhile keeps its graphs (ErrRenewed), and one that did not can renew no more, so it
// learns that it lost its lease before it stores another graph. An adopter that is itself
// stopped adopts nothing (ErrLeaseLost).
func (db *DB) AdoptGraphs(ctx context.Context, gone Runner, adopter, code, message string) ([]Takeover, error) {
	var out []Takeover
	now := millis(time.Now())
	err := db.write(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		var adopterStopped sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT stopped_at FROM runners WHERE id = ?`, adopter).Scan(&adopterStopped); err != nil {
			return fmt.Errorf("adopter %s: %w", adopter, err)
		}
		if adopterStopped.Valid {
			return fmt.Errorf("adopter %s is stopped: %w", adopter, ErrLeaseLost)
		}
		res, err := tx.ExecContext(ctx, `UPDATE runners SET stopped_at = COALESCE(stopped_at, ?)
			WHERE id = ? AND (stopped_at IS NOT NULL OR lease_expires_at = ?)`, now, gone.ID, millis(gone.LeaseExpiresAt))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("runner %s: %w", gone.ID, ErrRenewed)
		}
		rows, err := tx.QueryContext(ctx, graphSelect+` WHERE runner_id = ? AND finished_at IS NULL ORDER BY id`, gone.ID)
		if err != nil {
			return err
		}
		// collect also reports an error that ended the rows early: a part of the gone
		// runner's graphs must not be taken over as if it were all of them.
		graphs, err := collect(rows, scanGraph)
		if err != nil {
			return err
		}
		for _, g := range graphs {
			res, err := tx.ExecContext(ctx, `UPDATE graphs SET runner_id = ?, version = version + 1 WHERE id = ? AND runner_id = ?`, adopter, g.ID, gone.ID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			trows, err := tx.QueryContext(ctx, taskSelect+` WHERE graph_id = ? AND status = 'running' ORDER BY seq`, g.ID)
			if err != nil {
				return err
			}
			running, err := collect(trows, scanTask)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'failed', error_code = ?, message = ?, finished_at = ?
				WHERE graph_id = ? AND status = 'running' AND `+localTask, code, message, now, g.ID); err != nil {
				return err
			}
			if err := touchGraph(ctx, tx, g.ID, now); err != nil {
				return err
			}
			g.RunnerID = adopter
			to := Takeover{Graph: g}
			for _, t := range running {
				if t.Executor == "" || t.Executor == "local" {
					to.Restarted = append(to.Restarted, t)
				} else {
					to.Remote = append(to.Remote, t)
				}
			}
			out = append(out, to)
		}
		return nil
	})
	return out, err
}

// Artifact is a graph's retained archive.
type Artifact struct {
	GraphID   string
	Path      string
	Bytes     int64
	SHA256    string
	CreatedAt time.Time
	// LogIndex is, for an artifact in object storage, where each log's compressed bytes
	// are in it (JSON, written and read by package tasks); "" for a local file.
	LogIndex string
}

// RecordArtifact records (or replaces) a graph's artifact.
func (db *DB) RecordArtifact(ctx context.Context, a Artifact) error {
	return db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO artifacts (graph_id, path, bytes, sha256, created_at, log_index) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(graph_id) DO UPDATE SET path = excluded.path, bytes = excluded.bytes, sha256 = excluded.sha256,
			created_at = excluded.created_at, log_index = excluded.log_index`,
			a.GraphID, a.Path, a.Bytes, a.SHA256, millis(a.CreatedAt), nullString(a.LogIndex))
		return err
	})
}

// GetArtifact reads a graph's artifact; ErrNotFound when it has none.
func (db *DB) GetArtifact(ctx context.Context, graphID string) (Artifact, error) {
	a := Artifact{GraphID: graphID}
	var created int64
	err := db.sql.QueryRowContext(ctx, `SELECT path, bytes, sha256, created_at, COALESCE(log_index, '') FROM artifacts WHERE graph_id = ?`, graphID).
		Scan(&a.Path, &a.Bytes, &a.SHA256, &created, &a.LogIndex)
	if errors.Is(err, sql.ErrNoRows) {
		return Artifact{}, fmt.Errorf("artifact of %s: %w", graphID, ErrNotFound)
	}
	a.CreatedAt = fromMillis(created)
	return a, err
}

// UnspooledGraphs lists finished graphs that have no artifact yet, oldest first.
func (db *DB) UnspooledGraphs(ctx context.Context) ([]string, error) {
	return queryAll(ctx, db.sql, scanID, `SELECT g.id FROM graphs g LEFT JOIN artifacts a ON a.graph_id = g.id
		WHERE g.finished_at IS NOT NULL AND a.graph_id IS NULL ORDER BY g.id`)
}

// ExpirableGraphs lists graphs finished before cutoff that are not expired yet.
func (db *DB) ExpirableGraphs(ctx context.Context, cutoff time.Time) ([]string, error) {
	return queryAll(ctx, db.sql, scanID, `SELECT id FROM graphs WHERE finished_at IS NOT NULL AND finished_at < ? AND expired_at IS NULL ORDER BY id`, millis(cutoff))
}

// MarkExpired records that a graph's live logs were removed.
func (db *DB) MarkExpired(ctx context.Context, graphID string) error {
	return db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE graphs SET expired_at = COALESCE(expired_at, ?) WHERE id = ?`, millis(time.Now()), graphID)
		return err
	})
}
