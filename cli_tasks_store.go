package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// cliList is `tasks list --json`: {graphs, more}. graphs are newest first; more is true
// when --limit left older matching graphs out.
type cliList struct {
	Graphs []cliGraph `json:"graphs"`
	More   bool       `json:"more"`
}

// cliGraph is one graph in `tasks list --json`, and the head of `tasks status --json`:
// {graphId, name, status, createdAt, finishedAt, durationMs, progress, runner}.
// status is the derived graph status (running, succeeded, failed, cancelled); finishedAt
// is null while the graph runs; durationMs runs from creation to finishedAt, or to now;
// progress is {total, pending, running, succeeded, failed, cancelled, skipped, percent};
// runner is the server process that owns the graph: {id, pid, hostname, live}, live false
// once it stopped, its lease ran out or its process is gone.
type cliGraph struct {
	GraphID    string         `json:"graphId"`
	Name       string         `json:"name"`
	Status     string         `json:"status"`
	CreatedAt  string         `json:"createdAt"`
	FinishedAt *string        `json:"finishedAt"`
	DurationMs int64          `json:"durationMs"`
	Progress   tasks.Progress `json:"progress"`
	Runner     cliRunner      `json:"runner"`
}

// cliRunner is the server process that owns a graph.
type cliRunner struct {
	ID       string `json:"id"`
	Pid      int    `json:"pid"`
	Hostname string `json:"hostname"`
	Live     bool   `json:"live"`
}

// cliStatus is `tasks status --json`: the fields of cliGraph and tasks, in submitted
// order, each {id, status, errorCode, exitCode, signal, message, attempt, dependsOn,
// command, startedAt, finishedAt, durationMs, logPath}. errorCode, exitCode, signal and
// message are as tasks_status gives them (null where they do not apply); durationMs is
// null for a task that never started; logPath is where its log is (or will be).
type cliStatus struct {
	cliGraph
	Tasks []cliTask `json:"tasks"`
}

type cliTask struct {
	ID         string   `json:"id"`
	Status     string   `json:"status"`
	ErrorCode  *string  `json:"errorCode"`
	ExitCode   *int     `json:"exitCode"`
	Signal     *string  `json:"signal"`
	Message    *string  `json:"message"`
	Attempt    int      `json:"attempt"`
	DependsOn  []string `json:"dependsOn"`
	Command    string   `json:"command"`
	StartedAt  *string  `json:"startedAt"`
	FinishedAt *string  `json:"finishedAt"`
	DurationMs *int64   `json:"durationMs"`
	LogPath    string   `json:"logPath"`
}

// `tasks graph --json` is tasks.Report, the tasks_graph tool's shape: {graphId, name,
// status, nodes, edges, order, mermaid}; nodes in submitted order, each {id, status,
// depth, dependsOn, dependents, reason, waitingOn, blockedBy}: reason is ready, waiting or
// blocked for a pending task and null otherwise, waitingOn and blockedBy list {id, status}
// of the dependencies concerned; edges are {from, to}, from the dependency to its
// dependent; order is a topological order of the ids.

// cliCancel is `tasks cancel --json`, the tasks_cancel tool's shape: {graphId, tasks},
// each task {id, previousStatus, status, outcome} in submitted order, outcome one of
// cancelled, cancelling (signalled, not yet stopped), skipped (a dependency was
// cancelled), already_terminal. Without --no-wait, a running task reads cancelling only
// if it had not stopped by the end of the wait.
type cliCancel struct {
	GraphID string          `json:"graphId"`
	Tasks   []cliCancelTask `json:"tasks"`
}

type cliCancelTask struct {
	ID             string `json:"id"`
	PreviousStatus string `json:"previousStatus"`
	Status         string `json:"status"`
	Outcome        string `json:"outcome"`
}

// cliWorkspace is a workspace's store opened by an operator command.
type cliWorkspace struct {
	Root    string // the workspace, absolute and free of symlinks
	Where   string // what messages call it: the workspace, or the state dir when given
	LogsDir string
	DB      *store.DB
	runners map[string]cliRunner
}

// open opens the store of the workspace the flags name. Unlike a server, it creates
// nothing: a workspace without a database has no state to show.
func (o *tasksOptions) open(ctx context.Context) (*cliWorkspace, error) {
	dir := o.workspace
	if dir == "" {
		dir = "."
	}
	root, err := store.ResolveDir(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	ws := &cliWorkspace{Root: root, Where: root, runners: map[string]cliRunner{}}
	state := filepath.Join(root, store.StateDirName)
	if o.stateDir != "" {
		if state, err = filepath.Abs(o.stateDir); err != nil {
			return nil, fmt.Errorf("state dir %s: %w", o.stateDir, err)
		}
		ws.Where = state
	}
	ws.LogsDir = filepath.Join(state, "logs")
	dbPath := filepath.Join(state, store.DBFileName)
	if _, err := os.Stat(dbPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no mcp-harness state in %s: no server has run tasks there (point --workspace or --state-dir at the project the agent works on)", ws.Where)
		}
		return nil, fmt.Errorf("state: %w", err)
	}
	if ws.DB, err = store.Open(ctx, dbPath); err != nil {
		return nil, err
	}
	return ws, nil
}

// Close closes the store.
func (ws *cliWorkspace) Close() error { return ws.DB.Close() }

// snapshot reads a graph; an unknown id says so and where to find the ids.
func (ws *cliWorkspace) snapshot(ctx context.Context, graphID string) (tasks.Snapshot, error) {
	s, err := tasks.LoadSnapshot(ctx, ws.DB, graphID)
	if errors.Is(err, tasks.ErrNotFound) {
		return s, fmt.Errorf("no graph %q in %s: `mcp-harness tasks list` shows the graphs", graphID, ws.Where)
	}
	return s, err
}

// runner reads the runner that owns a graph, once per command.
func (ws *cliWorkspace) runner(ctx context.Context, id string, now time.Time) (cliRunner, error) {
	if r, ok := ws.runners[id]; ok {
		return r, nil
	}
	row, err := ws.DB.GetRunner(ctx, id)
	if err != nil {
		return cliRunner{}, err
	}
	r := cliRunner{ID: row.ID, Pid: row.Pid, Hostname: row.Hostname, Live: row.Live(now)}
	ws.runners[id] = r
	return r, nil
}

// cliListPage is how many task rows cliListGraphs reads at a time.
const cliListPage = 500

// cliListGraphs returns the newest limit graphs of the store whose derived status is one of
// statuses (any when empty), and whether older ones match too.
//
// The store has no query over graphs alone, so this pages through the task list (newest
// graph first, each graph's tasks together) and groups it: it reads every task of the
// graphs it returns and of the newer ones a status filter leaves out. Each graph's tasks
// are all read before its row, as LoadSnapshot does, so a graph whose tasks all show
// finished also shows finishedAt.
func cliListGraphs(ctx context.Context, db *store.DB, statuses []string, limit int) ([]tasks.Snapshot, bool, error) {
	var out []tasks.Snapshot
	var cur []store.TaskRow // the tasks of the graph being read
	flush := func() (more bool, err error) {
		rows := cur
		cur = nil
		if len(rows) == 0 || len(statuses) > 0 && !slices.Contains(statuses, tasks.GraphStatus(rows)) {
			return false, nil
		}
		if len(out) == limit {
			return true, nil
		}
		g, err := db.GetGraph(ctx, rows[0].GraphID)
		if err != nil {
			return false, err
		}
		out = append(out, tasks.Snapshot{Graph: g, Tasks: rows})
		return false, nil
	}
	cursor := ""
	for {
		rows, next, err := db.ListTasks(ctx, store.ListFilter{Limit: cliListPage, Cursor: cursor})
		if err != nil {
			return nil, false, err
		}
		for _, t := range rows {
			if len(cur) > 0 && t.GraphID != cur[0].GraphID {
				if more, err := flush(); err != nil || more {
					return out, more, err
				}
			}
			cur = append(cur, t)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	more, err := flush()
	return out, more, err
}

// cliGraphOf sums a graph up for list and status.
func cliGraphOf(s tasks.Snapshot, r cliRunner, now time.Time) cliGraph {
	end := now
	if s.Graph.FinishedAt != nil {
		end = *s.Graph.FinishedAt
	}
	return cliGraph{
		GraphID: s.Graph.ID, Name: s.Graph.Name, Status: tasks.GraphStatus(s.Tasks),
		CreatedAt: cliTime(s.Graph.CreatedAt), FinishedAt: cliTimePtr(s.Graph.FinishedAt),
		DurationMs: max(end.Sub(s.Graph.CreatedAt).Milliseconds(), 0),
		Progress:   tasks.ProgressOf(s.Tasks), Runner: r,
	}
}

func cliStatusOf(s tasks.Snapshot, r cliRunner, logsDir string, now time.Time) cliStatus {
	out := cliStatus{cliGraph: cliGraphOf(s, r, now), Tasks: make([]cliTask, 0, len(s.Tasks))}
	for _, t := range s.Tasks {
		out.Tasks = append(out.Tasks, cliTask{
			ID: t.ID, Status: t.Status, ErrorCode: t.ErrorCode, ExitCode: t.ExitCode, Signal: t.Signal,
			Message: t.Message, Attempt: t.Attempt, DependsOn: cliStrings(t.DependsOn), Command: t.Command,
			StartedAt: cliTimePtr(t.StartedAt), FinishedAt: cliTimePtr(t.FinishedAt), DurationMs: cliTaskDuration(t, now),
			LogPath: tasks.LogPath(logsDir, s.Graph.ID, t.ID),
		})
	}
	return out
}

// cliTaskDuration is how long a task ran: to its end, or to now while it runs; nil if it
// never started.
func cliTaskDuration(t store.TaskRow, now time.Time) *int64 {
	if t.StartedAt == nil {
		return nil
	}
	end := now
	if t.FinishedAt != nil {
		end = *t.FinishedAt
	}
	d := max(end.Sub(*t.StartedAt).Milliseconds(), 0)
	return &d
}

// cliView is a graph analysed for `tasks graph`.
type cliView struct {
	view tasks.View
	json tasks.Report
}

func cliViewOf(s tasks.Snapshot) cliView {
	v, r := tasks.Explain(s)
	return cliView{view: v, json: r}
}

// cancel asks for tasks of a graph to be cancelled through the store (the live server
// that owns the graph carries it out) and, with wait, waits until the running ones it
// signalled have stopped and their dependents are skipped, up to the grace and
// cliCancelSettle more. It returns the outcomes
// and the ids still stopping.
func (ws *cliWorkspace) cancel(ctx context.Context, graphID string, ids []string, grace time.Duration, wait bool) (cliCancel, []string, error) {
	before, err := ws.snapshot(ctx, graphID)
	if err != nil {
		return cliCancel{}, nil, err
	}
	for _, id := range ids {
		if _, err := cliFindTask(before, id); err != nil {
			return cliCancel{}, nil, err
		}
	}
	if grace == 0 {
		grace = time.Millisecond // at once; the engine reads zero as its default grace
	}
	res, err := tasks.RequestCancel(ctx, ws.DB, graphID, ids, grace)
	if err != nil {
		return cliCancel{}, nil, err
	}
	stopping := func() []string {
		var ids []string
		for _, r := range res {
			if r.Outcome == tasks.OutcomeCancelling {
				ids = append(ids, r.ID)
			}
		}
		return ids
	}
	if wait && len(res) > 0 {
		if res, err = ws.awaitCancel(ctx, before, res, grace+cliCancelSettle); err != nil {
			return cliCancel{}, nil, err
		}
	}
	out := cliCancel{GraphID: graphID, Tasks: make([]cliCancelTask, 0, len(res))}
	for _, r := range res {
		out.Tasks = append(out.Tasks, cliCancelTask{ID: r.ID, PreviousStatus: string(r.PreviousStatus), Status: string(r.Status), Outcome: r.Outcome})
	}
	return out, stopping(), nil
}

// cliCancelPoll is how often cancel re-reads the tasks it waits on.
const cliCancelPoll = 50 * time.Millisecond

// awaitCancel waits up to d for the tasks res reports cancelling to end, then reports them
// as they are: cancelled, or already_terminal if they ended otherwise (they finished on
// their own first), and adds the pending tasks that were skipped meanwhile because a
// cancelled dependency will never succeed.
func (ws *cliWorkspace) awaitCancel(ctx context.Context, before tasks.Snapshot, res []tasks.CancelResult, d time.Duration) ([]tasks.CancelResult, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(cliCancelPoll)
	defer tick.Stop()
wait:
	for {
		briefs, err := ws.DB.TaskBriefs(wctx, before.Graph.ID)
		if err != nil {
			if wctx.Err() != nil {
				break // the wait ran out during the read
			}
			return nil, err
		}
		if cancelSettled(before, briefs, res) {
			break
		}
		select {
		case <-wctx.Done():
			break wait
		case <-tick.C:
		}
	}
	after, err := tasks.LoadSnapshot(ctx, ws.DB, before.Graph.ID)
	if err != nil {
		return nil, err
	}
	now := map[string]store.TaskRow{}
	seq := map[string]int{}
	for _, t := range after.Tasks {
		now[t.ID], seq[t.ID] = t, t.Seq
	}
	listed := map[string]bool{}
	for i, r := range res {
		listed[r.ID] = true
		st := tasks.State(now[r.ID].Status)
		if r.Outcome != tasks.OutcomeCancelling || !st.Terminal() {
			continue
		}
		res[i].Status = st
		if st == tasks.Cancelled {
			res[i].Outcome = tasks.OutcomeCancelled
		} else {
			res[i].Outcome = tasks.OutcomeAlreadyTerminal
		}
	}
	for _, t := range before.Tasks {
		if !listed[t.ID] && tasks.State(t.Status) == tasks.Pending && tasks.State(now[t.ID].Status) == tasks.Skipped {
			res = append(res, tasks.CancelResult{ID: t.ID, PreviousStatus: tasks.Pending, Status: tasks.Skipped, Outcome: tasks.OutcomeSkipped})
		}
	}
	slices.SortStableFunc(res, func(a, b tasks.CancelResult) int { return cmp.Compare(seq[a.ID], seq[b.ID]) })
	return res, nil
}

// cancelSettled reports whether the cancel has played out: every task it signalled has
// ended, and no pending task is left blocked behind one that did not succeed (the server
// skips those as soon as it records the blocker, but possibly in a later write).
func cancelSettled(before tasks.Snapshot, briefs []store.TaskBrief, res []tasks.CancelResult) bool {
	state := make(map[string]tasks.State, len(briefs))
	for _, b := range briefs {
		state[b.ID] = tasks.State(b.Status)
	}
	if slices.ContainsFunc(res, func(r tasks.CancelResult) bool {
		return r.Outcome == tasks.OutcomeCancelling && !state[r.ID].Terminal()
	}) {
		return false
	}
	nodes := make([]tasks.Node, len(before.Tasks))
	for i, t := range before.Tasks {
		nodes[i] = tasks.Node{ID: t.ID, Status: state[t.ID], DependsOn: t.DependsOn}
	}
	return !slices.ContainsFunc(tasks.Analyze(nodes).Nodes, func(n tasks.NodeView) bool { return n.Reason == tasks.ReasonBlocked })
}

// cliTime formats a time as the tools do: RFC 3339, UTC, milliseconds.
func cliTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func cliTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := cliTime(*t)
	return &s
}

func cliStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
