package tasks

// This file owns the write queue: every change of a task's state is queued with e.mu held
// (sendLocked), so the queue keeps the order of changes, and one goroutine, writeLoop,
// commits whatever has queued up in one transaction. e.writer tracks writeLoop; Close
// closes e.writes once nothing can queue any more (see Engine).

import (
	"context"

	"github.com/mcp-harness/mcp-harness/store"
)

// writeItem is one entry of the write queue: a task's new state, a graph that finished
// (to archive once its last state is committed), or a barrier (closed once everything
// queued before it is committed).
type writeItem struct {
	update   *store.TaskUpdate
	finished string
	barrier  chan struct{}
}

// sendLocked queues t's current state for the store. Called with e.mu held, so the queue
// holds every task's changes in the order they happened.
func (e *Engine) sendLocked(t *task) {
	e.writes <- writeItem{update: &store.TaskUpdate{GraphID: t.row.GraphID, TaskID: t.row.ID, TaskState: t.row.TaskState}}
}

// barrierLocked returns a channel that is closed once everything queued so far is in the
// store.
func (e *Engine) barrierLocked() <-chan struct{} {
	ch := make(chan struct{})
	e.writes <- writeItem{barrier: ch}
	return ch
}

// writeLoop commits queued state changes, everything queued so far in one transaction,
// then wakes whoever waits on the graphs concerned.
func (e *Engine) writeLoop() {
	defer e.writer.Done()
	ctx := context.Background()
	for first := range e.writes {
		batch := []writeItem{first}
		open := true
	drain:
		for len(batch) < 4096 {
			select {
			case more, ok := <-e.writes:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, more)
			default:
				break drain
			}
		}
		var updates []store.TaskUpdate
		for _, it := range batch {
			if it.update != nil {
				updates = append(updates, *it.update)
			}
		}
		if err := e.cfg.DB.UpdateTasks(ctx, e.cfg.RunnerID, updates); err != nil {
			e.log.Error("recording task states", "tasks", len(updates), "err", err)
		}
		seen := map[string]bool{}
		for _, u := range updates {
			if !seen[u.GraphID] {
				seen[u.GraphID] = true
				e.changes.fire(u.GraphID)
			}
		}
		for _, it := range batch {
			switch {
			case it.barrier != nil:
				close(it.barrier)
			case it.finished != "":
				select {
				case e.spoolq <- it.finished:
				default: // a full queue: the next sweep finds the graph unarchived
				}
			}
		}
		if !open {
			return
		}
	}
}
