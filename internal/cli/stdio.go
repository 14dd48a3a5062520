package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mcp-harness/mcp-harness/internal/server"
	"github.com/mcp-harness/mcp-harness/pty"
)

// newStdioCmd is the command an MCP client launches: its flags become the server.Config
// that serveStdio serves.
func newStdioCmd(version string) *cobra.Command {
	var flags serveFlags
	cmd := &cobra.Command{
		Use:   "stdio",
		Short: "Serve MCP on stdin/stdout (this is what an MCP client launches)",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return flagsFromEnv(cmd.Flags())
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, closeLog, err := flags.config(cmd, version)
			if err != nil {
				return err
			}
			defer closeLog()
			return serveStdio(cfg)
		},
	}
	flags.add(cmd.Flags())
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
	abort, stopSignals := shutdownSignals(cfg.Logger, cancel)
	defer stopSignals()
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
	cfg.Abort = abort
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
