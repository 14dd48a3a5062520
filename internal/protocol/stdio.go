package protocol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// ServeStdio speaks MCP over in and out with the session s in front of mcp-go's stdio
// server, until in ends (the client closed our stdin) or ctx is cancelled (a signal); it
// returns nil in both cases. s must write to out (New). The input is read in lines of at
// most MaxLineBytes: an oversized message is answered with a JSON-RPC error and skipped
// without being held whole (lines.go); a last line without a newline is a message too
// (mcp-go drops it). Tool calls still running when the input ends are cancelled and
// answered before ServeStdio returns; nothing is written to out after it returns.
func ServeStdio(ctx context.Context, s *Session, in io.Reader) error {
	stdio := server.NewStdioServer(s.cfg.MCP)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	pr, pw := io.Pipe()
	// mcp-go registers its stdio session, then calls the context func: the session starts
	// reading there, so the tool calls it runs carry that session.
	stdio.SetContextFunc(func(sessionCtx context.Context) context.Context {
		sessionCtx = server.WithSupportedProtocolVersions(sessionCtx, Versions) // server/discover lists them
		s.bindSession(sessionCtx)
		go readStdio(s, in, pw)
		return sessionCtx
	})
	err := stdio.Listen(ctx, pr, s)
	s.stopCalls()
	pr.Close() // unblocks a read waiting for mcp-go to take a line
	s.close()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// readStdio hands the client's messages to s, and to w what mcp-go must see, until the
// input ends. Nothing here waits for a call: a cancellation or the end of the input is
// always read at once. At the end, the calls still running are cancelled and answered
// before mcp-go is told (it then stops and ServeStdio returns). A read still blocked on
// the client's input when ServeStdio returned on a signal ends when that input does,
// writing nothing.
func readStdio(s *Session, in io.Reader, w *io.PipeWriter) {
	lr := newLineReader(in, MaxLineBytes)
	for {
		line, err := lr.next()
		var long *lineTooLongError
		if errors.As(err, &long) {
			s.refuseLong(long)
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if line = s.Handle(line); len(line) > 0 {
				if line[len(line)-1] != '\n' {
					line = append(line, '\n') // mcp-go drops a line without one
				}
				if _, werr := w.Write(line); werr != nil {
					return // mcp-go stopped reading
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			} else {
				s.log.Warn("reading the client's input", "err", err)
			}
			s.stopCalls()
			w.CloseWithError(err)
			return
		}
	}
}

// refuseLong answers a message over MaxLineBytes, by its id when its first bytes hold one.
func (s *Session) refuseLong(e *lineTooLongError) {
	id, method := peekRequest(e.prefix)
	s.log.Warn("refused an oversized message", "bytes", e.size, "limit", MaxLineBytes, "method", quote.Short(method))
	what := "a message"
	if method != "" {
		what = "a " + quote.Short(method) + " message"
	}
	s.reply(id, nil, &rpcError{Code: mcp.INVALID_REQUEST, Message: fmt.Sprintf(
		"%s of %d bytes was refused: at most %d bytes are accepted per message; send less in one call (put a long input or script in a file in the workspace)",
		what, e.size, MaxLineBytes)})
}
