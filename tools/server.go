// Package tools is the MCP adapter of mcp-harness: it builds the mcp-go server, defines the
// tools (their schemas, argument checks and result shapes), maps engine errors to the stable
// error codes of the tool contract, and serves stdio with a clean shutdown. The engines
// (pty, tasks, store) do the work and know nothing of MCP; a handler here decodes, validates,
// calls one engine method and shapes the result.
package tools

import (
	"context"
	_ "embed"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

//go:embed instructions.md
var instructions string

// Config is everything the server is told on its command line.
type Config struct {
	Workspace    string
	StateDir     string
	ArtifactsDir string
	MaxWait      time.Duration // no call waits longer; longer timeoutMs/waitMs are clamped
	MaxSessions  int
	MaxParallel  int           // runner-wide cap on running tasks; 0 = the CPU count
	MaxTasks     int           // tasks per graph; 0 = tasks.DefaultMaxTasks
	MCPTasks     bool          // serve the MCP Tasks extension facade (see facade.go)
	Retention    time.Duration // finished graphs keep live logs this long; 0 = tasks.DefaultRetention
	ShellBuffer  int
	Version      string
	Logger       *slog.Logger
}

const (
	defaultMaxWait = 30 * time.Second
	// lease is how long a runner counts as alive after its last heartbeat. Other runners
	// only take over a graph after it expired (or the process is provably dead), so it is
	// a trade between how fast a crash is noticed and how long a stalled process is trusted.
	lease          = 15 * time.Second
	heartbeatEvery = lease / 3
	// workerPoolSize is how many tool calls run at once. mcp-go's stdio server queues tool
	// calls for a fixed pool of workers; every waiting call (shell_io, a tasks_status
	// long-poll) holds a worker for up to --max-wait, so the pool is sized well above the
	// number of waits a client plausibly has open, so a quick call never queues behind
	// them. Idle workers cost a parked goroutine each. 100 is mcp-go's maximum.
	workerPoolSize = 100
	queueSize      = 1000
)

// Server is one running mcp-harness: a runner on a workspace with its engines and the MCP
// server in front of them. New opens it, Listen speaks MCP until the input ends or the
// context is cancelled, Close shuts everything down.
type Server struct {
	cfg    Config
	log    *slog.Logger
	ws     *store.Workspace
	db     *store.DB
	runner store.Runner
	shells *pty.Manager
	tasks  *tasks.Engine
	mcp    *server.MCPServer

	cancel context.CancelFunc // stops background work (heartbeat)
	wg     sync.WaitGroup
	closed sync.Once
}

// New resolves the workspace, opens its store, registers this process as a runner and
// starts the engines. Nothing is written to stdout.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = defaultMaxWait
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	ws, err := store.OpenWorkspace(store.WorkspaceConfig{Dir: cfg.Workspace, StateDir: cfg.StateDir, ArtifactsDir: cfg.ArtifactsDir})
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, ws.DBPath())
	if err != nil {
		return nil, err
	}
	runner, err := db.RegisterRunner(ctx, cfg.Version, lease)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("runner", runner.ID), ws: ws, db: db, runner: runner}
	s.shells = pty.NewManager(pty.Config{
		MaxSessions: cfg.MaxSessions,
		BufferSize:  cfg.ShellBuffer,
		Recorder:    sessionRecorder{db: db, runnerID: runner.ID},
		Logger:      s.log,
	})
	s.tasks = tasks.NewEngine(tasks.Config{
		DB: db, Workspace: ws, RunnerID: runner.ID, MaxParallel: cfg.MaxParallel,
		Limits: tasks.Limits{MaxTasks: cfg.MaxTasks}, Logger: s.log,
		ArtifactsDir: ws.ArtifactsDir, Retention: cfg.Retention,
	})
	s.mcp = server.NewMCPServer("mcp-harness", cfg.Version,
		server.WithInstructions(instructions),
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	s.mcp.AddTools(s.registry()...)

	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.wg.Go(func() { s.heartbeat(bg) })
	s.log.Info("runner started", "workspace", ws.Root, "state", ws.StateDir, "pid", os.Getpid(), "version", cfg.Version)
	return s, nil
}

// MCPServer is the mcp-go server, for in-process tests.
func (s *Server) MCPServer() *server.MCPServer { return s.mcp }

// Listen speaks MCP over in and out until in ends (the client closed our stdin) or ctx is
// cancelled (a signal). It returns nil in both cases; the caller then calls Close.
// The facade (facade.go) stands between the streams and mcp-go: it keeps progress
// notifications from following their call's response and, with --mcp-tasks, serves the
// MCP Tasks extension. Nothing is written to out after Listen returns.
func (s *Server) Listen(ctx context.Context, in io.Reader, out io.Writer) error {
	stdio := server.NewStdioServer(s.mcp)
	server.WithWorkerPoolSize(workerPoolSize)(stdio)
	server.WithQueueSize(queueSize)(stdio)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	f := s.newFacade(ctx, out)
	err := stdio.Listen(ctx, f.relay(in), f)
	f.close()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// Close stops the sessions, marks the runner stopped and closes the store. It is safe to
// call more than once.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.closed.Do(func() {
		s.cancel()
		s.wg.Wait()
		// Tasks and sessions stop side by side: each has its own grace period, and the
		// whole shutdown must fit the few seconds a client waits before SIGKILL.
		var wg sync.WaitGroup
		var tasksErr, shellsErr error
		wg.Go(func() { tasksErr = s.tasks.Close(ctx) })
		wg.Go(func() { shellsErr = s.shells.Shutdown(ctx) })
		wg.Wait()
		err = errors.Join(tasksErr, shellsErr, s.db.StopRunner(context.WithoutCancel(ctx), s.runner.ID))
		err = errors.Join(err, s.db.Close())
		s.log.Info("runner stopped")
	})
	return err
}

// heartbeat renews the runner's lease until ctx is done.
func (s *Server) heartbeat(ctx context.Context) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.db.RenewLease(ctx, s.runner.ID, lease); err != nil && ctx.Err() == nil {
				s.log.Error("renew lease", "err", err)
			}
		}
	}
}

// sessionRecorder keeps the store's row per PTY session for pty.Manager.
type sessionRecorder struct {
	db       *store.DB
	runnerID string
}

func (r sessionRecorder) SessionOpened(ctx context.Context, rec pty.Record) error {
	return r.db.InsertSession(ctx, store.SessionRow{
		RunnerID: r.runnerID, ID: rec.ID, Name: rec.Name, Command: rec.Command, Cwd: rec.Dir,
		ProcessIdentity: store.IdentifyProcess(rec.Pid), Pgid: rec.Pgid, StartedAt: rec.StartedAt,
	})
}

func (r sessionRecorder) SessionClosed(ctx context.Context, id string) error {
	return r.db.CloseSession(ctx, r.runnerID, id)
}
