package tools

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/pty"
)

// readArgs are the arguments every reading shell call takes.
type readArgs struct {
	WaitFor   string `json:"waitFor,omitempty"`
	IdleMs    *int64 `json:"idleMs,omitempty"`
	TimeoutMs *int64 `json:"timeoutMs,omitempty"`
	MaxBytes  *int64 `json:"maxBytes,omitempty"`
	Raw       bool   `json:"raw,omitempty"`
}

type openArgs struct {
	Command string            `json:"command,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cols    *int              `json:"cols,omitempty"`
	Rows    *int              `json:"rows,omitempty"`
	Name    string            `json:"name,omitempty"`
	readArgs
}

type ioArgs struct {
	SessionID string   `json:"sessionId"`
	Input     string   `json:"input,omitempty"`
	Keys      []string `json:"keys,omitempty"`
	Since     *int64   `json:"since,omitempty"`
	Cols      *int     `json:"cols,omitempty"`
	Rows      *int     `json:"rows,omitempty"`
	readArgs
}

type closeArgs struct {
	SessionID string `json:"sessionId"`
	Signal    string `json:"signal,omitempty"`
	GraceMs   *int64 `json:"graceMs,omitempty"`
}

// readResult is the structured result of shell_open and shell_io.
type readResult struct {
	SessionID    string  `json:"sessionId"`
	Pid          int     `json:"pid"`
	Output       string  `json:"output"`
	Since        int64   `json:"since"`
	Cursor       int64   `json:"cursor"`
	DroppedBytes int64   `json:"droppedBytes"`
	OmittedBytes int64   `json:"omittedBytes"`
	Reason       string  `json:"reason"`
	Exited       bool    `json:"exited"`
	ExitCode     *int    `json:"exitCode"`
	Signal       *string `json:"signal"`
	Written      int     `json:"written"`
}

type closeResult struct {
	SessionID string  `json:"sessionId"`
	ExitCode  *int    `json:"exitCode"`
	Signal    *string `json:"signal"`
	Output    string  `json:"output"`
}

type sessionInfo struct {
	SessionID      string  `json:"sessionId"`
	Name           string  `json:"name"`
	Pid            int     `json:"pid"`
	Command        string  `json:"command"`
	Cwd            string  `json:"cwd"`
	Cols           int     `json:"cols"`
	Rows           int     `json:"rows"`
	StartedAt      string  `json:"startedAt"`
	LastActivityAt string  `json:"lastActivityAt"`
	Exited         bool    `json:"exited"`
	ExitCode       *int    `json:"exitCode"`
	Signal         *string `json:"signal"`
	UnreadBytes    int64   `json:"unreadBytes"`
}

type listResult struct {
	Sessions []sessionInfo `json:"sessions"`
}

// Schemas shared by the shell tools.
var (
	readProps = schema{
		"waitFor": str("Regular expression (Go RE2 syntax) that ends the wait when it matches the cleaned output this call would return, " +
			"including unread output already buffered and the terminal's echo of your input: anchor it, e.g. (?m)^42$, when the echo could match. " +
			"With waitFor, a pause in the output does not end the wait unless idleMs is also given."),
		"idleMs":    integer("End the wait once output has been quiet this long after something arrived. Default 300 (none when waitFor is given).", 0),
		"timeoutMs": integer("Longest wait in milliseconds. Default 10000; clamped to the server's --max-wait (30s by default). 0 returns what is there now (input still gets up to a second to be written).", 0),
		"maxBytes":  integer("Cap on the returned text. Default 16384; the head and tail are kept with a marker saying how much was left out and how to re-read it.", 1, pty.MaxReadBytes),
		"raw":       boolean("Return bytes as the terminal sent them (escape codes, \\r\\n) instead of cleaned text. Default false."),
	}
	readOutput = object(schema{
		"sessionId":    str("The session."),
		"pid":          integer("Process id of the session's program.", 0),
		"output":       str("What the program printed from `since` to `cursor`, cleaned unless raw."),
		"since":        integer("Byte offset in the session's output stream where `output` starts.", 0),
		"cursor":       integer("Byte offset where `output` ends; the next read starts here.", 0),
		"droppedBytes": integer("Bytes that fell out of the session's buffer before they could be returned.", 0),
		"omittedBytes": integer("Bytes of cleaned text left out in the middle because of maxBytes.", 0),
		"reason":       enum("Why the call returned.", pty.ReasonMatched, pty.ReasonExited, pty.ReasonIdle, pty.ReasonTimeout),
		"exited":       boolean("The program has exited."),
		"exitCode":     nullable(integer("Exit status, once it exited normally.", 0)),
		"signal":       nullable(str("Signal that killed the program, e.g. SIGKILL.")),
		"written":      integer("Bytes of input delivered by this call.", 0),
	}, "sessionId", "pid", "output", "since", "cursor", "droppedBytes", "omittedBytes", "reason", "exited", "exitCode", "signal", "written")
	sizeProps = schema{
		"cols": integer("Terminal width in columns (1-1000). Give cols and rows together.", 1, pty.MaxSize),
		"rows": integer("Terminal height in rows (1-1000). Give cols and rows together.", 1, pty.MaxSize),
	}
)

func merge(maps ...schema) schema {
	out := schema{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// shellTools lists the shell tools' constructors; registry.go lists the areas.
func (s *Server) shellTools() []server.ServerTool {
	return []server.ServerTool{s.shellOpenTool(), s.shellIOTool(), s.shellCloseTool(), s.shellListTool()}
}

// shellOpenTool is shell_open: start a program under a new terminal and read its first output.
func (s *Server) shellOpenTool() server.ServerTool {
	tool := mcp.NewTool("shell_open",
		mcp.WithDescription("Start a program under a new pseudo-terminal that persists between calls: an interactive shell (the default), "+
			"a REPL, an installer that asks questions, a dev server, a TUI. Waits for its first output like shell_io and returns "+
			"the sessionId to use with shell_io and shell_close. Use tasks_run instead for builds and tests that need no interaction."),
		inputSchema(object(merge(schema{
			"command": str("Command line run via /bin/sh -c. Default: your $SHELL as an interactive shell."),
			"cwd":     str("Working directory, relative to the workspace root (or absolute inside it). Default: the root."),
			"env":     stringMap("Environment variables added to the server's; they also override the defaults TERM=xterm-256color, PAGER=cat, GIT_PAGER=cat."),
			"name":    str("A label shown by shell_list."),
		}, sizeProps, readProps))),
		outputSchema(readOutput),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return bind(s, tool, func(ctx context.Context, _ mcp.CallToolRequest, a openArgs) (*mcp.CallToolResult, error) {
		r, clamped, err := s.readOptions(a.readArgs)
		if err != nil {
			return nil, err
		}
		dir, err := s.ws.Confine(a.Cwd)
		if err != nil {
			return nil, err
		}
		o := pty.OpenOptions{Command: a.Command, Dir: dir, Env: a.Env, Cols: orZero(a.Cols), Rows: orZero(a.Rows), Name: a.Name}
		res, err := s.shells.Open(ctx, o, r)
		if err != nil {
			return nil, err
		}
		return readToolResult(res, clamped), nil
	})
}

// shellIOTool is shell_io: resize, type, wait and read, in one engine call.
func (s *Server) shellIOTool() server.ServerTool {
	tool := mcp.NewTool("shell_io",
		mcp.WithDescription("Type into a terminal session and read what it prints, waiting until waitFor matches, the output goes quiet, "+
			"the program exits, or the timeout. With no input it is a read that waits for new output: never poll in a loop. "+
			"Output is addressed by byte offsets: each call returns from the session's read cursor (or `since`) to the end."),
		inputSchema(object(merge(schema{
			"sessionId": str("Id returned by shell_open."),
			"input":     str("Text written verbatim, e.g. \"ls -la\\n\" (end a command line with \\n, or send the Enter key)."),
			"keys": array("Named keys sent after input, tmux-style: Enter, Tab, BSpace, Escape, Space, Up, Down, Left, Right, Home, End, "+
				"PageUp, PageDown, Insert, Delete, F1..F12, C-a..C-z (C-c interrupts, C-d ends input), M-x (Alt+x).", schema{"type": "string"}),
			"since": integer("Re-read from this byte offset (e.g. an earlier cursor) instead of the read cursor.", 0),
		}, sizeProps, readProps), "sessionId")),
		outputSchema(readOutput),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return bind(s, tool, func(ctx context.Context, req mcp.CallToolRequest, a ioArgs) (*mcp.CallToolResult, error) {
		if err := needSession(a.SessionID); err != nil {
			return nil, err
		}
		r, clamped, err := s.readOptions(a.readArgs)
		if err != nil {
			return nil, err
		}
		r.Since = a.Since
		keys, err := pty.ParseKeys(a.Keys)
		if err != nil {
			return nil, err
		}
		in := pty.Input{Data: append([]byte(a.Input), keys...), Cols: orZero(a.Cols), Rows: orZero(a.Rows)}
		start := time.Now()
		stop := s.reportProgress(ctx, req, func() string {
			what := "output to settle"
			if r.WaitFor != nil {
				what = "/" + r.WaitFor.String() + "/"
			}
			return fmt.Sprintf("%s: waiting for %s, %s so far", a.SessionID, what, time.Since(start).Round(time.Second))
		})
		res, err := s.shells.IO(ctx, a.SessionID, in, r)
		stop()
		if err != nil {
			return nil, err
		}
		return readToolResult(res, clamped), nil
	})
}

// shellCloseTool is shell_close: end a session and return what it left unread.
func (s *Server) shellCloseTool() server.ServerTool {
	tool := mcp.NewTool("shell_close",
		mcp.WithDescription("End a terminal session: signal its whole process group (SIGHUP by default), SIGKILL what is left after graceMs, "+
			"and return the exit status and any output not yet read."),
		inputSchema(object(schema{
			"sessionId": str("Id returned by shell_open."),
			"signal":    enum("First signal sent to the process group. Default SIGHUP.", "SIGHUP", "SIGINT", "SIGTERM", "SIGKILL", "SIGQUIT", "SIGUSR1", "SIGUSR2"),
			"graceMs":   integer("Time to exit after the first signal before SIGKILL. Default 2000.", 0, pty.MaxGrace.Milliseconds()),
		}, "sessionId")),
		outputSchema(object(schema{
			"sessionId": str("The session."),
			"exitCode":  nullable(integer("Exit status, if it exited normally.", 0)),
			"signal":    nullable(str("Signal that ended it, if any.")),
			"output":    str("Output not read before the close, cleaned, head and tail kept."),
		}, "sessionId", "exitCode", "signal", "output")),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return bind(s, tool, func(ctx context.Context, _ mcp.CallToolRequest, a closeArgs) (*mcp.CallToolResult, error) {
		if err := needSession(a.SessionID); err != nil {
			return nil, err
		}
		sig := syscall.SIGHUP
		if a.Signal != "" {
			var err error
			if sig, err = pty.ParseSignal(a.Signal); err != nil {
				return nil, err
			}
		}
		// graceMs 0 reaches the engine as zero: SIGKILL right after the first signal.
		res, err := s.shells.Close(ctx, a.SessionID, sig, msOr(a.GraceMs, pty.DefaultGrace))
		if err != nil {
			return nil, err
		}
		out := closeResult{SessionID: res.SessionID, ExitCode: res.ExitCode, Signal: res.Signal, Output: res.Output}
		header := fmt.Sprintf("%s closed: %s", res.SessionID, exitStatus(true, res.ExitCode, res.Signal))
		if strings.TrimSpace(res.Output) != "" {
			header += "; unread output follows"
		}
		return mcp.NewToolResultStructured(out, header+"\n"+res.Output), nil
	})
}

// shellListTool is shell_list: the sessions not yet closed.
func (s *Server) shellListTool() server.ServerTool {
	tool := mcp.NewTool("shell_list",
		mcp.WithDescription("List this server's terminal sessions, live and exited-but-not-closed, oldest first, with how many output bytes are unread."),
		inputSchema(object(schema{})),
		outputSchema(object(schema{
			"sessions": array("The sessions.", object(schema{
				"sessionId":      str("Id for shell_io and shell_close."),
				"name":           str("Label given at shell_open."),
				"pid":            integer("Process id.", 0),
				"command":        str("What runs."),
				"cwd":            str("Absolute working directory."),
				"cols":           integer("Terminal width.", 1),
				"rows":           integer("Terminal height.", 1),
				"startedAt":      str("RFC 3339 time it started."),
				"lastActivityAt": str("RFC 3339 time of its last output or input."),
				"exited":         boolean("The program has exited."),
				"exitCode":       nullable(integer("Exit status, if it exited normally.", 0)),
				"signal":         nullable(str("Signal that killed it, if any.")),
				"unreadBytes":    integer("Output bytes after the read cursor.", 0),
			}, "sessionId", "name", "pid", "command", "cwd", "cols", "rows", "startedAt", "lastActivityAt", "exited", "exitCode", "signal", "unreadBytes")),
		}, "sessions")),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return bind(s, tool, func(context.Context, mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
		infos := s.shells.List()
		out := listResult{Sessions: make([]sessionInfo, 0, len(infos))}
		var text strings.Builder
		fmt.Fprintf(&text, "%d session(s)\n", len(infos))
		for _, in := range infos {
			out.Sessions = append(out.Sessions, sessionInfo{
				SessionID: in.ID, Name: in.Name, Pid: in.Pid, Command: in.Command, Cwd: in.Dir,
				Cols: in.Cols, Rows: in.Rows, StartedAt: timestamp(in.StartedAt), LastActivityAt: timestamp(in.LastActivityAt),
				Exited: in.Exited, ExitCode: in.ExitCode, Signal: in.Signal, UnreadBytes: in.UnreadBytes,
			})
			label := in.Command
			if in.Name != "" {
				label = in.Name + ": " + in.Command
			}
			fmt.Fprintf(&text, "%s  pid %d  %s  %s unread  %s  (cwd %s)\n", in.ID, in.Pid,
				exitStatus(in.Exited, in.ExitCode, in.Signal), fmtBytes(in.UnreadBytes), label, in.Dir)
		}
		return mcp.NewToolResultStructured(out, strings.TrimSuffix(text.String(), "\n")), nil
	})
}

// readOptions turns the reading arguments into the engine's options, which the engine
// checks. Only what pty cannot see is decided here: the pattern's syntax, the default
// timeout for an absent timeoutMs (zero reaches pty as zero, "return what is there now"),
// and --max-wait. clamped reports that --max-wait cut the requested timeout, so the result
// can say how to go on waiting.
func (s *Server) readOptions(a readArgs) (r pty.ReadOptions, clamped bool, err error) {
	if a.WaitFor != "" {
		if r.WaitFor, err = regexp.Compile(a.WaitFor); err != nil {
			return r, false, invalidf("waitFor is not a valid regular expression: %v", err)
		}
	}
	r.Idle = msOr(a.IdleMs, 0) // zero, given or not: the engine's default for the kind of wait
	r.Timeout, clamped = s.clampWait(msOr(a.TimeoutMs, pty.DefaultTimeout))
	if a.MaxBytes != nil {
		r.MaxBytes = int(max(min(*a.MaxBytes, math.MaxInt), math.MinInt))
	}
	r.Raw = a.Raw
	return r, clamped, nil
}

// needSession refuses a call without a session id, saying where ids come from.
func needSession(id string) error {
	if id == "" {
		return invalidf("sessionId is required: use the id shell_open returned (shell_list shows them)")
	}
	return nil
}

// orZero is an optional number as the engine takes it: zero when absent.
func orZero(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

// readToolResult shapes a read: a header line a model can scan, then the output verbatim.
func readToolResult(r pty.ReadResult, clamped bool) *mcp.CallToolResult {
	out := readResult{
		SessionID: r.SessionID, Pid: r.Pid, Output: r.Output, Since: r.Since, Cursor: r.Cursor,
		DroppedBytes: r.DroppedBytes, OmittedBytes: r.OmittedBytes, Reason: r.Reason,
		Exited: r.Exited, ExitCode: r.ExitCode, Signal: r.Signal, Written: r.Written,
	}
	parts := []string{fmt.Sprintf("%s (pid %d)", r.SessionID, r.Pid), r.Reason, exitStatus(r.Exited, r.ExitCode, r.Signal),
		fmt.Sprintf("bytes %d-%d", r.Since, r.Cursor)}
	if r.Written > 0 {
		parts = append(parts, "wrote "+fmtBytes(int64(r.Written)))
	}
	if r.OmittedBytes > 0 {
		parts = append(parts, fmtBytes(r.OmittedBytes)+" omitted in the middle")
	}
	if r.DroppedBytes > 0 {
		parts = append(parts, fmtBytes(r.DroppedBytes)+" dropped (buffer overflow)")
	}
	if r.Reason == pty.ReasonTimeout && !r.Exited {
		if clamped {
			parts = append(parts, "wait cut to the server's --max-wait: call shell_io again with no input to keep waiting")
		} else {
			parts = append(parts, "call shell_io with no input to keep waiting")
		}
	}
	return mcp.NewToolResultStructured(out, strings.Join(parts, " · ")+"\n"+r.Output)
}

// exitStatus says in words whether a program runs or how it ended.
func exitStatus(exited bool, code *int, sig *string) string {
	switch {
	case !exited:
		return "running"
	case sig != nil:
		return "killed by " + *sig
	case code != nil:
		return fmt.Sprintf("exited %d", *code)
	}
	return "exited"
}

// timestamp formats a time the way every result does: RFC 3339, milliseconds, UTC.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
