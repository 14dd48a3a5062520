package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// defaultCancelMs is tasks_cancel's graceMs when none is given.
const defaultCancelMs = 5000

// tasksCancel is tasks_cancel: cancel a graph's unfinished tasks.
var tasksCancel = tool[cancelArgs, tasks.CancelReport]{
	name: "tasks_cancel",
	description: "Cancel a graph's unfinished tasks (or taskIds): pending at once, running ones SIGTERM then SIGKILL after graceMs; " +
		"dependents are skipped. Idempotent.",
	annotations: mcp.ToolAnnotation{DestructiveHint: ptr(true), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)},
	waits:       neverWaits,
	handle: func(s *Table, ctx context.Context, _ mcp.CallToolRequest, a cancelArgs) (tasks.CancelReport, string, error) {
		if a.GraphID == "" {
			return tasks.CancelReport{}, "", invalidf("graphId is required: use the id tasks_run returned (tasks_list shows them)")
		}
		var cut clampNotes
		grace, err := cut.ms("graceMs", a.GraceMs, defaultCancelMs*time.Millisecond, maxGraceMs*time.Millisecond, ", the longest grace")
		if err != nil {
			return tasks.CancelReport{}, "", err
		}
		res, err := s.tasks.Cancel(ctx, a.GraphID, a.TaskIDs, grace)
		if err != nil {
			return tasks.CancelReport{}, "", err
		}
		out := tasks.FitCancel(tasks.CancelReport{GraphID: a.GraphID, Tasks: res}, s.maxResult())
		return out, cancelText(out, res, cut), nil
	},
}

type cancelArgs struct {
	GraphID string   `json:"graphId" jsonschema:"From tasks_run." toolschema:"required"`
	TaskIDs []string `json:"taskIds,omitempty" jsonschema:"Only these tasks."`
	GraceMs *int64   `json:"graceMs,omitempty" jsonschema:"Default 5000, at most 60000."`
}

// cancelText counts the outcomes of a cancel, then lists those of the page.
func cancelText(out tasks.CancelReport, all []tasks.CancelOutcome, cut clampNotes) string {
	var b strings.Builder
	counts := map[tasks.Outcome]int{}
	for _, r := range all {
		counts[r.Outcome]++
	}
	fmt.Fprintf(&b, "graph %s: %d task(s) concerned", out.GraphID, len(all))
	var parts []string
	for _, o := range tasks.Outcomes() {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	b.WriteString("\n")
	for _, note := range cut {
		b.WriteString(note + "\n")
	}
	for _, r := range out.Tasks {
		fmt.Fprintf(&b, "%s\t%s -> %s\t%s\n", r.ID, r.PreviousStatus, r.Status, r.Outcome)
	}
	if out.OmittedTasks > 0 {
		fmt.Fprintf(&b, "(%d more not listed, to keep this result small; tasks_status shows every task's state)\n", out.OmittedTasks)
	}
	if counts[tasks.OutcomeCancelling] > 0 {
		b.WriteString("running tasks were signalled; tasks_status with waitMs shows when they have stopped\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
