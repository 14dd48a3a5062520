package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// taskPollInterval is the pollIntervalMs we suggest: builds and test runs take seconds
// to minutes, and a poll costs a read of the store.
const taskPollInterval = 2 * time.Second

// graphTasks serves the MCP Tasks extension (protocol.TaskStore) over task graphs: a
// task is a graph, its id the graph id tasks_run returned.
type graphTasks struct{ s *Table }

func (g graphTasks) Ready(ctx context.Context) error { return g.s.ready(ctx) }

// Task describes a graph; with withResult, a completed one carries the tasks_status
// result inline, marked isError when the graph failed.
func (g graphTasks) Task(ctx context.Context, id string, withResult bool) (protocol.Task, error) {
	snap, err := g.s.tasks.Snapshot(ctx, id)
	if err != nil {
		return protocol.Task{}, notFound(err)
	}
	t := taskOf(snap)
	if withResult && t.Status == "completed" {
		req := mcp.CallToolRequest{}
		req.Params.Name = tasksStatus.name
		out, text, err := g.s.tasksStatus(ctx, req, statusArgs{GraphID: snap.Graph.ID})
		if err != nil {
			return protocol.Task{}, fmt.Errorf("cannot read the graph's result: %w", err)
		}
		res := mcp.NewToolResultStructured(out, text)
		res.IsError = snap.Progress().State() == tasks.GraphFailed
		t.Result = res
	}
	return t, nil
}

func (g graphTasks) Cancel(ctx context.Context, id string) error {
	_, err := g.s.tasks.Cancel(ctx, id, nil, defaultCancelMs*time.Millisecond)
	return notFound(err)
}

// notFound is err with tasks.ErrNotFound said the protocol's way.
func notFound(err error) error {
	if errors.Is(err, tasks.ErrNotFound) {
		return fmt.Errorf("%w: %w", protocol.ErrTaskNotFound, err)
	}
	return err
}

// taskOf describes a graph as a Task. Its id is the graph id; a running graph is working,
// a cancelled one cancelled, any other finished one completed (a failed graph too: the
// extension's failed status is for JSON-RPC errors only).
func taskOf(snap tasks.Snapshot) protocol.Task {
	p := snap.Progress()
	status := p.State()
	t := protocol.Task{TaskID: snap.Graph.ID, Status: "completed", CreatedAt: timestamp(snap.Graph.CreatedAt),
		PollIntervalMs: taskPollInterval.Milliseconds()}
	switch status {
	case tasks.GraphRunning:
		t.Status = "working"
	case tasks.GraphCancelled:
		t.Status = "cancelled"
	}
	last := snap.Graph.CreatedAt
	later := func(at *time.Time) {
		if at != nil && at.After(last) {
			last = *at
		}
	}
	later(snap.Graph.FinishedAt)
	for _, r := range snap.Tasks {
		later(r.StartedAt)
		later(r.FinishedAt)
	}
	t.LastUpdatedAt = timestamp(last)

	t.StatusMessage = fmt.Sprintf("graph %s: %d/%d tasks done", status, p.Done(), p.Total)
	var parts []string
	for _, st := range []tasks.State{tasks.Failed, tasks.Cancelled, tasks.Skipped, tasks.Running, tasks.Pending} {
		if n := p.Count(st); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) > 0 {
		t.StatusMessage += " (" + strings.Join(parts, ", ") + ")"
	}
	return t
}
