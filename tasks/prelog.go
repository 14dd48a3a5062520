package tasks

// This file creates task logs ahead of their tasks' starts, on a goroutine of its own, so
// that creating a file is not on the path from a task's exit to its dependent's start.
// Creating a file costs an inode allocation, which on ext4 takes tens of microseconds and,
// on a busy file system without a journal, half a millisecond (it skips recently freed
// inodes one by one); opening one that exists costs a few microseconds. spawn still opens
// its log with O_CREATE, so a log the preparer has not reached yet is created there, as
// before: the preparer only ever saves time.
//
// What is prepared: the next tasks of a graph likely to start, at most logsAhead per graph
// at a time (scheduleLocked tops it up): ready tasks first, then the dependents of tasks
// starting now whose other dependencies are running or succeeded (in a chain, the next
// link). A log exists only for a task that started (the archive's manifest says "no log"
// for the others): a prepared task that ends without starting (skipped, cancelled, shut
// down) has its empty log removed again, queued behind its creation on the same goroutine,
// so the two cannot cross.

import (
	"os"
	"sync"
)

// logsAhead is how many logs of a graph are prepared ahead of its starts: enough to keep
// ahead of a burst of starts, few enough that a failure wastes little.
const logsAhead = 16

// prepItem is a log to create, or, with remove, a prepared log to remove again.
type prepItem struct {
	path   string
	remove bool
}

// prepQueue is the unbounded queue between the engine and prepLoop.
type prepQueue struct {
	mu     sync.Mutex
	items  []prepItem
	closed bool
	ready  chan struct{} // holds a token while there is something to take
}

func newPrepQueue() *prepQueue { return &prepQueue{ready: make(chan struct{}, 1)} }

func (q *prepQueue) push(it prepItem) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *prepQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *prepQueue) take() ([]prepItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items, q.closed
}

// prepLoop works through the queue until it is closed and empty. Every removal queued is
// carried out, so at Close no prepared log of a task that never started is left behind.
func (e *Engine) prepLoop() {
	defer e.prepDone.Done()
	for {
		items, closed := e.preps.take()
		for _, it := range items {
			if it.remove {
				// Only if still empty: nothing writes to the log of a task that never
				// started, but a removal must never cost a byte of output.
				if fi, err := os.Stat(it.path); err == nil && fi.Size() == 0 {
					os.Remove(it.path)
				}
				continue
			}
			// No O_CREATE of the graph's directory: a graph whose logs were removed
			// meanwhile (it expired) gets none back.
			if f, err := os.OpenFile(it.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
				f.Close()
			}
		}
		if len(items) == 0 {
			if closed {
				return
			}
			<-e.preps.ready
		}
	}
}

// prepareLogsLocked queues the logs of g's tasks likely to start next, up to logsAhead
// prepared and not yet started: g's ready tasks in order, then the dependents of starting
// whose every dependency is running or succeeded.
func (e *Engine) prepareLogsLocked(g *graph, starting []*task) {
	if e.closed {
		return
	}
	prepare := func(t *task) bool {
		if g.prepared >= logsAhead {
			return false
		}
		if !t.logPrepared && State(t.row.Status) == Pending && t.row.Attempt == 0 {
			t.logPrepared = true
			g.prepared++
			e.preps.push(prepItem{path: e.LogPath(g.row.ID, t.row.ID)})
		}
		return true
	}
	for _, t := range g.ready {
		if !prepare(t) {
			return
		}
	}
	for _, s := range starting {
		for _, d := range s.dependents {
			if !d.logPrepared && likelyNext(d) && !prepare(d) {
				return
			}
		}
	}
}

// likelyNext reports whether t's dependencies have all succeeded or are running.
func likelyNext(t *task) bool {
	for _, d := range t.deps {
		if s := State(d.row.Status); s != Succeeded && s != Running {
			return false
		}
	}
	return true
}

// logStartedLocked notes that t, whose log may have been prepared, is starting.
func (e *Engine) logStartedLocked(g *graph, t *task) {
	if t.logPrepared {
		t.logPrepared = false
		g.prepared--
	}
}

// logAbandonedLocked removes the prepared log of t, which ended without starting.
func (e *Engine) logAbandonedLocked(t *task) {
	if !t.logPrepared {
		return
	}
	t.logPrepared = false
	if g := e.graphs[t.row.GraphID]; g != nil {
		g.prepared--
	}
	e.preps.push(prepItem{path: e.LogPath(t.row.GraphID, t.row.ID), remove: true})
}
