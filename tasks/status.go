package tasks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// Snapshot is a graph and its tasks as stored.
type Snapshot struct {
	Graph store.GraphRow
	Tasks []store.TaskRow // in submitted order
}

// Snapshot reads a graph from the store: the truth whichever runner runs it.
func (e *Engine) Snapshot(ctx context.Context, graphID string) (Snapshot, error) {
	// Tasks first, then the graph: the transaction that makes the last task terminal also
	// sets the graph's finishedAt, so this order never shows finished tasks in an
	// unfinished graph.
	tasks, err := e.cfg.DB.GraphTasks(ctx, graphID)
	if err != nil {
		return Snapshot{}, err
	}
	g, err := e.cfg.DB.GetGraph(ctx, graphID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Snapshot{}, fmt.Errorf("graph %q: %w", graphID, ErrNotFound)
		}
		return Snapshot{}, err
	}
	return Snapshot{Graph: g, Tasks: tasks}, nil
}

// Until says what a Wait waits for.
type Until string

// What a Wait can wait for.
const (
	UntilDone   Until = "done"   // every selected task is terminal
	UntilChange Until = "change" // any selected task changes state (or starts a new attempt)
)

// foreignPoll is how often a wait re-reads a graph that another runner runs: that
// runner's changes reach this process only through the store.
const foreignPoll = 200 * time.Millisecond

// Wait blocks until the selected tasks of a graph (every task when taskIDs is empty) are
// all terminal, or, with UntilChange, until any of them changes state from what it was
// when Wait was called, or until ctx ends. It returns the last snapshot it read and
// whether the condition was met. Unknown task ids are an error.
func (e *Engine) Wait(ctx context.Context, graphID string, taskIDs []string, until Until) (Snapshot, bool, error) {
	baseline := ""
	return e.WaitFor(ctx, graphID, func(s Snapshot) (bool, error) {
		if err := checkTaskIDs(s, taskIDs); err != nil {
			return false, err
		}
		if until != UntilChange {
			return allTerminal(s, taskIDs), nil
		}
		if baseline == "" {
			baseline = fingerprint(s, taskIDs)
			return false, nil
		}
		return fingerprint(s, taskIDs) != baseline, nil
	})
}

// WaitFor blocks until cond holds for the graph as stored, checking it on the state at the
// call and after every change, or until ctx ends. It returns the last snapshot it read and
// whether cond held; an error from cond ends the wait with that error.
func (e *Engine) WaitFor(ctx context.Context, graphID string, cond func(Snapshot) (bool, error)) (Snapshot, bool, error) {
	var poll <-chan time.Time
	var snap Snapshot
	version := int64(-1)
	for {
		changed := e.changes.watch(graphID)
		// Read after taking the channel: a change committed from here on closes it.
		v, err := e.cfg.DB.GraphVersion(ctx, graphID)
		if err != nil {
			if version < 0 {
				if errors.Is(err, store.ErrNotFound) {
					return Snapshot{}, false, fmt.Errorf("graph %q: %w", graphID, ErrNotFound)
				}
				return Snapshot{}, false, err
			}
			return snap, false, nil // ctx ended mid-read
		}
		if v != version {
			version = v
			if snap, err = e.Snapshot(ctx, graphID); err != nil {
				return snap, false, nil
			}
			ok, err := cond(snap)
			if err != nil || ok {
				return snap, ok, err
			}
			if poll == nil && snap.Graph.RunnerID != e.cfg.RunnerID {
				t := time.NewTicker(foreignPoll)
				defer t.Stop()
				poll = t.C
			}
		}
		select {
		case <-changed:
		case <-poll:
		case <-ctx.Done():
			return snap, false, nil
		}
	}
}

func checkTaskIDs(s Snapshot, ids []string) error {
	for _, id := range ids {
		found := false
		for _, t := range s.Tasks {
			if t.ID == id {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("graph %s has no task %q: %w", s.Graph.ID, id, ErrNotFound)
		}
	}
	return nil
}

func selected(ids []string, id string) bool {
	return len(ids) == 0 || contains(ids, id)
}

func allTerminal(s Snapshot, ids []string) bool {
	for _, t := range s.Tasks {
		if selected(ids, t.ID) && !State(t.Status).Terminal() {
			return false
		}
	}
	return true
}

// fingerprint sums up the selected tasks' states, attempts included.
func fingerprint(s Snapshot, ids []string) string {
	b := make([]byte, 0, 16*len(s.Tasks))
	for _, t := range s.Tasks {
		if selected(ids, t.ID) {
			b = append(b, t.ID...)
			b = append(b, ':')
			b = append(b, t.Status...)
			b = strconv.AppendInt(b, int64(t.Attempt), 10)
			b = append(b, ';')
		}
	}
	return string(b)
}

// GraphStatus derives a graph's status from its tasks: running while any task is pending
// or running, else failed if any failed, else cancelled if any was cancelled or skipped,
// else succeeded.
func GraphStatus(tasks []store.TaskRow) string {
	var failed, cancelled bool
	for _, t := range tasks {
		switch State(t.Status) {
		case Pending, Running:
			return "running"
		case Failed:
			failed = true
		case Cancelled, Skipped:
			cancelled = true
		}
	}
	switch {
	case failed:
		return "failed"
	case cancelled:
		return "cancelled"
	}
	return "succeeded"
}

// Page is one page of the workspace's task list with the graphs it touches.
type Page struct {
	Tasks  []store.TaskRow
	Next   string     // cursor of the next page; "" on the last
	Graphs []Snapshot // the graphs of Tasks, in the order they first appear
}

// List reads a page of every task in the workspace, whichever runner ran it.
func (e *Engine) List(ctx context.Context, f store.ListFilter) (Page, error) {
	ts, next, err := e.cfg.DB.ListTasks(ctx, f)
	if err != nil {
		if errors.Is(err, store.ErrBadCursor) {
			return Page{}, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return Page{}, err
	}
	p := Page{Tasks: ts, Next: next}
	seen := map[string]bool{}
	for _, t := range ts {
		if seen[t.GraphID] {
			continue
		}
		seen[t.GraphID] = true
		snap, err := e.Snapshot(ctx, t.GraphID)
		if err != nil {
			return Page{}, err
		}
		p.Graphs = append(p.Graphs, snap)
	}
	return p, nil
}
