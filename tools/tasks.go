package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// defaultCancelMs is tasks_cancel's graceMs when none is given.
const defaultCancelMs = 5000

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
	Detach         *bool     `json:"detach,omitempty"`
}

type statusArgs struct {
	GraphID   string   `json:"graphId"`
	TaskIDs   []string `json:"taskIds,omitempty"`
	LogTail   *int64   `json:"logTail,omitempty"`
	LogOffset *int64   `json:"logOffset,omitempty"`
	LogLimit  *int64   `json:"logLimit,omitempty"`
	WaitMs    *int64   `json:"waitMs,omitempty"`
	Until     string   `json:"until,omitempty"`
	Cursor    string   `json:"cursor,omitempty"`
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
	Cursor  string `json:"cursor,omitempty"`
}

// RunResult is the tasks_run result (and `tasks run --json`'s): the graph, not an echo of it (a 10,000-task echo is
// a third of a megabyte). Detached: a detached runner of its own claimed the graph.
type RunResult struct {
	GraphID   string           `json:"graphId"`
	Name      string           `json:"name"`
	Status    tasks.GraphState `json:"status"`
	Created   bool             `json:"created"`
	TaskCount int              `json:"taskCount"`
	Detached  bool             `json:"detached"`
}

func (a runArgs) spec() tasks.Spec {
	spec := tasks.Spec{Name: a.Name, MaxParallel: a.MaxParallel, FailFast: a.FailFast, IdempotencyKey: a.IdempotencyKey}
	for _, t := range a.Tasks {
		spec.Tasks = append(spec.Tasks, tasks.TaskSpec{ID: t.ID, Command: t.Command, DependsOn: t.DependsOn, Cwd: t.Cwd,
			Env: t.Env, TimeoutSec: t.TimeoutSec, Retries: t.Retries})
	}
	return spec
}

// RunResultOf is tasks_run's result for a graph submitted.
func RunResultOf(sub tasks.Submitted) RunResult {
	return RunResult{GraphID: sub.Graph.ID, Name: sub.Graph.Name, Status: sub.Progress().State(), Created: sub.Created,
		TaskCount: len(sub.Tasks), Detached: sub.Detached}
}

// Schemas shared by the task tools.
var (
	// Names that say what they are go without a description: tools/list is read in every
	// conversation, and the descriptions of the tools say where ids come from.
	graphIDProp = schema{"type": "string"}
	taskIDsProp = schema{"type": "array", "items": schema{"type": "string"}}
	cursorProp  = str("nextCursor of the previous page.")

	// Output parts. States are plain strings here: their values are listed where a model
	// gives one (tasks_list's status), and every state enum costs tools/list 75 bytes.
	tGraphState = tString
	tState      = tString
	tTime       = nullable(tString)
	tProgress   = props(schema{"total": tInt, "pending": tInt, "running": tInt, "succeeded": tInt,
		"failed": tInt, "cancelled": tInt, "skipped": tInt, "percent": tInt})
	tCursor = nullable(tString)
)

// taskTools are the task tools, each built by its constructor below.
func (s *Table) taskTools() []server.ServerTool {
	return []server.ServerTool{s.tasksRunTool(), s.tasksStatusTool(), s.tasksListTool(), s.tasksCancelTool(), s.tasksGraphTool()}
}

func (s *Table) tasksRunTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_run",
		mcp.WithDescription("Run shell commands with dependencies (builds, test suites, pipelines) in the background; returns a graphId at once, "+
			"then use tasks_status. Tasks read no input: a prompt fails (pass --yes). For interactive programs use shell_open."),
		inputSchema(object(schema{
			"tasks": schema{"type": "array", "items": object(schema{
				"id":         schema{"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
				"command":    str("Run with bash -c."),
				"dependsOn":  array("Ids to succeed first, else it is skipped.", schema{"type": "string"}),
				"cwd":        str("Relative to the workspace root."),
				"env":        schema{"type": "object", "additionalProperties": schema{"type": "string"}},
				"timeoutSec": integer("Kill after this long."),
				"retries":    integer("Re-runs on failure.", 0, tasks.MaxRetries),
			}, "id", "command")},
			"name":           schema{"type": "string"},
			"maxParallel":    integer("Default: CPU count.", 1),
			"failFast":       boolean("Cancel the rest at the first failure."),
			"idempotencyKey": str("Resending this key returns the first graph."),
			"detach":         boolean("Run in a process of its own that outlives this server."),
		}, "tasks")),
		outputSchema(props(schema{"graphId": tString, "name": tString, "status": tGraphState, "created": tBool,
			"taskCount": tInt, "detached": tBool})),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, _ mcp.CallToolRequest, a runArgs) (*mcp.CallToolResult, error) {
			spec := a.spec()
			detach := s.cfg.Detach
			if a.Detach != nil {
				detach = *a.Detach
			}
			var sub tasks.Submitted
			var err error
			if detach {
				sub, err = s.tasks.SubmitDetached(ctx, spec)
			} else {
				sub, err = s.tasks.Submit(ctx, spec)
			}
			if err != nil {
				return nil, err
			}
			out := RunResultOf(sub)
			verb := "submitted"
			if !sub.Created {
				verb = "already submitted with this idempotencyKey; nothing new was started"
			}
			text := fmt.Sprintf("graph %s%s: %d task(s) %s.\nFollow it with tasks_status {\"graphId\": %q, \"waitMs\": 30000}.",
				sub.Graph.ID, quotedName(sub.Graph.Name), len(sub.Tasks), verb, sub.Graph.ID)
			return mcp.NewToolResultStructured(out, text), nil
		})
}

func (s *Table) tasksStatusTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_status",
		mcp.WithDescription("Progress of a task graph and each task's state, exit code and log tail, failed and running first. "+
			"waitMs waits until it is done (until=change: any change): do not poll."),
		inputSchema(object(schema{
			"graphId":   graphIDProp,
			"taskIds":   taskIDsProp,
			"logTail":   integer("Bytes of each log's end. Default 2048, max 65536."),
			"logOffset": integer("With one taskId: read its log from here, then from nextOffset."),
			"logLimit":  integer("Default 65536, max 1048576.", 1),
			"waitMs":    integer("At most --max-wait."),
			"until":     enum("Default done.", "done", "change"),
			"cursor":    cursorProp,
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

// tasksStatus answers tasks_status; the MCP Tasks extension calls it too, for tasks/get (mcptasks.go).
func (s *Table) tasksStatus(ctx context.Context, req mcp.CallToolRequest, a statusArgs) (*mcp.CallToolResult, error) {
	if a.GraphID == "" {
		return nil, invalidf("graphId is required: use the id tasks_run returned (tasks_list shows them)")
	}
	var cut clampNotes
	tail, err := cut.bytes("logTail", a.LogTail, tasks.DefaultLogTail, 0, tasks.MaxLogTail, ", the most a tail reads")
	if err != nil {
		return nil, err
	}
	q := tasks.StatusQuery{TaskIDs: a.TaskIDs, Log: tasks.LogQuery{Tail: tail}, Cursor: a.Cursor, MaxBytes: s.maxResult()}
	if a.LogOffset != nil || a.LogLimit != nil {
		offset := int64(0)
		if a.LogOffset != nil {
			if offset = *a.LogOffset; offset < 0 {
				return nil, invalidf("logOffset must be 0 or more (a byte offset in the log), got %d", offset)
			}
		}
		q.Log.Offset = &offset
		if q.Log.Limit, err = cut.bytes("logLimit", a.LogLimit, tasks.DefaultLogLimit, 1, tasks.MaxLogSlice, ", the most one read returns"); err != nil {
			return nil, err
		}
	}
	if err := q.Log.Check(len(a.TaskIDs)); err != nil {
		return nil, err
	}
	until := tasks.UntilDone
	switch a.Until {
	case "", "done":
	case "change":
		until = tasks.UntilChange
	default:
		return nil, invalidf("until must be \"done\" or \"change\", got %s", quote.Short(a.Until))
	}
	wait, err := cut.ms("waitMs", a.WaitMs, 0, s.cfg.MaxWait, " (the server's --max-wait)")
	if err != nil {
		return nil, err
	}

	var snap tasks.Snapshot
	met := true
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		stop := protocol.ReportProgress(wctx, req, func() string { return s.graphProgress(wctx, a.GraphID) })
		snap, met, err = s.tasks.Wait(wctx, a.GraphID, a.TaskIDs, until)
		stop()
		cancel()
	} else {
		snap, err = s.tasks.Snapshot(ctx, a.GraphID)
	}
	if err != nil {
		return nil, err
	}
	out, err := s.tasks.Status(ctx, snap, q)
	if err != nil {
		return nil, err
	}
	waited := wait > 0 && !met
	maxed := a.WaitMs != nil && *a.WaitMs > s.cfg.MaxWait.Milliseconds()
	if note := s.slotNote(ctx, snap); note != "" {
		cut = append(cut, note) // printed with the notes above the table
	}
	return mcp.NewToolResultStructured(out, statusText(out, cut, waited, maxed, q.Log.Offset != nil)), nil
}

// statusText is what a model reads: a summary line, what was cut or left out and how to
// get it, a table of the page's tasks, then their log slices, failed and running first.
func statusText(r tasks.StatusReport, cut clampNotes, timedOut, maxed, paging bool) string {
	var b strings.Builder
	p := r.Progress
	fmt.Fprintf(&b, "graph %s%s: %s · %d/%d done (%d succeeded, %d failed, %d cancelled, %d skipped) · %d running · %d pending\n",
		r.GraphID, quotedName(r.Name), r.Status, p.Done(), p.Total, p.Succeeded, p.Failed, p.Cancelled, p.Skipped, p.Running, p.Pending)
	if timedOut {
		if maxed {
			b.WriteString("(wait cut to the server's --max-wait; call tasks_status again with waitMs to keep waiting)\n")
		} else {
			b.WriteString("(still running when the wait ended; call tasks_status again with waitMs to keep waiting)\n")
		}
	}
	if r.Status == tasks.GraphRunning && !r.Runner.Live {
		fmt.Fprintf(&b, "(the server process that runs it, pid %d, is gone: its tasks move again once a server on this workspace takes it over)\n", r.Runner.Pid)
	}
	for _, note := range append(cut, r.Notes...) {
		b.WriteString(note + "\n")
	}
	b.WriteString("\nID\tSTATUS\tATTEMPT\tEXIT\tDURATION\tNOTE\n")
	for _, t := range r.Tasks {
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
	for _, t := range r.Tasks {
		if t.Log == nil || t.Log.Text == "" {
			continue
		}
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

func (s *Table) tasksListTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_list",
		mcp.WithDescription("Every task graph and task of this workspace, newest first, whichever server ran them."),
		inputSchema(object(schema{
			"status":  enum("Only tasks in this state.", tasks.States()...),
			"graphId": str("Only this graph's tasks."),
			"limit":   integer("Tasks per page. Default 50.", 1, tasks.MaxListLimit),
			"cursor":  cursorProp,
		})),
		outputSchema(props(schema{
			"tasks": list(props(schema{"graphId": tString, "id": tString, "status": tState, "errorCode": nullable(tString),
				"exitCode": nullable(tInt), "startedAt": tTime, "finishedAt": tTime, "durationMs": nullable(tInt)})),
			"graphs": list(props(schema{"graphId": tString, "name": tString, "status": tGraphState, "createdAt": tString,
				"finishedAt": tTime, "expired": tBool, "progress": tProgress})),
			"nextCursor": tCursor,
		})),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, _ mcp.CallToolRequest, a listArgs) (*mcp.CallToolResult, error) {
			out, err := s.tasks.List(ctx, tasks.ListQuery{Status: tasks.State(a.Status), GraphID: a.GraphID, Limit: a.Limit,
				Cursor: a.Cursor, MaxBytes: s.maxResult()})
			if err != nil {
				return nil, err
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
			return mcp.NewToolResultStructured(out, strings.TrimSuffix(b.String(), "\n")), nil
		})
}

func (s *Table) tasksCancelTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_cancel",
		mcp.WithDescription("Cancel a graph's unfinished tasks (or taskIds): pending at once, running ones SIGTERM then SIGKILL after graceMs; "+
			"their dependents are skipped. Safe to repeat."),
		inputSchema(object(schema{
			"graphId": graphIDProp,
			"taskIds": taskIDsProp,
			"graceMs": integer("Default 5000, at most 60000."),
		}, "graphId")),
		outputSchema(props(schema{
			"graphId": tString,
			"tasks": list(props(schema{"id": tString, "previousStatus": tState, "status": tState,
				"outcome": enum("", tasks.OutcomeCancelled, tasks.OutcomeCancelling, tasks.OutcomeSkipped, tasks.OutcomeAlreadyTerminal)})),
			"omittedTasks": tInt,
		})),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, _ mcp.CallToolRequest, a cancelArgs) (*mcp.CallToolResult, error) {
			if a.GraphID == "" {
				return nil, invalidf("graphId is required: use the id tasks_run returned (tasks_list shows them)")
			}
			var cut clampNotes
			grace, err := cut.ms("graceMs", a.GraceMs, defaultCancelMs*time.Millisecond, maxGraceMs*time.Millisecond, ", the longest grace")
			if err != nil {
				return nil, err
			}
			res, err := s.tasks.Cancel(ctx, a.GraphID, a.TaskIDs, grace)
			if err != nil {
				return nil, err
			}
			out := tasks.FitCancel(tasks.CancelReport{GraphID: a.GraphID, Tasks: res}, s.maxResult())
			return mcp.NewToolResultStructured(out, cancelText(out, res, cut)), nil
		})
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

func (s *Table) tasksGraphTool() server.ServerTool {
	return bind(s, mcp.NewTool("tasks_graph",
		mcp.WithDescription("Why a graph's pending tasks have not started: ready (no free slot yet), waiting (on dependencies) or blocked "+
			"(a dependency failed: to be skipped). With dependencies, a topological order and a Mermaid chart of small graphs."),
		inputSchema(object(schema{"graphId": graphIDProp, "cursor": cursorProp}, "graphId")),
		outputSchema(graphSchema()),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	),
		func(ctx context.Context, _ mcp.CallToolRequest, a graphArgs) (*mcp.CallToolResult, error) {
			if a.GraphID == "" {
				return nil, invalidf("graphId is required: use the id tasks_run returned (tasks_list shows them)")
			}
			snap, err := s.tasks.Snapshot(ctx, a.GraphID)
			if err != nil {
				return nil, err
			}
			out, err := tasks.ExplainPage(snap, tasks.PageQuery{Cursor: a.Cursor, MaxBytes: s.maxResult()})
			if err != nil {
				return nil, err
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
			return mcp.NewToolResultStructured(out, strings.TrimSuffix(b.String(), "\n")), nil
		})
}

func statusSchema() schema {
	return props(schema{
		"graphId": tString, "name": tString, "status": tGraphState, "createdAt": tString, "finishedAt": tTime,
		"expired":  tBool,
		"artifact": nullable(props(schema{"path": tString, "bytes": tInt, "sha256": tString})),
		"progress": tProgress,
		"tasks": list(props(schema{
			"id": tString, "status": tState, "errorCode": nullable(tString), "exitCode": nullable(tInt),
			"signal": nullable(tString), "message": nullable(tString), "attempt": tInt, "dependsOn": tIDs,
			"startedAt": tTime, "finishedAt": tTime, "durationMs": nullable(tInt),
			"log": nullable(props(schema{"path": tString, "size": tInt, "offset": tInt, "nextOffset": tInt,
				"eof": tBool, "text": tString})),
			"omittedDeps": tInt,
		})),
		"omittedTasks": tInt,
		"nextCursor":   tCursor,
		"runner":       props(schema{"id": tString, "pid": tInt, "live": tBool}),
	})
}

func graphSchema() schema {
	dep := list(props(schema{"id": tString, "status": tState}))
	return props(schema{
		"graphId": tString, "name": tString, "status": tGraphState,
		"nodes": list(props(schema{
			"id": tString, "status": tState, "depth": tInt, "dependsOn": tIDs, "dependents": tIDs,
			"reason":    nullable(enum("", tasks.ReasonReady, tasks.ReasonWaiting, tasks.ReasonBlocked)),
			"waitingOn": dep, "blockedBy": dep, "omittedDeps": tInt,
		})),
		"edges":        list(props(schema{"from": tString, "to": tString})),
		"order":        tIDs,
		"mermaid":      nullable(tString),
		"omittedNodes": tInt,
		"nextCursor":   tCursor,
	})
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
func (s *Table) graphProgress(ctx context.Context, graphID string) string {
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

// GraphFile decodes a graph submitted from outside a server (the operator CLI's `tasks
// run`): tasks_run's arguments as JSON, where detach is implied and detach: false is
// refused.
func GraphFile(args []byte) (tasks.Spec, error) {
	var a runArgs
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return tasks.Spec{}, fmt.Errorf("%w: the graph file: %v", tasks.ErrInvalid, err)
	}
	if a.Detach != nil && !*a.Detach {
		return tasks.Spec{}, fmt.Errorf("%w: the graph file says detach: false; from a terminal a graph always runs detached", tasks.ErrInvalid)
	}
	return a.spec(), nil
}
