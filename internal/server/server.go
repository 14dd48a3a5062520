// Package server is the composition root of mcp-harness: it resolves the workspace, opens
// its store (and opens it again while another process holds its lock), takes the
// server's number on the workspace (its session ids carry it) and registers the process
// as a runner, starts the engines, puts the tool table (tools) and the protocol session
// (internal/protocol) in front of them and the operator socket (internal/operator) beside
// them, and shuts it all down within the few seconds a client gives. Serve is the server of one stdio client, ServeHTTP
// (http.go) the server of many over Streamable HTTP; RunDetached and SubmitDetached are
// the detached runner and its hand-over.
package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/internal/envpolicy"
	"github.com/mcp-harness/mcp-harness/internal/operator"
	"github.com/mcp-harness/mcp-harness/internal/procid"
	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tools"
)

// Config is everything the server is told on its command line.
type Config struct {
	Workspace    string
	StateDir     string
	ArtifactsDir string
	MaxWait      time.Duration // no call waits longer; longer timeoutMs/waitMs are clamped
	MaxSessions  int
	MaxParallel  int  // runner-wide cap on running tasks; 0 = the CPU count
	MaxTasks     int  // tasks per graph; 0 = tasks.DefaultMaxTasks
	MCPTasks     bool // serve the MCP Tasks extension (internal/protocol/mcptasks.go)
	NoUI         bool // offer no MCP Apps views (internal/ui)
	Detach       bool // tasks_run's default for detach
	// RunnerCommand starts a detached runner (tasks.Config.RunnerCommand); nil: no
	// graph runs detached, and tasks_run refuses detach: true.
	RunnerCommand []string
	MaxWaits      int // waiting tool calls in flight; more are answered BUSY; 0 = protocol.DefaultMaxWaits
	// UnguessableIDs names terminal sessions with 128 random bits (pty.RandomSessionIDs)
	// rather than a count: a server whose clients reach it over HTTP must not let one
	// guess another's session.
	UnguessableIDs bool
	Retention      time.Duration // finished graphs keep live logs this long; 0 = tasks.DefaultRetention
	ShellBuffer    int
	MaxResult      int // bytes of a result's text, and of its structuredContent as JSON; 0 = tasks.DefaultMaxResult (tools.Config)
	// Sandbox and EnvPolicy confine the commands the server starts (confine.go); their
	// zero values are the command line's defaults. Sandbox's Workspace and Protected are
	// set by the server.
	Sandbox   sandbox.Config
	EnvPolicy envpolicy.Policy
	// Remote is where Kubernetes tasks run and archives are kept (remote.go).
	Remote  RemoteConfig
	Version string
	Logger  *slog.Logger

	// Lease, StaleAfter and BusyTimeout are for tests (hidden flags): the runner's lease
	// (0 = tasks.DefaultLease), how long past its lease a silent runner whose process
	// exists is trusted (0 = tasks.DefaultStaleAfter), and how long one attempt at a write
	// waits for another process's lock on the database (0 = store.DefaultBusyTimeout).
	Lease       time.Duration
	StaleAfter  time.Duration
	BusyTimeout time.Duration
	// Abort, if set, is closed by the caller when it is about to exit at once (a second
	// signal during the shutdown): Serve then records what it can within abortTimeout
	// (see Server.Abort) and returns ErrAborted.
	Abort <-chan struct{}
}

// Server is one running mcp-harness: a runner on a workspace with its engines and the MCP
// server in front of them. Serve makes one, Listen speaks MCP until the input ends or the
// context is cancelled, Close shuts everything down.
type Server struct {
	cfg      Config
	log      *slog.Logger
	ws       *workspace.Workspace
	runnerID string // the id open registers the runner under
	confined *confinement
	table    *tools.Table
	mcp      *mcpserver.MCPServer

	// The attempts at open (see nextAttempt): the latest one, and whether Close or Abort
	// has begun, after which only Close starts one. Guarded by openMu.
	openMu  sync.Mutex
	attempt *openAttempt
	closing bool

	// What open sets, read only by whoever saw the attempt that set them succeed (ready
	// returned nil; Close and Abort look at its err): the store, the runner and the
	// engines. Only one attempt runs at a time, and none after one succeeded.
	db     *store.DB
	runner store.Runner
	shells *pty.Manager
	tasks  *tasks.Engine
	remote *remote // the engine's Kubernetes executor and archives' bucket
	// operator is the socket of a person's commands (nil if it could not be made).
	operator *operator.Server
	// stopReaper ends the child subreaper that open started (startReaper).
	stopReaper func()

	closed sync.Once
}

// newServer resolves the workspace and makes the MCP side of a server, which answers
// initialize and tools/list; open does the rest. A workspace that cannot be used is an
// error here, before anything is answered.
func newServer(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = tools.DefaultMaxWait
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Lease <= 0 {
		cfg.Lease = tasks.DefaultLease
	}
	ws, err := workspace.Open(workspace.Config{Dir: cfg.Workspace, StateDir: cfg.StateDir, ArtifactsDir: cfg.ArtifactsDir})
	if err != nil {
		return nil, err
	}
	id := store.NewRunnerID()
	s := &Server{cfg: cfg, log: cfg.Logger.With("runner", id), ws: ws, runnerID: id}
	if s.confined, err = confine(cfg, ws, s.log); err != nil {
		return nil, err
	}
	s.table = tools.NewTable(tools.Config{MaxWait: cfg.MaxWait, MaxResult: cfg.MaxResult, Detach: cfg.Detach, Version: cfg.Version, Logger: s.log,
		Sandbox: s.confined.sandbox, WithheldEnv: s.confined.withheld, AnswerCommand: answerCommand(ws), NoUI: cfg.NoUI},
		ws, s.ready)
	s.mcp = s.table.MCPServer()
	return s, nil
}

// open opens the store, registers the runner and starts the engines; a failure leaves
// nothing open, so that open can be tried again. The tests' New runs it at once; Serve
// leaves it until the client has what it waits for at its start, initialize and
// tools/list answered, neither of which needs the store (startOpen). Only run calls it.
func (s *Server) open(ctx context.Context) error {
	cfg := s.cfg
	rem, err := openRemote(ctx, cfg.Remote, s.ws, s.log)
	if err != nil {
		return err
	}
	db, err := store.OpenWith(ctx, s.ws.DBPath(), store.Options{BusyTimeout: cfg.BusyTimeout})
	if err != nil {
		return err
	}
	// The server's number names its sessions (s<number>-<k>). Taken before the runner is
	// registered: a number a failed attempt took is only skipped, while registering the
	// runner must be the attempt's last write that can fail.
	number, err := db.NextServerNumber(ctx)
	if err != nil {
		db.Close()
		return err
	}
	// Registering under the same id on a later attempt is right: a failed write wrote
	// nothing.
	runner, err := db.RegisterRunnerAs(ctx, s.runnerID, cfg.Version, cfg.Lease)
	if err != nil {
		db.Close()
		return err
	}
	s.db, s.runner = db, runner
	// The task engine keeps the runner's lease, and registers the runner again if it is
	// lost (tasks/lease.go); the session records follow the runner it is now.
	tcfg := tasks.Config{
		DB: db, Workspace: s.ws, RunnerID: runner.ID, MaxParallel: cfg.MaxParallel,
		Limits: tasks.Limits{MaxTasks: cfg.MaxTasks}, Logger: s.log,
		ArtifactsDir: s.ws.ArtifactsDir, Retention: cfg.Retention,
		Lease: cfg.Lease, StaleAfter: cfg.StaleAfter, Version: cfg.Version, SubmitWait: cfg.MaxWait,
		RunnerCommand: cfg.RunnerCommand, Sandbox: s.confined.sandbox, Env: s.confined.env,
	}
	rem.apply(&tcfg)
	s.remote = rem
	s.tasks = tasks.NewEngine(tcfg)
	s.shells = pty.NewManager(pty.Config{
		MaxSessions: cfg.MaxSessions,
		BufferSize:  cfg.ShellBuffer,
		Recorder:    sessionRecorder{db: db, runnerID: s.tasks.RunnerID},
		Logger:      s.log,
		Sandbox:     s.confined.sandbox,
		Env:         s.confined.env,
		ScriptsDir:  s.ws.StateDir,
		SessionID:   sessionIDs(number, cfg.UnguessableIDs),
	})
	s.stopReaper = startReaper(s.log)
	s.operator = s.listenOperator(number, runner)
	s.table.Start(s.shells, s.tasks)
	s.log.Info("runner started", "workspace", s.ws.Root, "state", s.ws.StateDir, "pid", os.Getpid(), "version", cfg.Version, "server", number)
	return nil
}

// sessionIDs names the terminal sessions of server number server: short and counted on
// a server of one client, unguessable on one of many (Config.UnguessableIDs).
func sessionIDs(server int, unguessable bool) func(seq int) string {
	if unguessable {
		return pty.RandomSessionIDs(server)
	}
	return pty.ServerSessionIDs(server)
}

// answerCommand is the command line a person runs to answer a session's question on
// workspace ws: this binary (by its name when that is what the person's PATH finds, else
// by its path) with the flags that find the workspace from anywhere: --workspace always,
// --state-dir when it is not the default.
func answerCommand(ws *workspace.Workspace) func(id string) string {
	bin := "mcp-harness"
	if exe, err := os.Executable(); err == nil {
		onPath, err := exec.LookPath(bin)
		if err != nil || !sameFile(onPath, exe) {
			bin = quote.Shell(exe)
		}
	}
	flags := " --workspace " + quote.Shell(ws.Root)
	if ws.StateDir != filepath.Join(ws.Root, workspace.StateDirName) {
		flags += " --state-dir " + quote.Shell(ws.StateDir)
	}
	return func(id string) string { return bin + " answer " + id + flags }
}

func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// listenOperator makes the server's operator socket (internal/operator), through which a
// person lists, watches and answers its sessions. A server without one still serves its
// client: nil, and a warning says why.
func (s *Server) listenOperator(number int, runner store.Runner) *operator.Server {
	op, err := operator.Listen(operator.Config{
		StateDir: s.ws.StateDir, Sessions: s.shells, Logger: s.log, RunnerID: s.tasks.RunnerID,
		Server: operator.ServerInfo{Number: number, Pid: os.Getpid(), Version: s.cfg.Version, Workspace: s.ws.Root,
			StartedAt: runner.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")},
	})
	if err != nil {
		s.log.Warn("no operator socket: mcp-harness sessions, attach and answer cannot reach this server", "err", err)
		return nil
	}
	return op
}

// openFailed is, once Close has returned, the error of a store that could not be opened
// for a reason other than a held lock; nil if it opened or only found the lock held.
func (s *Server) openFailed() error {
	s.openMu.Lock()
	a := s.attempt
	s.openMu.Unlock()
	if a == nil {
		return nil
	}
	select {
	case <-a.done:
		if !a.busy {
			return a.err
		}
	default:
	}
	return nil
}

// openAttempt is one run of open. err is set before done is closed; cancel ends the
// attempt's waits (Close calls it when its own deadline passes).
type openAttempt struct {
	done   chan struct{}
	err    error
	busy   bool // err is transient: the database's lock was held past the busy timeout
	cancel context.CancelFunc
}

// failedBusy reports whether a has finished, failed on a held lock. Such an attempt is
// made again by the next tool call, and by Close.
func (a *openAttempt) failedBusy() bool {
	select {
	case <-a.done:
		return a.busy
	default:
		return false
	}
}

// run runs open as attempt a and records how it ended; logged, unless the tests' New
// runs it (New returns the error). The log comes before done is closed, so before any
// call answers.
func (s *Server) run(ctx context.Context, a *openAttempt, logged bool) {
	err := s.open(ctx)
	// Another process's write lock held past the busy timeout is transient (an operator's
	// sqlite3 shell, a backup): nothing was written, and the lock will be released. So is
	// an attempt that Close cut short. Anything else (a database newer than this binary,
	// a state directory that cannot be written) stays until someone fixes it.
	busy := err != nil && (errors.Is(err, store.ErrBusy) || ctx.Err() != nil)
	switch {
	case !logged:
	case busy:
		s.log.Warn("could not open the workspace's state: another process holds the database's write lock; tool calls answer BUSY, and the next one tries again", "err", err)
	case err != nil:
		s.log.Error("could not open the workspace's state: every tool call is refused until the server is restarted", "err", err)
	}
	a.err, a.busy = err, busy
	close(a.done)
}

// nextAttempt is the attempt at open to wait for: the one in flight, or the one that
// finished, or a new one, started on a goroutine of its own, when there is none yet or
// the last one failed on a held lock and retry is set. A new attempt starts only once
// the last has finished, so open never runs twice at once, and never after one succeeded:
// the engines start once. Once Close or Abort has begun (closing), only Close's call
// (byClose) starts one; nil is then what there is when nothing was ever started.
func (s *Server) nextAttempt(retry, byClose bool) *openAttempt {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.closing && !byClose {
		return s.attempt
	}
	if a := s.attempt; a != nil && !(retry && a.failedBusy()) {
		return a
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &openAttempt{done: make(chan struct{}), cancel: cancel}
	s.attempt = a
	go func() {
		defer cancel()
		s.run(ctx, a, true)
	}()
	return a
}

// beginClosing marks the server as closing (see nextAttempt) and returns the latest
// attempt at open, or nil if none was made.
func (s *Server) beginClosing() *openAttempt {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.closing = true
	return s.attempt
}

// startOpen starts the first attempt at open, unless one has started already. The protocol
// calls it once the answer to tools/list is written, and ready and Close start one too:
// whichever comes first. Started any earlier, the open (about 5 ms of CPU and disk here)
// competes with answering the client on a machine whose cores are busy, and the client
// waits longer; after, it runs while the client takes in the tool list, and a tool call
// that comes before it is through waits for it (bench/startup.mjs measures both).
func (s *Server) startOpen() { s.nextAttempt(false, false) }

// ready waits until the store is open and returns nil, or returns why it is not: the
// error of the attempt it waited for, or ctx's if ctx ends first. It starts an attempt if
// none was made, or if the last one failed on a held lock (busyOpenError): each call that
// finds the lock gone opens the store. Whatever uses the store or the engines calls it
// first: every tool call does (tools.Table).
func (s *Server) ready(ctx context.Context) error {
	a := s.nextAttempt(true, false)
	if a == nil {
		return tasks.ErrClosed // Abort came before anything was opened
	}
	select {
	case <-a.done:
	default:
		// Only a wait is cut short by ctx: a call made as its context ends (the client's
		// input ends just after it) still gets the store that is already open.
		select {
		case <-a.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if a.busy {
		return &busyOpenError{a.err}
	}
	return a.err
}

// busyOpenError is ready's error when the attempt it waited for found the database's
// lock held: the call answers BUSY, and the next one tries again (Busy says so to the
// tools and the protocol, which know it by that method).
type busyOpenError struct{ err error }

func (e *busyOpenError) Error() string { return e.err.Error() }
func (e *busyOpenError) Unwrap() error { return e.err }
func (e *busyOpenError) Busy() bool    { return true }

// MCPServer is the mcp-go server, for in-process tests.
func (s *Server) MCPServer() *mcpserver.MCPServer { return s.mcp }

// Listen speaks MCP over in and out until in ends (the client closed our stdin) or ctx is
// cancelled (a signal). It returns nil in both cases; the caller then calls Close.
// A protocol.Session stands between the streams and mcp-go: it reads the input in bounded
// lines, runs tool calls itself (never on mcp-go's worker pool), keeps progress
// notifications from following their call's response and, with --mcp-tasks, serves the
// MCP Tasks extension. Tool calls still running when the input ends are cancelled and
// answered before Listen returns. Nothing is written to out after Listen returns.
func (s *Server) Listen(ctx context.Context, in io.Reader, out io.Writer) error {
	return protocol.ServeStdio(ctx, s.newSession(ctx, out), in)
}

// newSession is the protocol session of one client, writing to out.
func (s *Server) newSession(ctx context.Context, out io.Writer) *protocol.Session {
	cfg := protocol.Config{
		MCP: s.mcp, Logger: s.log, MayWait: tools.MayWait, WaitingCalls: tools.WaitingCalls,
		MaxWaits: s.cfg.MaxWaits, Listed: s.startOpen,
	}
	if s.cfg.MCPTasks {
		cfg.Tasks = s.table.TasksExtension()
	}
	return protocol.New(ctx, cfg, out)
}

// stopRunnerTimeout bounds marking the runner stopped at the end of a shutdown: with the
// database locked by another process past the deadline, the runner is left for the next
// one to find gone (its process is dead by then) rather than hold the exit up. An
// unlocked database takes the write in a millisecond.
const stopRunnerTimeout = 300 * time.Millisecond

// Close stops the sessions, marks the runner stopped and closes the store. It is safe to
// call more than once.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.closed.Do(func() {
		// The open runs to its end first, started here if nothing needed it yet or if the
		// last attempt found the lock held, so that every server leaves its runner's
		// record, marked stopped. An attempt in flight is waited for: if it succeeds, its
		// engines are stopped here. At the shutdown's deadline the attempt is told to stop
		// waiting for the lock: the store gives up when the wait it is in ends (SQLite does
		// not interrupt a wait on a lock), at most one busy timeout later.
		s.beginClosing()
		defer s.confined.sandbox.Close() // last: a confined command's parent is its policy's thread
		a := s.nextAttempt(true, true)
		select {
		case <-a.done:
		case <-ctx.Done():
			a.cancel()
			<-a.done
		}
		if a.busy {
			// Nothing was opened, so nothing ran: a lock that is still held is no reason
			// to fail the exit.
			s.log.Warn("stopped without opening the workspace's state: another process held the database's write lock", "err", a.err)
			return
		}
		if a.err != nil {
			return // one that failed left nothing to close; Serve returns its error
		}
		// A person's views end first, saying the server is shutting down, rather than
		// with the sessions' deaths.
		if s.operator != nil {
			if err := s.operator.Close(ctx); err != nil {
				s.log.Warn("closing the operator socket", "err", err)
			}
		}
		// Tasks and sessions stop side by side: each has its own grace period, and the
		// whole shutdown must fit the few seconds a client waits before SIGKILL.
		var wg sync.WaitGroup
		var tasksErr, shellsErr error
		wg.Go(func() { tasksErr = s.tasks.Close(ctx) })
		wg.Go(func() { shellsErr = s.shells.Shutdown(ctx) })
		wg.Wait()
		s.stopReaper() // after the sessions, whose escapees it may still have to collect
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopRunnerTimeout)
		defer cancel()
		if stopErr := s.db.StopRunner(stopCtx, s.tasks.RunnerID()); stopErr != nil {
			s.log.Warn("could not mark the runner stopped; the next runner on this workspace finds it gone", "err", stopErr)
		}
		err = errors.Join(tasksErr, shellsErr, s.remote.close(), s.db.Close())
		s.log.Info("runner stopped")
	})
	return err
}

// abortTimeout bounds Abort: whoever sent the second signal has stopped waiting.
const abortTimeout = time.Second

// ErrAborted is what Serve returns after an immediate exit was asked for (Config.Abort).
var ErrAborted = errors.New("told to exit at once during the shutdown; recorded what could be recorded")

// Abort records what it can within timeout when the process is about to exit at once: the
// tasks' states (see tasks.Engine.Abort), then the runner stopped. It leaves everything
// else to the exit: the caller exits next.
func (s *Server) Abort(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// An attempt at open in flight is waited for, within timeout, and none is started:
	// a store that did not open ran nothing to record.
	a := s.beginClosing()
	if a == nil {
		return
	}
	select {
	case <-a.done:
		if a.err != nil {
			return
		}
	case <-ctx.Done():
		return // nothing opened in time: nothing ran to record
	}
	s.tasks.Abort(ctx)
	if err := s.db.StopRunner(ctx, s.tasks.RunnerID()); err != nil {
		s.log.Warn("could not mark the runner stopped before exiting at once", "err", err)
	}
}

// sessionRecorder keeps the store's row per PTY session for pty.Manager, in the name of
// the runner the process is now (see tasks/lease.go).
type sessionRecorder struct {
	db       *store.DB
	runnerID func() string
}

func (r sessionRecorder) SessionOpened(ctx context.Context, rec pty.Record) error {
	return r.db.InsertSession(ctx, store.SessionRow{
		RunnerID: r.runnerID(), ID: rec.ID, Name: rec.Name, Command: rec.Command, Cwd: rec.Dir,
		Identity: procid.Identify(rec.Pid), Pgid: rec.Pgid, StartedAt: rec.StartedAt,
	})
}

func (r sessionRecorder) SessionClosed(ctx context.Context, id string) error {
	return r.db.CloseSession(ctx, r.runnerID(), id)
}
