package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/server"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// serveFlags are the flags of the commands that serve MCP, stdio and http: the workspace,
// the limits, the sandbox. config turns them into the server.Config both serve with.
type serveFlags struct {
	cfg      server.Config
	sf       sandboxFlags
	logLevel string
	buffer   byteSize
	result   byteSize
	remote   remoteFlags
}

// add defines the flags on f.
func (s *serveFlags) add(f *pflag.FlagSet) {
	s.buffer, s.result = byteSize(4<<20), byteSize(tasks.DefaultMaxResult)
	cfg := &s.cfg
	f.StringVar(&cfg.Workspace, "workspace", ".", "the project directory the tools work in (resolved to an absolute, symlink-free path)")
	f.StringVar(&cfg.StateDir, "state-dir", "", "where the database and logs live (default <workspace>/.mcp-harness)")
	f.StringVar(&cfg.ArtifactsDir, "artifacts-dir", "", "where finished graphs' logs are archived (default <state-dir>/artifacts)")
	f.StringVar(&s.logLevel, "log-level", defaultLogLevel, "stderr log level: debug, info, warn or error (<state-dir>/server.log gets info and up, or debug)")
	f.DurationVar(&cfg.MaxWait, "max-wait", 30*time.Second, "the longest any call waits; longer timeoutMs/waitMs are clamped to it")
	f.IntVar(&cfg.MaxSessions, "max-sessions", 32, "the most PTY sessions open at once")
	f.IntVar(&cfg.MaxParallel, "max-parallel", runtime.NumCPU(), "the most tasks running at once, over all graphs")
	f.IntVar(&cfg.MaxTasks, "max-tasks", 10000, "the most tasks in one graph")
	f.DurationVar(&cfg.Retention, "retention", 168*time.Hour, "how long finished graphs keep their live logs before only their archive is kept")
	f.Var(&s.buffer, "shell-buffer", "output kept per PTY session (B, KiB or MiB suffix)")
	f.Var(&s.result, "max-result", "the largest result a tool returns: its text, and its structured content as JSON (B, KiB or MiB suffix); larger ones are paged or cut")
	f.BoolVar(&cfg.MCPTasks, "mcp-tasks", false, "also speak the MCP Tasks extension (io.modelcontextprotocol/tasks) for tasks_run")
	f.BoolVar(&cfg.NoUI, "no-ui", false, "offer no MCP Apps views (the ui:// resources of the graph and the terminal, and the tools' links to them)")
	f.BoolVar(&cfg.Detach, "detach", false, "tasks_run's default for detach: run each graph in a process of its own that outlives the server")
	addSandboxFlags(f, &s.sf)
	addRemoteFlags(f, &s.remote)
	// For tests only, so that a stalled runner or a locked database plays out in seconds:
	// hidden, and documented in the README's "What survives a restart".
	f.DurationVar(&cfg.Lease, "lease", tasks.DefaultLease, "how long the runner's lease runs from each renewal (tests)")
	f.DurationVar(&cfg.StaleAfter, "stale-after", tasks.DefaultStaleAfter, "how long past its lease a silent runner whose process exists counts as alive (tests)")
	f.DurationVar(&cfg.BusyTimeout, "busy-timeout", store.DefaultBusyTimeout, "how long one attempt at a write waits for another process's lock on the database (tests)")
	for _, name := range []string{"lease", "stale-after", "busy-timeout"} {
		f.MarkHidden(name)
	}
}

// config checks the flags of cmd and completes the server's config: a mistake is a
// usageError, found before anything is opened. When the sandbox confines files it runs
// this program again first (sandbox.ReexecForMounts), which returns only on failure.
// closeLog closes the server's log file.
func (s *serveFlags) config(cmd *cobra.Command, version string) (cfg server.Config, closeLog func() error, err error) {
	if err := checkFlagValues(cmd.Flags(), "max-wait", "retention", "max-sessions", "max-parallel", "max-tasks"); err != nil {
		return cfg, nil, err
	}
	if s.cfg.Sandbox, s.cfg.EnvPolicy, err = s.sf.config(cmd.Flags()); err != nil {
		return cfg, nil, err
	}
	if s.sf.confinesFiles() {
		// Before anything is opened: on success it runs this program again.
		if err := sandbox.ReexecForMounts(); err != nil {
			return cfg, nil, err
		}
	}
	if s.cfg.Remote, err = s.remote.config(); err != nil {
		return cfg, nil, err
	}
	s.cfg.ShellBuffer = int(s.buffer)
	if s.result < tasks.MinMaxResult {
		return cfg, nil, usageError{fmt.Errorf("--max-result %s: want at least %dKiB, room for a graph's head and one task", &s.result, tasks.MinMaxResult>>10)}
	}
	s.cfg.MaxResult = int(s.result)
	if closeLog, err = completeServeConfig(&s.cfg, version, s.logLevel, os.Stderr); err != nil {
		return cfg, nil, err
	}
	if s.cfg.RunnerCommand, err = runnerCommand(cmd.Flags()); err != nil {
		closeLog()
		return cfg, nil, err
	}
	return s.cfg, closeLog, nil
}

// shutdownSignals cancels ctx on SIGTERM, SIGINT or SIGHUP (a terminal that closed), and
// closes the returned abort channel on a second one, when whoever sent it has stopped
// waiting (the server then records what it can and returns server.ErrAborted: exit
// status 1); a third exits at once. Call stop once the server has returned, so that a
// signal after a clean shutdown cannot turn its exit status into 1.
func shutdownSignals(log *slog.Logger, cancel context.CancelFunc) (abort <-chan struct{}, stop func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	aborted := make(chan struct{})
	served := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			log.Info("shutting down", "signal", sig.String())
			cancel()
		case <-served:
			return
		}
		select {
		case sig := <-signals:
			log.Warn("second signal: recording what can be recorded, then exiting at once", "signal", sig.String())
			close(aborted)
		case <-served:
			return
		}
		select {
		case <-signals: // a third: not even that
			os.Exit(1)
		case <-served:
		}
	}()
	return aborted, func() {
		close(served)
		signal.Stop(signals)
	}
}
