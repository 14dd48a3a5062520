package tasks

// This file creates task logs ahead of their tasks' starts, on a goroutine of its own (the
// preparer's), so that creating a file is not on the path from a task's exit to its
// dependent's start.
// Creating a file costs an inode allocation, which on ext4 takes tens of microseconds and,
// on a busy file system without a journal, half a millisecond (it skips recently freed
// inodes one by one); opening one that exists costs a few microseconds. spawn still opens
// its log with O_CREATE (openLog), so a log the preparer has not reached yet is created
// there, as before: the preparer only ever saves time.
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

import "os"

// logsAhead is how many logs of a graph are prepared ahead of its starts: enough to keep
// ahead of a burst of starts, few enough that a failure wastes little.
const logsAhead = 16

// preparer is the goroutine that creates the logs queued for it, and its unbounded queue.
type preparer struct {
	queue batchQueue[string] // paths of the logs to create
	done  chan struct{}      // closed when the goroutine ends
}

// startPreparer starts a preparer with nothing queued.
func startPreparer() *preparer {
	p := &preparer{queue: newBatchQueue[string](), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *preparer) push(path string) { p.queue.push(path) }

// stop closes the queue: the preparer ends once it has created what is queued. It does
// not wait, so the preparer finishes while the engine does the rest of its shutdown.
func (p *preparer) stop() { p.queue.close() }

// Close closes the queue and waits for the preparer to end.
func (p *preparer) Close() {
	p.stop()
	<-p.done
}

// loop works through the queue until it is closed and empty.
func (p *preparer) loop() {
	defer close(p.done)
	for {
		paths, closed := p.queue.take()
		for _, path := range paths {
			// No O_CREATE of the graph's directory: a graph whose logs were removed
			// meanwhile (it expired) gets none back.
			if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600); err == nil { // as openLog, which truncates nothing either
				f.Close()
			}
		}
		if len(paths) == 0 {
			if closed {
				return
			}
			p.queue.wait()
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
			e.preparer.push(e.LogPath(g.row.ID, t.row.ID))
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
