package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// Bounds on tasks_* arguments.
const (
	defaultLogTail   = 2048
	maxLogTail       = 65536
	defaultListLimit = 50
	maxListLimit     = 1000
	defaultCancelMs  = 5000
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

// Results, field for field as in the tool contract (no omitempty: null where a field
// does not apply).
type (
	taskBrief struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	runResult struct {
		GraphID string      `json:"graphId"`
		Name    string      `json:"name"`
		Status  string      `json:"status"`
		Created bool        `json:"created"`
		Tasks   []taskBrief `json:"tasks"`
	}
	logSlice struct {
		Path       string `json:"path"`
		Size       int64  `json:"size"`
		Offset     int64  `json:"offset"`
		NextOffset int64  `json:"nextOffset"`
		EOF        bool   `json:"eof"`
		Text       string `json:"text"`
	}
	taskStatus struct {
		ID         string    `json:"id"`
		Status     string    `json:"status"`
		ErrorCode  *string   `json:"errorCode"`
		ExitCode   *int      `json:"exitCode"`
		Signal     *string   `json:"signal"`
		Message    *string   `json:"message"`
		Attempt    int       `json:"attempt"`
		DependsOn  []string  `json:"dependsOn"`
		StartedAt  *string   `json:"startedAt"`
		FinishedAt *string   `json:"finishedAt"`
		DurationMs *int64    `json:"durationMs"`
		Log        *logSlice `json:"log"`
	}
	artifact struct {
		Path   string `json:"path"`
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	statusResult struct {
		GraphID    string         `json:"graphId"`
		Name       string         `json:"name"`
		Status     string         `json:"status"`
		CreatedAt  string         `json:"createdAt"`
		FinishedAt *string        `json:"finishedAt"`
		Expired    bool           `json:"expired"`
		Artifact   *artifact      `json:"artifact"`
		Progress   tasks.Progress `json:"progress"`
		Tasks      []taskStatus   `json:"tasks"`
	}
	listTask struct {
		GraphID    string  `json:"graphId"`
		ID         string  `json:"id"`
		Status     string  `json:"status"`
		ErrorCode  *string `json:"errorCode"`
		ExitCode   *int    `json:"exitCode"`
		StartedAt  *string `json:"startedAt"`
		FinishedAt *string `json:"finishedAt"`
		DurationMs *int64  `json:"durationMs"`
	}
	graphSummary struct {
		GraphID    string         `json:"graphId"`
		Name       string         `json:"name"`
		Status     string         `json:"status"`
		CreatedAt  string         `json:"createdAt"`
		FinishedAt *string        `json:"finishedAt"`
		Expired    bool           `json:"expired"`
		Progress   tasks.Progress `json:"progress"`
	}
	tasksListResult struct {
		Tasks      []listTask     `json:"tasks"`
		Graphs     []graphSummary `json:"graphs"`
		NextCursor *string        `json:"nextCursor"`
	}
	cancelTask struct {
		ID             string `json:"id"`
		PreviousStatus string `json:"previousStatus"`
		Status         string `json:"status"`
		Outcome        string `json:"outcome"`
	}
	cancelResult struct {
		GraphID string       `json:"graphId"`
		Tasks   []cancelTask `json:"tasks"`
	}
)

var (
	stateEnum    = []string{"pending", "running", "succeeded", "failed", "cancelled", "skipped"}
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

func (s *Server) taskTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("tasks_run",
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
				"status":  enum("The graph's derived status.", "running", "succeeded", "failed", "cancelled"),
				"created": boolean("False when idempotencyKey matched an existing graph (returned instead)."),
				"tasks": array("Each task's status.", object(schema{
					"id": str("Task id."), "status": enum("Task state.", stateEnum...),
				}, "id", "status")),
			}, "graphId", "name", "status", "created", "tasks")),
			mcp.WithDestructiveHintAnnotation(true),
			mcp.WithOpenWorldHintAnnotation(false),
		), Handler: s.tasksRun},
		{Tool: mcp.NewTool("tasks_status",
			mcp.WithDescription("Progress of a task graph and each task's state, exit code, timings and the tail of its log. "+
				"With waitMs it waits (up to the server's --max-wait) until the graph (or the named tasks) is finished, or with until=change until anything changes: no need to poll in a loop. "+
				"For one task, logOffset/logLimit page through its whole log."),
			inputSchema(object(schema{
				"graphId":   graphIDProp,
				"taskIds":   array("Only these tasks (default: all).", schema{"type": "string"}),
				"logTail":   integer("Bytes from the end of each task's log. Default 2048, at most 65536; 0 for none.", 0, maxLogTail),
				"logOffset": integer("With exactly one task id: read its log from this byte offset instead of the tail (use the previous nextOffset to page).", 0),
				"logLimit":  integer("With logOffset: bytes to read. Default 65536, at most 1048576.", 1, tasks.MaxLogSlice),
				"waitMs":    integer("Wait up to this long first (clamped to --max-wait). Default 0: answer at once.", 0),
				"until":     enum("What waitMs waits for: done (every selected task finished, the default) or change (any selected task changes state).", "done", "change"),
			}, "graphId")),
			outputSchema(statusSchema()),
			mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false),
			mcp.WithOpenWorldHintAnnotation(false),
		), Handler: s.tasksStatus},
		{Tool: mcp.NewTool("tasks_list",
			mcp.WithDescription("Every task graph and task of this workspace, newest graph first, whichever server process ran them. Filter by task status or graph; page with cursor."),
			inputSchema(object(schema{
				"status":  enum("Only tasks in this state.", stateEnum...),
				"graphId": str("Only this graph's tasks."),
				"limit":   integer("Tasks per page. Default 50, at most 1000.", 1, maxListLimit),
				"cursor":  str("nextCursor of the previous page."),
			})),
			outputSchema(object(schema{
				"tasks": array("Tasks, newest graph first, each graph's tasks in submitted order.", object(schema{
					"graphId": str("Graph."), "id": str("Task."), "status": enum("State.", stateEnum...),
					"errorCode": nullable(str("Why it failed, was cancelled or skipped.")), "exitCode": nullable(integer("Exit status.", 0)),
					"startedAt": nullableTime, "finishedAt": nullableTime, "durationMs": nullable(integer("Run time so far or in all.", 0)),
				}, "graphId", "id", "status", "errorCode", "exitCode", "startedAt", "finishedAt", "durationMs")),
				"graphs": array("Summaries of the graphs on this page.", object(schema{
					"graphId": str("Graph."), "name": str("Label."), "status": enum("Derived status.", "running", "succeeded", "failed", "cancelled"),
					"createdAt": str("RFC 3339 time."), "finishedAt": nullableTime, "expired": boolean("Its logs were archived (retention)."),
					"progress": progressProp,
				}, "graphId", "name", "status", "createdAt", "finishedAt", "expired", "progress")),
				"nextCursor": nullable(str("Pass as cursor for the next page; null on the last page.")),
			}, "tasks", "graphs", "nextCursor")),
			mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false),
			mcp.WithOpenWorldHintAnnotation(false),
		), Handler: s.tasksList},
		{Tool: mcp.NewTool("tasks_cancel",
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
		), Handler: s.tasksCancel},
		{Tool: mcp.NewTool("tasks_graph",
			mcp.WithDescription("The shape of a task graph and why each unfinished task is where it is: ready (waiting for a free slot), waiting (on which dependencies), or blocked (a dependency failed: it will be skipped). "+
				"Includes a topological order and a Mermaid flowchart."),
			inputSchema(object(schema{"graphId": graphIDProp}, "graphId")),
			outputSchema(graphSchema()),
			mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false),
			mcp.WithOpenWorldHintAnnotation(false),
		), Handler: s.tasksGraph},
	}
}

func statusSchema() schema {
	return object(schema{
		"graphId": str("The graph."), "name": str("Its label."),
		"status":    enum("Derived: running while any task is pending or running, else failed if any failed, else cancelled if any was cancelled or skipped, else succeeded.", "running", "succeeded", "failed", "cancelled"),
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
		"status":  enum("Derived status.", "running", "succeeded", "failed", "cancelled"),
		"nodes": array("Tasks in submitted order.", object(schema{
			"id": str("Task."), "status": enum("State.", stateEnum...), "depth": integer("Longest dependency path from a task without dependencies.", 0),
			"dependsOn":  array("Dependencies.", schema{"type": "string"}),
			"dependents": array("Tasks that depend on it.", schema{"type": "string"}),
			"reason":     nullable(enum("For a pending task: ready (waits for a free slot), waiting (on unfinished dependencies), blocked (a dependency failed or was cancelled: it will be skipped). Null otherwise.", "ready", "waiting", "blocked")),
			"waitingOn":  array("Unfinished dependencies, for waiting.", dep),
			"blockedBy":  array("Dependencies that failed, were cancelled or skipped, for blocked.", dep),
		}, "id", "status", "depth", "dependsOn", "dependents", "reason", "waitingOn", "blockedBy")),
		"edges":   array("Dependency edges, from the dependency to the dependent.", object(schema{"from": str("Dependency."), "to": str("Dependent.")}, "from", "to")),
		"order":   array("A topological order of the task ids.", schema{"type": "string"}),
		"mermaid": str("A Mermaid flowchart of the graph, states as classes."),
	}, "graphId", "name", "status", "nodes", "edges", "order", "mermaid")
}

func (s *Server) tasksRun(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a runArgs
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("tasks_run", err), nil
	}
	if a.MaxParallel < 0 {
		return s.toolError("tasks_run", invalidf("maxParallel must be 1 or more, got %d", a.MaxParallel)), nil
	}
	spec := tasks.Spec{Name: a.Name, MaxParallel: a.MaxParallel, FailFast: a.FailFast, IdempotencyKey: a.IdempotencyKey}
	for _, t := range a.Tasks {
		spec.Tasks = append(spec.Tasks, tasks.TaskSpec{ID: t.ID, Command: t.Command, DependsOn: t.DependsOn, Cwd: t.Cwd,
			Env: t.Env, TimeoutSec: t.TimeoutSec, Retries: t.Retries})
	}
	sub, err := s.tasks.Submit(ctx, spec)
	if err != nil {
		return s.toolError("tasks_run", err), nil
	}
	out := runResult{GraphID: sub.Graph.ID, Name: sub.Graph.Name, Status: tasks.GraphStatus(sub.Tasks), Created: sub.Created}
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
}

func (s *Server) tasksStatus(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a statusArgs
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("tasks_status", err), nil
	}
	if a.GraphID == "" {
		return s.toolError("tasks_status", invalidf("graphId is required: use the id tasks_run returned (tasks_list shows them)")), nil
	}
	logTail := int64(defaultLogTail)
	if a.LogTail != nil {
		if *a.LogTail < 0 || *a.LogTail > maxLogTail {
			return s.toolError("tasks_status", invalidf("logTail must be 0..%d, got %d", maxLogTail, *a.LogTail)), nil
		}
		logTail = *a.LogTail
	}
	paging := a.LogOffset != nil || a.LogLimit != nil
	logLimit := int64(maxLogTail)
	if paging {
		switch {
		case len(a.TaskIDs) != 1:
			return s.toolError("tasks_status", invalidf("logOffset/logLimit page one task's log: give exactly one id in taskIds")), nil
		case a.LogOffset != nil && *a.LogOffset < 0:
			return s.toolError("tasks_status", invalidf("logOffset must be 0 or more, got %d", *a.LogOffset)), nil
		case a.LogLimit != nil && (*a.LogLimit < 1 || *a.LogLimit > tasks.MaxLogSlice):
			return s.toolError("tasks_status", invalidf("logLimit must be 1..%d, got %d", tasks.MaxLogSlice, *a.LogLimit)), nil
		}
		if a.LogLimit != nil {
			logLimit = *a.LogLimit
		}
	}
	until := tasks.UntilDone
	switch a.Until {
	case "", "done":
	case "change":
		until = tasks.UntilChange
	default:
		return s.toolError("tasks_status", invalidf("until must be \"done\" or \"change\", got %q", a.Until)), nil
	}
	wait, err := millis("waitMs", a.WaitMs, 0, 0)
	if err != nil {
		return s.toolError("tasks_status", err), nil
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
		if err == nil {
			err = checkTaskIDs(snap, a.TaskIDs)
		}
	}
	if err != nil {
		return s.toolError("tasks_status", err), nil
	}

	out := statusResult{
		GraphID: snap.Graph.ID, Name: snap.Graph.Name, Status: tasks.GraphStatus(snap.Tasks),
		CreatedAt: timestamp(snap.Graph.CreatedAt), FinishedAt: timePtr(snap.Graph.FinishedAt),
		Expired: snap.Graph.ExpiredAt != nil, Progress: tasks.ProgressOf(snap.Tasks), Tasks: []taskStatus{},
	}
	art, hasArtifact := s.tasks.Artifact(ctx, snap.Graph.ID)
	if hasArtifact {
		out.Artifact = &artifact{Path: art.Path, Bytes: art.Bytes, SHA256: art.SHA256}
	}
	now := time.Now()
	for _, t := range snap.Tasks {
		if len(a.TaskIDs) > 0 && !slices.Contains(a.TaskIDs, t.ID) {
			continue
		}
		ts := taskStatus{
			ID: t.ID, Status: t.Status, ErrorCode: t.ErrorCode, ExitCode: t.ExitCode, Signal: t.Signal,
			Message: t.Message, Attempt: t.Attempt, DependsOn: nonNil(t.DependsOn),
			StartedAt: timePtr(t.StartedAt), FinishedAt: timePtr(t.FinishedAt), DurationMs: duration(t, now),
		}
		path := s.tasks.LogPath(t.GraphID, t.ID)
		var slice tasks.LogSlice
		switch {
		case out.Expired && hasArtifact: // the live logs are gone: read the archive
			offset, limit := -logTail, logTail
			if paging {
				offset, limit = 0, logLimit
				if a.LogOffset != nil {
					offset = *a.LogOffset
				}
			}
			slice, err = tasks.ReadArtifactLog(art.Path, t.ID, offset, limit)
		case paging:
			offset := int64(0)
			if a.LogOffset != nil {
				offset = *a.LogOffset
			}
			slice, err = tasks.ReadLog(path, offset, logLimit)
		default:
			slice, err = tasks.TailLog(path, logTail)
		}
		if err != nil {
			return s.toolError("tasks_status", err), nil
		}
		ts.Log = &logSlice{Path: slice.Path, Size: slice.Size, Offset: slice.Offset, NextOffset: slice.NextOffset, EOF: slice.EOF, Text: slice.Text}
		out.Tasks = append(out.Tasks, ts)
	}
	return mcp.NewToolResultStructured(out, statusText(out, wait > 0 && !met, clamped, paging)), nil
}

func checkTaskIDs(snap tasks.Snapshot, ids []string) error {
	for _, id := range ids {
		if !slices.ContainsFunc(snap.Tasks, func(t store.TaskRow) bool { return t.ID == id }) {
			return fmt.Errorf("graph %s has no task %q: %w", snap.Graph.ID, id, tasks.ErrNotFound)
		}
	}
	return nil
}

// statusText is what a model reads: a summary line, a table, then log slices, the
// interesting ones first.
func statusText(r statusResult, timedOut, clamped, paging bool) string {
	var b strings.Builder
	p := r.Progress
	fmt.Fprintf(&b, "graph %s%s: %s · %d/%d done (%d succeeded, %d failed, %d cancelled, %d skipped) · %d running · %d pending\n",
		r.GraphID, quotedName(r.Name), r.Status, p.Total-p.Pending-p.Running, p.Total, p.Succeeded, p.Failed, p.Cancelled, p.Skipped, p.Running, p.Pending)
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
	rank := func(s string) int {
		switch s {
		case "failed":
			return 0
		case "running":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(order, func(x, y taskStatus) int { return rank(x.Status) - rank(y.Status) })
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

func (s *Server) tasksList(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a listArgs
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("tasks_list", err), nil
	}
	if a.Status != "" && !slices.Contains(stateEnum, a.Status) {
		return s.toolError("tasks_list", invalidf("status must be one of %s, got %q", strings.Join(stateEnum, ", "), a.Status)), nil
	}
	if a.Limit < 0 || a.Limit > maxListLimit {
		return s.toolError("tasks_list", invalidf("limit must be 1..%d, got %d", maxListLimit, a.Limit)), nil
	}
	if a.Limit == 0 {
		a.Limit = defaultListLimit
	}
	f := store.ListFilter{GraphID: a.GraphID, Limit: a.Limit, Cursor: a.Cursor}
	if a.Status != "" {
		f.Statuses = []string{a.Status}
	}
	page, err := s.tasks.List(ctx, f)
	if err != nil {
		return s.toolError("tasks_list", err), nil
	}
	now := time.Now()
	out := tasksListResult{Tasks: []listTask{}, Graphs: []graphSummary{}}
	if page.Next != "" {
		out.NextCursor = &page.Next
	}
	for _, t := range page.Tasks {
		out.Tasks = append(out.Tasks, listTask{GraphID: t.GraphID, ID: t.ID, Status: t.Status, ErrorCode: t.ErrorCode,
			ExitCode: t.ExitCode, StartedAt: timePtr(t.StartedAt), FinishedAt: timePtr(t.FinishedAt), DurationMs: duration(t, now)})
	}
	var b strings.Builder
	for _, g := range page.Graphs {
		sum := graphSummary{GraphID: g.Graph.ID, Name: g.Graph.Name, Status: tasks.GraphStatus(g.Tasks),
			CreatedAt: timestamp(g.Graph.CreatedAt), FinishedAt: timePtr(g.Graph.FinishedAt), Expired: g.Graph.ExpiredAt != nil,
			Progress: tasks.ProgressOf(g.Tasks)}
		out.Graphs = append(out.Graphs, sum)
		fmt.Fprintf(&b, "graph %s%s: %s · %d/%d done · created %s\n", sum.GraphID, quotedName(sum.Name), sum.Status,
			sum.Progress.Total-sum.Progress.Pending-sum.Progress.Running, sum.Progress.Total, sum.CreatedAt)
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
}

func (s *Server) tasksCancel(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a cancelArgs
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("tasks_cancel", err), nil
	}
	if a.GraphID == "" {
		return s.toolError("tasks_cancel", invalidf("graphId is required")), nil
	}
	grace, err := millis("graceMs", a.GraceMs, defaultCancelMs*time.Millisecond, maxGraceMs*time.Millisecond)
	if err != nil {
		return s.toolError("tasks_cancel", err), nil
	}
	if grace == 0 {
		grace = time.Millisecond // 0 means at once; the engine reads zero as its default
	}
	res, err := s.tasks.Cancel(ctx, a.GraphID, a.TaskIDs, grace)
	if err != nil {
		return s.toolError("tasks_cancel", err), nil
	}
	out := cancelResult{GraphID: a.GraphID, Tasks: []cancelTask{}}
	var b strings.Builder
	fmt.Fprintf(&b, "graph %s: %d task(s) concerned\n", a.GraphID, len(res))
	for _, r := range res {
		out.Tasks = append(out.Tasks, cancelTask{ID: r.ID, PreviousStatus: string(r.PreviousStatus), Status: string(r.Status), Outcome: r.Outcome})
		fmt.Fprintf(&b, "%s\t%s -> %s\t%s\n", r.ID, r.PreviousStatus, r.Status, r.Outcome)
	}
	if slices.ContainsFunc(res, func(r tasks.CancelResult) bool { return r.Outcome == tasks.OutcomeCancelling }) {
		b.WriteString("running tasks were signalled; tasks_status with waitMs shows when they have stopped\n")
	}
	return mcp.NewToolResultStructured(out, strings.TrimSuffix(b.String(), "\n")), nil
}

// duration is how long a task ran: to its end, or to now while it runs.
func duration(t store.TaskRow, now time.Time) *int64 {
	if t.StartedAt == nil {
		return nil
	}
	end := now
	if t.FinishedAt != nil {
		end = *t.FinishedAt
	}
	d := end.Sub(*t.StartedAt).Milliseconds()
	return &d
}

func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp(*t)
	return &s
}

func quotedName(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" %q", name)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) tasksGraph(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a graphArgs
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("tasks_graph", err), nil
	}
	if a.GraphID == "" {
		return s.toolError("tasks_graph", invalidf("graphId is required")), nil
	}
	snap, err := s.tasks.Snapshot(ctx, a.GraphID)
	if err != nil {
		return s.toolError("tasks_graph", err), nil
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
	p := tasks.ProgressOf(snap.Tasks)
	msg := fmt.Sprintf("%d/%d done", p.Total-p.Pending-p.Running, p.Total)
	if p.Failed > 0 {
		msg += fmt.Sprintf(" (%d failed)", p.Failed)
	}
	var running []string
	now := time.Now()
	for _, t := range snap.Tasks {
		if t.Status == string(tasks.Running) && len(running) < 5 {
			running = append(running, fmt.Sprintf("%s %s", t.ID, (time.Duration(*duration(t, now))*time.Millisecond).Round(time.Second)))
		}
	}
	if len(running) > 0 {
		msg += "; running: " + strings.Join(running, ", ")
	}
	return msg
}
