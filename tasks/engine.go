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

// This file owns the engine's configuration, its state and its lifetime: Config,
// NewEngine and Close. The other files of the engine, each with its own part:
//
//	submit.go    Submit: a graph validated, stored and adopted into memory
//	schedule.go  the in-memory graphs and tasks; picking what runs next; how a task's end
//	             carries through its graph (ready, skipped, dropped)
//	process.go   one attempt as a process: spawn, timeout, stop, reap, outcome
//	writer.go    the write queue and the goroutine that commits it to the store
//	prelog.go    task logs created ahead of their starts, on a goroutine of their own
//	cancel.go    Cancel, of this runner's graphs and (via the store) of others'
//	remote.go    what reaches this runner through the store: cancel requests, reconcile,
//	             archiving and retention
//	lease.go     the runner's epoch and lease: renewal, and registering again once lost
//
// Locks and WaitGroups are described once, on Engine.

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

// Config configures an Engine.
type Config struct {
	DB *store.DB
	// Workspace is where tasks run (every cwd is confined to it) and where their logs go.
	Workspace   *store.Workspace
	RunnerID    string
	MaxParallel int // runner-wide cap on running tasks, but a graph with none running may start one (scheduleLocked); default runtime.NumCPU()
	Limits      Limits
	KillGrace   time.Duration // default DefaultKillGrace
	Logger      *slog.Logger
	// ArtifactsDir receives each finished graph's archive ("" = no spooling).
	ArtifactsDir string
	// Retention is how long a finished graph keeps its live logs; after it they are
	// read from the artifact. 0 = DefaultRetention.
	Retention time.Duration
	// Lease is how long the runner's lease runs from each renewal (0 = DefaultLease); the
	// engine renews it every third of that. StaleAfter is how long past its lease a runner
	// whose process exists must be silent before this one judges it gone (0 =
	// DefaultStaleAfter). Tests shorten both.
	Lease      time.Duration
	StaleAfter time.Duration
	// Version is recorded on the runner row of a new epoch (see lease.go).
	Version string
	// SubmitWait bounds how long Submit waits for a database another process has locked
	// before it answers store.ErrBusy (0 = no bound beyond the store's own retries).
	SubmitWait time.Duration
	// RunnerCommand is the command line that starts a detached runner (see detach.go),
	// to which the graph's id and the handing-over runner are appended; nil: graphs
	// cannot run detached here.
	RunnerCommand []string
	// Only makes this engine a detached runner for that one graph (see detach.go): it
	// reconciles no other runner and expires nothing, and when its lease is lost it does
	// not register again but reports it (Lost). The operator CLI's engine, which only
	// hands a graph over to a detached runner, sets it too (to "-"): it must adopt nothing.
	Only string
}

// DefaultRetention is how long finished graphs keep their live logs.
const DefaultRetention = 7 * 24 * time.Hour

// Engine runs the task graphs of one runner. It is also a Reader of the workspace's
// graphs, whichever runner runs them.
//
// Locking: mu guards graphs, order, running and closed, and all the in-memory state of
// every graph and task (their rows, ready queues, counters, processes and timers). A
// method named *Locked is called with mu held. Sends on writes are made with mu held too,
// so the queue holds every change in the order it happened (see writer.go). epochMu and
// leaseMu are the runner's identity and lease (see lease.go); epochMu is taken before mu.
//
// Goroutines, and who waits for them (all in Close):
//   - waiters counts task attempts from the moment scheduleLocked takes their slot until
//     wait has reaped the process (or start gave up): Close waits for every process.
//   - inflight counts Submits past their closed check, so Close does not stop recording
//     states while a Submit is still storing and adopting its graph.
//   - bg tracks watchLoop and spoolLoop (remote.go), stopped by stopBG; watchLoop may
//     still queue states (a cancel request), so Close waits for it before closing writes.
//   - writer tracks writeLoop, which ends once writes is closed and drained: after it,
//     every state is in the store.
//   - prepDone tracks prepLoop (prelog.go), which ends once preps is closed and drained.
//   - the archiver (spool.go) is the process's: an engine holds a use of it from NewEngine
//     to the end of Close, after every task has been reaped, and the last engine to let
//     go ends it and waits for it (its thread ends with it).
type Engine struct {
	*Reader
	cfg   Config
	log   *slog.Logger
	shell string
	env   []string // the server's environment with the task defaults applied

	mu      sync.Mutex
	graphs  map[string]*graph // unfinished graphs this runner runs
	order   []*graph          // the same, oldest first: scheduling visits them in turn
	running int               // tasks running, runner-wide
	closed  bool

	writes   *writeQueue
	preps    *prepQueue     // logs to create ahead of their tasks (prelog.go)
	prepDone sync.WaitGroup // prepLoop
	// archClosed is set at the end of Close, when the engine lets go of its use of the
	// archiver (spool.go); archMu guards it.
	archMu     sync.Mutex
	archClosed bool
	changes    *notifier
	finishes   *notifier // fired once a graph of this runner has finished and is written
	stopBG     context.CancelFunc
	bg         sync.WaitGroup // watchLoop, spoolLoop, leaseLoop
	spoolq     chan string    // finished graphs to archive
	waiters    sync.WaitGroup // one per running process
	inflight   sync.WaitGroup // Submits past their closed check
	writer     sync.WaitGroup
	wrote      chan struct{} // closed when writeLoop ends

	// abandon is closed when the shutdown begins: a task still waiting for its running
	// state to be recorded is then not started (see launchAll). giveUp is closed when the
	// writer has had its time too (or an immediate exit was asked for): it then saves what
	// it could not write for the next runner (see writer.go).
	abandon     chan struct{}
	abandonOnce sync.Once
	giveUp      chan struct{}
	giveUpOnce  sync.Once
	// writeCtx is what the writer's transactions run under; cancelWrites ends it when the
	// writer gives up, so an attempt waiting for the lock ends at once.
	writeCtx     context.Context
	cancelWrites context.CancelFunc

	epochMu sync.RWMutex
	epoch   string // the runner id this engine acts as now; guarded by epochMu

	reconcileMu sync.Mutex    // one Reconcile at a time
	started     chan struct{} // closed after the reconciliation at start (watchLoop)
	startedOnce sync.Once

	// idle is closed when a detached runner (Config.Only) has nothing left to run; lost
	// when its lease is lost (see detach.go).
	idle, lost         chan struct{}
	idleOnce, lostOnce sync.Once

	leaseMu      sync.Mutex
	renewedAt    time.Time // the last renewal of the lease that succeeded
	backSince    time.Time // when the lease was last renewed after a lapse
	renewFailing bool      // renewals fail for a reason other than a lost lease (logged once)
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
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	shell := "/bin/sh"
	if p, err := exec.LookPath("bash"); err == nil {
		shell = p
	}
	e := &Engine{
		Reader: NewReader(cfg.DB, cfg.Workspace),
		cfg:    cfg, log: cfg.Logger, shell: shell,
		env:      mergeEnv(os.Environ(), taskDefaults),
		graphs:   map[string]*graph{},
		writes:   newWriteQueue(),
		preps:    newPrepQueue(),
		spoolq:   make(chan string, 1024),
		changes:  newNotifier(),
		finishes: newNotifier(),
		abandon:  make(chan struct{}),
		giveUp:   make(chan struct{}),
		wrote:    make(chan struct{}),
		started:  make(chan struct{}),
		idle:     make(chan struct{}),
		lost:     make(chan struct{}),
		epoch:    cfg.RunnerID,
		// The runner was registered (or renewed) just before the engine starts.
		renewedAt: time.Now(),
	}
	lowArchiver.acquire() // let go of in Close (stopArchiver)
	e.writeCtx, e.cancelWrites = context.WithCancel(context.Background())
	e.writer.Add(1)
	go e.writeLoop()
	e.prepDone.Add(1)
	go e.prepLoop()
	bg, stop := context.WithCancel(context.Background())
	e.stopBG = stop
	e.bg.Go(func() { e.watchLoop(bg) })
	e.bg.Go(func() { e.leaseLoop(bg) })
	if cfg.ArtifactsDir != "" {
		e.bg.Go(func() { e.spoolLoop(bg) })
	}
	return e
}

// Close shuts the engine down: pending tasks are recorded cancelled and running ones are
// stopped (SIGTERM, SIGKILL after the grace) and recorded failed, both with
// RUNNER_SHUTDOWN, and every state is written before it returns. When ctx ends first,
// whatever still runs is killed at once; when the database cannot be written by then
// (another process holds its lock), the states not yet written are saved beside it for the
// next runner to apply (see writer.go), so Close still returns.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.stopBG()
	// A task picked to start whose process is not started yet is not started at all
	// (see launchAll): it is recorded cancelled, like the pending ones.
	e.abandonOnce.Do(func() { close(e.abandon) })
	for _, g := range slices.Clone(e.order) {
		e.shutdownGraphLocked(g)
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
	// Every start is over: no graph holds its directories open any more (dirs.go). A
	// graph ends, and closes them, once its last task does; this is for one that did not.
	e.mu.Lock()
	for _, g := range e.order {
		g.dirs.close()
	}
	e.mu.Unlock()
	e.bg.Wait()
	// Nothing queues logs to prepare from here on; prepLoop finishes what is queued
	// (see prelog.go) while the writer finishes.
	e.preps.close()
	e.writes.close()
	writerDone := make(chan struct{})
	go func() { e.writer.Wait(); close(writerDone) }()
	select {
	case <-writerDone:
	case <-ctx.Done():
		// Past the deadline the writer still gets a moment, which a database that is not
		// locked needs to take thousands of states, before it saves them instead.
		select {
		case <-writerDone:
		case <-time.After(finalWriteGrace):
			e.giveUpWrites()
			<-writerDone
		}
	}
	e.cancelWrites()
	e.prepDone.Wait()
	e.changes.closeAll()
	e.finishes.closeAll()
	// Archive what finished and is not archived yet, as far as the time allows; what does
	// not fit is archived by the next runner to start, so running out of time is no error.
	if err := e.spoolUnspooled(ctx, true); err != nil {
		e.log.Warn("archiving at shutdown left work for the next start", "err", err)
	}
	e.stopArchiver()
	return nil
}

// finalWriteGrace is how long Close lets the writer go on past the shutdown deadline.
const finalWriteGrace = 300 * time.Millisecond

// Abort records what it can when the process is about to exit at once (a second signal
// during a shutdown): every running task's process group is killed and the task recorded
// failed with RUNNER_SHUTDOWN, a task not started yet is recorded cancelled with
// RUNNER_SHUTDOWN, and the writer has until ctx ends to write them, with everything
// queued before them, in one go; what it has not written by then it saves for the next
// runner (see writer.go). Abort waits for nothing else: the caller exits next. Close may
// be running meanwhile.
func (e *Engine) Abort(ctx context.Context) {
	e.mu.Lock()
	e.closed = true
	e.abandonOnce.Do(func() { close(e.abandon) })
	now := time.Now().UTC()
	for _, g := range slices.Clone(e.order) {
		for _, t := range g.tasks {
			if State(t.row.Status) != Running {
				continue
			}
			st := t.row.TaskState
			st.FinishedAt = &now
			if t.cmd != nil {
				syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
				st.Status = string(Failed)
				st.ErrorCode, st.Message = strPtr(CodeRunnerShutdown), strPtr("the server was told to exit at once while the task ran: the task was killed")
			} else { // picked to start, its process not started yet
				st.Status = string(Cancelled)
				st.ErrorCode, st.Message = strPtr(CodeRunnerShutdown), strPtr("the server was told to exit at once before the task started")
			}
			// Queued as the task's last state; whatever the task's own exit would record
			// later is refused by the store, since terminal states are final.
			e.writes.push(writeItem{update: &store.TaskUpdate{GraphID: g.row.ID, TaskID: t.row.ID, TaskState: st}})
		}
		e.shutdownGraphLocked(g)
	}
	written := e.barrierLocked()
	e.mu.Unlock()
	select {
	case <-written:
	case <-e.wrote: // Close got there first: everything is written
	case <-ctx.Done():
		e.giveUpWrites()
		select {
		case <-written:
		case <-e.wrote:
		case <-time.After(finalWriteGrace):
		}
	}
}

// LogPath is where a task's log is written, under a workspace's logs directory.
func LogPath(logsDir, graphID, taskID string) string {
	return filepath.Join(logsDir, graphID, taskID+".log")
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
