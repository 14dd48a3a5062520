// Package tasks is the task-DAG engine: it validates graphs of shell commands, stores them,
// runs each task as its own process group with its output spliced from a pipe into a log
// file, starts a task the moment its last dependency succeeds, propagates failures, cancels,
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
//	logpipe.go   the pipe of an attempt's output and its pump, which moves it into the log
//	writer.go    the write queue and the writer, the goroutine that commits it to the store
//	loop.go      the loop type the watcher, the lease and the spooler run on
//	cancel.go    Cancel, of this runner's graphs and (via the store) of others'
//	remote.go    what reaches this runner through the store: cancel requests, reconcile,
//	             archiving and retention
//	lease.go     the runner's epoch and lease: renewal, and registering again once lost
//	spool.go     a finished graph's artifact, written on the process's archiver thread
//
// The pure code the engine uses, which touches no state, is in subpackages: dag (a
// graph's words, Validate, Analyze), fit (budgets, cuts and cursors of bounded results)
// and archive (the artifact's format). The read side (Reader: reader.go, list.go,
// logs.go, watch.go, follow.go) needs no engine.
//
// Locks and goroutines are described once, on Engine.

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/objstore"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks/snapshot"
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
	Workspace   *workspace.Workspace
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
	// Sandbox starts every task under its policy: the one it was accepted under (its
	// record), or this runner's own where that is tighter; nil starts them unconfined, and
	// refuses a task recorded under a sandbox.
	Sandbox *sandbox.Launcher
	// Env is the environment tasks inherit, before the task defaults and their own env;
	// nil is this process's own (os.Environ). The server passes its environment less what
	// the env policy withholds (internal/envpolicy).
	Env []string
	// Artifacts, if set, is the bucket finished graphs' archives go to (--artifacts-url,
	// objects.go); ArtifactsDir then only holds an archive while it is written.
	Artifacts *objstore.Bucket
	// Kubernetes runs the attempts of tasks that name the kubernetes executor (package
	// tasks/kube); nil: none can run here, and a graph with one is refused at submit
	// (ErrExecutorUnavailable).
	Kubernetes Executor
	// MaxPods caps the remote attempts running at once over all graphs; ready remote
	// tasks wait for a pod slot as local ones wait for a slot. 0: no cap.
	MaxPods int
	// Sync is what of the workspace a remote task's pod gets (snapshot.Git by default).
	Sync snapshot.Mode
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
// method named *Locked is called with mu held. Sends on the write queue are made with mu
// held too, so the queue holds every change in the order it happened (see writer.go).
// epochMu and lease.mu are the runner's identity and lease (see lease.go); epochMu is
// taken before mu.
//
// Goroutines: each background loop is a value that owns its goroutine and its Close
// (writer, watcher, lease, spooler; the archiver's use), and Close closes them
// in order. Besides them, two WaitGroups count work Close waits for:
//   - waiters counts task attempts from the moment scheduleLocked takes their slot until
//     wait has reaped the process and its output's pump has ended (or start gave up):
//     Close waits for every process and every pump.
//   - inflight counts Submits past their closed check, so Close does not stop recording
//     states while a Submit is still storing and adopting its graph.
type Engine struct {
	*Reader
	cfg Config
	log *slog.Logger
	env []string // the server's environment with the task defaults applied

	mu      sync.Mutex
	graphs  map[string]*graph // unfinished graphs this runner runs
	order   []*graph          // the same, oldest first: scheduling visits them in turn
	running int               // tasks running, runner-wide
	closed  bool
	pods    int // remote attempts running (or being started), runner-wide: Config.MaxPods caps it
	// local runs the attempts of local tasks, and holds every process started and not
	// yet reaped, whatever became of its graph: a graph forgotten (adopted by a peer)
	// leaves order, but Close must still be able to kill what is left of its processes.
	local *LocalExecutor
	// workspaceID labels this workspace's remote attempts (WorkspaceID).
	workspaceID string
	// snapshots makes each graph's workspace snapshot once (snapshots.go).
	snapshots *snapshotter
	// remoteCtx is what every call to a remote executor runs under: cancelled when a
	// shutdown runs out of time (reapAll), so none holds it up.
	remoteCtx  context.Context
	remoteStop context.CancelFunc
	// remoteUsed is set once this engine has started or followed a remote attempt: from
	// then on it sweeps the cluster for attempts nothing follows (sweepRemote).
	remoteUsed atomic.Bool

	writer   *writer      // commits the write queue to the store (writer.go)
	watcher  *loop        // watchLoop: cancel requests, reconciling, expiry (remote.go)
	lease    lease        // renews the runner's lease (lease.go)
	spooler  *spooler     // archives finished graphs (remote.go, spool.go)
	archiver *archiverUse // this engine's use of the process's archiver (spool.go)
	changes  *notifier
	finishes *notifier      // fired once a graph of this runner has finished and is written
	waiters  sync.WaitGroup // one per running process
	inflight sync.WaitGroup // Submits past their closed check

	// abandon is closed when the shutdown begins: a task still waiting for its running
	// state to be recorded is then not started (see launchAll).
	abandon     chan struct{}
	abandonOnce sync.Once

	epochMu sync.RWMutex
	epoch   string // the runner id this engine acts as now; guarded by epochMu

	reconcileMu sync.Mutex    // one Reconcile at a time
	started     chan struct{} // closed after the reconciliation at start (watchLoop)
	startedOnce sync.Once

	// idle is closed when a detached runner (Config.Only) has nothing left to run; lost
	// when its lease is lost (see detach.go).
	idle, lost         chan struct{}
	idleOnce, lostOnce sync.Once
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
	hostname, _ := os.Hostname()
	e := &Engine{
		Reader: NewReader(cfg.DB, cfg.Workspace),
		cfg:    cfg, log: cfg.Logger,
		env:         mergeEnv(baseEnv(cfg.Env), taskDefaults),
		graphs:      map[string]*graph{},
		local:       NewLocalExecutor(cfg.Sandbox, cfg.Logger),
		snapshots:   &snapshotter{},
		workspaceID: WorkspaceID(hostname, cfg.Workspace.Root),
		spooler:     newSpooler(),
		changes:     newNotifier(),
		finishes:    newNotifier(),
		abandon:     make(chan struct{}),
		started:     make(chan struct{}),
		idle:        make(chan struct{}),
		lost:        make(chan struct{}),
		epoch:       cfg.RunnerID,
		// The runner was registered (or renewed) just before the engine starts.
		lease: lease{renewedAt: time.Now()},
	}
	e.remoteCtx, e.remoteStop = context.WithCancel(context.Background())
	e.archiver = acquireArchiver() // let go of at the end of Close
	e.writer = startWriter(e)
	e.watcher = startLoop(e.watchLoop)
	e.lease.loop = startLoop(e.leaseLoop)
	if cfg.ArtifactsDir != "" {
		e.spooler.loop = startLoop(e.spoolLoop)
	}
	return e
}

// Close shuts the engine down: pending tasks are recorded cancelled and running ones are
// stopped (SIGTERM, SIGKILL after the grace) and recorded failed, both with
// RUNNER_SHUTDOWN, and every state is written before it returns. When ctx ends first,
// whatever still runs is killed at once; when the database cannot be written by then
// (another process holds its lock), the states not yet written are saved beside it for the
// next runner to apply (see writer.go), so Close still returns.
//
// The order is what makes the record whole: whatever may still queue a state is over
// before the write queue closes, and the queue is written before anything that reads the
// record (the waits, the archives) is let go.
func (e *Engine) Close(ctx context.Context) error {
	if !e.beginClose() {
		return nil
	}
	// Every process reaped, every Submit in flight adopted and shut down: no task will
	// change state any more on its own.
	e.reapAll(ctx)
	e.remoteStop() // every remote attempt has ended: no call to a cluster is left to make
	e.closeDirs()
	// Stopped at the start (beginClose); the watch may still carry out a cancel request,
	// which queues states, so it is waited for before the queue closes.
	e.watcher.Close()
	e.lease.Close()
	e.spooler.Close()
	// The writer writes everything queued (or, past the deadline, saves it for the next
	// runner).
	e.writer.Close(ctx)
	// Everything is written: every wait ends, with what is recorded.
	e.changes.closeAll()
	e.finishes.closeAll()
	// Archive what finished and is not archived yet, as far as the time allows; what does
	// not fit is archived by the next runner to start, so running out of time is no error.
	if err := e.spoolUnspooled(ctx, true); err != nil {
		e.log.Warn("archiving at shutdown left work for the next start", "err", err)
	}
	// Last, once every task of this engine is reaped: the archiver's thread may have
	// forked some of them (see spool.go).
	e.archiver.Close()
	e.local.Close()
	return nil
}

// beginClose marks the engine closed, stops the background loops from starting more work,
// and shuts every graph down (pending tasks cancelled, running ones signalled). It reports
// false when the engine was closed already.
func (e *Engine) beginClose() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.closed = true
	e.watcher.Stop()
	e.lease.Stop()
	e.spooler.Stop()
	// A task picked to start whose process is not started yet is not started at all
	// (see launchAll): it is recorded cancelled, like the pending ones.
	e.abandonOnce.Do(func() { close(e.abandon) })
	for _, g := range slices.Clone(e.order) {
		e.shutdownGraphLocked(g)
	}
	return true
}

// reapAll waits for the Submits in flight and for every task's process to be reaped;
// when ctx ends first, whatever still runs is killed at once.
func (e *Engine) reapAll(ctx context.Context) {
	done := make(chan struct{})
	go func() { e.inflight.Wait(); e.waiters.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.local.KillAll()
		e.remoteStop()
		// A remote attempt was asked to stop (its pod deleted) at the shutdown's start;
		// what is not seen to end by now is recorded as it is, and no longer followed.
		e.mu.Lock()
		for _, g := range e.order {
			for _, t := range g.tasks {
				if t.run != nil && t.run.remote {
					t.run.stop()
				}
			}
		}
		e.mu.Unlock()
		<-done
	}
}

// closeDirs closes the directories of the graphs still held: every start is over, so no
// graph holds its directories open any more (dirs.go). A graph ends, and closes them,
// once its last task does; this is for one that did not.
func (e *Engine) closeDirs() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, g := range e.order {
		g.dirs.close()
	}
}

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
			st := t.row.state()
			st.FinishedAt = &now
			switch {
			case t.run != nil && !t.run.remote:
				t.run.ex.Cancel(ctx, t.run.id, 0)
				st.Status = string(Failed)
				st.ErrorCode, st.Message = strPtr(CodeRunnerShutdown), strPtr("the server was told to exit at once while the task ran: the task was killed")
			case t.run != nil || t.row.d().Job != nil:
				// Its pod is deleted by the stop below, as far as the time allows; a pod
				// left running is deleted by the next runner (sweepRemote).
				st.Status = string(Failed)
				st.ErrorCode, st.Message = strPtr(CodeRunnerShutdown), strPtr("the server was told to exit at once while the task ran in its pod: the pod is deleted")
			default: // picked to start, its process not started yet
				st.Status = string(Cancelled)
				st.ErrorCode, st.Message = strPtr(CodeRunnerShutdown), strPtr("the server was told to exit at once before the task started")
			}
			// Queued as the task's last state; whatever the task's own exit would record
			// later is refused by the store, since terminal states are final.
			e.writer.queue.push(writeItem{update: &store.TaskUpdate{GraphID: g.row.ID, TaskID: t.row.ID, TaskState: st}})
		}
		e.shutdownGraphLocked(g)
	}
	written := e.barrierLocked()
	e.mu.Unlock()
	select {
	case <-written:
	case <-e.writer.done: // Close got there first: everything is written
	case <-ctx.Done():
		e.writer.giveUpNow()
		select {
		case <-written:
		case <-e.writer.done:
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
