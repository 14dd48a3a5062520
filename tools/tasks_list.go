package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// tasksList is tasks_list: a page of every task of the workspace, with their graphs.
var tasksList = tool[listArgs, tasks.ListReport]{
	name:        "tasks_list",
	description: "Every graph and task of this workspace, newest first, whichever server ran them.",
	annotations: readOnly,
	waits:       neverWaits,
	handle: func(s *Table, ctx context.Context, _ mcp.CallToolRequest, a listArgs) (tasks.ListReport, string, error) {
		out, err := s.tasks.List(ctx, tasks.ListQuery{Status: tasks.State(a.Status), GraphID: a.GraphID, Limit: a.Limit,
			Cursor: a.Cursor, MaxBytes: s.maxResult()})
		if err != nil {
			return tasks.ListReport{}, "", err
		}
		var b strings.Builder
		for _, g := range out.Graphs {
			fmt.Fprintf(&b, "graph %s%s: %s · %d/%d done · created %s\n", g.GraphID, quotedName(g.Name), g.Status,
				g.Progress.Done(), g.Progress.Total, g.CreatedAt)
		}
		for _, note := range out.Notes {
			b.WriteString(note + "\n")
		}
		if len(out.Tasks) == 0 {
			b.WriteString("no tasks match\n")
		} else {
			b.WriteString("\nGRAPH\tTASK\tSTATUS\tEXIT\tERROR\n")
		}
		for _, t := range out.Tasks {
			exit, code := "-", "-"
			if t.ExitCode != nil {
				exit = fmt.Sprint(*t.ExitCode)
			}
			if t.ErrorCode != nil {
				code = *t.ErrorCode
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\n", t.GraphID, t.ID, t.Status, exit, code)
		}
		if out.NextCursor != nil {
			fmt.Fprintf(&b, "more: call tasks_list with cursor %q\n", *out.NextCursor)
		}
		return out, strings.TrimSuffix(b.String(), "\n"), nil
	},
}

// listArgs are tasks_list's arguments; the bound on limit is tasks.MaxListLimit
// (TestSchemas_Bounds).
type listArgs struct {
	Status  tasks.State `json:"status,omitempty" jsonschema:"Only tasks in this state."`
	GraphID string      `json:"graphId,omitempty" jsonschema:"Only this graph's tasks."`
	Limit   int         `json:"limit,omitempty" jsonschema:"Tasks per page. Default 50." toolschema:"minimum=1,maximum=1000"`
	Cursor  string      `json:"cursor,omitempty" jsonschema:"From nextCursor."`
}
