package tasks

// This file owns the in-memory graphs and tasks of this runner and the scheduling over
// them: which ready tasks start (scheduleLocked, launchAll), and how a task's end carries
// through its graph: dependents become ready or are skipped, a finished graph is dropped.
// Everything here runs with e.mu held, except launchAll, which starts processes after
// the lock is released (see Engine for the locks and WaitGroups).

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

type graph struct {
	row        store.GraphRow
	tasks      []*task
	byID       map[string]*task
	ready      []*task // pending local tasks whose dependencies all succeeded, in the order they became ready
	readyPods  []*task // the same for remote tasks, which wait for a pod slot instead (Config.MaxPods)
	running    int
	unfinished int
	dirs       graphDirs
}

type task struct {
	row        store.TaskRow // spec, and the state as last sent to the store
	deps       []*task
	dependents []*task
	remaining  int // dependencies not yet succeeded

	remote       bool        // it runs on a remote executor (Kubernetes), not as a process here
	run          *attemptRun // the attempt running now; nil while it is starting, and between attempts
	timer        *time.Timer // the attempt's timeout
	cancelReason string      // set when a cancel or a shutdown stops the running task
	cancelCode   string
	timedOut     bool
	starting     bool // its slot is taken and its process is being started
	deferrals    int  // starts of a remote attempt put off because the cluster did not answer
}

// queueOf is the ready queue t waits in: local tasks wait for the runner's slots, remote
// ones for its pod slots.
func (g *graph) queueOf(t *task) *[]*task {
	if t.remote {
		return &g.readyPods
	}
	return &g.ready
}

// firstBlocker returns a dependency that ended without succeeding, if any.
func firstBlocker(t *task) *task {
	for _, d := range t.deps {
		if s := State(d.row.Status); s.Terminal() && s != Succeeded {
			return d
		}
	}
	return nil
}

// launch is a task picked to start: its slot is taken, and the process is started by
// start, outside the engine's lock. A remote task a runner takes over while it runs
// (reattach) is launched too, to follow it again rather than start it.
type launch struct {
	g        *graph
	t        *task
	recorded <-chan struct{} // closed once its running state is in the store
	reattach bool
}

// scheduleLocked picks the ready tasks that the graph and runner caps let start, visiting
// graphs oldest first, and takes their slots. The caller starts them with launchAll once
// it has released the lock: creating a log file and forking cost a millisecond or more on
// a slow disk, and must not hold up the exits of other tasks.
//
// The runner-wide cap (Config.MaxParallel) has one exception: a graph with no task
// running may always start one. A task may run for ever (a dev server, a watcher), and a
// graph behind two of them on a two-core machine would otherwise wait for ever with
// nothing to say but "ready". So every graph makes progress, one task at a time at
// worst, and the cap is exceeded by at most one task per graph; its other tasks wait for
// the cap as before, and the readers name the tasks that hold the slots (SlotHolders).
func (e *Engine) scheduleLocked() []launch {
	var out []launch
	if e.closed {
		return nil
	}
	for _, g := range e.order {
		for len(g.ready) > 0 && g.running < g.row.MaxParallel && (e.running < e.cfg.MaxParallel || g.running == 0) {
			t := g.ready[0]
			g.ready = g.ready[1:]
			e.running++
			out = append(out, e.pickLocked(g, t))
		}
		// Pods have a cap of their own, without the exception: a pod does not run on this
		// machine, and --kube-max-pods is a bound on what the cluster is asked for.
		for len(g.readyPods) > 0 && g.running < g.row.MaxParallel && (e.cfg.MaxPods <= 0 || e.pods < e.cfg.MaxPods) {
			t := g.readyPods[0]
			g.readyPods = g.readyPods[1:]
			e.pods++
			out = append(out, e.pickLocked(g, t))
		}
		// No early exit when the cap is reached: a later graph with nothing running may
		// still start its one task.
	}
	if len(out) > 0 {
		// A task is recorded running before its process exists: if this runner dies in
		// between, the next one records it RUNNER_RESTARTED rather than running it a second
		// time. One barrier serves every task picked here.
		recorded := e.barrierLocked()
		for i := range out {
			out[i].recorded = recorded
		}
	}
	return out
}

// pickLocked starts t's next attempt in memory: running, its slot taken (the caller
// counted the runner's or the pod slot), its state queued for the store.
func (e *Engine) pickLocked(g *graph, t *task) launch {
	t.row.Attempt++
	if t.row.StartedAt == nil {
		now := time.Now().UTC()
		t.row.StartedAt = &now
	}
	t.row.Status = string(Running)
	t.row.Pid, t.row.Pgid, t.row.ProcStart, t.row.Message = nil, nil, nil, nil
	t.row.Job, t.row.Pod, t.row.Node, t.row.LogStart = nil, nil, nil, nil
	t.timedOut, t.cancelReason, t.cancelCode = false, "", ""
	t.starting = true
	g.running++
	e.waiters.Add(1) // Close waits for the start and the wait that follows
	e.sendLocked(t)
	return launch{g: g, t: t}
}

// launchAll starts the picked tasks, and whatever a failed start lets start instead. A
// task waits until its running state is in the store (the database may be locked by
// another process for a while: see writer.go); one still waiting when the shutdown
// deadline passes is not started at all.
func (e *Engine) launchAll(ls []launch) {
	for len(ls) > 0 {
		l := ls[0]
		if l.reattach {
			// Nothing to record first, and never abandoned: the task runs already, and a
			// shutdown that began stops it once it is followed again (see reattach).
			ls = append(ls[1:], e.reattach(l.g, l.t)...)
			continue
		}
		select {
		case <-l.recorded:
		case <-e.abandon:
		}
		select {
		case <-e.abandon:
			e.notStarted(l.g, l.t)
			ls = ls[1:]
		default:
			ls = append(ls[1:], e.start(l.g, l.t)...)
		}
	}
}

// notStarted records a task picked to start, whose process was never started because the
// runner shut down first: cancelled, as the pending tasks are.
func (e *Engine) notStarted(g *graph, t *task) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.waiters.Done() // taken by scheduleLocked
	t.starting = false
	e.releaseSlotLocked(g, t)
	t.row.Attempt--
	if t.row.Attempt == 0 {
		t.row.StartedAt = nil
	}
	e.finishLocked(g, t, outcome{state: Cancelled, code: CodeRunnerShutdown, message: "the server shut down before the task started"})
}

// finishLocked puts t in a terminal state and carries the consequences through the graph:
// dependents become ready, or are skipped; with failFast the rest is cancelled.
func (e *Engine) finishLocked(g *graph, t *task, o outcome) {
	now := time.Now().UTC()
	t.row.Status = string(o.state)
	t.row.ErrorCode, t.row.ExitCode, t.row.Signal = strPtr(o.code), o.exitCode, o.signal
	t.row.Message = strPtr(o.message)
	t.row.FinishedAt = &now
	g.unfinished--
	e.sendLocked(t)

	if o.state == Succeeded {
		for _, d := range t.dependents {
			d.remaining--
			if d.remaining == 0 && State(d.row.Status) == Pending && firstBlocker(d) == nil {
				q := g.queueOf(d)
				*q = append(*q, d)
			}
		}
	} else {
		for _, d := range t.dependents {
			if State(d.row.Status) == Pending {
				e.skipLocked(g, d, t)
			}
		}
		if o.state == Failed && g.row.FailFast && o.code != CodeRunnerShutdown {
			e.cancelGraphLocked(g, CodeCancelled, fmt.Sprintf("cancelled by failFast: %s failed", t.row.ID))
		}
	}
	if g.unfinished == 0 {
		e.dropLocked(g)
	}
}

// skipLocked skips t, whose dependency blocker ended without succeeding, and everything
// pending downstream of it. An explicit stack: a chain can be ten thousand tasks long.
func (e *Engine) skipLocked(g *graph, t *task, blocker *task) {
	type item struct{ t, because *task }
	stack := []item{{t, blocker}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if State(it.t.row.Status) != Pending {
			continue
		}
		code, why := CodeUpstreamFailed, "failed"
		switch State(it.because.row.Status) {
		case Cancelled:
			code, why = CodeUpstreamCancelled, "was cancelled"
		case Skipped:
			why = "was skipped"
			if it.because.row.ErrorCode != nil && *it.because.row.ErrorCode == CodeUpstreamCancelled {
				code = CodeUpstreamCancelled
			}
		}
		now := time.Now().UTC()
		msg := fmt.Sprintf("dependency %s %s", it.because.row.ID, why)
		it.t.row.Status = string(Skipped)
		it.t.row.ErrorCode, it.t.row.Message, it.t.row.FinishedAt = &code, &msg, &now
		g.unfinished--
		q := g.queueOf(it.t)
		*q = removeTask(*q, it.t)
		e.sendLocked(it.t)
		for _, d := range it.t.dependents {
			stack = append(stack, item{d, it.t})
		}
	}
	if g.unfinished == 0 {
		e.dropLocked(g)
	}
}

// shutdownGraphLocked stops g because the runner shuts down: every pending task is
// recorded cancelled with RUNNER_SHUTDOWN, and every running one is stopped (SIGTERM,
// SIGKILL after the grace) and recorded failed with RUNNER_SHUTDOWN when it exits. A
// pending task is cancelled for its own sake, not skipped because a dependency was
// cancelled: the shutdown is why none of them runs.
func (e *Engine) shutdownGraphLocked(g *graph) {
	if g == nil {
		return
	}
	now := time.Now().UTC()
	for _, t := range g.tasks {
		switch State(t.row.Status) {
		case Pending:
			t.row.Status = string(Cancelled)
			t.row.ErrorCode, t.row.Message, t.row.FinishedAt = strPtr(CodeRunnerShutdown), strPtr("the server shut down before the task started"), &now
			t.row.ExitCode, t.row.Signal = nil, nil
			g.unfinished--
			e.sendLocked(t)
		case Running:
			e.stopLocked(t, CodeRunnerShutdown, "the server shut down while the task ran", e.cfg.KillGrace)
		}
	}
	g.ready, g.readyPods = nil, nil
	if g.unfinished == 0 {
		e.dropLocked(g)
	}
}

// forgetLocked stops scheduling a graph another runner has adopted: its pending tasks stay
// as the store has them, for the adopter. The adopter recorded the tasks that ran here
// RUNNER_RESTARTED and killed their processes; whatever it could not kill (another boot's
// view of the process, say) is killed here, so nothing runs on unobserved.
func (e *Engine) forgetLocked(g *graph) {
	g.ready, g.readyPods = nil, nil
	g.dirs.close()
	for _, t := range g.tasks {
		switch run := t.run; {
		case run == nil:
		case run.remote:
			// Its pod runs on for the adopter, which re-attaches to it: only following it
			// ends here.
			run.stop()
		default:
			run.ex.Cancel(context.Background(), run.id, 0)
		}
	}
	delete(e.graphs, g.row.ID)
	for i, o := range e.order {
		if o == g {
			e.order = append(e.order[:i:i], e.order[i+1:]...)
			break
		}
	}
	// Its waiters re-read it, find another owner and poll the store from then on.
	e.changes.fire(g.row.ID)
	e.finishes.fire(g.row.ID)
}

func (e *Engine) dropLocked(g *graph) {
	if _, ok := e.graphs[g.row.ID]; !ok {
		return
	}
	delete(e.graphs, g.row.ID)
	g.dirs.close()
	e.forgetSnapshot(g.row.ID)
	e.idleIfDoneLocked()
	// The graph is archived once its last state is in the store: a marker queued behind
	// that state tells the writer (see writer.loop).
	e.writer.queue.push(writeItem{finished: g.row.ID})
	for i, o := range e.order {
		if o == g {
			e.order = append(e.order[:i:i], e.order[i+1:]...)
			break
		}
	}
}

func removeTask(ts []*task, t *task) []*task {
	for i, x := range ts {
		if x == t {
			return append(ts[:i:i], ts[i+1:]...)
		}
	}
	return ts
}
