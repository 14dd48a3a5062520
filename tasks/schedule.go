package tasks

// This file owns the in-memory graphs and tasks of this runner and the scheduling over
// them: which ready tasks start (scheduleLocked, launchAll), and how a task's end carries
// through its graph: dependents become ready or are skipped, a finished graph is dropped.
// Everything here runs with e.mu held, except launchAll, which starts processes after
// the lock is released (see Engine for the locks and WaitGroups).

import (
	"fmt"
	"os/exec"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

type graph struct {
	row        store.GraphRow
	tasks      []*task
	byID       map[string]*task
	ready      []*task // pending tasks whose dependencies all succeeded, in the order they became ready
	running    int
	unfinished int
}

type task struct {
	row        store.TaskRow // spec, and the state as last sent to the store
	deps       []*task
	dependents []*task
	remaining  int // dependencies not yet succeeded

	cmd          *exec.Cmd
	timer        *time.Timer // timeout, then the SIGKILL after it
	killTimer    *time.Timer
	cancelReason string // set when a cancel or a shutdown stops the running task
	cancelCode   string
	timedOut     bool
	starting     bool // its slot is taken and its process is being started
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
// start, outside the engine's lock.
type launch struct {
	g        *graph
	t        *task
	recorded <-chan struct{} // closed once its running state is in the store
}

// scheduleLocked picks the ready tasks that the graph and runner caps let start, visiting
// graphs oldest first, and takes their slots. The caller starts them with launchAll once
// it has released the lock: creating a log file and forking cost a millisecond or more on
// a slow disk, and must not hold up the exits of other tasks.
func (e *Engine) scheduleLocked() []launch {
	var out []launch
	if e.closed {
		return nil
	}
	for _, g := range e.order {
		for len(g.ready) > 0 && g.running < g.row.MaxParallel && e.running < e.cfg.MaxParallel {
			t := g.ready[0]
			g.ready = g.ready[1:]
			t.row.Attempt++
			if t.row.StartedAt == nil {
				now := time.Now().UTC()
				t.row.StartedAt = &now
			}
			t.row.Status = string(Running)
			t.row.Pid, t.row.Pgid, t.row.ProcStart, t.row.Message = nil, nil, nil, nil
			t.timedOut, t.cancelReason, t.cancelCode = false, "", ""
			t.starting = true
			g.running++
			e.running++
			e.waiters.Add(1) // Close waits for the start and the wait that follows
			e.sendLocked(t)
			out = append(out, launch{g: g, t: t})
		}
		if e.running >= e.cfg.MaxParallel {
			break
		}
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

// launchAll starts the picked tasks, and whatever a failed start lets start instead.
func (e *Engine) launchAll(ls []launch) {
	for len(ls) > 0 {
		l := ls[0]
		<-l.recorded
		ls = append(ls[1:], e.start(l.g, l.t)...)
	}
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
				g.ready = append(g.ready, d)
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
		g.ready = removeTask(g.ready, it.t)
		e.sendLocked(it.t)
		for _, d := range it.t.dependents {
			stack = append(stack, item{d, it.t})
		}
	}
	if g.unfinished == 0 {
		e.dropLocked(g)
	}
}

// forgetLocked stops scheduling a graph another runner has adopted: its pending tasks stay
// as the store has them, for the adopter.
func (e *Engine) forgetLocked(g *graph) {
	g.ready = nil
	delete(e.graphs, g.row.ID)
	for i, o := range e.order {
		if o == g {
			e.order = append(e.order[:i:i], e.order[i+1:]...)
			break
		}
	}
}

func (e *Engine) dropLocked(g *graph) {
	if _, ok := e.graphs[g.row.ID]; !ok {
		return
	}
	delete(e.graphs, g.row.ID)
	// The graph is archived once its last state is in the store: a marker queued behind
	// that state tells the writer (see writeLoop).
	e.writes <- writeItem{finished: g.row.ID}
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
