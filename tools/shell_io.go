package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/pty"
)

// shellIO is shell_io: resize, type, wait and read, in one engine call.
var shellIO = tool[ioArgs, readResult]{
	name: "shell_io",
	description: "Type into a terminal session and read its output until waitFor matches, it goes quiet, exits or timeoutMs. " +
		"In a shell use run; on reason input, answer. Without input it waits for output: do not poll.",
	annotations: destructive,
	waits:       alwaysWaits,
	handle: func(s *Table, ctx context.Context, req mcp.CallToolRequest, a ioArgs) (readResult, string, error) {
		if err := needSession(a.SessionID); err != nil {
			return readResult{}, "", err
		}
		r, clamped, err := s.readOptions(a.readArgs)
		if err != nil {
			return readResult{}, "", err
		}
		r.Since, r.End, r.WaitPort = a.Since, a.End, a.WaitPort
		in := pty.Input{Data: []byte(a.Input), Keys: a.Keys, Cols: orZero(a.Cols), Rows: orZero(a.Rows), Run: a.Run, Paste: a.Paste}
		start := time.Now()
		stop := protocol.ReportProgress(ctx, req, func() string {
			what := "output to settle"
			switch {
			case a.Run != "":
				what = "the prompt"
			case r.WaitFor != nil:
				what = "/" + r.WaitFor.String() + "/"
			case a.WaitPort != 0:
				what = fmt.Sprintf("port %d", a.WaitPort)
			}
			return fmt.Sprintf("%s: waiting for %s, %s so far", a.SessionID, what, time.Since(start).Round(time.Second))
		})
		res, err := s.sessions(ctx).IO(ctx, a.SessionID, in, r)
		stop()
		if err != nil {
			return readResult{}, "", err
		}
		out, text := s.shapeRead(res, clamped)
		return out, text + s.failureHint(res), nil
	},
}

// failureHint is the denial hint (denialHint) of a read whose command, or program,
// ended non-zero.
func (s *Table) failureHint(r pty.ReadResult) string {
	failed := r.Command != nil && r.Command.Done && r.Command.ExitCode != nil && *r.Command.ExitCode != 0 ||
		r.Exited && (r.ExitCode == nil || *r.ExitCode != 0)
	if !failed {
		return ""
	}
	cwd := ""
	if r.Command != nil {
		cwd = r.Command.Cwd
	}
	return s.denialHint(r.Sandbox, r.Output, cwd)
}

type ioArgs struct {
	SessionID string   `json:"sessionId" jsonschema:"From shell_open." toolschema:"required"`
	Input     string   `json:"input,omitempty" jsonschema:"Typed as is; end a command with \\n."`
	Keys      []string `json:"keys,omitempty" jsonschema:"After input: Enter, Tab, Escape, BSpace, Up, Down, C-c, C-d, M-x, F1..."`
	Since     *int64   `json:"since,omitempty" jsonschema:"Re-read from a past cursor."`
	End       *int64   `json:"end,omitempty" jsonschema:"With since: re-read to here."`
	Run       string   `json:"run,omitempty" jsonschema:"Run at the prompt; returns its output and exit code."`
	Paste     bool     `json:"paste,omitempty" jsonschema:"Input as one bracketed paste."`
	WaitPort  int      `json:"waitPort,omitempty" jsonschema:"End when this TCP port listens." toolschema:"minimum=1,maximum=65535"`
	termSize
	readArgs
}
