package tasks

// This file holds the reads across a workspace rather than of one graph: List (tasks_list),
// Graphs (the CLI's listing), and the runner and detail views of the operator CLI.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/fit"
)

// ListQuery selects tasks for List.
type ListQuery struct {
	Status   State  // "" = any
	GraphID  string // "" = every graph
	Limit    int    // 0 = DefaultListLimit
	Cursor   string // NextCursor of the previous page
	MaxBytes int    // the page's budget as JSON (see fit.go); 0 = DefaultMaxResult
}

// Bounds of a List page.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
	// MaxCursorBytes is far longer than any cursor List hands out (a graph id and a
	// number): a longer one is refused before it reaches the store.
	MaxCursorBytes = 200
)

// ListReport is a page of the workspace's tasks, newest graph first and each graph's
// tasks in submitted order, with summaries of the graphs on the page. NextCursor is nil on
// the last page. Notes say in words when the page was cut to fit (adapters show them; they
// are not part of the JSON).
type ListReport struct {
	Tasks      []ListedTask   `json:"tasks"`
	Graphs     []GraphSummary `json:"graphs"`
	NextCursor *string        `json:"nextCursor"`
	Notes      []string       `json:"-"`
}

// List reads a page of every task in the workspace, whichever runner ran it: up to
// q.Limit tasks, fewer when they do not fit q.MaxBytes. The graph summaries come from a
// count per graph, so a page costs what its graphs hold, not the workspace.
func (r *Reader) List(ctx context.Context, q ListQuery) (ListReport, error) {
	if q.Status != "" && !slices.Contains(States(), q.Status) {
		return ListReport{}, invalid("status must be one of %v, got %s", States(), quote.Short(string(q.Status)))
	}
	if q.Limit < 0 || q.Limit > MaxListLimit {
		return ListReport{}, invalid("limit must be 1..%d, got %d", MaxListLimit, q.Limit)
	}
	if len(q.Cursor) > MaxCursorBytes {
		return ListReport{}, invalid("cursor %s is %d bytes, longer than any cursor tasks_list returns; pass the nextCursor of the previous page, or none for the first page",
			quote.Short(q.Cursor), len(q.Cursor))
	}
	f := store.ListFilter{GraphID: q.GraphID, Limit: orDefault(q.Limit, DefaultListLimit), Cursor: q.Cursor}
	if q.Status != "" {
		f.Statuses = []string{string(q.Status)}
	}
	rows, next, err := r.db.ListTasks(ctx, f)
	if errors.Is(err, store.ErrBadCursor) {
		return ListReport{}, invalid("cursor %s is not one tasks_list returned; pass the nextCursor of the previous page, or none for the first page", quote.Short(q.Cursor))
	}
	if err != nil {
		return ListReport{}, fmt.Errorf("list the tasks: %w", err)
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
	limit := fit.Budget(q.MaxBytes)
	if fit.Size(out) <= limit {
		return out, nil
	}
	// Too large: keep the tasks (and their graphs' summaries) that fit, and ask the store
	// for the cursor after the last of them.
	head := ListReport{Tasks: []ListedTask{}, Graphs: []GraphSummary{}, NextCursor: &[]string{rows[len(rows)-1].GraphID + ".999999"}[0]}
	used := fit.Size(head)
	shown := map[string]bool{}
	k := 0
	for _, t := range out.Tasks {
		s := fit.Size(t) + 1
		if !shown[t.GraphID] {
			s += fit.Size(out.Graphs[slices.IndexFunc(out.Graphs, func(g GraphSummary) bool { return g.GraphID == t.GraphID })]) + 1
		}
		if used+s > limit && k > 0 {
			break
		}
		used += s
		shown[t.GraphID] = true
		k++
	}
	f.Limit = k
	if _, next, err = r.db.ListTasks(ctx, f); err != nil {
		return ListReport{}, fmt.Errorf("list the tasks: %w", err)
	}
	out.Tasks = out.Tasks[:k]
	out.Graphs = slices.DeleteFunc(out.Graphs, func(g GraphSummary) bool { return !shown[g.GraphID] })
	out.NextCursor = nil
	if next != "" {
		out.NextCursor = &next
	}
	out.Notes = append(out.Notes, fmt.Sprintf("The page holds %s instead of %d: the result is limited to %s; pass nextCursor for the rest.",
		fit.Plural(k, "task"), len(rows), fit.SizeText(limit)))
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
		if !slices.Contains(GraphStates(), s) {
			return nil, false, invalid("a graph's status is one of %v, got %s", GraphStates(), quote.Short(string(s)))
		}
	}
	if q.Limit < 1 {
		return nil, false, invalid("limit must be 1 or more, got %d", q.Limit)
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
		out.Tasks = append(out.Tasks, TaskDetail{TaskHead: t.Head(), Command: t.Command, TaskTimes: t.Times(now), RanOn: t.RanOn(),
			LogPath: r.LogPath(snap.Graph.ID, t.ID)})
	}
	return out, nil
}
