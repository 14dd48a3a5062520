package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// tasksGraph is tasks_graph: why pending tasks have not started, and the graph's shape.
var tasksGraph = tool[graphArgs, tasks.Report]{
	name: "tasks_graph",
	description: "Why a graph's pending tasks have not started: ready (no free slot), waiting (on dependencies) or blocked " +
		"(a dependency failed: to be skipped); a topological order; a Mermaid chart of small graphs.",
	annotations: readOnly,
	waits:       neverWaits,
	adjustOutput: func(out map[string]any) {
		setAt(out, []string{"nodes", "[]", "reason"}, enumOf(tasks.ReasonReady, tasks.ReasonWaiting, tasks.ReasonBlocked))
	},
	handle: func(s *Table, ctx context.Context, _ mcp.CallToolRequest, a graphArgs) (tasks.Report, string, error) {
		if a.GraphID == "" {
			return tasks.Report{}, "", invalidf("graphId is required: use the id tasks_run returned (tasks_list shows them)")
		}
		snap, err := s.tasks.Snapshot(ctx, a.GraphID)
		if err != nil {
			return tasks.Report{}, "", err
		}
		out, err := tasks.ExplainPage(snap, tasks.PageQuery{Cursor: a.Cursor, MaxBytes: s.maxResult()})
		if err != nil {
			return tasks.Report{}, "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "graph %s%s: %s, %d task(s)\n", snap.Graph.ID, quotedName(snap.Graph.Name), out.Status, len(snap.Tasks))
		for _, note := range out.Notes {
			b.WriteString(note + "\n")
		}
		if note := s.slotNote(ctx, snap); note != "" {
			b.WriteString(note + "\n")
		}
		for _, n := range out.Nodes {
			line := fmt.Sprintf("%s%s [%s]", strings.Repeat("  ", min(n.Depth, 20)), n.ID, n.Status)
			if n.Reason != nil {
				line += " " + *n.Reason
				switch {
				case len(n.WaitingOn) > 0:
					line += " on " + depList(n.WaitingOn)
				case len(n.BlockedBy) > 0:
					line += " by " + depList(n.BlockedBy)
				}
			}
			b.WriteString(line + "\n")
		}
		if out.Mermaid != nil {
			b.WriteString("\n```mermaid\n" + *out.Mermaid + "\n```")
		}
		return out, strings.TrimSuffix(b.String(), "\n"), nil
	},
}

type graphArgs struct {
	GraphID string `json:"graphId" jsonschema:"From tasks_run." toolschema:"required"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"From nextCursor."`
}

// depList names dependencies with their states: "build (failed), lint (running)".
func depList(ds []tasks.DepState) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s (%s)", d.ID, d.Status)
	}
	return strings.Join(parts, ", ")
}
