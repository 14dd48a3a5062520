package tools

import (
	"context"
	"fmt"
	"strings"
	"syscall"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/pty"
)

// shellClose is shell_close: end a session and return what it left unread.
var shellClose = tool[closeArgs, closeResult]{
	name:        "shell_close",
	description: "End a terminal session: signal its process group, SIGKILL the rest after graceMs; returns the exit status and unread output.",
	annotations: destructive,
	waits:       alwaysWaits,
	handle: func(s *Table, ctx context.Context, _ mcp.CallToolRequest, a closeArgs) (closeResult, string, error) {
		if err := needSession(a.SessionID); err != nil {
			return closeResult{}, "", err
		}
		sig := syscall.SIGHUP
		if a.Signal != "" {
			var err error
			if sig, err = pty.ParseSignal(string(a.Signal)); err != nil {
				return closeResult{}, "", err
			}
		}
		// graceMs 0 reaches the engine as zero: SIGKILL right after the first signal.
		var cut clampNotes
		// The grace is waited out inside the call, so it is bounded by --max-wait like
		// every other wait: a program that ignores the signal is killed at the bound.
		maxGrace, why := pty.MaxGrace, ", the longest grace"
		if s.cfg.MaxWait < maxGrace {
			maxGrace, why = s.cfg.MaxWait, " (the server's --max-wait)"
		}
		grace, err := cut.ms("graceMs", a.GraceMs, min(pty.DefaultGrace, maxGrace), maxGrace, why)
		if err != nil {
			return closeResult{}, "", err
		}
		res, err := s.sessions(ctx).Close(ctx, a.SessionID, sig, grace)
		if err != nil {
			return closeResult{}, "", err
		}
		out := closeResult{SessionID: res.SessionID, ExitCode: res.ExitCode, Signal: res.Signal, Output: res.Output}
		header := fmt.Sprintf("%s closed: %s", res.SessionID, exitStatus(true, res.ExitCode, res.Signal))
		for _, note := range cut {
			header += " (" + strings.TrimSuffix(note, ".") + ")"
		}
		if strings.TrimSpace(res.Output) != "" {
			header += "; unread output follows"
		}
		return out, header + "\n" + res.Output, nil
	},
}

type closeArgs struct {
	SessionID string     `json:"sessionId" jsonschema:"From shell_open." toolschema:"required"`
	Signal    signalName `json:"signal,omitempty" jsonschema:"First signal. Default SIGHUP."`
	GraceMs   *int64     `json:"graceMs,omitempty" jsonschema:"Default 2000, at most 60000 and --max-wait."`
}

type closeResult struct {
	SessionID string  `json:"sessionId" jsonschema:"The session."`
	ExitCode  *int    `json:"exitCode" jsonschema:"Exit status, if it exited normally."`
	Signal    *string `json:"signal" jsonschema:"Signal that ended it, if any."`
	Output    string  `json:"output" jsonschema:"Output not read before the close, cleaned, head and tail kept."`
}
