package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/internal/server"
	"github.com/mcp-harness/mcp-harness/pty"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// newStdioCmd is the command an MCP client launches: its flags become the server.Config
// that serveStdio serves.
func newStdioCmd(version string) *cobra.Command {
	var (
		cfg      server.Config
		sf       sandboxFlags
		logLevel string
		buffer   = byteSize(4 << 20)
		result   = byteSize(tasks.DefaultMaxResult)
	)
	cmd := &cobra.Command{
		Use:   "stdio",
		Short: "Serve MCP on stdin/stdout (this is what an MCP client launches)",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return flagsFromEnv(cmd.Flags())
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFlagValues(cmd.Flags(), "max-wait", "retention", "max-sessions", "max-parallel", "max-tasks"); err != nil {
				return err
			}
			var err error
			if cfg.Sandbox, cfg.EnvPolicy, err = sf.config(cmd.Flags()); err != nil {
				return err
			}
			if sf.confinesFiles() {
				// Before anything is opened: on success it runs this program again.
				if err := sandbox.ReexecForMounts(); err != nil {
					return err
				}
			}
			cfg.ShellBuffer = int(buffer)
			if result < tasks.MinMaxResult {
				return usageError{fmt.Errorf("--max-result %s: want at least %dKiB, room for a graph's head and one task", &result, tasks.MinMaxResult>>10)}
			}
			cfg.MaxResult = int(result)
			closeLog, err := completeServeConfig(&cfg, version, logLevel, os.Stderr)
			if err != nil {
				return err
			}
			defer closeLog()
			if cfg.RunnerCommand, err = runnerCommand(cmd.Flags()); err != nil {
				return err
			}
			return serveStdio(cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Workspace, "workspace", ".", "the project directory the tools work in (resolved to an absolute, symlink-free path)")
	f.StringVar(&cfg.StateDir, "state-dir", "", "where the database and logs live (default <workspace>/.mcp-harness)")
	f.StringVar(&cfg.ArtifactsDir, "artifacts-dir", "", "where finished graphs' logs are archived (default <state-dir>/artifacts)")
	f.StringVar(&logLevel, "log-level", defaultLogLevel, "stderr log level: debug, info, warn or error (<state-dir>/server.log gets info and up, or debug)")
	f.DurationVar(&cfg.MaxWait, "max-wait", 30*time.Second, "the longest any call waits; longer timeoutMs/waitMs are clamped to it")
	f.IntVar(&cfg.MaxSessions, "max-sessions", 32, "the most PTY sessions open at once")
	f.IntVar(&cfg.MaxParallel, "max-parallel", runtime.NumCPU(), "the most tasks running at once, over all graphs")
	f.IntVar(&cfg.MaxTasks, "max-tasks", 10000, "the most tasks in one graph")
	f.DurationVar(&cfg.Retention, "retention", 168*time.Hour, "how long finished graphs keep their live logs before only their archive is kept")
	f.Var(&buffer, "shell-buffer", "output kept per PTY session (B, KiB or MiB suffix)")
	f.Var(&result, "max-result", "the largest result a tool returns: its text, and its structured content as JSON (B, KiB or MiB suffix); larger ones are paged or cut")
	f.BoolVar(&cfg.MCPTasks, "mcp-tasks", false, "also speak the MCP Tasks extension (io.modelcontextprotocol/tasks) for tasks_run")
	f.BoolVar(&cfg.Detach, "detach", false, "tasks_run's default for detach: run each graph in a process of its own that outlives the server")
	addSandboxFlags(f, &sf)
	// For tests only, so that a stalled runner or a locked database plays out in seconds:
	// hidden, and documented in the README's "What survives a restart".
	f.DurationVar(&cfg.Lease, "lease", tasks.DefaultLease, "how long the runner's lease runs from each renewal (tests)")
	f.DurationVar(&cfg.StaleAfter, "stale-after", tasks.DefaultStaleAfter, "how long past its lease a silent runner whose process exists counts as alive (tests)")
	f.DurationVar(&cfg.BusyTimeout, "busy-timeout", store.DefaultBusyTimeout, "how long one attempt at a write waits for another process's lock on the database (tests)")
	for _, name := range []string{"lease", "stale-after", "busy-timeout"} {
		f.MarkHidden(name)
	}
	return cmd
}

// terminalNotice is printed when a person runs the server by hand: it would otherwise sit
// silently waiting for JSON-RPC.
const terminalNotice = "mcp-harness: this is an MCP server; it waits for a client on stdin (see the README for how to configure Claude Desktop, Codex or Cursor). Press Ctrl-D or Ctrl-C to quit."

// serveStdio runs the server on the process's standard streams until stdin ends, the
// process gets SIGTERM, SIGINT or SIGHUP (its terminal closed), or the client closes its
// end of stdout, then shuts down cleanly (exit status 0). A second signal during the
// shutdown exits at once with status 1, whoever sent it having stopped waiting, after at
// most about a second spent recording the tasks' states (server.Server.Abort).
func serveStdio(cfg server.Config) error {
	if pty.IsTerminal(os.Stdin.Fd()) {
		fmt.Fprintln(os.Stderr, terminalNotice)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(signals)
	// Without this, the Go runtime kills the process with SIGPIPE on a write to a stdout
	// (or stderr) whose reader is gone. Asked for, the signal is only delivered here, and
	// the write fails with EPIPE, which stdout below turns into the end of the session. The
	// signal itself is no reason to stop (a write to any other broken pipe raises it too),
	// so nothing reads the channel: it drops what it cannot hold. Not signal.Ignore: an
	// ignored SIGPIPE would be inherited by every task and shell this server starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	stdout := &endOnBrokenPipe{w: os.Stdout, end: func() {
		cfg.Logger.Info("shutting down: the client closed its end of stdout")
		cancel()
	}}
	abort := make(chan struct{})
	cfg.Abort = abort
	// served ends the watcher once Serve returns, so a signal that arrives after a clean
	// shutdown cannot turn its exit status into 1.
	served := make(chan struct{})
	defer close(served)
	go func() {
		select {
		case sig := <-signals:
			cfg.Logger.Info("shutting down", "signal", sig.String())
			cancel()
		case <-served:
			return
		}
		select {
		case sig := <-signals:
			cfg.Logger.Warn("second signal: recording what can be recorded, then exiting at once", "signal", sig.String())
			close(abort) // Serve returns server.ErrAborted: exit status 1
		case <-served:
			return
		}
		select {
		case <-signals: // a third: not even that
			os.Exit(1)
		case <-served:
		}
	}()
	return server.Serve(ctx, cfg, os.Stdin, stdout)
}

// endOnBrokenPipe writes to the client's stdout and calls end, once, when a write fails
// because the client closed its end (EPIPE): the session is over, and the server shuts
// down cleanly as if stdin had ended.
type endOnBrokenPipe struct {
	w    io.Writer
	end  func()
	once sync.Once
}

func (p *endOnBrokenPipe) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.once.Do(p.end)
	}
	return n, err
}
