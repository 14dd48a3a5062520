package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
)

// GraphPage reads one graph a page at a time: its per-status counts and its tasks of one
// status, or of every status but some, in submitted order from a position on, a few at a
// time. Every read runs in one transaction, so counts and tasks show the graph at one
// moment, as one GraphTasks would (in WAL mode a reader keeps the snapshot its first read
// took). What it costs follows the page, not the graph: a default tasks_status page of a
// graph of 100,000 tasks must not read 100,000 rows (issue 29).
type GraphPage struct {
	ctx     context.Context
	tx      *sql.Conn
	graphID string
}

// ReadGraphPage calls fn with a GraphPage of graphID, in a read transaction that ends when
// fn returns.
func (db *DB) ReadGraphPage(ctx context.Context, graphID string, fn func(*GraphPage) error) error {
	// BeginTx would be a BEGIN IMMEDIATE (the pool's _txlock), which takes the write lock:
	// a reader must not hold writers off, so the deferred BEGIN is issued on a connection
	// of its own, and its snapshot is taken by its first read.
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("read graph %s: %w", graphID, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return fmt.Errorf("read graph %s: %w", graphID, err)
	}
	// Only reads ran: rolling back ends the transaction and its snapshot, also when ctx
	// has ended (a connection must not go back to the pool inside a transaction).
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // drops the connection
		}
	}()
	return fn(&GraphPage{ctx: ctx, tx: conn, graphID: graphID})
}

// Counts counts the graph's tasks of each of statuses, and all its tasks (0 for a graph
// that is not there). A caller leaves out the status most tasks of a large graph have
// (pending): the covering index on (status, graph_id) finds each status's tasks by a seek,
// so the count costs what the other statuses hold, and the rest is total minus them.
func (p *GraphPage) Counts(statuses []string) (counts map[string]int, total int, err error) {
	err = p.tx.QueryRowContext(p.ctx, `SELECT task_count FROM graphs WHERE id = ?`, p.graphID).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return map[string]int{}, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("count the tasks of %s: %w", p.graphID, err)
	}
	args := []any{p.graphID}
	for _, s := range statuses {
		args = append(args, s)
	}
	rows, err := p.tx.QueryContext(p.ctx, `SELECT status, COUNT(*) FROM tasks INDEXED BY tasks_by_status
		WHERE graph_id = ? AND status IN (`+strings.TrimSuffix(strings.Repeat("?,", len(statuses)), ",")+`) GROUP BY status`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("count the tasks of %s: %w", p.graphID, err)
	}
	defer rows.Close()
	counts = map[string]int{}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return nil, 0, fmt.Errorf("count the tasks of %s: %w", p.graphID, err)
		}
		counts[status] = n
	}
	return counts, total, rows.Err()
}

// CountAfter counts the tasks with one of statuses (or, with except, with none of them)
// whose seq is greater than afterSeq.
func (p *GraphPage) CountAfter(statuses []string, except bool, afterSeq int) (int, error) {
	where, args := p.where(statuses, except, afterSeq)
	var n int
	if err := p.tx.QueryRowContext(p.ctx, `SELECT COUNT(*) FROM tasks WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the tasks of %s: %w", p.graphID, err)
	}
	return n, nil
}

// Tasks reads at most limit tasks with one of statuses (or, with except, with none of
// them) whose seq is greater than afterSeq, in submitted order.
func (p *GraphPage) Tasks(statuses []string, except bool, afterSeq, limit int) ([]TaskRow, error) {
	where, args := p.where(statuses, except, afterSeq)
	// A few statuses (failed, running) are found through their index and sorted, not by
	// walking the graph in seq order past every task of another status; every status but
	// a few is walked in seq order.
	index := ""
	if !except && len(statuses) > 0 {
		index = " INDEXED BY tasks_by_status"
	}
	rows, err := queryAll(p.ctx, p.tx, scanTask, strings.Replace(taskSelect, " FROM tasks", " FROM tasks"+index, 1)+` WHERE `+where+` ORDER BY seq LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("tasks of %s: %w", p.graphID, err)
	}
	return rows, nil
}

func (p *GraphPage) where(statuses []string, except bool, afterSeq int) (string, []any) {
	args := []any{p.graphID, afterSeq}
	where := "graph_id = ? AND seq > ?"
	if len(statuses) > 0 {
		not := ""
		if except {
			not = "NOT "
		}
		where += " AND status " + not + "IN (" + strings.TrimSuffix(strings.Repeat("?,", len(statuses)), ",") + ")"
		for _, s := range statuses {
			args = append(args, s)
		}
	}
	return where, args
}
