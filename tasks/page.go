package tasks

import (
	"context"
	"fmt"
	"math"

	"github.com/mcp-harness/mcp-harness/store"
)

// PageView is what StatusPage read of a graph besides its report: the graph's head and
// the tasks it read for the page, in the page's order (the page may show fewer of them).
type PageView struct {
	Graph Graph
	Tasks []Task
}

// Task returns the task with the given id among those the page read.
func (v PageView) Task(id string) (Task, bool) {
	return Snapshot{Tasks: v.Tasks}.Task(id)
}

// pageChunk is how many tasks a page reads from the store at a time: a default page of
// tasks without logs holds about a hundred, one with log tails fewer.
const pageChunk = 32

// pageGroup is one rank of the page's order (see rank): the statuses it holds, or with
// except every status but those.
type pageGroup struct {
	rank     int
	statuses []string
	except   bool
}

var pageGroups = []pageGroup{
	{rank: 0, statuses: []string{string(Failed)}},
	{rank: 1, statuses: []string{string(Running)}},
	{rank: 2, statuses: []string{string(Failed), string(Running)}, except: true},
}

// StatusPage is Status of the graph as it is now, for a query without TaskIDs (q.TaskIDs
// is ignored: a caller that names tasks uses Snapshot and Status). It answers the same as
// Status(ctx, Snapshot(graphID), q) but reads from the store only the graph's counts per
// status and the tasks the page can hold, a chunk at a time in the page's order, all in
// one read transaction: what a page costs follows the page, not the graph (issue 29).
func (r *Reader) StatusPage(ctx context.Context, graphID string, q StatusQuery) (StatusReport, PageView, error) {
	q.TaskIDs = nil
	var out StatusReport
	var view PageView
	err := r.db.ReadGraphPage(ctx, graphID, func(gp *store.GraphPage) error {
		// Pending is what most tasks of a large graph are: it is counted as the rest.
		var others []string
		for _, st := range States() {
			if st != Pending {
				others = append(others, string(st))
			}
		}
		counts, total, err := gp.Counts(others)
		if err != nil {
			return err
		}
		counted := 0
		for _, n := range counts {
			counted += n
		}
		if total > counted {
			counts[string(Pending)] = total - counted
		}
		// An unknown graph is reported before a bad query, as Status after Snapshot does.
		if total == 0 {
			if _, err := r.graph(ctx, graphID); err != nil {
				return err
			}
		}
		if err := q.Log.Check(0); err != nil {
			return err
		}
		after, err := parsePagePos("tasks_status", q.Cursor)
		if err != nil {
			return err
		}
		p := progressOfCounts(counts)
		// Each rank's tasks from the cursor on: how many, and those read so far.
		type group struct {
			pageGroup
			from  int // the tasks after this seq
			n     int
			tasks []Task
		}
		var groups []*group
		total = 0
		for _, pg := range pageGroups {
			g := &group{pageGroup: pg, from: math.MinInt32}
			switch {
			case after != nil && after.Rank > pg.rank:
				continue
			case after != nil && after.Rank == pg.rank:
				g.from = after.Seq
				if g.n, err = gp.CountAfter(pg.statuses, pg.except, g.from); err != nil {
					return err
				}
			default:
				g.n = countOf(counts, p, pg)
			}
			total += g.n
			groups = append(groups, g)
		}
		at := func(i int) (Task, error) {
			for _, g := range groups {
				if i >= g.n {
					i -= g.n
					continue
				}
				for i >= len(g.tasks) {
					from := g.from
					if len(g.tasks) > 0 {
						from = g.tasks[len(g.tasks)-1].Seq
					}
					rows, err := gp.Tasks(g.statuses, g.except, from, pageChunk)
					if err != nil {
						return Task{}, err
					}
					if len(rows) == 0 {
						// Counted and read in one transaction, so this cannot happen; an
						// empty read must not loop.
						return Task{}, fmt.Errorf("graph %s: its tasks changed while a page was read", graphID)
					}
					ts := tasksOf(rows)
					g.tasks = append(g.tasks, ts...)
					view.Tasks = append(view.Tasks, ts...)
				}
				return g.tasks[i], nil
			}
			return Task{}, fmt.Errorf("graph %s: task %d of a page of %d", graphID, i, total)
		}
		// The graph after its tasks, as Snapshot reads it; a graph with no tasks is one
		// that is not there, and r.graph says so.
		g, err := r.graph(ctx, graphID)
		if err != nil {
			return err
		}
		view.Graph = g
		out, err = r.status(ctx, g, p, pageSource{n: total, at: at}, q)
		return err
	})
	if err != nil {
		return StatusReport{}, PageView{}, err
	}
	return out, view, nil
}

// countOf is how many of the graph's tasks, counted per status, a page group holds.
func countOf(counts map[string]int, p Progress, g pageGroup) int {
	n := 0
	for _, s := range g.statuses {
		n += counts[s]
	}
	if g.except {
		return p.Total - n
	}
	return n
}

// SlotWaitPage is SlotWait for a graph StatusPage read, whose tasks count p: whether the
// graph has ready tasks comes from the engine's own queues when this runner runs the graph
// (a whole Snapshot is read otherwise), and the tasks that hold slots from the store's
// running tasks, so a page of a large graph does not read the graph for its note.
func (e *Engine) SlotWaitPage(ctx context.Context, v PageView, p Progress) (*SlotWait, error) {
	if p.Running == 0 {
		return nil, nil // as SlotWait: a ready task is about to start
	}
	e.mu.Lock()
	g, ours := e.graphs[v.Graph.ID]
	var readyLocal, readyRemote bool
	if ours {
		readyLocal, readyRemote = len(g.ready) > 0, len(g.readyPods) > 0
	}
	e.mu.Unlock()
	if !ours {
		snap, err := e.Snapshot(ctx, v.Graph.ID)
		if err != nil {
			return nil, err
		}
		return e.SlotWait(ctx, snap)
	}
	if !readyLocal && !readyRemote {
		return nil, nil
	}
	running, err := e.cfg.DB.RunningTasks(ctx, v.Graph.RunnerID)
	if err != nil {
		return nil, err
	}
	var own []SlotOwner
	for _, t := range running {
		if t.GraphID == v.Graph.ID {
			own = append(own, SlotOwner{GraphID: t.GraphID, TaskID: t.ID, StartedAt: TimeOf(t.StartedAt)})
		}
	}
	if len(own) == 0 {
		return nil, nil
	}
	if len(own) >= v.Graph.MaxParallel {
		limit := v.Graph.MaxParallel
		sortOwners(own)
		return &SlotWait{Cap: CapGraph, Limit: &limit, HeldBy: own}, nil
	}
	w := &SlotWait{Cap: CapServer, HeldBy: make([]SlotOwner, 0, len(running))}
	remote := readyRemote && !readyLocal
	if remote {
		w.Cap = CapPods
	}
	for _, t := range running {
		if (t.Executor == string(ExecutorKubernetes)) == remote {
			w.HeldBy = append(w.HeldBy, SlotOwner{GraphID: t.GraphID, TaskID: t.ID, StartedAt: TimeOf(t.StartedAt)})
		}
	}
	return w, nil
}
