package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
	"github.com/mcp-harness/mcp-harness/tools"
)

// detachedStop bounds a detached runner's shutdown, as a client bounds a server's.
const detachedStop = 5 * time.Second

// RunDetached is a detached runner (see tasks/detach.go): it registers the calling process
// as a runner on cfg's workspace, claims graphID from runner from, tells claimed so
// (tasks.ClaimedMessage) and runs the graph until it is finished, its lease is lost, the
// workspace's state directory is removed or ctx ends (a signal: its tasks then end
// RUNNER_SHUTDOWN). It then archives the graph, marks the runner stopped and returns.
func RunDetached(ctx context.Context, cfg Config, graphID, from string, claimed io.Writer) error {
	if cfg.Lease <= 0 {
		cfg.Lease = tasks.DefaultLease
	}
	ws, err := workspace.Open(workspace.Config{Dir: cfg.Workspace, StateDir: cfg.StateDir, ArtifactsDir: cfg.ArtifactsDir})
	if err != nil {
		return err
	}
	db, err := store.OpenWith(ctx, ws.DBPath(), store.Options{BusyTimeout: cfg.BusyTimeout})
	if err != nil {
		return err
	}
	defer db.Close()
	runner, err := db.RegisterRunner(ctx, cfg.Version, cfg.Lease)
	if err != nil {
		return err
	}
	log := cfg.Logger.With("runner", runner.ID, "detached", graphID)
	confined, err := confine(cfg, ws, log)
	if err != nil {
		db.StopRunner(ctx, runner.ID)
		return err
	}
	defer confined.sandbox.Close() // after the engine: a confined task's parent is its policy's thread
	rem, err := openRemote(ctx, cfg.Remote, ws, log)
	if err != nil {
		db.StopRunner(ctx, runner.ID)
		return err
	}
	defer rem.close() // after the engine (deferred later, run earlier)
	tcfg := tasks.Config{
		DB: db, Workspace: ws, RunnerID: runner.ID, MaxParallel: cfg.MaxParallel,
		Limits: tasks.Limits{MaxTasks: cfg.MaxTasks}, Logger: log,
		ArtifactsDir: ws.ArtifactsDir, Retention: cfg.Retention,
		Lease: cfg.Lease, StaleAfter: cfg.StaleAfter, Version: cfg.Version, Only: graphID,
		Sandbox: confined.sandbox, Env: confined.env,
	}
	rem.apply(&tcfg)
	eng := tasks.NewEngine(tcfg)
	stop := func(within time.Duration) {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), within)
		defer cancel()
		eng.Close(closeCtx)
		if err := db.StopRunner(closeCtx, eng.RunnerID()); err != nil {
			log.Warn("could not mark the detached runner stopped", "err", err)
		}
	}
	if err := eng.Claim(ctx, graphID, from); err != nil {
		stop(detachedStop)
		return fmt.Errorf("detached runner: %w", err)
	}
	log.Info("detached runner claimed its graph", "pid", os.Getpid(), "from", from)
	if _, err := io.WriteString(claimed, tasks.ClaimedMessage); err != nil {
		log.Warn("could not tell the server the graph is claimed", "err", err)
	}
	if c, ok := claimed.(io.Closer); ok {
		c.Close()
	}
	tick := time.NewTicker(cfg.Lease / 3)
	defer tick.Stop()
	var reason string
	within := detachedStop
wait:
	for {
		select {
		case <-eng.Idle():
			reason = "its graph is finished"
			break wait
		case <-eng.Lost():
			reason = "its lease is lost: a server adopted its graph"
			break wait
		case <-ctx.Done():
			reason = "told to stop"
			break wait
		case <-tick.C:
			if _, err := os.Stat(ws.StateDir); errors.Is(err, os.ErrNotExist) {
				reason = "the workspace's state directory is gone"
				within = time.Second // nothing it writes now is read by anyone
				break wait
			}
		}
	}
	log.Info("detached runner exits", "why", reason)
	stop(within)
	return nil
}

// ErrNotDetached reports a graph submitted from outside a server (SubmitDetached) that no
// detached runner claimed: it was stored, and recorded cancelled (RUNNER_SHUTDOWN).
var ErrNotDetached = errors.New("no detached runner claimed the graph (see the state dir's server.log)")

// SubmitDetached submits a graph from outside a server (the operator CLI's `tasks run`):
// args holds tasks_run's arguments as JSON (detach is implied). The calling process is a
// runner only for the hand-over: it stores the graph, starts a detached runner with
// runnerCommand (see tasks/detach.go), waits for its claim, and stops. The result is
// tasks_run's.
func SubmitDetached(ctx context.Context, cfg Config, args []byte) (tools.RunResult, error) {
	spec, err := tools.GraphFile(args)
	if err != nil {
		return tools.RunResult{}, err
	}
	if cfg.Lease <= 0 {
		cfg.Lease = tasks.DefaultLease
	}
	ws, err := workspace.Open(workspace.Config{Dir: cfg.Workspace, StateDir: cfg.StateDir, ArtifactsDir: cfg.ArtifactsDir})
	if err != nil {
		return tools.RunResult{}, err
	}
	db, err := store.OpenWith(ctx, ws.DBPath(), store.Options{BusyTimeout: cfg.BusyTimeout})
	if err != nil {
		return tools.RunResult{}, err
	}
	defer db.Close()
	runner, err := db.RegisterRunner(ctx, cfg.Version, cfg.Lease)
	if err != nil {
		return tools.RunResult{}, err
	}
	// Only: this engine reconciles nobody and adopts nothing; it only hands the graph over.
	// It checks a graph's Kubernetes tasks as a server does (the cluster answers, or the
	// graph is refused), so it has the executor too.
	rem, err := openRemote(ctx, cfg.Remote, ws, cfg.Logger)
	if err != nil {
		return tools.RunResult{}, err
	}
	defer rem.close()
	tcfg := tasks.Config{
		DB: db, Workspace: ws, RunnerID: runner.ID, Limits: tasks.Limits{MaxTasks: cfg.MaxTasks},
		Logger: cfg.Logger.With("runner", runner.ID), Lease: cfg.Lease, Version: cfg.Version,
		RunnerCommand: cfg.RunnerCommand, Only: "-",
	}
	rem.apply(&tcfg)
	eng := tasks.NewEngine(tcfg)
	sub, err := eng.SubmitDetached(ctx, spec)
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	eng.Close(closeCtx) // a graph no runner claimed is recorded cancelled, RUNNER_SHUTDOWN
	db.StopRunner(closeCtx, eng.RunnerID())
	if err != nil {
		return tools.RunResult{}, err
	}
	if sub.Created && !sub.Detached {
		return tools.RunResult{}, fmt.Errorf("graph %s: %w", sub.Graph.ID, ErrNotDetached)
	}
	return tools.RunResultOf(sub), nil
}
