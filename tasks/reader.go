package tasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// Reader is the read side of a workspace's task graphs, the same for every process: the
// stdio server (an Engine is a Reader plus the graphs its runner runs) and the operator
// CLI, which opens a Reader of its own on the store the servers write. It answers from the
// store alone, so what it says is the truth whichever runner runs a graph, and it holds
// every decision an adapter would otherwise repeat: a graph's derived status and
// progress, the live log or the archive, graph summaries by a store query.
type Reader struct {
	db    *store.DB
	ws    *store.Workspace
	where string // names the state in messages
	owned bool   // the Reader opened db and closes it
}

// NewReader reads the store db of workspace ws; the caller keeps db open while the Reader
// is used.
func NewReader(db *store.DB, ws *store.Workspace) *Reader {
	return &Reader{db: db, ws: ws, where: ws.Root}
}

// OpenReader opens the store of an existing workspace for reading, creating nothing: a
// workspace on which no server kept state is store.ErrNoState. Close closes it.
func OpenReader(ctx context.Context, cfg store.WorkspaceConfig) (*Reader, error) {
	ws, err := store.FindWorkspace(cfg)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, ws.DBPath())
	if err != nil {
		return nil, err
	}
	return &Reader{db: db, ws: ws, where: ws.Where(cfg), owned: true}, nil
}

// Close closes the store if OpenReader opened it.
func (r *Reader) Close() error {
	if !r.owned {
		return nil
	}
	return r.db.Close()
}

// Where names the workspace's state in messages: the workspace, or the state dir when one
// was given.
func (r *Reader) Where() string { return r.where }

// LogPath is where a task's live log is written (and stays until the graph expires).
func (r *Reader) LogPath(graphID, taskID string) string {
	return LogPath(r.ws.LogsDir(), graphID, taskID)
}

// Snapshot reads a graph and its tasks from the store.
func (r *Reader) Snapshot(ctx context.Context, graphID string) (Snapshot, error) {
	// Tasks first, then the graph: the transaction that makes the last task terminal also
	// sets the graph's finishedAt, so this order never shows finished tasks in an
	// unfinished graph.
	rows, err := r.db.GraphTasks(ctx, graphID)
	if err != nil {
		return Snapshot{}, err
	}
	g, err := r.graph(ctx, graphID)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Graph: g, Tasks: tasksOf(rows)}, nil
}

func (r *Reader) graph(ctx context.Context, graphID string) (Graph, error) {
	g, err := r.db.GetGraph(ctx, graphID)
	if errors.Is(err, store.ErrNotFound) {
		return Graph{}, fmt.Errorf("graph %q: %w", graphID, ErrNotFound)
	}
	return graphOf(g), err
}

// checkTaskIDs refuses ids that are not tasks of snap.
func checkTaskIDs(snap Snapshot, ids []string) error {
	for _, id := range ids {
		if _, ok := snap.Task(id); !ok {
			return fmt.Errorf("graph %s has no task %q: %w", snap.Graph.ID, id, ErrNotFound)
		}
	}
	return nil
}

// selected reports whether id is among ids, where no ids select every task.
func selected(ids []string, id string) bool {
	return len(ids) == 0 || slices.Contains(ids, id)
}

// Status is a graph as tasks_status shows it: its head and progress and, for each task
// in taskIDs (every task when empty), its state, times and the slice of its log q asks
// for, from the live log or, once the graph expired, from its archive. An unknown task id
// is ErrNotFound.
func (r *Reader) Status(ctx context.Context, snap Snapshot, taskIDs []string, q LogQuery) (StatusReport, error) {
	if err := checkTaskIDs(snap, taskIDs); err != nil {
		return StatusReport{}, err
	}
	if err := q.Check(len(taskIDs)); err != nil {
		return StatusReport{}, err
	}
	p := snap.Progress()
	out := StatusReport{GraphHead: snap.Graph.Head(p), Expired: snap.Graph.ExpiredAt != nil, Progress: p, Tasks: []TaskStatus{}}
	art, err := r.db.GetArtifact(ctx, snap.Graph.ID)
	switch {
	case err == nil:
		out.Artifact = &Artifact{Path: art.Path, Bytes: art.Bytes, SHA256: art.SHA256}
	case !errors.Is(err, store.ErrNotFound):
		return StatusReport{}, err
	}
	now := time.Now()
	for _, t := range snap.Tasks {
		if !selected(taskIDs, t.ID) {
			continue
		}
		slice, err := r.readLog(snap.Graph, out.Artifact, t.ID, q)
		if err != nil {
			return StatusReport{}, err
		}
		out.Tasks = append(out.Tasks, TaskStatus{TaskHead: t.Head(), TaskTimes: t.Times(now), Log: &slice})
	}
	return out, nil
}

// ListQuery selects tasks for List.
type ListQuery struct {
	Status  State  // "" = any
	GraphID string // "" = every graph
	Limit   int    // 0 = DefaultListLimit
	Cursor  string // NextCursor of the previous page
}

// Bounds of a List page.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// ListReport is a page of the workspace's tasks, newest graph first and each graph's
// tasks in submitted order, with summaries of the graphs on the page. NextCursor is nil on
// the last page.
type ListReport struct {
	Tasks      []ListedTask   `json:"tasks"`
	Graphs     []GraphSummary `json:"graphs"`
	NextCursor *string        `json:"nextCursor"`
}

// List reads a page of every task in the workspace, whichever runner ran it. The graph
// summaries come from a count per graph, so a page costs what its graphs hold, not the
// workspace.
func (r *Reader) List(ctx context.Context, q ListQuery) (ListReport, error) {
	if q.Status != "" && !slices.Contains(States, q.Status) {
		return ListReport{}, fmt.Errorf("%w: status must be one of %v, got %q", ErrInvalid, States, q.Status)
	}
	if q.Limit < 0 || q.Limit > MaxListLimit {
		return ListReport{}, fmt.Errorf("%w: limit must be 1..%d, got %d", ErrInvalid, MaxListLimit, q.Limit)
	}
	f := store.ListFilter{GraphID: q.GraphID, Limit: orDefault(q.Limit, DefaultListLimit), Cursor: q.Cursor}
	if q.Status != "" {
		f.Statuses = []string{string(q.Status)}
	}
	rows, next, err := r.db.ListTasks(ctx, f)
	if errors.Is(err, store.ErrBadCursor) {
		return ListReport{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err != nil {
		return ListReport{}, err
	}
	out := ListReport{Tasks: make([]ListedTask, 0, len(rows)), Graphs: []GraphSummary{}}
	if next != "" {
		out.NextCursor = &next
	}
	now := time.Now()
	var ids []string
	for _, row := range rows {
		t := taskOf(row)
		out.Tasks = append(out.Tasks, ListedTask{GraphID: t.GraphID, ID: t.ID, Status: t.Status, ErrorCode: t.ErrorCode,
			ExitCode: t.ExitCode, TaskTimes: t.Times(now)})
		if !slices.Contains(ids, t.GraphID) {
			ids = append(ids, t.GraphID)
		}
	}
	counts, err := r.db.CountTasks(ctx, ids)
	if err != nil {
		return ListReport{}, err
	}
	for _, id := range ids {
		g, err := r.graph(ctx, id) // after the counts: see Snapshot
		if err != nil {
			return ListReport{}, err
		}
		p := progressOfCounts(counts[id])
		out.Graphs = append(out.Graphs, GraphSummary{GraphHead: g.Head(p), Expired: g.ExpiredAt != nil, Progress: p})
	}
	return out, nil
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// GraphQuery selects graphs for Graphs.
type GraphQuery struct {
	States []GraphState // any when empty
	Limit  int          // the most graphs returned; at least 1
}

// graphBatch is how many graphs Graphs reads at a time while it looks for ones that match.
const graphBatch = 100

// Graphs returns the newest graphs whose status is one of q.States, up to q.Limit, and
// whether older ones match too. It counts each graph's tasks by a store query, so it costs
// in proportion to the graphs it reads (those returned and the newer ones a filter leaves
// out), never to every task of the workspace.
func (r *Reader) Graphs(ctx context.Context, q GraphQuery) ([]Overview, bool, error) {
	for _, s := range q.States {
		if !slices.Contains(GraphStates, s) {
			return nil, false, fmt.Errorf("%w: a graph's status is one of %v, got %q", ErrInvalid, GraphStates, s)
		}
	}
	if q.Limit < 1 {
		return nil, false, fmt.Errorf("%w: limit must be 1 or more, got %d", ErrInvalid, q.Limit)
	}
	now := time.Now()
	runners := map[string]RunnerInfo{}
	var out []Overview
	before := ""
	for {
		rows, err := r.db.ListGraphs(ctx, before, graphBatch)
		if err != nil || len(rows) == 0 {
			return out, false, err
		}
		before = rows[len(rows)-1].ID
		ids := make([]string, len(rows))
		for i, g := range rows {
			ids[i] = g.ID
		}
		counts, err := r.db.CountTasks(ctx, ids)
		if err != nil {
			return nil, false, err
		}
		for _, id := range ids {
			p := progressOfCounts(counts[id])
			if len(q.States) > 0 && !slices.Contains(q.States, p.State()) {
				continue
			}
			if len(out) == q.Limit {
				return out, true, nil
			}
			g, err := r.graph(ctx, id) // after the counts: see Snapshot
			if err != nil {
				return nil, false, err
			}
			ri, ok := runners[g.RunnerID]
			if !ok {
				if ri, err = r.Runner(ctx, g.RunnerID, now); err != nil {
					return nil, false, err
				}
				runners[g.RunnerID] = ri
			}
			out = append(out, Overview{GraphHead: g.Head(p), DurationMs: g.DurationMs(now), Progress: p, Runner: ri})
		}
		if len(rows) < graphBatch {
			return out, false, nil
		}
	}
}

// Runner reads the runner with the given id and whether it is live at now.
func (r *Reader) Runner(ctx context.Context, id string, now time.Time) (RunnerInfo, error) {
	row, err := r.db.GetRunner(ctx, id)
	if err != nil {
		return RunnerInfo{}, err
	}
	return RunnerInfo{ID: row.ID, Pid: row.Pid, Hostname: row.Hostname, Live: row.Live(now)}, nil
}

// Detail is a graph as `mcp-harness tasks status` shows it: its overview and every task
// with its command and where its log is.
func (r *Reader) Detail(ctx context.Context, snap Snapshot) (Detail, error) {
	now := time.Now()
	ri, err := r.Runner(ctx, snap.Graph.RunnerID, now)
	if err != nil {
		return Detail{}, err
	}
	p := snap.Progress()
	out := Detail{
		Overview: Overview{GraphHead: snap.Graph.Head(p), DurationMs: snap.Graph.DurationMs(now), Progress: p, Runner: ri},
		Tasks:    make([]TaskDetail, 0, len(snap.Tasks)),
	}
	for _, t := range snap.Tasks {
		out.Tasks = append(out.Tasks, TaskDetail{TaskHead: t.Head(), Command: t.Command, TaskTimes: t.Times(now),
			LogPath: r.LogPath(snap.Graph.ID, t.ID)})
	}
	return out, nil
}
