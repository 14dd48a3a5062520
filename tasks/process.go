package tasks

// This file owns one attempt of a task as the engine sees it: its environment, its start
// through its executor (the local one, local.go, or a remote one, attach.go), the
// timeout, stopping it (SIGTERM, then SIGKILL after the grace; a pod's deletion), and its
// end, into an outcome. Starting runs outside e.mu; everything that reads or changes a
// task's state takes it. Each attempt holds one count of e.waiters from scheduleLocked
// until its end is recorded (see Engine).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
)

// taskDefaults are set whatever the server inherited: a task has no terminal, so anything
// that would prompt must fail at once instead of waiting forever. Only a task's env
// overrides them.
var taskDefaults = map[string]string{
	"GIT_TERMINAL_PROMPT": "0",
	"PAGER":               "cat",
}

// mergeEnv returns base followed by the variables of over, in name order. os/exec uses
// the last value of a name given twice, so over overrides base. Appending never writes
// into base's array: e.env is merged into by concurrent spawns.
func mergeEnv(base []string, over map[string]string) []string {
	out := slices.Clip(base)
	for _, k := range slices.Sorted(maps.Keys(over)) {
		out = append(out, k+"="+over[k])
	}
	return out
}

// baseEnv is the environment tasks inherit: env, or this process's own when nil.
func baseEnv(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}

// errAdopted reports a start refused because another runner adopted the graph.
var errAdopted = errors.New("the graph was adopted by another runner")

// attemptRun is the attempt of a task that runs now, as the engine holds it: the executor
// that runs it and its id. ctx is what waits on it and follows it: a remote attempt's is
// cancelled when this runner lets its graph go to another (the attempt runs on, for the
// adopter) or runs out of time at shutdown; done is closed once the engine has taken its
// end.
type attemptRun struct {
	ex     Executor
	id     AttemptID
	remote bool
	ctx    context.Context
	stop   context.CancelFunc
	done   chan struct{}
}

func newAttemptRun(ex Executor, id AttemptID, remote bool) *attemptRun {
	ctx, stop := context.WithCancel(context.Background())
	return &attemptRun{ex: ex, id: id, remote: remote, ctx: ctx, stop: stop, done: make(chan struct{})}
}

// attemptID is the id of t's current attempt.
func (e *Engine) attemptID(g *graph, t *task) AttemptID {
	return AttemptID{Workspace: e.workspaceID, GraphID: g.row.ID, TaskID: t.row.ID, Attempt: t.row.Attempt}
}

// start runs one attempt of t, whose slot scheduleLocked took. It returns the tasks a
// failed start lets start instead.
func (e *Engine) start(g *graph, t *task) []launch {
	if t.remote {
		return e.startRemote(g, t)
	}
	a, release, err := e.localAttempt(g, t)
	var place Placement
	if err == nil {
		place, err = e.local.Start(context.Background(), a)
		release() // the child is in its directory once started
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.starting = false
	if errors.Is(err, errAdopted) {
		return e.adoptedWhileStartingLocked(g, t)
	}
	if err != nil {
		e.startFailedLocked(g, t, err)
		return e.scheduleLocked()
	}
	run := newAttemptRun(e.local, a.ID, false)
	t.run = run
	if e.graphs[g.row.ID] != g {
		// The graph was forgotten while the process was being created outside e.mu (a
		// peer adopted it, and forgetLocked found no process to kill yet): the adopter
		// runs the task now, so this copy must not run on. wait reaps it as usual.
		e.local.Cancel(context.Background(), a.ID, 0)
	}
	pid, procStart := place.Pid, place.ProcStart
	det := t.row.d()
	det.Pid, det.Pgid, det.ProcStart = &pid, &pid, &procStart
	det.Message = nil
	e.sendLocked(t)
	e.armTimeoutLocked(g, t)
	if t.stopped != nil { // cancelled, or shut down, while it was starting
		e.terminateLocked(t, e.cfg.KillGrace)
	}
	go e.wait(g, t, run)
	return nil
}

// adoptedWhileStartingLocked gives up the start of t: another runner owns its graph now,
// so the graph is forgotten here; whatever this runner records for it would be refused by
// the store anyway.
func (e *Engine) adoptedWhileStartingLocked(g *graph, t *task) []launch {
	e.releaseSlotLocked(g, t)
	e.waiters.Done()
	e.log.Warn("a graph of this runner was adopted by another; leaving it to that runner", "graph", g.row.ID)
	e.forgetLocked(g)
	return e.scheduleLocked()
}

// startFailedLocked records t failed to start: its slot is free again.
func (e *Engine) startFailedLocked(g *graph, t *task, err error) {
	e.releaseSlotLocked(g, t)
	e.waiters.Done()
	e.finishLocked(g, t, outcome{state: Failed, code: CodeSpawnFailed, message: err.Error()})
}

// releaseSlotLocked gives back the slot t held: its graph's and the runner's (a pod's
// for a remote task).
func (e *Engine) releaseSlotLocked(g *graph, t *task) {
	g.running--
	if t.remote {
		e.pods--
	} else {
		e.running--
	}
}

// localAttempt is the attempt of t to start on this machine, and a release to call once
// it has started (or failed to): its directory is held open until then.
func (e *Engine) localAttempt(g *graph, t *task) (Attempt, func(), error) {
	// A runner that stalled past its lease may have had its graphs adopted meanwhile: the
	// adopter runs them now, so starting a task here would run it twice. The task's running
	// state was written before this (scheduleLocked's barrier) by the store's fenced update,
	// which ignores a graph this runner no longer owns and says so (writer.go): that
	// answer, in memory, replaces reading the owner again before every start. A graph
	// adopted after that write finds the task running, records it failed and does not run
	// it (so did an adoption between the owner check and the start that this replaces); this
	// runner forgets the graph at its next refused start, or when its lease renewal fails.
	if e.writer.queue.isDisowned(g.row.ID) {
		return Attempt{}, nil, errAdopted
	}
	// The cwd was checked when the graph was submitted, but the directory may have been
	// swapped since (by an earlier task, say) for a symlink out of the workspace: check it
	// again now, and have the child enter the very directory checked (dirs.go).
	dir, dirPath, release, err := g.dirs.enter(e.cfg.Workspace, t.row.Cwd)
	if err != nil {
		return Attempt{}, nil, fmt.Errorf("cannot enter the working directory: %v", err)
	}
	a := Attempt{
		ID: e.attemptID(g, t), Runner: e.RunnerID(), Command: t.row.Command,
		Env:       append(mergeEnv(e.env, t.row.Env), taskMarker(g.row.ID, t.row.ID)),
		Dir:       &sandbox.Where{Path: dirPath, Exec: dir.ExecPath(), File: dir.File()},
		Policy:    e.policyOf(t),
		Log:       e.LogPath(g.row.ID, t.row.ID),
		ShellOnly: hasKey(t.row.Env, "PATH"),
	}
	if t.row.Attempt > 1 {
		a.Header = attemptHeader(t)
	}
	return a, release, nil
}

// attemptHeader is the line a retry's output starts with in the task's log.
func attemptHeader(t *task) string {
	return fmt.Sprintf("\n--- mcp-harness: attempt %d of %d ---\n", t.row.Attempt, t.row.Retries+1)
}

// policyOf is what confines t: the policy its record says it was accepted under, or this
// runner's own in each part where that is tighter (a runner never runs a task looser than
// it was accepted, nor looser than its own server allows). A task recorded before the
// sandbox existed gets the runner's own.
func (e *Engine) policyOf(t *task) sandbox.Policy {
	own := e.cfg.Sandbox.Policy()
	if rec, ok := recordedPolicy(t.row.Sandbox, t.row.Network); ok {
		return own.Tighter(rec)
	}
	return own
}

// recordedPolicy is the policy a task's record names (its sandbox and network columns),
// if any.
func recordedPolicy(mode, network string) (sandbox.Policy, bool) {
	p := sandbox.Policy{Mode: sandbox.Mode(mode), Network: sandbox.Network(network)}
	return p, p.Mode.Valid() && p.Network.Valid()
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// wait waits for the end of a local attempt (the executor reaps it, its output
// included) and records it.
func (e *Engine) wait(g *graph, t *task, run *attemptRun) {
	defer e.waiters.Done() // taken by scheduleLocked
	st, err := run.ex.Wait(context.Background(), run.id, nil)
	if err != nil { // cannot happen for a started attempt; recorded all the same
		st = RunStatus{Phase: PhaseEnded, Code: CodeSpawnFailed, Message: err.Error()}
	}
	e.ended(g, t, run, st)
}

// ended records how an attempt ended and starts what that lets start.
func (e *Engine) ended(g *graph, t *task, run *attemptRun, st RunStatus) {
	run.ex.Release(run.id)
	e.mu.Lock()
	close(run.done)
	e.exitedLocked(g, t, st)
	next := e.scheduleLocked()
	e.mu.Unlock()
	e.launchAll(next)
}

// armTimeoutLocked starts t's timeout, if it has one, for its current attempt.
func (e *Engine) armTimeoutLocked(g *graph, t *task) {
	if t.row.TimeoutSec > 0 {
		attempt := t.row.Attempt
		t.timer = time.AfterFunc(time.Duration(t.row.TimeoutSec)*time.Second, func() { e.timeout(g, t, attempt) })
	}
}

func (e *Engine) timeout(g *graph, t *task, attempt int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.run == nil || t.row.Attempt != attempt || State(t.row.Status) != Running {
		return
	}
	t.timedOut = true
	e.terminateLocked(t, e.cfg.KillGrace)
}

// stopLocked asks a running task to stop for the given reason: SIGTERM now, SIGKILL after
// grace. A task still starting is signalled by start once its process exists. The first
// reason given is the one recorded.
func (e *Engine) stopLocked(t *task, code, reason string, grace time.Duration) {
	if t.stopped != nil {
		return
	}
	t.stopped = &stopCause{code: code, reason: reason}
	if !t.starting {
		e.terminateLocked(t, grace)
	}
}

// terminateLocked asks t's attempt to stop: SIGTERM to a local one's group and SIGKILL
// after grace; a remote one's pod is deleted, apart from the lock (it is a call to the
// cluster), retried until it is made or the attempt has ended.
func (e *Engine) terminateLocked(t *task, grace time.Duration) {
	run := t.run
	if run == nil {
		return
	}
	if !run.remote {
		run.ex.Cancel(context.Background(), run.id, grace)
		return
	}
	go e.cancelRemote(run, grace)
}

type outcome struct {
	state    State
	code     string
	exitCode *int
	signal   *string
	message  string
}

// exitedLocked records how an attempt ended (st), and what a failed write to its log did
// (logFault), and decides what follows: a retry, or the task's final state.
func (e *Engine) exitedLocked(g *graph, t *task, st RunStatus) {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.run, t.timer = nil, nil
	e.releaseSlotLocked(g, t)

	var o outcome
	switch {
	case t.stopped != nil && t.stopped.code == CodeRunnerShutdown:
		o = outcome{state: Failed, code: CodeRunnerShutdown, message: t.stopped.reason}
	case t.stopped != nil:
		o = outcome{state: Cancelled, code: t.stopped.code, message: t.stopped.reason}
	case t.timedOut:
		o = outcome{state: Failed, code: CodeTimeout, message: fmt.Sprintf("timed out after %ds", t.row.TimeoutSec)}
	case st.Code != "":
		o = outcome{state: Failed, code: st.Code, exitCode: st.ExitCode, message: st.Message}
	case st.Signal != "":
		name := st.Signal
		o = outcome{state: Failed, code: CodeSignaled, signal: &name, message: "killed by " + name}
	case st.ExitCode != nil && *st.ExitCode == 0:
		zero := 0
		o = outcome{state: Succeeded, exitCode: &zero}
	case st.ExitCode != nil:
		code := *st.ExitCode
		o = outcome{state: Failed, code: CodeExitNonzero, exitCode: &code, message: fmt.Sprintf("exited with status %d", code)}
		if st.Message != "" {
			o.message += " (" + st.Message + ")"
		}
	default: // ended, and the executor cannot say how (its record is gone)
		o = outcome{state: Failed, code: CodeNodeLost, message: orText(st.Message, "the attempt ended and its exit status is unknown")}
	}
	if o.state == Cancelled || o.code == CodeRunnerShutdown {
		if st.ExitCode != nil {
			code := *st.ExitCode
			o.exitCode = &code
		} else if st.Signal != "" {
			name := st.Signal
			o.signal = &name
		}
	}
	// Whatever the outcome: a task that went on without its output, or ended before its
	// next write, lost output all the same.
	if fault := logFault(st.LogFault); fault != "" {
		if o.message != "" {
			fault = o.message + "; " + fault
		}
		o.message = fault
	}
	if o.state == Failed && o.code != CodeRunnerShutdown && t.row.Attempt <= t.row.Retries && !e.closed {
		msg := fmt.Sprintf("attempt %d %s; retrying", t.row.Attempt, o.message)
		t.row.Status = string(Pending)
		det := t.row.d()
		det.ErrorCode, det.ExitCode, det.Signal = strPtr(o.code), o.exitCode, o.signal
		det.Message = &msg
		det.Pid, det.Pgid, det.ProcStart = nil, nil, nil
		e.sendLocked(t)
		q := g.queueOf(t)
		*q = append([]*task{t}, *q...) // a retry goes first: it was already running
		return
	}
	e.finishLocked(g, t, o)
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
