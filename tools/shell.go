package tools

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-harness/mcp-harness/pty"
)

// Limits on shell arguments that are not flags: far beyond what a sensible call needs, low
// enough that a runaway argument cannot make the server allocate without bound.
const (
	maxOutputBytes = 1 << 20 // maxBytes
	maxInputBytes  = 1 << 20 // input per call
	maxNameLen     = 200
	maxGraceMs     = 60_000
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
		"maxBytes":  integer("Cap on the returned text. Default 16384; the head and tail are kept with a marker saying how much was left out and how to re-read it.", 1, maxOutputBytes),
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
		"cols": integer("Terminal width in columns (1-1000). Give cols and rows together.", 1, 1000),
		"rows": integer("Terminal height in rows (1-1000). Give cols and rows together.", 1, 1000),
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

func (s *Server) shellTools() []server.ServerTool {
	return []server.ServerTool{
		{Tool: mcp.NewTool("shell_open",
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
		), Handler: s.shellOpen},
		{Tool: mcp.NewTool("shell_io",
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
		), Handler: s.shellIO},
		{Tool: mcp.NewTool("shell_close",
			mcp.WithDescription("End a terminal session: signal its whole process group (SIGHUP by default), SIGKILL what is left after graceMs, "+
				"and return the exit status and any output not yet read."),
			inputSchema(object(schema{
				"sessionId": str("Id returned by shell_open."),
				"signal":    enum("First signal sent to the process group. Default SIGHUP.", "SIGHUP", "SIGINT", "SIGTERM", "SIGKILL", "SIGQUIT", "SIGUSR1", "SIGUSR2"),
				"graceMs":   integer("Time to exit after the first signal before SIGKILL. Default 2000.", 0, maxGraceMs),
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
		), Handler: s.shellClose},
		{Tool: mcp.NewTool("shell_list",
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
		), Handler: s.shellList},
	}
}

// readOptions validates the reading arguments. clamped reports that --max-wait cut the
// requested timeout, so the result can say how to go on waiting.
func (s *Server) readOptions(a readArgs) (r pty.ReadOptions, clamped bool, err error) {
	if a.WaitFor != "" {
		if r.WaitFor, err = regexp.Compile(a.WaitFor); err != nil {
			return r, false, invalidf("waitFor is not a valid regular expression: %v", err)
		}
	}
	if r.Idle, err = millis("idleMs", a.IdleMs, 0, 0); err != nil {
		return r, false, err
	}
	if r.Timeout, err = millis("timeoutMs", a.TimeoutMs, pty.DefaultTimeout, 0); err != nil {
		return r, false, err
	}
	if a.TimeoutMs != nil && *a.TimeoutMs == 0 {
		r.Timeout = time.Millisecond // "what is there now": the engine reads zero as the default
	}
	r.Timeout, clamped = s.clampWait(r.Timeout)
	if a.MaxBytes != nil {
		if *a.MaxBytes < 1 || *a.MaxBytes > maxOutputBytes {
			return r, false, invalidf("maxBytes must be 1..%d, got %d", maxOutputBytes, *a.MaxBytes)
		}
		r.MaxBytes = int(*a.MaxBytes)
	}
	r.Raw = a.Raw
	return r, clamped, nil
}

// size validates an optional terminal size given as two optional arguments.
func size(cols, rows *int) (c, r int, given bool, err error) {
	switch {
	case cols == nil && rows == nil:
		return 0, 0, false, nil
	case cols == nil || rows == nil:
		return 0, 0, false, invalidf("give cols and rows together")
	case *cols < 1 || *cols > pty.MaxSize || *rows < 1 || *rows > pty.MaxSize:
		return 0, 0, false, invalidf("cols and rows must be 1..%d, got %dx%d", pty.MaxSize, *cols, *rows)
	}
	return *cols, *rows, true, nil
}

func (s *Server) shellOpen(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a openArgs
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("shell_open", err), nil
	}
	r, clamped, err := s.readOptions(a.readArgs)
	if err != nil {
		return s.toolError("shell_open", err), nil
	}
	cols, rows, _, err := size(a.Cols, a.Rows)
	if err != nil {
		return s.toolError("shell_open", err), nil
	}
	if strings.ContainsRune(a.Command, 0) {
		return s.toolError("shell_open", invalidf("command contains a NUL byte")), nil
	}
	if len(a.Name) > maxNameLen {
		return s.toolError("shell_open", invalidf("name is longer than %d bytes", maxNameLen)), nil
	}
	if err := checkEnv(a.Env); err != nil {
		return s.toolError("shell_open", err), nil
	}
	dir, err := s.ws.Confine(a.Cwd)
	if err != nil {
		return s.toolError("shell_open", err), nil
	}
	res, err := s.shells.Open(ctx, pty.OpenOptions{Command: a.Command, Dir: dir, Env: a.Env, Cols: cols, Rows: rows, Name: a.Name}, r)
	if err != nil {
		return s.toolError("shell_open", err), nil
	}
	return readToolResult("shell_open", res, clamped), nil
}

func (s *Server) shellIO(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a ioArgs
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("shell_io", err), nil
	}
	if a.SessionID == "" {
		return s.toolError("shell_io", invalidf("sessionId is required: use the id shell_open returned (shell_list shows them)")), nil
	}
	r, clamped, err := s.readOptions(a.readArgs)
	if err != nil {
		return s.toolError("shell_io", err), nil
	}
	if a.Since != nil && *a.Since < 0 {
		return s.toolError("shell_io", invalidf("since must be 0 or more, got %d", *a.Since)), nil
	}
	r.Since = a.Since
	cols, rows, resize, err := size(a.Cols, a.Rows)
	if err != nil {
		return s.toolError("shell_io", err), nil
	}
	keys, err := pty.ParseKeys(a.Keys)
	if err != nil {
		return s.toolError("shell_io", err), nil
	}
	input := append([]byte(a.Input), keys...)
	if len(input) > maxInputBytes {
		return s.toolError("shell_io", invalidf("input is %d bytes; send at most %d per call", len(input), maxInputBytes)), nil
	}
	if resize {
		if err := s.shells.Resize(a.SessionID, cols, rows); err != nil {
			return s.toolError("shell_io", err), nil
		}
	}
	start := time.Now()
	stop := s.reportProgress(ctx, req, func() string {
		what := "output to settle"
		if r.WaitFor != nil {
			what = "/" + r.WaitFor.String() + "/"
		}
		return fmt.Sprintf("%s: waiting for %s, %s so far", a.SessionID, what, time.Since(start).Round(time.Second))
	})
	res, err := s.shells.IO(ctx, a.SessionID, input, r)
	stop()
	if err != nil {
		return s.toolError("shell_io", err), nil
	}
	return readToolResult("shell_io", res, clamped), nil
}

var signalsByName = map[string]syscall.Signal{
	"SIGHUP": syscall.SIGHUP, "SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM, "SIGKILL": syscall.SIGKILL,
	"SIGQUIT": syscall.SIGQUIT, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2,
}

func (s *Server) shellClose(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a closeArgs
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("shell_close", err), nil
	}
	if a.SessionID == "" {
		return s.toolError("shell_close", invalidf("sessionId is required")), nil
	}
	sig := syscall.SIGHUP
	if a.Signal != "" {
		name := strings.ToUpper(a.Signal)
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		var ok bool
		if sig, ok = signalsByName[name]; !ok {
			return s.toolError("shell_close", invalidf("signal %q is not one of SIGHUP, SIGINT, SIGTERM, SIGKILL, SIGQUIT, SIGUSR1, SIGUSR2", a.Signal)), nil
		}
	}
	grace, err := millis("graceMs", a.GraceMs, 2*time.Second, maxGraceMs*time.Millisecond)
	if err != nil {
		return s.toolError("shell_close", err), nil
	}
	if a.GraceMs != nil && *a.GraceMs == 0 {
		grace = time.Millisecond // the engine reads zero as the default
	}
	res, err := s.shells.Close(ctx, a.SessionID, sig, grace)
	if err != nil {
		return s.toolError("shell_close", err), nil
	}
	out := closeResult{SessionID: res.SessionID, ExitCode: res.ExitCode, Signal: res.Signal, Output: res.Output}
	header := fmt.Sprintf("%s closed: %s", res.SessionID, exitStatus(true, res.ExitCode, res.Signal))
	if strings.TrimSpace(res.Output) != "" {
		header += "; unread output follows"
	}
	return mcp.NewToolResultStructured(out, header+"\n"+res.Output), nil
}

func (s *Server) shellList(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct{}
	if err := decodeArgs(req, &a); err != nil {
		return s.toolError("shell_list", err), nil
	}
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
}

// readToolResult shapes a read: a header line a model can scan, then the output verbatim.
func readToolResult(tool string, r pty.ReadResult, clamped bool) *mcp.CallToolResult {
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
