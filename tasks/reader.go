package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/archive"
	"github.com/mcp-harness/mcp-harness/tasks/fit"
)

// Reader is the read side of a workspace's task graphs, the same for every process: the
// stdio server (an Engine is a Reader plus the graphs its runner runs) and the operator
// CLI, which opens a Reader of its own on the store the servers write. It answers from the
// store alone, so what it says is the truth whichever runner runs a graph, and it holds
// every decision an adapter would otherwise repeat: a graph's derived status and
// progress, the live log or the archive, graph summaries by a store query.
type Reader struct {
	db    *store.DB
	ws    *workspace.Workspace
	where string // names the state in messages
	owned bool   // the Reader opened db and closes it
}

// NewReader reads the store db of workspace ws; the caller keeps db open while the Reader
// is used.
func NewReader(db *store.DB, ws *workspace.Workspace) *Reader {
	return &Reader{db: db, ws: ws, where: ws.Root}
}

// OpenReader opens the store of an existing workspace for reading, creating nothing: a
// workspace on which no server kept state is workspace.ErrNoState. Close closes it.
func OpenReader(ctx context.Context, cfg workspace.Config) (*Reader, error) {
	ws, err := workspace.Find(cfg)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, ws.DBPath())
	if err != nil {
		return nil, err
	}
	return &Reader{db: db, ws: ws, where: ws.Where(cfg), owned: true}, nil
}

// Close closes the store if OpenReader opened it.
func (r *Reader) Close() error {
	if !r.owned {
		return nil
	}
	return r.db.Close()
}

// Where names the workspace's state in messages: the workspace, or the state dir when one
// was given.
func (r *Reader) Where() string { return r.where }

// LogPath is where a task's live log is written (and stays until the graph expires).
func (r *Reader) LogPath(graphID, taskID string) string {
	return LogPath(r.ws.LogsDir(), graphID, taskID)
}

// Snapshot reads a graph and its tasks from the store.
func (r *Reader) Snapshot(ctx context.Context, graphID string) (Snapshot, error) {
	// Tasks first, then the graph: the transaction that makes the last task terminal also
	// sets the graph's finishedAt, so this order never shows finished tasks in an
	// unfinished graph.
	rows, err := r.db.GraphTasks(ctx, graphID)
	if err != nil {
		return Snapshot{}, fmt.Errorf("read the tasks of graph %s: %w", graphID, err)
	}
	g, err := r.graph(ctx, graphID)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Graph: g, Tasks: tasksOf(rows)}, nil
}

func (r *Reader) graph(ctx context.Context, graphID string) (Graph, error) {
	g, err := r.db.GetGraph(ctx, graphID)
	if errors.Is(err, store.ErrNotFound) {
		return Graph{}, notFound("no graph %s in this workspace", quote.Short(graphID))
	}
	if err != nil {
		return Graph{}, fmt.Errorf("read graph %s: %w", graphID, err)
	}
	return graphOf(g), nil
}

// checkTaskIDs refuses ids that are not tasks of snap.
func checkTaskIDs(snap Snapshot, ids []string) error {
	for _, id := range ids {
		if _, ok := snap.Task(id); !ok {
			return notFound("graph %s has no task %s", snap.Graph.ID, quote.Short(id))
		}
	}
	return nil
}

// selected reports whether id is among ids, where no ids select every task.
func selected(ids []string, id string) bool {
	return len(ids) == 0 || slices.Contains(ids, id)
}

// StatusQuery says what Status reports.
type StatusQuery struct {
	TaskIDs  []string // the tasks to report; every task when empty
	Log      LogQuery // the slice of each task's log
	Cursor   string   // the NextCursor of the previous page; "" for the first
	MaxBytes int      // the report's budget as JSON (see fit.go); 0 = DefaultMaxResult
}

// Status is a graph as tasks_status shows it: its head, progress and runner and, for the
// tasks q selects, their states, times and the slices of their logs q asks for, from the
// live logs or, once the graph expired, from its archive (when the archive is gone, the
// logs are null and a note says so). The tasks come failed first, then running, then the
// rest in submitted order, as many as fit q.MaxBytes: log tails shrink to fit before any
// task is left out (fit.go). An unknown task id is ErrNotFound.
//
// A cursor names a place in that order, so the pages of a finished graph hold every task
// once; on a running graph each page shows the states as they are when it is read, and a
// task whose state changes between pages may show twice or not at all (the progress
// counts are always whole).
func (r *Reader) Status(ctx context.Context, snap Snapshot, q StatusQuery) (StatusReport, error) {
	if err := checkTaskIDs(snap, q.TaskIDs); err != nil {
		return StatusReport{}, err
	}
	if err := q.Log.Check(len(q.TaskIDs)); err != nil {
		return StatusReport{}, err
	}
	after, err := parsePagePos("tasks_status", q.Cursor)
	if err != nil {
		return StatusReport{}, err
	}
	todo := ordered(snap.Tasks, q.TaskIDs, after)
	return r.status(ctx, snap.Graph, snap.Progress(), pageSource{n: len(todo), at: func(i int) (Task, error) { return todo[i], nil }}, q)
}

// pageSource is what a Status page is chosen from: n tasks in the page's order (failed,
// running, the rest; from the cursor on), the i-th read by at as the page needs it.
type pageSource struct {
	n  int
	at func(i int) (Task, error)
}

// status is Status of graph g, whose tasks count p, on the tasks of src.
func (r *Reader) status(ctx context.Context, g Graph, p Progress, src pageSource, q StatusQuery) (StatusReport, error) {
	limit := fit.Budget(q.MaxBytes)
	now := time.Now()
	out := StatusReport{GraphHead: g.Head(p), Expired: g.ExpiredAt != nil, Progress: p, Tasks: []TaskStatus{}}
	art, err := r.db.GetArtifact(ctx, g.ID)
	switch {
	case err == nil:
		out.Artifact = &Artifact{Path: art.Path, Bytes: art.Bytes, SHA256: art.SHA256, index: art.LogIndex}
	case !errors.Is(err, store.ErrNotFound):
		return StatusReport{}, fmt.Errorf("read the graph's archive record: %w", err)
	}
	if out.Runner, err = r.runnerRef(ctx, g.RunnerID, now); err != nil {
		return StatusReport{}, err
	}

	// Choose the page by the tasks' sizes without log text, the head sized with the
	// largest counts and cursor it can carry.
	head := out
	head.OmittedTasks = src.n
	head.NextCursor = &[]string{fit.Pos{Rank: 2, Seq: p.Total}.String()}[0]
	used := fit.Size(head)
	itemMax := limit / 4
	logPath := func(id string) string {
		if out.Expired && out.Artifact != nil {
			return out.Artifact.Path + "#" + archive.LogEntry(id)
		}
		return r.LogPath(g.ID, id)
	}
	var page []TaskStatus
	var seqs []int // the page's places in the graph, for its cursor
	cutDeps := 0
	for i := 0; i < src.n; i++ {
		t, err := src.at(i)
		if err != nil {
			return StatusReport{}, err
		}
		item := TaskStatus{TaskHead: t.Head(), TaskTimes: t.Times(now), RanOn: t.RanOn(), Sandbox: t.Sandbox,
			Log: &LogSlice{Path: logPath(t.ID), Size: 1 << 40, Offset: 1 << 40, NextOffset: 1 << 40, SkippedBytes: &[]int64{1 << 40}[0]}}
		deps := item.DependsOn
		size := func(n int) int {
			item.DependsOn, item.OmittedDeps = fit.Cut(deps, n)
			if item.OmittedDeps > 0 {
				item.OmittedDeps = len(deps) // sized with the widest count
			}
			return fit.Size(item)
		}
		n := fit.Lists(len(deps), itemMax, size)
		s := size(n) + 1 // and a comma
		if used+s > limit && len(page) > 0 {
			break
		}
		if item.DependsOn, item.OmittedDeps = fit.Cut(deps, n); item.OmittedDeps > 0 {
			cutDeps++
		}
		used += s
		page = append(page, item)
		seqs = append(seqs, t.Seq)
	}
	omitted := src.n - len(page)

	// Logs: the slices asked for, or none once tasks are left out (a page that is full
	// without them has no room to share). Nothing past the budget could be shown (a byte of
	// log takes a byte of JSON or more), so nothing past it is read.
	lq := q.Log
	lq.Tail, lq.Limit = min(lq.Tail, int64(limit)), min(lq.Limit, int64(limit))
	if omitted > 0 && lq.Offset == nil {
		lq.Tail = 0
	}
	ids := make([]string, len(page))
	for i, t := range page {
		ids[i] = t.ID
	}
	logs, gone, err := r.readLogs(ctx, g, out.Artifact, ids, lq)
	if err != nil {
		return StatusReport{}, err
	}
	for i := range page {
		if s, ok := logs[page[i].ID]; ok {
			page[i].Log = &s
		} else {
			page[i].Log = nil
		}
	}
	out.Tasks = page
	short := shortLineTails(page, lq)
	setPage := func() {
		omitted = src.n - len(out.Tasks)
		out.OmittedTasks, out.NextCursor = omitted, nil
		if omitted > 0 {
			last := out.Tasks[len(out.Tasks)-1]
			c := fit.Pos{Rank: rank(last.Status), Seq: seqs[len(out.Tasks)-1]}.String()
			out.NextCursor = &c
		}
	}
	setPage()
	logCap := shrinkLogs(&out, limit, q.Log.Offset != nil)

	// The page was chosen with room to spare; should the exact report still not fit (a
	// log path longer than the placeholder numbers allowed for), leave out its last tasks.
	for fit.Size(out) > limit && len(out.Tasks) > 1 {
		out.Tasks = out.Tasks[:len(out.Tasks)-1]
		setPage()
	}

	// Say what was left out, and how to get it.
	if omitted > 0 {
		next := "pass cursor " + strconv.Quote(*out.NextCursor) + " for the next page"
		out.Notes = append(out.Notes, fmt.Sprintf("%s of %d not shown: the result is limited to %s; %s, or name the tasks you want with taskIds.",
			fit.Plural(omitted, "task"), src.n, fit.SizeText(limit), next))
		if !lq.wantsText() && q.Log.wantsText() {
			msg := "Logs are left out when not every task fits; ask for fewer tasks with taskIds to read them"
			if failed := failedIDs(out.Tasks, 5); len(failed) > 0 {
				msg += ", e.g. taskIds " + jsonList(failed) + " (failed)"
			}
			out.Notes = append(out.Notes, msg+".")
		}
	}
	if logCap >= 0 {
		if q.Log.Offset != nil {
			out.Notes = append(out.Notes, fmt.Sprintf("The log page was cut to %s to fit the result; go on from nextOffset.", fit.Plural(logCap, "byte")))
		} else {
			out.Notes = append(out.Notes, fmt.Sprintf("Log tails were cut to at most %s each to fit the result; ask for fewer tasks with taskIds, or page one task's log with logOffset.", fit.Plural(logCap, "byte")))
		}
	}
	if len(short) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("The last %d lines of %s take more than the %s a tail reads: the tail holds the last lines that fit; page the log with logOffset for more.",
			*lq.Lines, jsonList(short), fit.Plural(int(lq.Tail), "byte")))
	}
	if cutDeps > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("The dependsOn list of %s was cut to fit (omittedDeps counts what is missing); `mcp-harness tasks status %s --json` in a shell prints it whole.",
			fit.Plural(cutDeps, "task"), g.ID))
	}
	if gone != "" {
		out.Notes = append(out.Notes, "Logs: "+gone+".")
	}
	return out, nil
}

// shrinkLogs cuts the log texts of a report that does not fit max to one cap each, the
// largest that fits (the shortest texts stay whole): tails lose their start (and start at
// a line again), a page of one log its end. It returns the cap, or -1 when nothing was cut.
func shrinkLogs(out *StatusReport, limit int, paging bool) int {
	var texts []int
	var logs []*LogSlice
	for i := range out.Tasks {
		if l := out.Tasks[i].Log; l != nil && l.Text != "" {
			texts = append(texts, jsonsize.String(l.Text)-2)
			logs = append(logs, l)
		}
	}
	if len(logs) == 0 {
		return -1
	}
	saved := make([]string, len(logs))
	for i, l := range logs {
		saved[i], l.Text = l.Text, ""
	}
	room := limit - fit.Size(out)
	total := 0
	for _, n := range texts {
		total += n
	}
	if total <= room {
		for i, l := range logs {
			l.Text = saved[i]
		}
		return -1
	}
	offsets := make([]int64, len(logs))
	for i, l := range logs {
		offsets[i] = l.Offset
	}
	c := jsonsize.Level(texts, room)
	for {
		for i, l := range logs {
			if paging {
				l.Text = jsonsize.Head(saved[i], c)
				l.NextOffset = l.Offset + int64(len(l.Text))
				l.EOF = l.NextOffset >= l.Size
				continue
			}
			kept, cut := jsonsize.Tail(saved[i], c)
			kept, cut = toLineStart(saved[i], kept, cut)
			l.Text, l.Offset = kept, offsets[i]+int64(cut)
			skipped := l.Offset
			l.SkippedBytes = &skipped
		}
		// The cut changes numbers beside the texts (a page's eof turns false, an offset
		// grows a digit): take what they added off the cap.
		over := fit.Size(out) - limit
		if over <= 0 || c == 0 {
			return c
		}
		c = max(c-max(over/len(logs), 1), 0)
	}
}

// shortLineTails names the tasks of page whose lines tail holds fewer lines than lq asks
// for though their log has more: the lines were longer than the bytes a tail reads.
func shortLineTails(page []TaskStatus, lq LogQuery) []string {
	if lq.Lines == nil || lq.Offset != nil {
		return nil
	}
	var ids []string
	for _, t := range page {
		if l := t.Log; l != nil && l.Text != "" && l.Offset > 0 && LineCount(l.Text) < *lq.Lines {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// LineCount counts the lines of text as a tail counts them (tail.go): a final newline
// ends the last line.
func LineCount(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		n++
	}
	return n
}

// toLineStart moves a tail that shrinkLogs cut cut bytes into text, leaving kept, on to
// the first line that starts in kept, as every tail starts (tail.go); a kept part with no
// line start in it stays as it is, cut at a character.
func toLineStart(text, kept string, cut int) (string, int) {
	if cut == 0 || text[cut-1] == '\n' {
		return kept, cut
	}
	if i := strings.IndexByte(kept, '\n'); i >= 0 && i < len(kept)-1 {
		return kept[i+1:], cut + i + 1
	}
	return kept, cut
}

// runnerRef reads a graph's runner; one whose record is gone is named, not live.
func (r *Reader) runnerRef(ctx context.Context, id string, now time.Time) (RunnerRef, error) {
	ri, err := r.Runner(ctx, id, now)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return RunnerRef{ID: id}, nil
	case err != nil:
		return RunnerRef{}, fmt.Errorf("read the graph's runner: %w", err)
	}
	return ri.Ref(), nil
}

// failedIDs lists up to n ids of failed tasks.
func failedIDs(ts []TaskStatus, n int) []string {
	var ids []string
	for _, t := range ts {
		if t.Status == Failed && len(ids) < n {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// jsonList writes ids as a JSON array, the way a caller passes them back.
func jsonList(ids []string) string {
	b, _ := json.Marshal(ids)
	return string(b)
}
