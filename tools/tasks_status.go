package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tasks/fit"
)

// tasksStatus is tasks_status: a graph's progress, each task's state and log, waiting
// when asked to. The MCP Tasks extension answers tasks/get with it too (mcptasks.go).
var tasksStatus = tool[statusArgs, tasks.StatusReport]{
	name: "tasks_status",
	description: "A graph's progress and each task's state, exit code and log tail, failed and running first. " +
		"waitMs waits until done (until=change: any change): do not poll.",
	annotations: readOnly,
	waits:       waits{whenPositive: "waitMs"},
	handle:      (*Table).tasksStatus,
}

type statusArgs struct {
	GraphID   string      `json:"graphId" jsonschema:"From tasks_run." toolschema:"required"`
	TaskIDs   []string    `json:"taskIds,omitempty" jsonschema:"Only these tasks."`
	LogTail   *int64      `json:"logTail,omitempty" jsonschema:"Bytes of each log's end. Default 2048, max 65536."`
	LogLines  *int64      `json:"logLines,omitempty" jsonschema:"Last N lines of each log, max 1000; wins over logTail."`
	LogOffset *int64      `json:"logOffset,omitempty" jsonschema:"With one taskId: its log from here, then nextOffset."`
	LogLimit  *int64      `json:"logLimit,omitempty" jsonschema:"Default 65536, max 1048576." toolschema:"minimum=1"`
	WaitMs    *int64      `json:"waitMs,omitempty" jsonschema:"At most --max-wait."`
	Until     tasks.Until `json:"until,omitempty" jsonschema:"Default done."`
	Cursor    string      `json:"cursor,omitempty" jsonschema:"From nextCursor."`
}

func (s *Table) tasksStatus(ctx context.Context, req mcp.CallToolRequest, a statusArgs) (tasks.StatusReport, string, error) {
	if a.GraphID == "" {
		return tasks.StatusReport{}, "", invalidf("graphId is required: use the id tasks_run returned (tasks_list shows them)")
	}
	var cut, tailCut clampNotes
	tail, err := tailCut.bytes("logTail", a.LogTail, tasks.DefaultLogTail, 0, tasks.MaxLogTail, ", the most a tail reads")
	if err != nil {
		return tasks.StatusReport{}, "", err
	}
	q := tasks.StatusQuery{TaskIDs: a.TaskIDs, Log: tasks.LogQuery{Tail: tail}, Cursor: a.Cursor, MaxBytes: s.maxResult()}
	if a.LogLines != nil {
		// logLines wins: logTail is checked (bad input is refused) but not used, so its
		// clamp is not reported; a lines tail reads at most what a byte tail may.
		if n := *a.LogLines; n < 0 || n > tasks.MaxLogLines {
			return tasks.StatusReport{}, "", invalidf("logLines must be 0..%d (lines of each log's end), got %d", tasks.MaxLogLines, n)
		}
		lines := int(*a.LogLines)
		q.Log.Lines, q.Log.Tail = &lines, tasks.MaxLogTail
	} else {
		cut = append(cut, tailCut...)
	}
	if a.LogOffset != nil || a.LogLimit != nil {
		offset := int64(0)
		if a.LogOffset != nil {
			if offset = *a.LogOffset; offset < 0 {
				return tasks.StatusReport{}, "", invalidf("logOffset must be 0 or more (a byte offset in the log), got %d", offset)
			}
		}
		q.Log.Offset = &offset
		if q.Log.Limit, err = cut.bytes("logLimit", a.LogLimit, tasks.DefaultLogLimit, 1, tasks.MaxLogSlice, ", the most one read returns"); err != nil {
			return tasks.StatusReport{}, "", err
		}
	}
	if err := q.Log.Check(len(a.TaskIDs)); err != nil {
		return tasks.StatusReport{}, "", err
	}
	until := tasks.UntilDone
	switch a.Until {
	case "", tasks.UntilDone:
	case tasks.UntilChange:
		until = tasks.UntilChange
	default:
		return tasks.StatusReport{}, "", invalidf("until must be \"done\" or \"change\", got %s", quote.Short(string(a.Until)))
	}
	wait, err := cut.ms("waitMs", a.WaitMs, 0, s.cfg.MaxWait, " (the server's --max-wait)")
	if err != nil {
		return tasks.StatusReport{}, "", err
	}

	// Without taskIds the answer is a page of the graph, read from the store a page at a
	// time (tasks.StatusPage): its cost must not grow with the graph (issue 29).
	paged := len(a.TaskIDs) == 0
	var snap tasks.Snapshot
	met := true
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		stop := protocol.ReportProgress(wctx, req, func() string { return s.graphProgress(wctx, a.GraphID) })
		if paged {
			met, err = s.tasks.WaitMet(wctx, a.GraphID, nil, until)
		} else {
			snap, met, err = s.tasks.Wait(wctx, a.GraphID, a.TaskIDs, until)
		}
		stop()
		cancel()
	} else if !paged {
		snap, err = s.tasks.Snapshot(ctx, a.GraphID)
	}
	if err != nil {
		return tasks.StatusReport{}, "", err
	}
	var out tasks.StatusReport
	var note string
	taskOf := snap.Task
	if paged {
		var view tasks.PageView
		if out, view, err = s.tasks.StatusPage(ctx, a.GraphID, q); err != nil {
			return tasks.StatusReport{}, "", err
		}
		note, taskOf = s.slotNotePage(ctx, view, out.Progress), view.Task
	} else {
		if out, err = s.tasks.Status(ctx, snap, q); err != nil {
			return tasks.StatusReport{}, "", err
		}
		note = s.slotNote(ctx, snap)
	}
	waited := wait > 0 && !met
	maxed := a.WaitMs != nil && *a.WaitMs > s.cfg.MaxWait.Milliseconds()
	if note != "" {
		cut = append(cut, note) // printed with the notes above the table
	}
	hint := func(t tasks.TaskStatus) string {
		if t.Status != tasks.Failed || t.Log == nil || t.Sandbox == nil {
			return ""
		}
		cwd := ""
		if task, ok := taskOf(t.ID); ok {
			cwd = task.Cwd
		}
		return s.denialHint(*t.Sandbox, t.Log.Text, cwd)
	}
	return out, statusText(out, cut, waited, maxed, q.Log, hint), nil
}

// statusText is what a model reads: a summary line, what was cut or left out and how to
// get it, a table of the page's tasks, then their log slices, failed and running first,
// each followed by hint's line for it (what the sandbox denied a failed task), if any.
func statusText(r tasks.StatusReport, cut clampNotes, timedOut, maxed bool, lq tasks.LogQuery, hint func(tasks.TaskStatus) string) string {
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
		if t.Executor == tasks.ExecutorKubernetes {
			note = strings.TrimSpace(note + " " + podNote(t.RanOn))
		}
		fmt.Fprintf(&b, "%s\t%s\t%d\t%s\t%s\t%s\n", t.ID, t.Status, t.Attempt, exit, dur, note)
	}
	for _, t := range r.Tasks {
		if t.Log == nil || t.Log.Text == "" {
			continue
		}
		fmt.Fprintf(&b, "\n--- %s log (%s) ---\n%s", t.ID, logWhat(*t.Log, lq), t.Log.Text)
		if !strings.HasSuffix(t.Log.Text, "\n") {
			b.WriteString("\n")
		}
		if h := hint(t); h != "" {
			b.WriteString(strings.TrimPrefix(h, "\n") + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// logWhat says which part of its log a slice is, for the line above its text: a page's
// bytes, or a tail's size, its lines when lines were asked for, and what it skipped.
func logWhat(l tasks.LogSlice, lq tasks.LogQuery) string {
	if lq.Offset != nil {
		return fmt.Sprintf("bytes %d-%d of %d; nextOffset %d", l.Offset, l.NextOffset, l.Size, l.NextOffset)
	}
	lines := ""
	if lq.Lines != nil {
		lines = fit.Plural(tasks.LineCount(l.Text), "line") + ", "
	}
	if l.Offset == 0 {
		return fmt.Sprintf("all %s%d bytes", lines, l.Size)
	}
	return fmt.Sprintf("last %s%d of %d bytes, %d skipped", lines, len(l.Text), l.Size, l.Offset)
}

// podNote says where a kubernetes task runs, for the NOTE column.
func podNote(r tasks.RanOn) string {
	switch {
	case r.Pod == nil:
		return "[kubernetes]"
	case r.Node == nil:
		return "[pod " + *r.Pod + "]"
	}
	return "[pod " + *r.Pod + " on " + *r.Node + "]"
}
