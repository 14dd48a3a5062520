package tasks

// This file owns the in-memory graphs and tasks of this runner and the scheduling over
// them: which ready tasks start (scheduleLocked, launchAll), and how a task's end carries
// through its graph: dependents become ready or are skipped, a finished graph is dropped.
// Everything here runs with e.mu held, except launchAll, which starts processes after
// the lock is released (see Engine for the locks and WaitGroups).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

type graph struct {
	row        store.GraphRow
	tasks      []*task
	byID       []*task // the tasks sorted by id (see task)
	edges      []*task // each task's dependencies, then its dependents (see depsOf)
	ready      []*task // pending local tasks whose dependencies all succeeded, in the order they became ready
	readyPods  []*task // the same for remote tasks, which wait for a pod slot instead (Config.MaxPods)
	running    int
	unfinished int
	dirs       graphDirs
}

// task is one task of a graph this runner holds. A graph of 100,000 pending tasks holds
// 100,000 of them for as long as it runs, so a task is kept small (issue 29): what it
// runs sits behind a pointer its graph's tasks share when they run alike (taskShape),
// what its attempts left behind one allocated once it first leaves pending
// (store.TaskDetail), and its dependencies and dependents ranges of one array its graph
// holds (linkEdges), their ids being the tasks' own. It was 456 bytes; it is 120.
type task struct {
	row taskRow // spec, and the state as last sent to the store
	// edgeAt is where its dependencies start in its graph's edges; its dependents follow
	// them. 32 bits hold any graph a request can carry: an 8 MiB message names at most
	// about two million dependencies (four bytes each at the least), and a graph's edges
	// are twice its dependencies.
	edgeAt    int32
	nDeps     int32
	nDepender int32 // how many tasks depend on it
	remaining int32 // dependencies not yet succeeded
	deferrals int32 // starts of a remote attempt put off because the cluster did not answer

	remote   bool // it runs on a remote executor (Kubernetes), not as a process here
	timedOut bool
	starting bool        // its slot is taken and its process is being started
	run      *attemptRun // the attempt running now; nil while it is starting, and between attempts
	timer    *time.Timer // the attempt's timeout
	stopped  *stopCause  // set when a cancel or a shutdown stops the running task
}

// stopCause is why the engine stops a running task: the code and message its end records.
type stopCause struct{ code, reason string }

// taskRow is what the store holds of a task, as the engine keeps it: the id, the command
// and the state inline, the rest of the spec in its shape, and the state's optional
// columns in its detail, nil while they are all null (every pending task that never ran).
type taskRow struct {
	ID      string
	Command string
	Status  string
	Attempt int
	*taskShape
	detail *store.TaskDetail
}

// taskShape is the part of a task's spec other than its id, command and dependencies:
// tasks submitted one after another mostly share it (one directory, no env of their own,
// one policy), and then share one taskShape. It never changes.
type taskShape struct {
	GraphID          string
	Cwd              string
	Env              map[string]string
	TimeoutSec       int
	Retries          int
	Sandbox, Network string
	Executor         string
	CPU, Memory      string
}

// d is the task's detail (the state's optional columns), allocated on first use: with the engine's lock held only (a
// read outside it reads r.detail as it is).
func (r *taskRow) d() *store.TaskDetail {
	if r.detail == nil {
		r.detail = new(store.TaskDetail)
	}
	return r.detail
}

// state is the task's state as the store takes it.
func (r *taskRow) state() store.TaskState {
	s := store.TaskState{Status: r.Status, Attempt: r.Attempt}
	if r.detail != nil {
		s.TaskDetail = *r.detail
	}
	return s
}

// rowOf is a task's row as the engine keeps it, its shape prev's when they are alike.
func rowOf(r store.TaskRow, prev *taskShape) taskRow {
	// Built on the stack and copied to the heap only when new: a graph's tasks mostly
	// share one shape, and most have no detail.
	shape := taskShape{GraphID: r.GraphID, Cwd: r.Cwd, Env: r.Env, TimeoutSec: r.TimeoutSec, Retries: r.Retries,
		Sandbox: r.Sandbox, Network: r.Network, Executor: r.Executor, CPU: r.CPU, Memory: r.Memory}
	if prev == nil || !prev.alike(&shape) {
		prev = new(taskShape)
		*prev = shape
	}
	// The id and command are copied: decoded from a request, each shares a 16-byte block
	// with the names and values decoded beside it, garbage the graph would otherwise keep
	// (3.5 MiB at 100,000 tasks).
	out := taskRow{ID: strings.Clone(r.ID), Command: strings.Clone(r.Command), Status: r.Status, Attempt: r.Attempt, taskShape: prev}
	if r.TaskDetail != (store.TaskDetail{}) {
		out.detail = new(store.TaskDetail)
		*out.detail = r.TaskDetail
	}
	return out
}

// alike says whether two shapes hold the same spec.
func (s *taskShape) alike(o *taskShape) bool {
	return s.GraphID == o.GraphID && s.Cwd == o.Cwd && maps.Equal(s.Env, o.Env) && s.TimeoutSec == o.TimeoutSec &&
		s.Retries == o.Retries && s.Sandbox == o.Sandbox && s.Network == o.Network && s.Executor == o.Executor &&
		s.CPU == o.CPU && s.Memory == o.Memory
}

// task is the graph's task with the given id, or nil. The graph keeps its tasks sorted by
// id for this, not in a map: at 100,000 tasks a map held 3 MiB more for as long as the
// graph ran, and lookups by id are rare (a cancel that names tasks, an attempt's owner).
func (g *graph) task(id string) *task {
	i, ok := slices.BinarySearchFunc(g.byID, id, func(t *task, id string) int { return strings.Compare(t.row.ID, id) })
	if !ok {
		return nil
	}
	return g.byID[i]
}

// queueOf is the ready queue t waits in: local tasks wait for the runner's slots, remote
// ones for its pod slots.
func (g *graph) queueOf(t *task) *[]*task {
	if t.remote {
		return &g.readyPods
	}
	return &g.ready
}

// depsOf is the tasks t depends on, in the order its spec names them.
func (g *graph) depsOf(t *task) []*task {
	return g.edges[t.edgeAt : t.edgeAt+t.nDeps : t.edgeAt+t.nDeps]
}

// dependentsOf is the tasks that depend on t, in submitted order.
func (g *graph) dependentsOf(t *task) []*task {
	at := t.edgeAt + t.nDeps
	return g.edges[at : at+t.nDepender : at+t.nDepender]
}

// linkEdges lays out the dependencies the rows name, and their reverse, in g.edges: one
// array for the whole graph rather than two slices a task, which were 48 bytes of every
// task's 160 and an allocation for each task with a dependency (issue 29).
func (g *graph) linkEdges(rows []store.TaskRow) {
	total := 0
	for _, r := range rows {
		total += len(r.DependsOn)
	}
	resolved := make([]*task, 0, total) // every task's dependencies, in order
	for i, r := range rows {
		for _, id := range r.DependsOn {
			d := g.task(id)
			resolved = append(resolved, d)
			d.nDepender++
		}
		g.tasks[i].nDeps = int32(len(r.DependsOn))
	}
	g.edges = make([]*task, 2*total)
	at := int32(0)
	for _, t := range g.tasks {
		t.edgeAt = at
		at += t.nDeps + t.nDepender
		t.nDepender = 0 // counted again as the dependents are filled in below
	}
	k := 0
	for _, t := range g.tasks {
		for j := range t.nDeps {
			d := resolved[k]
			k++
			g.edges[t.edgeAt+j] = d
			g.edges[d.edgeAt+d.nDeps+d.nDepender] = t
			d.nDepender++
		}
	}
}

// firstBlocker returns a dependency of t that ended without succeeding, if any.
func (g *graph) firstBlocker(t *task) *task {
	for _, d := range g.depsOf(t) {
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
	det := t.row.d()
	if det.StartedAt == nil {
		now := time.Now().UTC()
		det.StartedAt = &now
	}
	t.row.Status = string(Running)
	det.Pid, det.Pgid, det.ProcStart, det.Message = nil, nil, nil, nil
	det.Job, det.Pod, det.Node, det.LogStart = nil, nil, nil, nil
	t.timedOut, t.stopped = false, nil
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
		t.row.d().StartedAt = nil
	}
	e.finishLocked(g, t, outcome{state: Cancelled, code: CodeRunnerShutdown, message: "the server shut down before the task started"})
}

// finishLocked puts t in a terminal state and carries the consequences through the graph:
// dependents become ready, or are skipped; with failFast the rest is cancelled.
func (e *Engine) finishLocked(g *graph, t *task, o outcome) {
	now := time.Now().UTC()
	t.row.Status = string(o.state)
	det := t.row.d()
	det.ErrorCode, det.ExitCode, det.Signal = strPtr(o.code), o.exitCode, o.signal
	det.Message = strPtr(o.message)
	det.FinishedAt = &now
	g.unfinished--
	e.sendLocked(t)

	if o.state == Succeeded {
		for _, d := range g.dependentsOf(t) {
			d.remaining--
			if d.remaining == 0 && State(d.row.Status) == Pending && g.firstBlocker(d) == nil {
				q := g.queueOf(d)
				*q = append(*q, d)
			}
		}
	} else {
		for _, d := range g.dependentsOf(t) {
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
			if c := it.because.row.d().ErrorCode; c != nil && *c == CodeUpstreamCancelled {
				code = CodeUpstreamCancelled
			}
		}
		now := time.Now().UTC()
		msg := fmt.Sprintf("dependency %s %s", it.because.row.ID, why)
		it.t.row.Status = string(Skipped)
		det := it.t.row.d()
		det.ErrorCode, det.Message, det.FinishedAt = &code, &msg, &now
		g.unfinished--
		q := g.queueOf(it.t)
		*q = removeTask(*q, it.t)
		e.sendLocked(it.t)
		for _, d := range g.dependentsOf(it.t) {
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
			det := t.row.d()
			det.ErrorCode, det.Message, det.FinishedAt = strPtr(CodeRunnerShutdown), strPtr("the server shut down before the task started"), &now
			det.ExitCode, det.Signal = nil, nil
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
