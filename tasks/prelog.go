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
// link).
//
// A prepared log is never removed, even when its task ends without starting (skipped,
// cancelled, shut down): what tells a log from a prepared file is the task's record, not
// the file. An empty file of a task whose attempt is 0 is no log: the archive leaves it
// out (spool.go), and a read of it (tasks_status, the CLI's logs, a follow) shows what a
// missing file shows, nothing. Removing it instead would race with another runner: once
// a peer has adopted the graph (forgetLocked), this runner's view of the task is stale,
// and the peer may have started the task and opened the very file, still empty, that a
// removal here would unlink, its output then lost. No check on this side can rule that
// out (the peer's open and a stat-then-remove here do not exclude each other), and the
// size-0, attempt-0 rule is needed anyway for a runner that crashed or let its graphs go
// with logs prepared. The empty files go with the graph's logs when it expires.

import (
	"os"
	"sync"
)

// logsAhead is how many logs of a graph are prepared ahead of its starts: enough to keep
// ahead of a burst of starts, few enough that a failure wastes little.
const logsAhead = 16

// prepQueue is the unbounded queue between the engine and prepLoop.
type prepQueue struct {
	mu     sync.Mutex
	items  []string // paths of the logs to create
	closed bool
	ready  chan struct{} // holds a token while there is something to take
}

func newPrepQueue() *prepQueue { return &prepQueue{ready: make(chan struct{}, 1)} }

func (q *prepQueue) push(path string) {
	q.mu.Lock()
	q.items = append(q.items, path)
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

func (q *prepQueue) take() ([]string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items, q.closed
}

// prepLoop works through the queue until it is closed and empty.
func (e *Engine) prepLoop() {
	defer e.prepDone.Done()
	for {
		paths, closed := e.preps.take()
		for _, path := range paths {
			// No O_CREATE of the graph's directory: a graph whose logs were removed
			// meanwhile (it expired) gets none back.
			if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
				f.Close()
			}
		}
		if len(paths) == 0 {
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
			e.preps.push(e.LogPath(g.row.ID, t.row.ID))
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

// unprepareLocked notes that t, whose log may have been prepared, is starting or ended
// without starting: it no longer counts against g's logsAhead (g is nil once the graph
// is gone). The file stays (see above).
func (e *Engine) unprepareLocked(g *graph, t *task) {
	if !t.logPrepared {
		return
	}
	t.logPrepared = false
	if g != nil {
		g.prepared--
	}
}
