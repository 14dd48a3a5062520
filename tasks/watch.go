package tasks

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// This file follows tasks as they run, for a person at a terminal (`mcp-harness tasks logs
// -f`, one task or every task of a graph): what each writes, as it writes it; while one has
// not started, why not (on which dependencies it waits, or which tasks hold the slot it
// needs); and how each ended. It reads the store and the log files only, so it follows a
// graph whichever process runs it.

// LogEventType says what a LogEvent reports.
type LogEventType string

// The LogEvent types.
const (
	EventLog     LogEventType = "log"     // text the task wrote
	EventWaiting LogEventType = "waiting" // the task has not started, and why (again each time the reason changes)
	EventStarted LogEventType = "started" // an attempt started (a retry is an attempt too)
	EventEnded   LogEventType = "ended"   // the task is terminal; Task says how it ended
)

// LogEventTypes lists every LogEvent type, in the order they are declared above.
func LogEventTypes() []LogEventType {
	return []LogEventType{EventLog, EventWaiting, EventStarted, EventEnded}
}

// LogEvent is one thing a follower reports about a task. Its JSON form is a record of
// `mcp-harness tasks logs --json` (NDJSON: one record a line; there a log record holds one
// line of text, without its newline). Every field is present, null where it does not apply.
type LogEvent struct {
	Type    LogEventType `json:"type"`
	GraphID string       `json:"graphId"`
	TaskID  string       `json:"taskId"`
	Text    *string      `json:"text"` // log: the text
	Wait    *TaskWait    `json:"wait"` // waiting: why it has not started
	Task    *TaskHead    `json:"task"` // started and ended: its state then
}

// TaskWait says why a pending task has not started: Reason is ReasonReady (Slots says for
// what, when known), ReasonWaiting (on WaitingOn) or ReasonBlocked (by BlockedBy: it will
// be skipped).
type TaskWait struct {
	Reason    string     `json:"reason"`
	WaitingOn []DepState `json:"waitingOn"`
	BlockedBy []DepState `json:"blockedBy"`
	Slots     *SlotWait  `json:"slots"`
}

// FollowQuery says what Follow follows.
type FollowQuery struct {
	TaskIDs []string      // in this order; every task of the graph, in submitted order, when empty
	Tail    int           // start each log with its last Tail lines; < 0: the whole log
	Poll    time.Duration // how often it looks at the store and the logs
}

// followed is Follow's state for one task.
type followed struct {
	id      string
	path    string
	offset  int64
	attempt int    // the attempts seen; a higher count is a start
	wait    string // the key of the last waiting event sent, to send only changes
	ended   *Task  // as it ended, once seen terminal
}

// Follow reports the tasks of snap that q names to emit as they run: their logs from q.Tail
// lines back, then what they write as they write it; for a task not started yet, why not,
// again each time that changes; and how each ended. It returns once every one of them is
// terminal, with them as they ended, in q's order. When the graph's runner is gone and no
// live runner serves the workspace to take it over, its tasks cannot end, so it stops
// with ErrOwnerGone instead of waiting for ever. A graph that expired is reported from its
// archive, once. An error from emit stops it and is returned.
func (r *Reader) Follow(ctx context.Context, snap Snapshot, q FollowQuery, emit func(LogEvent) error) ([]Task, error) {
	ids := q.TaskIDs
	if len(ids) == 0 {
		for _, t := range snap.Tasks {
			ids = append(ids, t.ID)
		}
	}
	if err := checkTaskIDs(snap, ids); err != nil {
		return nil, err
	}
	gid := snap.Graph.ID
	logTo := func(id string) io.Writer {
		return writerFunc(func(p []byte) (int, error) {
			if len(p) == 0 {
				return 0, nil
			}
			s := string(p)
			return len(p), emit(LogEvent{Type: EventLog, GraphID: gid, TaskID: id, Text: &s})
		})
	}
	if snap.Graph.ExpiredAt != nil {
		out := make([]Task, 0, len(ids))
		for _, id := range ids {
			if err := r.copyArchivedLog(ctx, gid, id, q.Tail, logTo(id)); err != nil {
				return nil, err
			}
			t, _ := snap.Task(id)
			head := t.Head()
			if err := emit(LogEvent{Type: EventEnded, GraphID: gid, TaskID: id, Task: &head}); err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		return out, nil
	}

	fs := make([]*followed, len(ids))
	for i, id := range ids {
		t, _ := snap.Task(id)
		f := &followed{id: id, path: r.LogPath(gid, id), attempt: t.Attempt}
		var err error
		if f.offset, err = tailOffset(f.path, q.Tail); err != nil {
			return nil, err
		}
		fs[i] = f
	}
	deps := make(map[string][]string, len(snap.Tasks))
	for _, t := range snap.Tasks {
		deps[t.ID] = t.DependsOn
	}
	tick := time.NewTicker(q.Poll)
	defer tick.Stop()
	for {
		// The states are read before the logs are drained, so a task read terminal here
		// has written everything the drain that follows reads.
		briefs, err := r.db.TaskBriefs(ctx, gid)
		if err != nil {
			return nil, err
		}
		status := make(map[string]State, len(briefs))
		attempts := make(map[string]int, len(briefs))
		for _, b := range briefs {
			status[b.ID], attempts[b.ID] = State(b.Status), b.Attempt
		}
		var slots *SlotWait // read once a round, when some followed task is ready
		slotsRead := false
		var now *Snapshot // read once a round, when some followed task has ended
		for _, f := range fs {
			if f.ended != nil {
				continue
			}
			st := status[f.id]
			if attempts[f.id] > f.attempt {
				f.attempt = attempts[f.id]
				head := TaskHead{ID: f.id, Status: st, Attempt: f.attempt, DependsOn: orEmpty(deps[f.id])}
				if err := emit(LogEvent{Type: EventStarted, GraphID: gid, TaskID: f.id, Task: &head}); err != nil {
					return nil, err
				}
			}
			if st != Pending { // a pending task writes nothing: a large graph costs what runs
				n, err := drainLog(f.path, f.offset, logTo(f.id))
				f.offset += n
				if err != nil {
					return nil, err
				}
			}
			switch {
			case st.Terminal():
				if now == nil {
					snap, err := r.Snapshot(ctx, gid)
					if err != nil {
						return nil, err
					}
					now = &snap
				}
				t, _ := now.Task(f.id)
				f.ended = &t
				head := t.Head()
				if err := emit(LogEvent{Type: EventEnded, GraphID: gid, TaskID: f.id, Task: &head}); err != nil {
					return nil, err
				}
			case st == Pending:
				w := waitOf(deps[f.id], status)
				if w.Reason == ReasonReady {
					if !slotsRead {
						if slots, err = r.currentSlots(ctx, gid); err != nil {
							return nil, err
						}
						slotsRead = true
					}
					w.Slots = slots
				}
				if key := w.key(); key != f.wait {
					f.wait = key
					if err := emit(LogEvent{Type: EventWaiting, GraphID: gid, TaskID: f.id, Wait: &w}); err != nil {
						return nil, err
					}
				}
			}
		}
		if !slices.ContainsFunc(fs, func(f *followed) bool { return f.ended == nil }) {
			out := make([]Task, len(fs))
			for i, f := range fs {
				out[i] = *f.ended
			}
			return out, nil
		}
		owner, err := r.owner(ctx, gid)
		if err != nil {
			return nil, err
		}
		if !owner.Live && !r.anyLive(ctx) {
			// Its tasks may have ended just before its server did: look once more.
			if again, err := r.db.TaskBriefs(ctx, gid); err == nil && followedEnded(again, fs) {
				continue
			}
			var open []string
			for _, f := range fs {
				if f.ended == nil {
					open = append(open, fmt.Sprintf("%s (%s)", f.id, status[f.id]))
				}
			}
			return nil, fmt.Errorf("%s %w (pid %d) and no other server runs on this workspace; the next server to start here records what became of them",
				joinIDs(open), ErrOwnerGone, owner.Pid)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// key tells waits apart that a person would: the reason, and for a ready task the tasks
// holding the slots. A dependency that starts running, or one of several that ends, is
// not news: the task's start or its skip will be.
func (w TaskWait) key() string {
	k := w.Reason
	if w.Slots != nil {
		k += " " + w.Slots.Cap
		for _, h := range w.Slots.HeldBy {
			k += " " + h.GraphID + "/" + h.TaskID
		}
	}
	return k
}

// currentSlots reads the graph afresh and says what its ready tasks wait for.
func (r *Reader) currentSlots(ctx context.Context, graphID string) (*SlotWait, error) {
	snap, err := r.Snapshot(ctx, graphID)
	if err != nil {
		return nil, err
	}
	return r.SlotWait(ctx, snap)
}

// waitOf says why a pending task with dependencies deps has not started, given the states
// of its graph's tasks, as Analyze does for one node: blocked if a dependency failed, was
// cancelled or skipped; waiting if one has not succeeded yet; else ready.
func waitOf(deps []string, status map[string]State) TaskWait {
	w := TaskWait{WaitingOn: []DepState{}, BlockedBy: []DepState{}}
	seen := make(map[string]bool, len(deps))
	for _, d := range deps {
		if seen[d] {
			continue
		}
		seen[d] = true
		switch st := status[d]; st {
		case Succeeded:
		case Failed, Cancelled, Skipped:
			w.BlockedBy = append(w.BlockedBy, DepState{ID: d, Status: st})
		default:
			w.WaitingOn = append(w.WaitingOn, DepState{ID: d, Status: st})
		}
	}
	switch {
	case len(w.BlockedBy) > 0:
		w.Reason = ReasonBlocked
	case len(w.WaitingOn) > 0:
		w.Reason = ReasonWaiting
	default:
		w.Reason = ReasonReady
	}
	return w
}

// followedEnded reports whether every followed task is terminal in briefs.
func followedEnded(briefs []store.TaskBrief, fs []*followed) bool {
	st := make(map[string]State, len(briefs))
	for _, b := range briefs {
		st[b.ID] = State(b.Status)
	}
	for _, f := range fs {
		if !st[f.id].Terminal() {
			return false
		}
	}
	return true
}

func joinIDs(ids []string) string {
	switch len(ids) {
	case 0:
		return "no task"
	case 1:
		return "task " + ids[0] + " is unfinished but"
	}
	return fmt.Sprintf("tasks %s are unfinished but", strings.Join(ids, ", "))
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
