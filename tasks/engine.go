// Package tasks is the task-DAG engine: it validates graphs of shell commands, stores them,
// runs each task as its own process group with its output going straight to a log file,
// starts a task the moment its last dependency succeeds, propagates failures, cancels,
// times out and retries, and records every state change in the store so that any process
// on the workspace can read the truth.
//
// Decisions worth knowing:
//   - A task is done when its command (the bash -c process) exits. Anything it left running
//     in its process group is killed then, so no task leaves orphans behind; a command that
//     must outlive its task has to leave the group itself (setsid, a daemon).
//   - A failed attempt with retries left goes back to pending (attempt counts the attempts
//     made) and runs again as soon as a slot is free; the log gets a marker line.
//   - A cancel request while a task runs sends SIGTERM to its group and SIGKILL after the
//     grace; the task is then cancelled whatever its exit status.
//   - State changes are queued in order and written by one goroutine, which commits
//     whatever has queued up in one transaction, so a wide graph finishing at once costs a
//     few commits rather than one per task. Scheduling never waits for the store: a
//     dependent starts as soon as its dependency's exit is seen.
package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// Error codes recorded on failed, cancelled and skipped tasks.
const (
	CodeExitNonzero       = "EXIT_NONZERO"
	CodeSignaled          = "SIGNALED"
	CodeTimeout           = "TIMEOUT"
	CodeSpawnFailed       = "SPAWN_FAILED"
	CodeRunnerRestarted   = "RUNNER_RESTARTED"
	CodeRunnerShutdown    = "RUNNER_SHUTDOWN"
	CodeCancelled         = "CANCELLED"
	CodeUpstreamFailed    = "UPSTREAM_FAILED"
	CodeUpstreamCancelled = "UPSTREAM_CANCELLED"
)

// ErrNotFound reports an unknown graph or task id.
var ErrNotFound = errors.New("not found")

// ErrClosed reports a call on an engine that is shutting down.
var ErrClosed = errors.New("the task engine is shutting down")

// DefaultKillGrace is the time between SIGTERM and SIGKILL when a task times out or the
// runner shuts down.
const DefaultKillGrace = 2 * time.Second

// taskDefaults are set whatever the server inherited: a task has no terminal, so anything
// that would prompt must fail at once instead of waiting forever. Only a task's env
// overrides them.
var taskDefaults = map[string]string{
	"GIT_TERMINAL_PROMPT": "0",
	"PAGER":               "cat",
}

// Config configures an Engine.
type Config struct {
	DB          *store.DB
	RunnerID    string
	LogsDir     string
	MaxParallel int // runner-wide cap on running tasks; default runtime.NumCPU()
	Limits      Limits
	// Confine resolves a task's cwd inside the workspace (see store.Workspace.Confine).
	Confine   func(cwd string) (string, error)
	KillGrace time.Duration // default DefaultKillGrace
	Logger    *slog.Logger
	// ArtifactsDir receives each finished graph's archive ("" = no spooling).
	ArtifactsDir string
	// Retention is how long a finished graph keeps its live logs; after it they are
	// read from the artifact. 0 = DefaultRetention.
	Retention time.Duration
}

// DefaultRetention is how long finished graphs keep their live logs.
const DefaultRetention = 7 * 24 * time.Hour

// Engine runs the task graphs of one runner.
type Engine struct {
	cfg   Config
	log   *slog.Logger
	shell string
	env   []string // the server's environment with the task defaults applied

	mu      sync.Mutex
	graphs  map[string]*graph // unfinished graphs this runner runs
	order   []*graph          // the same, oldest first: scheduling visits them in turn
	running int               // tasks running, runner-wide
	closed  bool

	writes   chan writeItem
	changes  *notifier
	stopBG   context.CancelFunc
	bg       sync.WaitGroup // watchLoop, spoolLoop
	spoolq   chan string    // finished graphs to archive
	waiters  sync.WaitGroup // one per running process
	inflight sync.WaitGroup // Submits past their closed check
	writer   sync.WaitGroup
}

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

// NewEngine starts an engine. Close stops it.
func NewEngine(cfg Config) *Engine {
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = runtime.NumCPU()
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	shell := "/bin/sh"
	if p, err := exec.LookPath("bash"); err == nil {
		shell = p
	}
	e := &Engine{
		cfg: cfg, log: cfg.Logger, shell: shell,
		env:     mergeEnv(os.Environ(), taskDefaults),
		graphs:  map[string]*graph{},
		writes:  make(chan writeItem, 4096),
		spoolq:  make(chan string, 1024),
		changes: newNotifier(),
	}
	e.writer.Add(1)
	go e.writeLoop()
	bg, stop := context.WithCancel(context.Background())
	e.stopBG = stop
	e.bg.Go(func() { e.watchLoop(bg) })
	if cfg.ArtifactsDir != "" {
		e.bg.Go(func() { e.spoolLoop(bg) })
	}
	return e
}

// Submitted is what Submit returns.
type Submitted struct {
	Graph   store.GraphRow
	Tasks   []store.TaskRow
	Created bool // false when the idempotency key matched an existing graph
}

// Submit validates a graph, stores it in full and starts its ready tasks. It never waits
// for a command. A refused graph leaves nothing behind: no row, no file, no process.
func (e *Engine) Submit(ctx context.Context, spec Spec) (Submitted, error) {
	lim := e.cfg.Limits
	v, err := Validate(spec, lim, e.cfg.Confine)
	if err != nil {
		return Submitted{}, err
	}
	maxParallel := spec.MaxParallel
	if maxParallel == 0 {
		maxParallel = runtime.NumCPU()
	}
	row := store.GraphRow{
		ID: store.NewID("g-"), Name: spec.Name, RunnerID: e.cfg.RunnerID, IdempotencyKey: spec.IdempotencyKey,
		MaxParallel: maxParallel, FailFast: spec.FailFast, CreatedAt: time.Now().UTC(),
	}
	rows := make([]store.TaskRow, len(spec.Tasks))
	for i, ts := range spec.Tasks {
		rows[i] = store.TaskRow{
			GraphID: row.ID, ID: ts.ID, Seq: i, Command: ts.Command, Cwd: v.Dirs[i], Env: ts.Env,
			DependsOn: ts.DependsOn, TimeoutSec: ts.TimeoutSec, Retries: ts.Retries,
			TaskState: store.TaskState{Status: string(Pending)},
		}
	}

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return Submitted{}, ErrClosed
	}
	e.inflight.Add(1) // Close waits for this Submit before it stops recording states
	e.mu.Unlock()
	defer e.inflight.Done()
	logDir := filepath.Join(e.cfg.LogsDir, row.ID)
	if err := os.Mkdir(logDir, 0o700); err != nil {
		return Submitted{}, fmt.Errorf("submit: log dir: %w", err)
	}
	stored, created, err := e.cfg.DB.InsertGraph(ctx, row, rows)
	if err != nil || !created {
		os.Remove(logDir)
		if err != nil {
			return Submitted{}, err
		}
		storedTasks, err := e.cfg.DB.GraphTasks(ctx, stored.ID)
		return Submitted{Graph: stored, Tasks: storedTasks, Created: false}, err
	}

	e.mu.Lock()
	e.adoptLocked(stored, rows)
	if e.closed {
		// Shutdown began while the graph was being stored: record it as never started,
		// truthfully, rather than leave pending rows no one runs.
		e.cancelGraphLocked(e.graphs[stored.ID], CodeRunnerShutdown, "the server shut down before the task started")
	}
	next := e.scheduleLocked()
	e.mu.Unlock()
	e.launchAll(next)
	return Submitted{Graph: stored, Tasks: rows, Created: true}, nil
}

// adoptLocked builds the in-memory state of a stored graph whose tasks are all pending
// (or terminal), queues the ready ones and skips those whose dependencies can no longer
// succeed.
func (e *Engine) adoptLocked(row store.GraphRow, rows []store.TaskRow) {
	g := &graph{row: row, byID: make(map[string]*task, len(rows))}
	for _, r := range rows {
		t := &task{row: r}
		g.tasks = append(g.tasks, t)
		g.byID[r.ID] = t
	}
	for _, t := range g.tasks {
		for _, id := range t.row.DependsOn {
			d := g.byID[id]
			t.deps = append(t.deps, d)
			d.dependents = append(d.dependents, t)
			if State(d.row.Status) != Succeeded {
				t.remaining++
			}
		}
		if !State(t.row.Status).Terminal() {
			g.unfinished++
		}
	}
	if g.unfinished == 0 {
		e.writes <- writeItem{finished: row.ID} // nothing left to run: archive it
		return
	}
	e.graphs[row.ID] = g
	e.order = append(e.order, g)
	for _, t := range g.tasks {
		if State(t.row.Status) != Pending {
			continue
		}
		if blocker := firstBlocker(t); blocker != nil {
			e.skipLocked(g, t, blocker)
		} else if t.remaining == 0 {
			g.ready = append(g.ready, t)
		}
	}
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

// start runs one attempt of t, whose slot scheduleLocked took. It returns the tasks a
// failed start lets start instead.
func (e *Engine) start(g *graph, t *task) []launch {
	cmd, err := e.spawn(g, t)
	var ident store.ProcessIdentity
	if err == nil {
		ident = store.IdentifyProcess(cmd.Process.Pid)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.starting = false
	if errors.Is(err, errAdopted) {
		// Another runner owns the graph now: forget it here; whatever this runner records
		// for it would be refused by the store anyway.
		g.running--
		e.running--
		e.waiters.Done()
		e.log.Warn("a graph of this runner was adopted by another; leaving it to that runner", "graph", g.row.ID)
		e.forgetLocked(g)
		return e.scheduleLocked()
	}
	if err != nil {
		g.running--
		e.running--
		e.waiters.Done()
		e.finishLocked(g, t, outcome{state: Failed, code: CodeSpawnFailed, message: err.Error()})
		return e.scheduleLocked()
	}
	pid := cmd.Process.Pid
	t.cmd = cmd
	t.row.Pid, t.row.Pgid, t.row.ProcStart = &pid, &pid, &ident.ProcStart
	t.row.Message = nil
	e.sendLocked(t)
	if t.row.TimeoutSec > 0 {
		attempt := t.row.Attempt
		t.timer = time.AfterFunc(time.Duration(t.row.TimeoutSec)*time.Second, func() { e.timeout(g, t, attempt) })
	}
	if t.cancelCode != "" { // cancelled, or shut down, while it was starting
		e.terminateLocked(t, e.cfg.KillGrace)
	}
	go e.wait(g, t, cmd)
	return nil
}

// spawn creates the log and starts the command, touching no engine state. The log file is
// handed to the child as its stdout and stderr, so output never passes through this
// process.
func (e *Engine) spawn(g *graph, t *task) (*exec.Cmd, error) {
	// A runner that stalled past its lease may have had its graphs adopted meanwhile: the
	// adopter runs them now, so starting a task here would run it twice.
	if owner, err := e.cfg.DB.GetGraphHead(context.Background(), g.row.ID); err == nil && owner.RunnerID != e.cfg.RunnerID {
		return nil, errAdopted
	}
	logFile, err := os.OpenFile(e.logPath(g.row.ID, t.row.ID), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the log: %v", err)
	}
	defer logFile.Close() // the child has its own copy once started
	if t.row.Attempt > 1 {
		fmt.Fprintf(logFile, "\n--- mcp-harness: attempt %d of %d ---\n", t.row.Attempt, t.row.Retries+1)
	}
	cmd := exec.Command(e.shell, "-c", t.row.Command)
	cmd.Dir = t.row.Cwd
	// The marker lets a later runner find every process of this task, grandchildren
	// included, even if this runner dies before it records the task's pid.
	cmd.Env = append(mergeEnv(e.env, t.row.Env), taskMarker(g.row.ID, t.row.ID))
	cmd.Stdout, cmd.Stderr = logFile, logFile // *os.File: passed to the child as is
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start: %v", err)
	}
	return cmd, nil
}

// wait reaps one attempt. The exit is first observed without reaping, so the process
// group id cannot be reused while whatever the task left in its group is killed.
func (e *Engine) wait(g *graph, t *task, cmd *exec.Cmd) {
	defer e.waiters.Done() // taken by scheduleLocked
	pid := cmd.Process.Pid
	waitExitNoReap(pid)
	syscall.Kill(-pid, syscall.SIGKILL)
	cmd.Wait()
	e.mu.Lock()
	e.exitedLocked(g, t, cmd.ProcessState)
	next := e.scheduleLocked()
	e.mu.Unlock()
	e.launchAll(next)
}

func (e *Engine) timeout(g *graph, t *task, attempt int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.cmd == nil || t.row.Attempt != attempt || State(t.row.Status) != Running {
		return
	}
	t.timedOut = true
	e.terminateLocked(t, e.cfg.KillGrace)
}

// stopLocked asks a running task to stop for the given reason: SIGTERM now, SIGKILL after
// grace. A task still starting is signalled by start once its process exists. The first
// reason given is the one recorded.
func (e *Engine) stopLocked(t *task, code, reason string, grace time.Duration) {
	if t.cancelCode != "" {
		return
	}
	t.cancelCode, t.cancelReason = code, reason
	if !t.starting {
		e.terminateLocked(t, grace)
	}
}

// terminateLocked sends SIGTERM to a running task's group and SIGKILL after grace.
func (e *Engine) terminateLocked(t *task, grace time.Duration) {
	pgid := t.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	if t.killTimer != nil {
		t.killTimer.Stop()
	}
	cmd := t.cmd
	t.killTimer = time.AfterFunc(grace, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if t.cmd == cmd { // still the same attempt, still not reaped
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
}

type outcome struct {
	state    State
	code     string
	exitCode *int
	signal   *string
	message  string
}

// exitedLocked records how an attempt ended and decides what follows: a retry, or the
// task's final state.
func (e *Engine) exitedLocked(g *graph, t *task, ps *os.ProcessState) {
	for _, tm := range []*time.Timer{t.timer, t.killTimer} {
		if tm != nil {
			tm.Stop()
		}
	}
	t.cmd, t.timer, t.killTimer = nil, nil, nil
	g.running--
	e.running--

	var o outcome
	ws, _ := ps.Sys().(syscall.WaitStatus)
	switch {
	case t.cancelCode == CodeRunnerShutdown:
		o = outcome{state: Failed, code: CodeRunnerShutdown, message: t.cancelReason}
	case t.cancelCode != "":
		o = outcome{state: Cancelled, code: t.cancelCode, message: t.cancelReason}
	case t.timedOut:
		o = outcome{state: Failed, code: CodeTimeout, message: fmt.Sprintf("timed out after %ds", t.row.TimeoutSec)}
	case ws.Signaled():
		name := signalName(ws.Signal())
		o = outcome{state: Failed, code: CodeSignaled, signal: &name, message: "killed by " + name}
	case ws.ExitStatus() == 0:
		zero := 0
		o = outcome{state: Succeeded, exitCode: &zero}
	default:
		code := ws.ExitStatus()
		o = outcome{state: Failed, code: CodeExitNonzero, exitCode: &code, message: fmt.Sprintf("exited with status %d", code)}
	}
	if o.state == Cancelled || o.code == CodeRunnerShutdown {
		if ws.Exited() {
			code := ws.ExitStatus()
			o.exitCode = &code
		} else if ws.Signaled() {
			name := signalName(ws.Signal())
			o.signal = &name
		}
	}
	if o.state == Failed && o.code != CodeRunnerShutdown && t.row.Attempt <= t.row.Retries && !e.closed {
		msg := fmt.Sprintf("attempt %d %s; retrying", t.row.Attempt, o.message)
		t.row.Status = string(Pending)
		t.row.ErrorCode, t.row.ExitCode, t.row.Signal = strPtr(o.code), o.exitCode, o.signal
		t.row.Message = &msg
		t.row.Pid, t.row.Pgid, t.row.ProcStart = nil, nil, nil
		e.sendLocked(t)
		g.ready = append([]*task{t}, g.ready...) // a retry goes first: it was already running
		return
	}
	e.finishLocked(g, t, o)
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

// cancelGraphLocked cancels every unfinished task of g: pending ones at once, running ones
// by signal (they are recorded when they exit).
func (e *Engine) cancelGraphLocked(g *graph, code, reason string) {
	if g == nil {
		return
	}
	for _, t := range g.tasks {
		e.cancelTaskLocked(g, t, code, reason, e.cfg.KillGrace)
	}
}

// cancelTaskLocked cancels one task and reports what happened to it.
func (e *Engine) cancelTaskLocked(g *graph, t *task, code, reason string, grace time.Duration) string {
	switch State(t.row.Status) {
	case Pending:
		now := time.Now().UTC()
		state := Cancelled
		t.row.Status = string(state)
		t.row.ErrorCode, t.row.Message, t.row.FinishedAt = &code, &reason, &now
		t.row.ExitCode, t.row.Signal = nil, nil
		g.unfinished--
		g.ready = removeTask(g.ready, t)
		e.sendLocked(t)
		for _, d := range t.dependents {
			if State(d.row.Status) == Pending {
				e.skipLocked(g, d, t)
			}
		}
		if g.unfinished == 0 {
			e.dropLocked(g)
		}
		return OutcomeCancelled
	case Running:
		e.stopLocked(t, code, reason, grace)
		return OutcomeCancelling
	}
	return OutcomeAlreadyTerminal
}

// errAdopted reports a start refused because another runner adopted the graph.
var errAdopted = errors.New("the graph was adopted by another runner")

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

// Outcomes of a cancel request for one task.
const (
	OutcomeCancelled       = "cancelled"
	OutcomeCancelling      = "cancelling"
	OutcomeSkipped         = "skipped"
	OutcomeAlreadyTerminal = "already_terminal"
)

// CancelResult says what a cancel request did to one task.
type CancelResult struct {
	ID             string
	PreviousStatus State
	Status         State
	Outcome        string
}

// Cancel cancels the named tasks of a graph (all unfinished ones when taskIDs is empty):
// pending ones at once, running ones by SIGTERM to their process group and SIGKILL after
// grace. Dependents that can no longer run are skipped and listed too. Cancelling a
// finished task is not an error: its outcome is already_terminal.
func (e *Engine) Cancel(ctx context.Context, graphID string, taskIDs []string, grace time.Duration) ([]CancelResult, error) {
	rows, err := e.cfg.DB.GraphTasks(ctx, graphID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("graph %q: %w", graphID, ErrNotFound)
	}
	known := map[string]store.TaskRow{}
	for _, r := range rows {
		known[r.ID] = r
	}
	var missing []string
	for _, id := range taskIDs {
		if _, ok := known[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("graph %s has no task %s: %w", graphID, strings.Join(missing, ", "), ErrNotFound)
	}
	if grace <= 0 {
		grace = e.cfg.KillGrace
	}

	e.mu.Lock()
	_, local := e.graphs[graphID]
	e.mu.Unlock()
	if local {
		return e.cancelLocal(ctx, graphID, taskIDs, grace, "cancelled by request")
	}
	unfinished := slices.ContainsFunc(rows, func(r store.TaskRow) bool { return !State(r.Status).Terminal() })
	if unfinished {
		// Another runner's graph: it alone changes its tasks, so ask it through the store.
		return RequestCancel(ctx, e.cfg.DB, graphID, taskIDs, grace)
	}
	var out []CancelResult
	for _, r := range rows {
		if len(taskIDs) > 0 && contains(taskIDs, r.ID) {
			out = append(out, CancelResult{ID: r.ID, PreviousStatus: State(r.Status), Status: State(r.Status), Outcome: OutcomeAlreadyTerminal})
		}
	}
	return out, nil
}

// cancelLocal cancels tasks of a graph this runner runs.
func (e *Engine) cancelLocal(ctx context.Context, graphID string, taskIDs []string, grace time.Duration, reason string) ([]CancelResult, error) {
	var next []launch
	defer func() { e.launchAll(next) }() // runs after the unlock below
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.graphs[graphID]
	if g == nil { // finished meanwhile
		snap, err := LoadSnapshot(ctx, e.cfg.DB, graphID)
		if err != nil {
			return nil, err
		}
		return cancelOutcomes(snap, snap, taskIDs, nil), nil
	}
	before := map[*task]State{}
	for _, t := range g.tasks {
		before[t] = State(t.row.Status)
	}
	selected := map[*task]bool{}
	if len(taskIDs) == 0 {
		for _, t := range g.tasks {
			if !State(t.row.Status).Terminal() {
				selected[t] = true
			}
		}
	} else {
		for _, id := range taskIDs {
			if t := g.byID[id]; t != nil {
				selected[t] = true
			}
		}
	}
	outcomes := map[*task]string{}
	for _, t := range g.tasks { // submitted order: deterministic results
		if selected[t] {
			outcomes[t] = e.cancelTaskLocked(g, t, CodeCancelled, reason, grace)
		}
	}
	var out []CancelResult
	for _, t := range g.tasks {
		o, ok := outcomes[t]
		if !ok {
			if before[t] == Pending && State(t.row.Status) == Skipped {
				o = OutcomeSkipped
			} else {
				continue
			}
		}
		out = append(out, CancelResult{ID: t.row.ID, PreviousStatus: before[t], Status: State(t.row.Status), Outcome: o})
	}
	next = e.scheduleLocked()
	return out, nil
}

// Close shuts the engine down: pending tasks are recorded cancelled and running ones are
// stopped (SIGTERM, SIGKILL after the grace) and recorded failed, both with
// RUNNER_SHUTDOWN, and every state is written before it returns. When ctx ends first,
// whatever still runs is killed at once.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.stopBG()
	for _, g := range append([]*graph(nil), e.order...) {
		for _, t := range g.tasks {
			switch State(t.row.Status) {
			case Pending:
				e.cancelTaskLocked(g, t, CodeRunnerShutdown, "the server shut down before the task started", 0)
			case Running:
				e.stopLocked(t, CodeRunnerShutdown, "the server shut down while the task ran", e.cfg.KillGrace)
			}
		}
	}
	e.mu.Unlock()

	done := make(chan struct{})
	go func() { e.inflight.Wait(); e.waiters.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.mu.Lock()
		for _, g := range e.order {
			for _, t := range g.tasks {
				if t.cmd != nil {
					syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
				}
			}
		}
		e.mu.Unlock()
		<-done
	}
	e.bg.Wait()
	close(e.writes)
	e.writer.Wait()
	e.changes.closeAll()
	// Archive what finished and is not archived yet, as far as the time allows; what does
	// not fit is archived by the next runner to start, so running out of time is no error.
	if err := e.spoolUnspooled(ctx, true); err != nil {
		e.log.Warn("archiving at shutdown left work for the next start", "err", err)
	}
	return nil
}

func (e *Engine) logPath(graphID, taskID string) string {
	return LogPath(e.cfg.LogsDir, graphID, taskID)
}

// LogPath is where a task's log is written.
func (e *Engine) LogPath(graphID, taskID string) string { return e.logPath(graphID, taskID) }

// LogPath is where a task's log is written, under a workspace's logs directory.
func LogPath(logsDir, graphID, taskID string) string {
	return filepath.Join(logsDir, graphID, taskID+".log")
}

// mergeEnv returns base with the variables of over set, replacing any of the same name.
func mergeEnv(base []string, over map[string]string) []string {
	if len(over) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, replaced := over[name]; !replaced {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(over))
	for k := range over {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, k+"="+over[k])
	}
	return out
}

func removeTask(ts []*task, t *task) []*task {
	for i, x := range ts {
		if x == t {
			return append(ts[:i:i], ts[i+1:]...)
		}
	}
	return ts
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
