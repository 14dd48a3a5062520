package server

import (
	"context"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/mcp-harness/mcp-harness/pty"
)

// memoryLimit is the Go runtime's soft memory limit for a server process (Serve) beyond
// what its sessions' ring buffers may hold (each up to its buffer size, all of them live
// data): one process runs per client, most of its life idle, and the limit keeps a burst
// of garbage from leaving it holding twice its live heap, as the collector's default
// pacing allows. It must stay above the live heap: below it, the collector runs all
// the time (a server with eight full 4 MiB rings under a flat 32 MiB limit read 20 MB
// 2-4x slower, at three times the CPU). A tools/call of a megabyte or more lifts it while
// it runs (internal/protocol), since its decoded forms alone may pass it. GOMEMLIMIT, when
// set, wins.
const memoryLimit = 32 << 20

func setMemoryLimit(cfg Config) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	sessions, buffer := cfg.MaxSessions, cfg.ShellBuffer
	if sessions <= 0 {
		sessions = pty.DefaultMaxSessions
	}
	if buffer <= 0 {
		buffer = pty.DefaultBufferSize
	}
	debug.SetMemoryLimit(memoryLimit + int64(sessions)*int64(buffer))
}

// shutdownTimeout bounds a clean shutdown. MCP clients close stdin, wait a few seconds, then
// send SIGTERM and later SIGKILL: everything we must record happens well inside that.
const shutdownTimeout = 5 * time.Second

// Serve runs the server on a pair of streams: it speaks MCP on in and out until in ends or
// ctx is cancelled (the command cancels it on SIGTERM or SIGINT), then shuts down cleanly,
// within shutdownTimeout, and returns nil. A workspace that cannot be used is returned as
// an error before anything is written to out. The store is opened once the client has its
// tool list (Server.startOpen): if it cannot be, that is logged, every tool call says why,
// and Serve returns the error when the session ends; unless another process held the
// database's lock, which is no error: tool calls answer BUSY and open it again once it is
// released (Server.ready). Signals and exit codes are the caller's: Serve never exits the
// process. When cfg.Abort is closed, Serve records what it can within abortTimeout
// (Server.Abort) and returns ErrAborted at once, leaving the shutdown unfinished: the
// caller is to exit next.
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	setMemoryLimit(cfg)
	srv, err := newServer(cfg)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() {
		listenErr := srv.Listen(ctx, in, out)
		// The shutdown runs to its own deadline even when ctx was cancelled: cancelling is
		// how the caller asks for it.
		closeCtx, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancelClose()
		closeErr := srv.Close(closeCtx)
		if listenErr != nil {
			closeErr = listenErr
		}
		if openErr := srv.openFailed(); openErr != nil { // after Close, which waits for the open
			closeErr = openErr
		}
		served <- closeErr
	}()
	select {
	case err := <-served:
		return err
	case <-cfg.Abort: // a nil channel: never
		srv.Abort(abortTimeout)
		return ErrAborted
	}
}
