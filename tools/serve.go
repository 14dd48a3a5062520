package tools

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"
)

// shutdownTimeout bounds a clean shutdown. MCP clients close stdin, wait a few seconds, then
// send SIGTERM and later SIGKILL: everything we must record happens well inside that.
const shutdownTimeout = 5 * time.Second

// Serve runs the server on a process's standard streams: it speaks MCP on in and out until
// in ends or the process gets SIGTERM or SIGINT, then shuts down cleanly and returns nil
// (exit code 0). A second signal during shutdown exits at once with status 1. A workspace
// or store that cannot be opened is returned as an error before anything is written to out.
func Serve(ctx context.Context, cfg Config, in *os.File, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	go func() {
		select {
		case sig := <-signals:
			cfg.logger().Info("shutting down", "signal", sig.String())
			cancel()
		case <-ctx.Done():
			return
		}
		select {
		case sig := <-signals:
			cfg.logger().Warn("second signal: exiting at once", "signal", sig.String())
			os.Exit(1)
		case <-time.After(2 * shutdownTimeout):
		}
	}()

	if isTerminal(in) {
		fmt.Fprintln(os.Stderr, "mcp-harness: this is an MCP server; it waits for a client on stdin (see the README for how to configure Claude Desktop, Codex or Cursor). Press Ctrl-D or Ctrl-C to quit.")
	}

	srv, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	listenErr := srv.Listen(ctx, in, out)
	closeCtx, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancelClose()
	closeErr := srv.Close(closeCtx)
	if listenErr != nil {
		return listenErr
	}
	return closeErr
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// isTerminal reports whether f is a terminal (TCGETS succeeds on it).
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
