package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// Bounds on tasks_* arguments that the engine leaves to its callers.
const (
	defaultCancelMs = 5000
	// textTableRows and textLogTasks bound the text a model reads for a big graph; the
	// structured result always has every task.
	textTableRows = 100
	textLogTasks  = 20
)

type taskArg struct {
	ID         string            `json:"id"`
	Command    string            `json:"command"`
	DependsOn  []string          `json:"dependsOn,omitempty"`
	Cwd        string            `json:"cwd,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	TimeoutSec int               `json:"timeoutSec,omitempty"`
	Retries    int               `json:"retries,omitempty"`
}

type runArgs struct {
	Tasks          []taskArg `json:"tasks"`
	Name           string    `json:"name,omitempty"`
	MaxParallel    int       `json:"maxParallel,omitempty"`
	FailFast       bool      `json:"failFast,omitempty"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
}

type statusArgs struct {
	GraphID   string   `json:"graphId"`
	TaskIDs   []string `json:"taskIds,omitempty"`
	LogTail   *int64   `json:"logTail,omitempty"`
	LogOffset *int64   `json:"logOffset,omitempty"`
	LogLimit  *int64   `json:"logLimit,omitempty"`
	WaitMs    *int64   `json:"waitMs,omitempty"`
	Until     string   `json:"until,omitempty"`
}

type listArgs struct {
	Status  string `json:"status,omitempty"`
	GraphID string `json:"graphId,omitempty"`
	Limit   int    `json:"limit,omitempty"`
	Cursor  string `json:"cursor,omitempty"`
}

type cancelArgs struct {
	GraphID string   `json:"graphId"`
	TaskIDs []string `json:"taskIds,omitempty"`
	GraceMs *int64   `json:"graceMs,omitempty"`
}

type graphArgs struct {
	GraphID string `json:"graphId"`
}

// runResult is the tasks_run result.
type runResult struct {
	GraphID string           `json:"graphId"`
	Name    string           `json:"name"`
	Status  tasks.GraphState `json:"status"`
	Created bool             `json:"created"`
	Tasks   []taskBrief      `json:"tasks"`
}

type taskBrief struct {
	ID     string      `json:"id"`
	Status tasks.State `json:"status"`
}

var (
	stateEnum    = tasks.States
	graphIDProp  = str("Graph id returned by tasks_run (tasks_list shows them).")
	progressProp = object(schema{
		"total": integer("Tasks in the graph.", 0), "pending": integer("Waiting to start.", 0),
		"running": integer("Running now.", 0), "succeeded": integer("Exited 0.", 0),
		"failed": integer("Failed (see errorCode).", 0), "cancelled": integer("Cancelled.", 0),
		"skipped": integer("Skipped because a dependency did not succeed.", 0),
		"percent": integer("Finished tasks as a percentage of all.", 0, 100),
	}, "total", "pending", "running", "succeeded", "failed", "cancelled", "skipped", "percent")
	nullableTime = nullable(str("RFC 3339 time, UTC, milliseconds."))
)

// taskTools are the task tools, each built by its constructor below.
func (s *Server) taskTools() []server.ServerTool {
	return []server.ServerTool{s.tasksRunTool(), s.tasksStatusTool(), s.tasksListTool(), s.tasksCancelTool(), s.tasksGraphTool()}
}

func (s *Server) tasksRunTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_run",
		mcp.WithDescription("Submit a graph of shell commands with dependencies (builds, test suites, multi-step workflows). "+
			"Returns at once with a graphId; the tasks run detached, each as soon as its dependencies succeed, with output to a log file. "+
			"Tasks have no terminal and read no input, so a command that asks a question fails instead of hanging: pass --yes style flags. "+
			"Follow with tasks_status (waitMs to wait). Use shell_open instead for interactive programs."),
		inputSchema(object(schema{
			"tasks": array("The tasks. One invalid task refuses the whole graph (nothing is stored or started).", object(schema{
				"id":         schema{"type": "string", "description": "Unique id in the graph: letters, digits, '.', '_', '-'; at most 64; starts with a letter or digit.", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
				"command":    str("Shell command line, run with bash -c in its own process group."),
				"dependsOn":  array("Ids of tasks that must succeed first. If one fails or is cancelled, this task is skipped.", schema{"type": "string"}),
				"cwd":        str("Working directory relative to the workspace root (or absolute inside it). Default: the root."),
				"env":        stringMap("Environment variables added to the server's (they override the defaults GIT_TERMINAL_PROMPT=0, PAGER=cat)."),
				"timeoutSec": integer("Kill the task (SIGTERM, then SIGKILL) after this many seconds; it fails with TIMEOUT. Default: no timeout.", 0),
				"retries":    integer("Run a failed task again up to this many times. Default 0.", 0, tasks.MaxRetries),
			}, "id", "command")),
			"name":           str("A label for the graph."),
			"maxParallel":    integer("Most tasks of this graph running at once. Default: the CPU count.", 1),
			"failFast":       boolean("Cancel the rest of the graph at the first failure. Default false: independent branches go on (like make -k)."),
			"idempotencyKey": str("A key of your choosing: submitting again with the same key returns the graph the first call created instead of starting it twice (safe to retry after a timeout)."),
		}, "tasks")),
		outputSchema(object(schema{
			"graphId": str("The graph's id."),
			"name":    str("Its label."),
			"status":  enum("The graph's derived status.", tasks.GraphStates...),
			"created": boolean("False when idempotencyKey matched an existing graph (returned instead)."),
			"tasks": array("Each task's status.", object(schema{
				"id": str("Task id."), "status": enum("Task state.", stateEnum...),
			}, "id", "status")),
		}, "graphId", "name", "status", "created", "tasks")),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, _ mcp.CallToolRequest, a runArgs) (*mcp.CallToolResult, error) {
			spec := tasks.Spec{Name: a.Name, MaxParallel: a.MaxParallel, FailFast: a.FailFast, IdempotencyKey: a.IdempotencyKey}
			for _, t := range a.Tasks {
				spec.Tasks = append(spec.Tasks, tasks.TaskSpec{ID: t.ID, Command: t.Command, DependsOn: t.DependsOn, Cwd: t.Cwd,
					Env: t.Env, TimeoutSec: t.TimeoutSec, Retries: t.Retries})
			}
			sub, err := s.tasks.Submit(ctx, spec)
			if err != nil {
				return nil, err
			}
			out := runResult{GraphID: sub.Graph.ID, Name: sub.Graph.Name, Status: sub.Progress().State(), Created: sub.Created, Tasks: []taskBrief{}}
			for _, t := range sub.Tasks {
				out.Tasks = append(out.Tasks, taskBrief{ID: t.ID, Status: t.Status})
			}
			verb := "submitted"
			if !sub.Created {
				verb = "already submitted with this idempotencyKey; nothing new was started"
			}
			text := fmt.Sprintf("graph %s%s: %d task(s) %s.\nFollow it with tasks_status {\"graphId\": %q, \"waitMs\": 30000}.",
				sub.Graph.ID, quotedName(sub.Graph.Name), len(sub.Tasks), verb, sub.Graph.ID)
			return mcp.NewToolResultStructured(out, text), nil
		})
}

func (s *Server) tasksStatusTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_status",
		mcp.WithDescription("Progress of a task graph and each task's state, exit code, timings and the tail of its log. "+
			"With waitMs it waits (up to the server's --max-wait) until the graph (or the named tasks) is finished, or with until=change until anything changes: no need to poll in a loop. "+
			"For one task, logOffset/logLimit page through its whole log."),
		inputSchema(object(schema{
			"graphId":   graphIDProp,
			"taskIds":   array("Only these tasks (default: all).", schema{"type": "string"}),
			"logTail":   integer("Bytes from the end of each task's log. Default 2048, at most 65536; 0 for none.", 0, tasks.MaxLogTail),
			"logOffset": integer("With exactly one task id: read its log from this byte offset instead of the tail (use the previous nextOffset to page).", 0),
			"logLimit":  integer("With logOffset: bytes to read. Default 65536, at most 1048576.", 1, tasks.MaxLogSlice),
			"waitMs":    integer("Wait up to this long first (clamped to --max-wait). Default 0: answer at once.", 0),
			"until":     enum("What waitMs waits for: done (every selected task finished, the default) or change (any selected task changes state).", "done", "change"),
		}, "graphId")),
		outputSchema(statusSchema()),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, req mcp.CallToolRequest, a statusArgs) (*mcp.CallToolResult, error) {
			return s.tasksStatus(ctx, req, a)
		})
}

// tasksStatus answers tasks_status; the MCP Tasks facade calls it too, for tasks/get.
func (s *Server) tasksStatus(ctx context.Context, req mcp.CallToolRequest, a statusArgs) (*mcp.CallToolResult, error) {
	if a.GraphID == "" {
		return nil, invalidf("graphId is required: use the id tasks_run returned (tasks_list shows them)")
	}
	q := tasks.LogQuery{Tail: tasks.DefaultLogTail, Limit: tasks.DefaultLogLimit}
	if a.LogTail != nil {
		q.Tail = *a.LogTail
	}
	if a.LogOffset != nil || a.LogLimit != nil {
		q.Offset = new(int64)
		if a.LogOffset != nil {
			q.Offset = a.LogOffset
		}
		if a.LogLimit != nil {
			q.Limit = *a.LogLimit
		}
	}
	if err := q.Check(len(a.TaskIDs)); err != nil {
		return nil, err
	}
	until := tasks.UntilDone
	switch a.Until {
	case "", "done":
	case "change":
		until = tasks.UntilChange
	default:
		return nil, invalidf("until must be \"done\" or \"change\", got %q", a.Until)
	}
	wait, err := millis("waitMs", a.WaitMs, 0, 0)
	if err != nil {
		return nil, err
	}
	wait, clamped := s.clampWait(wait)

	var snap tasks.Snapshot
	met := true
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		stop := s.reportProgress(wctx, req, func() string { return s.graphProgress(wctx, a.GraphID) })
		snap, met, err = s.tasks.Wait(wctx, a.GraphID, a.TaskIDs, until)
		stop()
		cancel()
	} else {
		snap, err = s.tasks.Snapshot(ctx, a.GraphID)
	}
	if err != nil {
		return nil, err
	}
	out, err := s.tasks.Status(ctx, snap, a.TaskIDs, q)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructured(out, statusText(out, wait > 0 && !met, clamped, q.Offset != nil)), nil
}

// statusText is what a model reads: a summary line, a table, then log slices, the
// interesting ones first.
func statusText(r tasks.StatusReport, timedOut, clamped, paging bool) string {
	var b strings.Builder
	p := r.Progress
	fmt.Fprintf(&b, "graph %s%s: %s · %d/%d done (%d succeeded, %d failed, %d cancelled, %d skipped) · %d running · %d pending\n",
		r.GraphID, quotedName(r.Name), r.Status, p.Done(), p.Total, p.Succeeded, p.Failed, p.Cancelled, p.Skipped, p.Running, p.Pending)
	if timedOut {
		if clamped {
			b.WriteString("(wait cut to the server's --max-wait; call tasks_status again with waitMs to keep waiting)\n")
		} else {
			b.WriteString("(still running when the wait ended; call tasks_status again with waitMs to keep waiting)\n")
		}
	}
	b.WriteString("\nID\tSTATUS\tATTEMPT\tEXIT\tDURATION\tNOTE\n")
	for i, t := range r.Tasks {
		if i == textTableRows {
			fmt.Fprintf(&b, "... %d more task(s) in structuredContent; filter with taskIds\n", len(r.Tasks)-i)
			break
		}
		exit := "-"
		switch {
		case t.ExitCode != nil:
			exit = fmt.Sprint(*t.ExitCode)
		case t.Signal != nil:
			exit = *t.Signal
		}
		dur := "-"
		if t.DurationMs != nil {
			dur = (time.Duration(*t.DurationMs) * time.Millisecond).String()
		}
		note := ""
		if t.ErrorCode != nil {
			note = *t.ErrorCode
		}
		if t.Message != nil {
			note = strings.TrimSpace(note + " " + *t.Message)
		}
		fmt.Fprintf(&b, "%s\t%s\t%d\t%s\t%s\t%s\n", t.ID, t.Status, t.Attempt, exit, dur, note)
	}
	// Logs: failed and running tasks first, since that is what a model looks for.
	order := slices.Clone(r.Tasks)
	rank := func(s tasks.State) int {
		switch s {
		case tasks.Failed:
			return 0
		case tasks.Running:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(order, func(x, y tasks.TaskStatus) int { return rank(x.Status) - rank(y.Status) })
	shown := 0
	for _, t := range order {
		if t.Log == nil || t.Log.Text == "" {
			continue
		}
		if shown == textLogTasks {
			b.WriteString("\n(more logs in structuredContent; ask for one task with taskIds)\n")
			break
		}
		shown++
		what := fmt.Sprintf("last %d of %d bytes", len(t.Log.Text), t.Log.Size)
		if paging {
			what = fmt.Sprintf("bytes %d-%d of %d; nextOffset %d", t.Log.Offset, t.Log.NextOffset, t.Log.Size, t.Log.NextOffset)
		} else if t.Log.Offset == 0 {
			what = fmt.Sprintf("all %d bytes", t.Log.Size)
		}
		fmt.Fprintf(&b, "\n--- %s log (%s) ---\n%s", t.ID, what, t.Log.Text)
		if !strings.HasSuffix(t.Log.Text, "\n") {
			b.WriteString("\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (s *Server) tasksListTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_list",
		mcp.WithDescription("Every task graph and task of this workspace, newest graph first, whichever server process ran them. Filter by task status or graph; page with cursor."),
		inputSchema(object(schema{
			"status":  enum("Only tasks in this state.", stateEnum...),
			"graphId": str("Only this graph's tasks."),
			"limit":   integer("Tasks per page. Default 50, at most 1000.", 1, tasks.MaxListLimit),
			"cursor":  str("nextCursor of the previous page."),
		})),
		outputSchema(object(schema{
			"tasks": array("Tasks, newest graph first, each graph's tasks in submitted order.", object(schema{
				"graphId": str("Graph."), "id": str("Task."), "status": enum("State.", stateEnum...),
				"errorCode": nullable(str("Why it failed, was cancelled or skipped.")), "exitCode": nullable(integer("Exit status.", 0)),
				"startedAt": nullableTime, "finishedAt": nullableTime, "durationMs": nullable(integer("Run time so far or in all.", 0)),
			}, "graphId", "id", "status", "errorCode", "exitCode", "startedAt", "finishedAt", "durationMs")),
			"graphs": array("Summaries of the graphs on this page.", object(schema{
				"graphId": str("Graph."), "name": str("Label."), "status": enum("Derived status.", tasks.GraphStates...),
				"createdAt": str("RFC 3339 time."), "finishedAt": nullableTime, "expired": boolean("Its logs were archived (retention)."),
				"progress": progressProp,
			}, "graphId", "name", "status", "createdAt", "finishedAt", "expired", "progress")),
			"nextCursor": nullable(str("Pass as cursor for the next page; null on the last page.")),
		}, "tasks", "graphs", "nextCursor")),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, _ mcp.CallToolRequest, a listArgs) (*mcp.CallToolResult, error) {
			out, err := s.tasks.List(ctx, tasks.ListQuery{Status: tasks.State(a.Status), GraphID: a.GraphID, Limit: a.Limit, Cursor: a.Cursor})
			if err != nil {
				return nil, err
			}
			var b strings.Builder
			for _, g := range out.Graphs {
				fmt.Fprintf(&b, "graph %s%s: %s · %d/%d done · created %s\n", g.GraphID, quotedName(g.Name), g.Status,
					g.Progress.Done(), g.Progress.Total, g.CreatedAt)
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
			return mcp.NewToolResultStructured(out, strings.TrimSuffix(b.String(), "\n")), nil
		})
}

func (s *Server) tasksCancelTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_cancel",
		mcp.WithDescription("Cancel tasks of a graph (default: every unfinished one). Pending tasks are cancelled at once; running ones get SIGTERM to their whole process group, then SIGKILL after graceMs. "+
			"Dependents that can no longer run are skipped. Safe to repeat."),
		inputSchema(object(schema{
			"graphId": graphIDProp,
			"taskIds": array("Only these tasks (default: all unfinished).", schema{"type": "string"}),
			"graceMs": integer("Time between SIGTERM and SIGKILL. Default 5000.", 0, maxGraceMs),
		}, "graphId")),
		outputSchema(object(schema{
			"graphId": str("The graph."),
			"tasks": array("What happened to each task concerned.", object(schema{
				"id": str("Task."), "previousStatus": enum("State before.", stateEnum...), "status": enum("State now.", stateEnum...),
				"outcome": enum("cancelled (was pending), cancelling (was running: signalled), skipped (a dependency was cancelled), already_terminal.",
					tasks.OutcomeCancelled, tasks.OutcomeCancelling, tasks.OutcomeSkipped, tasks.OutcomeAlreadyTerminal),
			}, "id", "previousStatus", "status", "outcome")),
		}, "graphId", "tasks")),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, _ mcp.CallToolRequest, a cancelArgs) (*mcp.CallToolResult, error) {
			if a.GraphID == "" {
				return nil, invalidf("graphId is required")
			}
			grace, err := millis("graceMs", a.GraceMs, defaultCancelMs*time.Millisecond, maxGraceMs*time.Millisecond)
			if err != nil {
				return nil, err
			}
			res, err := s.tasks.Cancel(ctx, a.GraphID, a.TaskIDs, grace)
			if err != nil {
				return nil, err
			}
			out := tasks.CancelReport{GraphID: a.GraphID, Tasks: res}
			if out.Tasks == nil {
				out.Tasks = []tasks.CancelOutcome{}
			}
			var b strings.Builder
			fmt.Fprintf(&b, "graph %s: %d task(s) concerned\n", a.GraphID, len(res))
			for _, r := range res {
				fmt.Fprintf(&b, "%s\t%s -> %s\t%s\n", r.ID, r.PreviousStatus, r.Status, r.Outcome)
			}
			if slices.ContainsFunc(res, func(r tasks.CancelOutcome) bool { return r.Outcome == tasks.OutcomeCancelling }) {
				b.WriteString("running tasks were signalled; tasks_status with waitMs shows when they have stopped\n")
			}
			return mcp.NewToolResultStructured(out, strings.TrimSuffix(b.String(), "\n")), nil
		})
}

func (s *Server) tasksGraphTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_graph",
		mcp.WithDescription("The shape of a task graph and why each unfinished task is where it is: ready (waiting for a free slot), waiting (on which dependencies), or blocked (a dependency failed: it will be skipped). "+
			"Includes a topological order and a Mermaid flowchart."),
		inputSchema(object(schema{"graphId": graphIDProp}, "graphId")),
		outputSchema(graphSchema()),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, _ mcp.CallToolRequest, a graphArgs) (*mcp.CallToolResult, error) {
			if a.GraphID == "" {
				return nil, invalidf("graphId is required")
			}
			snap, err := s.tasks.Snapshot(ctx, a.GraphID)
			if err != nil {
				return nil, err
			}
			v, out := tasks.Explain(snap)
			var b strings.Builder
			fmt.Fprintf(&b, "graph %s%s: %s, %d task(s)\n", snap.Graph.ID, quotedName(snap.Graph.Name), out.Status, len(v.Nodes))
			for i, n := range v.Nodes {
				if i == textTableRows {
					fmt.Fprintf(&b, "... %d more in structuredContent\n", len(v.Nodes)-textTableRows)
					break
				}
				line := fmt.Sprintf("%s%s [%s]", strings.Repeat("  ", min(n.Depth, 20)), n.ID, n.Status)
				if n.Reason != "" {
					line += " " + n.Reason
					switch {
					case len(n.WaitingOn) > 0:
						line += " on " + depList(n.WaitingOn)
					case len(n.BlockedBy) > 0:
						line += " by " + depList(n.BlockedBy)
					}
				}
				b.WriteString(line + "\n")
			}
			b.WriteString("\n```mermaid\n" + v.Mermaid + "\n```")
			return mcp.NewToolResultStructured(out, b.String()), nil
		})
}

func statusSchema() schema {
	return object(schema{
		"graphId": str("The graph."), "name": str("Its label."),
		"status":    enum("Derived: running while any task is pending or running, else failed if any failed, else cancelled if any was cancelled or skipped, else succeeded.", tasks.GraphStates...),
		"createdAt": str("RFC 3339 time."), "finishedAt": nullableTime,
		"expired":  boolean("Its live logs were archived after --retention; logs are then read from the artifact."),
		"artifact": nullable(object(schema{"path": str("Archive path."), "bytes": integer("Size.", 0), "sha256": str("Checksum.")}, "path", "bytes", "sha256")),
		"progress": progressProp,
		"tasks": array("The selected tasks, in submitted order.", object(schema{
			"id": str("Task id."), "status": enum("State.", stateEnum...),
			"errorCode": nullable(str("EXIT_NONZERO, SIGNALED, TIMEOUT, SPAWN_FAILED, RUNNER_RESTARTED, RUNNER_SHUTDOWN, CANCELLED, UPSTREAM_FAILED or UPSTREAM_CANCELLED.")),
			"exitCode":  nullable(integer("Exit status.", 0)),
			"signal":    nullable(str("Signal that killed it.")),
			"message":   nullable(str("Why it failed, was cancelled or skipped, in words.")),
			"attempt":   integer("Attempts made (retries count).", 0),
			"dependsOn": array("Dependencies.", schema{"type": "string"}),
			"startedAt": nullableTime, "finishedAt": nullableTime,
			"durationMs": nullable(integer("Run time so far or in all.", 0)),
			"log": nullable(object(schema{
				"path": str("Log file."), "size": integer("Its size in bytes.", 0),
				"offset": integer("Where text starts.", 0), "nextOffset": integer("Where the next page starts.", 0),
				"eof": boolean("text reaches the end of the log."), "text": str("The log slice (stdout and stderr interleaved)."),
			}, "path", "size", "offset", "nextOffset", "eof", "text")),
		}, "id", "status", "errorCode", "exitCode", "signal", "message", "attempt", "dependsOn", "startedAt", "finishedAt", "durationMs", "log")),
	}, "graphId", "name", "status", "createdAt", "finishedAt", "expired", "artifact", "progress", "tasks")
}

func graphSchema() schema {
	dep := object(schema{"id": str("Dependency."), "status": enum("Its state.", stateEnum...)}, "id", "status")
	return object(schema{
		"graphId": str("The graph."),
		"name":    str("Its label."),
		"status":  enum("Derived status.", tasks.GraphStates...),
		"nodes": array("Tasks in submitted order.", object(schema{
			"id": str("Task."), "status": enum("State.", stateEnum...), "depth": integer("Longest dependency path from a task without dependencies.", 0),
			"dependsOn":  array("Dependencies.", schema{"type": "string"}),
			"dependents": array("Tasks that depend on it.", schema{"type": "string"}),
			"reason":     nullable(enum("For a pending task: ready (waits for a free slot), waiting (on unfinished dependencies), blocked (a dependency failed or was cancelled: it will be skipped). Null otherwise.", tasks.ReasonReady, tasks.ReasonWaiting, tasks.ReasonBlocked)),
			"waitingOn":  array("Unfinished dependencies, for waiting.", dep),
			"blockedBy":  array("Dependencies that failed, were cancelled or skipped, for blocked.", dep),
		}, "id", "status", "depth", "dependsOn", "dependents", "reason", "waitingOn", "blockedBy")),
		"edges":   array("Dependency edges, from the dependency to the dependent.", object(schema{"from": str("Dependency."), "to": str("Dependent.")}, "from", "to")),
		"order":   array("A topological order of the task ids.", schema{"type": "string"}),
		"mermaid": str("A Mermaid flowchart of the graph, states as classes."),
	}, "graphId", "name", "status", "nodes", "edges", "order", "mermaid")
}

func quotedName(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" %q", name)
}

func depList(ds []tasks.DepState) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s (%s)", d.ID, d.Status)
	}
	return strings.Join(parts, ", ")
}

// graphProgress says in a line how a graph stands, for progress notifications:
// "3/10 done; running: build 12s, lint 3s".
func (s *Server) graphProgress(ctx context.Context, graphID string) string {
	snap, err := s.tasks.Snapshot(ctx, graphID)
	if err != nil {
		return "waiting"
	}
	p := snap.Progress()
	msg := fmt.Sprintf("%d/%d done", p.Done(), p.Total)
	if p.Failed > 0 {
		msg += fmt.Sprintf(" (%d failed)", p.Failed)
	}
	var running []string
	now := time.Now()
	for _, t := range snap.Tasks {
		if t.Status == tasks.Running && len(running) < 5 {
			running = append(running, fmt.Sprintf("%s %s", t.ID, (time.Duration(*t.Times(now).DurationMs)*time.Millisecond).Round(time.Second)))
		}
	}
	if len(running) > 0 {
		msg += "; running: " + strings.Join(running, ", ")
	}
	return msg
}
