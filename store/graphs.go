package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// GraphRow is a stored task graph.
type GraphRow struct {
	ID             string
	Name           string
	RunnerID       string // the runner that accepted it and runs its tasks
	IdempotencyKey string // "" = none
	MaxParallel    int
	FailFast       bool
	TaskCount      int
	CreatedAt      time.Time
	FinishedAt     *time.Time // set once every task is terminal
	Version        int64      // bumped on every task state change
	ExpiredAt      *time.Time // set when its live logs were removed after the retention
	Snapshot       string     // the sha256 of the workspace snapshot its remote tasks get; "" = none made yet
}

// TaskRow is a stored task: its spec and its current state.
type TaskRow struct {
	GraphID    string
	ID         string
	Seq        int
	Command    string
	Cwd        string
	Env        map[string]string
	DependsOn  []string
	TimeoutSec int
	Retries    int
	// Sandbox and Network are the policy the task was accepted under ("" for a task
	// recorded before the sandbox existed).
	Sandbox, Network string
	// Executor is where the task runs ("" for a task recorded before executors existed:
	// local); CPU and Memory are what its pod asks for ("" = nothing asked).
	Executor, CPU, Memory string
	TaskState
}

// TaskState is the mutable part of a task: what a state change writes.
type TaskState struct {
	Status  string
	Attempt int
	TaskDetail
}

// TaskDetail is a task state's optional columns, all null for a task that never ran: how
// its last attempt ended, the process or pod it runs in, when it started and finished.
// The task engine holds it apart from the status for that reason, and writes it back
// whole.
type TaskDetail struct {
	ErrorCode  *string
	ExitCode   *int
	Signal     *string
	Message    *string
	Pid        *int
	Pgid       *int
	ProcStart  *uint64
	StartedAt  *time.Time
	FinishedAt *time.Time
	// Job, Pod and Node name where a remote attempt runs (nil until known, and for a
	// local task); LogStart is the byte of the log where the attempt's output starts.
	Job, Pod, Node *string
	LogStart       *int64
}

// TaskUpdate sets a task's state.
type TaskUpdate struct {
	GraphID string
	TaskID  string
	TaskState
}

// InsertGraph stores a graph and all its tasks in one transaction. When g has an
// idempotency key that an existing graph already holds, nothing is written and the
// existing graph is returned with created false.
//
// The graph's runner must hold its lease (not stopped, lease not expired) when the graph is
// stored, checked in the same transaction: a runner that stalled past its lease and was
// judged gone must not accept a graph in the name of an epoch no one will reconcile again
// (the error is then ErrLeaseLost, and nothing is written).
func (db *DB) InsertGraph(ctx context.Context, g GraphRow, tasks []TaskRow) (stored GraphRow, created bool, err error) {
	err = db.write(ctx, func(tx *sql.Tx) error {
		var stopped sql.NullInt64
		var lease int64
		switch err := tx.QueryRowContext(ctx, `SELECT stopped_at, lease_expires_at FROM runners WHERE id = ?`, g.RunnerID).Scan(&stopped, &lease); {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("runner %s: %w", g.RunnerID, ErrNotFound)
		case err != nil:
			return err
		case stopped.Valid:
			return fmt.Errorf("runner %s is stopped (judged gone by another runner): %w", g.RunnerID, ErrLeaseLost)
		case lease <= millis(time.Now()):
			return fmt.Errorf("runner %s did not renew its lease in time: %w", g.RunnerID, ErrLeaseLost)
		}
		if g.IdempotencyKey != "" {
			existing, err := scanGraph(tx.QueryRowContext(ctx, graphSelect+` WHERE idempotency_key = ?`, g.IdempotencyKey))
			if err == nil {
				stored, created = existing, false
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO graphs
			(id, name, runner_id, idempotency_key, max_parallel, fail_fast, task_count, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			g.ID, g.Name, g.RunnerID, nullString(g.IdempotencyKey), g.MaxParallel, g.FailFast, len(tasks), millis(g.CreatedAt)); err != nil {
			return fmt.Errorf("insert graph: %w", err)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO tasks
			(graph_id, id, seq, command, cwd, env, depends_on, timeout_sec, retries, status, sandbox, network,
			executor, cpu, memory)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, t := range tasks {
			env, _ := json.Marshal(nonNilMap(t.Env))
			deps, _ := json.Marshal(nonNilSlice(t.DependsOn))
			if _, err := stmt.ExecContext(ctx, g.ID, t.ID, t.Seq, t.Command, t.Cwd, string(env), string(deps),
				t.TimeoutSec, t.Retries, t.Status, nullString(t.Sandbox), nullString(t.Network),
				nullString(t.Executor), nullString(t.CPU), nullString(t.Memory)); err != nil {
				return fmt.Errorf("insert task %s: %w", t.ID, err)
			}
		}
		g.TaskCount = len(tasks)
		stored, created = g, true
		return nil
	})
	if err != nil {
		return GraphRow{}, false, fmt.Errorf("store graph %s: %w", g.ID, err)
	}
	return stored, created, nil
}

const updateTaskSQL = `UPDATE tasks SET status = ?, error_code = ?, exit_code = ?,
	signal = ?, message = ?, attempt = ?, pid = ?, pgid = ?, proc_start = ?, started_at = ?, finished_at = ?,
	job = ?, pod = ?, node = ?, log_start = ?
	WHERE graph_id = ? AND id = ? AND status IN ('pending', 'running')
	AND (SELECT runner_id FROM graphs WHERE graphs.id = tasks.graph_id) = ?`

// UpdateTasks writes a batch of task state changes in one transaction, bumps each touched
// graph's version and sets its finished_at once no task is left pending or running. A
// task already in a terminal state is never changed again: terminal states are final,
// whoever writes second.
//
// Only the runner that owns a graph may change its tasks: an update from runnerID is
// ignored for a graph another runner has adopted meanwhile (a runner that stalled past its
// lease and wakes up must not undo what the adopter recorded).
func (db *DB) UpdateTasks(ctx context.Context, runnerID string, updates []TaskUpdate) error {
	_, err := db.UpdateOwnedTasks(ctx, runnerID, updates)
	return err
}

// UpdateOwnedTasks is UpdateTasks, and also returns the graphs whose updates it ignored
// because another runner owns them: the write that records a task running is the fence
// that tells the task engine whether it may still start it, without reading the owner
// again before each start.
func (db *DB) UpdateOwnedTasks(ctx context.Context, runnerID string, updates []TaskUpdate) (disowned []string, err error) {
	if len(updates) == 0 {
		return nil, nil
	}
	now := millis(time.Now())
	err = db.write(ctx, func(tx *sql.Tx) error {
		disowned = disowned[:0] // the transaction may be retried
		stmt := tx.StmtContext(ctx, db.updateTask)
		defer stmt.Close()
		touched := map[string]bool{}
		var order, ignored []string
		for _, u := range updates {
			var procStart any
			if u.ProcStart != nil {
				procStart = int64(*u.ProcStart)
			}
			res, err := stmt.ExecContext(ctx, u.Status, u.ErrorCode, u.ExitCode, u.Signal, u.Message, u.Attempt,
				u.Pid, u.Pgid, procStart, millisPtr(u.StartedAt), millisPtr(u.FinishedAt),
				u.Job, u.Pod, u.Node, u.LogStart, u.GraphID, u.TaskID, runnerID)
			if err != nil {
				return fmt.Errorf("update task %s/%s: %w", u.GraphID, u.TaskID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 && !slices.Contains(ignored, u.GraphID) {
				ignored = append(ignored, u.GraphID) // already final, or not ours: see below
			}
			if !touched[u.GraphID] {
				touched[u.GraphID] = true
				order = append(order, u.GraphID)
			}
		}
		for _, id := range ignored {
			var owner string
			err := tx.QueryRowContext(ctx, `SELECT runner_id FROM graphs WHERE id = ?`, id).Scan(&owner)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("owner of graph %s: %w", id, err)
			}
			if owner != runnerID {
				disowned = append(disowned, id)
			}
		}
		for _, id := range order {
			if err := touchGraph(ctx, tx, id, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return disowned, nil
}

// touchGraph bumps a graph's version after its tasks changed and sets its finished_at once
// no task is left pending or running.
func touchGraph(ctx context.Context, tx *sql.Tx, id string, now int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE graphs SET version = version + 1,
		finished_at = CASE WHEN EXISTS (SELECT 1 FROM tasks WHERE graph_id = ?1 AND status IN ('pending', 'running'))
			THEN NULL ELSE COALESCE(finished_at, ?2) END
		WHERE id = ?1`, id, now); err != nil {
		return fmt.Errorf("update graph %s: %w", id, err)
	}
	return nil
}

// GetGraph reads one graph.
func (db *DB) GetGraph(ctx context.Context, id string) (GraphRow, error) {
	g, err := scanGraph(db.sql.QueryRowContext(ctx, graphSelect+` WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return GraphRow{}, fmt.Errorf("graph %s: %w", quote.Short(id), ErrNotFound)
	}
	if err != nil {
		return GraphRow{}, fmt.Errorf("graph %s: %w", quote.Short(id), err)
	}
	return g, nil
}

// GraphVersion reads a graph's change counter (cheap: for waits that poll the store).
func (db *DB) GraphVersion(ctx context.Context, id string) (int64, error) {
	var v int64
	err := db.sql.QueryRowContext(ctx, `SELECT version FROM graphs WHERE id = ?`, id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("graph %s: %w", quote.Short(id), ErrNotFound)
	}
	return v, err
}

// GraphTasks reads every task of a graph in submitted order.
func (db *DB) GraphTasks(ctx context.Context, graphID string) ([]TaskRow, error) {
	rows, err := db.sql.QueryContext(ctx, taskSelect+` WHERE graph_id = ? ORDER BY seq`, graphID)
	if err != nil {
		return nil, fmt.Errorf("tasks of %s: %w", graphID, err)
	}
	return collect(rows, scanTask)
}

// ListFilter selects tasks for ListTasks.
type ListFilter struct {
	Statuses []string // empty = any
	GraphID  string   // "" = every graph
	Limit    int
	Cursor   string // from a previous page's next cursor
}

// ListTasks lists tasks of every graph in the workspace, newest graph first and each
// graph's tasks in submitted order, a page at a time. next is "" on the last page.
func (db *DB) ListTasks(ctx context.Context, f ListFilter) (tasks []TaskRow, next string, err error) {
	var where []string
	var args []any
	if len(f.Statuses) > 0 {
		where = append(where, "status IN ("+strings.TrimSuffix(strings.Repeat("?,", len(f.Statuses)), ",")+")")
		for _, s := range f.Statuses {
			args = append(args, s)
		}
	}
	if f.GraphID != "" {
		where = append(where, "graph_id = ?")
		args = append(args, f.GraphID)
	}
	if f.Cursor != "" {
		graphID, seq, ok := parseCursor(f.Cursor)
		if !ok {
			return nil, "", fmt.Errorf("cursor %s: %w", quote.Short(f.Cursor), ErrBadCursor)
		}
		where = append(where, "(graph_id < ? OR (graph_id = ? AND seq > ?))")
		args = append(args, graphID, graphID, seq)
	}
	q := taskSelect
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY graph_id DESC, seq ASC LIMIT ?"
	args = append(args, f.Limit+1)
	rows, err := db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list tasks: %w", err)
	}
	tasks, err = collect(rows, scanTask)
	if err != nil {
		return nil, "", fmt.Errorf("list tasks: %w", err)
	}
	if len(tasks) > f.Limit {
		tasks = tasks[:f.Limit]
		last := tasks[len(tasks)-1]
		next = last.GraphID + "." + strconv.Itoa(last.Seq)
	}
	return tasks, next, nil
}

// ErrBadCursor is returned for a paging cursor this store did not hand out.
var ErrBadCursor = errors.New("not a cursor from a previous page")

func parseCursor(c string) (graphID string, seq int, ok bool) {
	i := strings.LastIndexByte(c, '.')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.Atoi(c[i+1:])
	return c[:i], seq, err == nil && seq >= 0
}

// UnfinishedGraphs lists the graphs of a runner that still have pending or running tasks.
func (db *DB) UnfinishedGraphs(ctx context.Context, runnerID string) ([]GraphRow, error) {
	return queryAll(ctx, db.sql, scanGraph, graphSelect+` WHERE runner_id = ? AND finished_at IS NULL ORDER BY id`, runnerID)
}

const graphSelect = `SELECT id, name, runner_id, COALESCE(idempotency_key, ''), max_parallel, fail_fast,
	task_count, created_at, finished_at, version, expired_at, COALESCE(snapshot, '') FROM graphs`

func scanGraph(row scanner) (GraphRow, error) {
	var g GraphRow
	var created int64
	var finished, expired sql.NullInt64
	if err := row.Scan(&g.ID, &g.Name, &g.RunnerID, &g.IdempotencyKey, &g.MaxParallel, &g.FailFast,
		&g.TaskCount, &created, &finished, &g.Version, &expired, &g.Snapshot); err != nil {
		return GraphRow{}, err
	}
	g.CreatedAt = fromMillis(created)
	g.FinishedAt, g.ExpiredAt = timePtr(finished), timePtr(expired)
	return g, nil
}

const taskSelect = `SELECT graph_id, id, seq, command, cwd, env, depends_on, timeout_sec, retries,
	status, error_code, exit_code, signal, message, attempt, pid, pgid, proc_start, started_at, finished_at,
	sandbox, network, executor, cpu, memory, job, pod, node, log_start FROM tasks`

func scanTask(row scanner) (TaskRow, error) {
	var t TaskRow
	var env, deps string
	var errorCode, signal, message, sandbox, network, executor, cpu, memory, job, pod, node sql.NullString
	var exitCode, pid, pgid, procStart, started, finished, logStart sql.NullInt64
	if err := row.Scan(&t.GraphID, &t.ID, &t.Seq, &t.Command, &t.Cwd, &env, &deps, &t.TimeoutSec, &t.Retries,
		&t.Status, &errorCode, &exitCode, &signal, &message, &t.Attempt, &pid, &pgid, &procStart, &started, &finished,
		&sandbox, &network, &executor, &cpu, &memory, &job, &pod, &node, &logStart); err != nil {
		return TaskRow{}, err
	}
	t.Sandbox, t.Network = sandbox.String, network.String
	t.Executor, t.CPU, t.Memory = executor.String, cpu.String, memory.String
	t.Job, t.Pod, t.Node = stringPtr(job), stringPtr(pod), stringPtr(node)
	if logStart.Valid {
		t.LogStart = &logStart.Int64
	}
	if err := json.Unmarshal([]byte(env), &t.Env); err != nil {
		return TaskRow{}, fmt.Errorf("task %s env: %w", t.ID, err)
	}
	if err := json.Unmarshal([]byte(deps), &t.DependsOn); err != nil {
		return TaskRow{}, fmt.Errorf("task %s dependencies: %w", t.ID, err)
	}
	t.ErrorCode, t.Signal, t.Message = stringPtr(errorCode), stringPtr(signal), stringPtr(message)
	t.ExitCode, t.Pid, t.Pgid = intPtr(exitCode), intPtr(pid), intPtr(pgid)
	if procStart.Valid {
		v := uint64(procStart.Int64)
		t.ProcStart = &v
	}
	t.StartedAt, t.FinishedAt = timePtr(started), timePtr(finished)
	return t, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func millisPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return millis(*t)
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMillis(v.Int64)
	return &t
}

func stringPtr(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

func intPtr(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	i := int(v.Int64)
	return &i
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// GraphHead is the cheap part of a graph's row: enough to tell whether it changed or
// finished without reading its tasks.
type GraphHead struct {
	RunnerID string
	Version  int64
	Finished bool
}

// GetGraphHead reads a graph's head.
func (db *DB) GetGraphHead(ctx context.Context, id string) (GraphHead, error) {
	var h GraphHead
	var finished sql.NullInt64
	err := db.sql.QueryRowContext(ctx, `SELECT runner_id, version, finished_at FROM graphs WHERE id = ?`, id).
		Scan(&h.RunnerID, &h.Version, &finished)
	if errors.Is(err, sql.ErrNoRows) {
		return GraphHead{}, fmt.Errorf("graph %s: %w", quote.Short(id), ErrNotFound)
	}
	h.Finished = finished.Valid
	return h, err
}

// TaskBrief is a task's id, state and attempt count.
type TaskBrief struct {
	ID      string
	Status  string
	Attempt int
}

// TaskBriefs reads the id, state and attempt of every task of a graph in submitted order:
// a fraction of the cost of GraphTasks, for waits that look at states only.
func (db *DB) TaskBriefs(ctx context.Context, graphID string) ([]TaskBrief, error) {
	return queryAll(ctx, db.sql, func(row scanner) (TaskBrief, error) {
		var b TaskBrief
		err := row.Scan(&b.ID, &b.Status, &b.Attempt)
		return b, err
	}, `SELECT id, status, attempt FROM tasks WHERE graph_id = ? ORDER BY seq`, graphID)
}

// RequestCancel records a cancel request on the named tasks of a graph (every unfinished
// one when ids is empty) for the runner that owns it to carry out. It returns the ids it
// marked; finished tasks are left alone.
func (db *DB) RequestCancel(ctx context.Context, graphID string, ids []string, grace time.Duration) ([]string, error) {
	var marked []string
	err := db.write(ctx, func(tx *sql.Tx) error {
		marked = marked[:0]
		open, err := queryAll(ctx, tx, scanID, `SELECT id FROM tasks WHERE graph_id = ? AND status IN ('pending', 'running') ORDER BY seq`, graphID)
		if err != nil {
			return err
		}
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		now := millis(time.Now())
		for _, id := range open {
			if len(ids) > 0 && !want[id] {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET cancel_requested_at = COALESCE(cancel_requested_at, ?), cancel_grace_ms = ?
				WHERE graph_id = ? AND id = ?`, now, grace.Milliseconds(), graphID, id); err != nil {
				return err
			}
			marked = append(marked, id)
		}
		if len(marked) > 0 {
			_, err = tx.ExecContext(ctx, `UPDATE graphs SET version = version + 1 WHERE id = ?`, graphID)
		}
		return err
	})
	return marked, err
}

// CancelRequest is a cancel asked for on a task of a graph a runner owns.
type CancelRequest struct {
	GraphID string
	TaskID  string
	Grace   time.Duration
}

// CancelRequests lists the open cancel requests on unfinished tasks of a runner's graphs.
func (db *DB) CancelRequests(ctx context.Context, runnerID string) ([]CancelRequest, error) {
	return queryAll(ctx, db.sql, func(row scanner) (CancelRequest, error) {
		var r CancelRequest
		var graceMs int64
		err := row.Scan(&r.GraphID, &r.TaskID, &graceMs)
		r.Grace = time.Duration(graceMs) * time.Millisecond
		return r, err
	}, `SELECT t.graph_id, t.id, COALESCE(t.cancel_grace_ms, 0) FROM tasks t
		JOIN graphs g ON g.id = t.graph_id
		WHERE g.runner_id = ? AND g.finished_at IS NULL AND t.cancel_requested_at IS NOT NULL
		AND t.status IN ('pending', 'running') ORDER BY t.graph_id, t.seq`, runnerID)
}

// ListGraphs reads up to limit graphs created before the graph with id before ("" = from
// the newest), newest first.
func (db *DB) ListGraphs(ctx context.Context, before string, limit int) ([]GraphRow, error) {
	q, args := graphSelect, []any{}
	if before != "" {
		q += ` WHERE id < ?`
		args = append(args, before)
	}
	out, err := queryAll(ctx, db.sql, scanGraph, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list graphs: %w", err)
	}
	return out, nil
}

// CountTasks counts the tasks of each named graph per status: counts[graphID][status].
// It reads the index only, so it costs in proportion to the tasks of those graphs.
func (db *DB) CountTasks(ctx context.Context, graphIDs []string) (map[string]map[string]int, error) {
	counts := make(map[string]map[string]int, len(graphIDs))
	if len(graphIDs) == 0 {
		return counts, nil
	}
	args := make([]any, len(graphIDs))
	for i, id := range graphIDs {
		args[i] = id
		counts[id] = map[string]int{}
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT graph_id, status, COUNT(*) FROM tasks WHERE graph_id IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(graphIDs)), ",")+`) GROUP BY graph_id, status`, args...)
	if err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, status string
		var n int
		if err := rows.Scan(&id, &status, &n); err != nil {
			return nil, fmt.Errorf("count tasks: %w", err)
		}
		counts[id][status] = n
	}
	return counts, rows.Err()
}
