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

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/pty"
)

// readArgs are the arguments every reading shell call takes.
type readArgs struct {
	WaitFor   string `json:"waitFor,omitempty"`
	IdleMs    *int64 `json:"idleMs,omitempty"`
	TimeoutMs *int64 `json:"timeoutMs,omitempty"`
	MaxBytes  *int64 `json:"maxBytes,omitempty"`
	Raw       bool   `json:"raw,omitempty"`
	Screen    bool   `json:"screen,omitempty"`
}

type openArgs struct {
	Command string            `json:"command,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cols    *int              `json:"cols,omitempty"`
	Rows    *int              `json:"rows,omitempty"`
	Name    string            `json:"name,omitempty"`
	// Integration is on unless false is given.
	Integration *bool `json:"integration,omitempty"`
	readArgs
}

type ioArgs struct {
	SessionID string   `json:"sessionId"`
	Input     string   `json:"input,omitempty"`
	Keys      []string `json:"keys,omitempty"`
	Since     *int64   `json:"since,omitempty"`
	Cols      *int     `json:"cols,omitempty"`
	Rows      *int     `json:"rows,omitempty"`
	Run       string   `json:"run,omitempty"`
	Paste     bool     `json:"paste,omitempty"`
	End       *int64   `json:"end,omitempty"`
	WaitPort  int      `json:"waitPort,omitempty"`
	readArgs
}

type shellListArgs struct {
	SessionID string `json:"sessionId,omitempty"`
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
	// Command is the shell command the call ran or saw, WaitingForInput what the program
	// asks for (reason "input"); null when they do not apply.
	Command         *commandResult `json:"command"`
	WaitingForInput *inputWanted   `json:"waitingForInput"`
	// Screen is what the terminal shows, when asked for; null otherwise.
	Screen *screenResult `json:"screen"`
	// Integration is shell_open's alone: whether the shell's integration marks arrived.
	// shell_io's results do not have the field at all, rather than a null.
	Integration *bool `json:"integration,omitempty"`
}

// screenResult is the screen as shell_open and shell_io report it (pty.Screen).
type screenResult struct {
	Cols      int          `json:"cols"`
	Rows      int          `json:"rows"`
	Lines     []string     `json:"lines"`
	Cursor    screenCursor `json:"cursor"`
	AltScreen bool         `json:"altScreen"`
	Title     string       `json:"title"`
}

type screenCursor struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// commandResult is a shell command as shell_io reports it.
type commandResult struct {
	ID         int    `json:"id"`
	Text       string `json:"text"`
	ExitCode   *int   `json:"exitCode"`
	Cwd        string `json:"cwd"`
	StartedAt  string `json:"startedAt"`
	DurationMs int64  `json:"durationMs"`
	Done       bool   `json:"done"`
}

// historyEntry is a finished shell command as shell_list reports it, with the range of
// its output for shell_io's since and end.
type historyEntry struct {
	ID         int    `json:"id"`
	Text       string `json:"text"`
	ExitCode   *int   `json:"exitCode"`
	Cwd        string `json:"cwd"`
	StartedAt  string `json:"startedAt"`
	DurationMs int64  `json:"durationMs"`
	Since      int64  `json:"since"`
	Cursor     int64  `json:"cursor"`
}

type inputWanted struct {
	Kind   string `json:"kind"`
	Prompt string `json:"prompt"`
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
	Ports          []int   `json:"ports"`
	// Commands is null unless shell_list was asked about this one session.
	Commands []historyEntry `json:"commands"`
}

type listResult struct {
	Sessions []sessionInfo `json:"sessions"`
}

// Schemas shared by the shell tools.
var (
	readProps = schema{
		"waitFor":   str("Regex (RE2) that ends the wait; your input's echo counts, so anchor it: (?m)^42$."),
		"idleMs":    integer("Quiet time that ends the wait. Default 300; none with waitFor."),
		"timeoutMs": integer("Default 10000, at most --max-wait; 0: now."),
		"maxBytes":  integer("Default 16384.", 1),
		"raw":       boolean("Keep escape codes."),
		"screen":    boolean("Add the screen (TUIs)."),
	}
	readOutput = object(schema{
		"sessionId":    str("The session."),
		"pid":          integer("Process id of the session's program.", 0),
		"output":       str("What the program printed from `since` to `cursor`, cleaned unless raw."),
		"since":        integer("Byte offset in the session's output stream where `output` starts.", 0),
		"cursor":       integer("Byte offset where `output` ends; the next read starts here.", 0),
		"droppedBytes": integer("Bytes that fell out of the session's buffer before they could be returned.", 0),
		"omittedBytes": integer("Bytes of cleaned text left out in the middle because of maxBytes.", 0),
		"reason": enum("Why the call returned.", pty.ReasonMatched, pty.ReasonExited, pty.ReasonIdle, pty.ReasonTimeout,
			pty.ReasonPrompt, pty.ReasonInput, pty.ReasonPort),
		"exited":   boolean("The program has exited."),
		"exitCode": nullable(integer("Exit status, once it exited normally.", 0)),
		"signal":   nullable(str("Signal that killed the program, e.g. SIGKILL.")),
		"written":  integer("Bytes of input delivered by this call.", 0),
		"command": nullable(props(schema{"id": tInt, "text": tString, "exitCode": nullable(tInt), "cwd": tString,
			"startedAt": tString, "durationMs": tInt, "done": tBool})),
		"waitingForInput": nullable(props(schema{"kind": enum("", pty.InputPassword, pty.InputLine, pty.InputKeys), "prompt": tString})),
		"screen": nullable(props(schema{"cols": tInt, "rows": tInt, "lines": list(tString),
			"cursor": props(schema{"row": tInt, "col": tInt}), "altScreen": tBool, "title": tString})),
	}, "sessionId", "pid", "output", "since", "cursor", "droppedBytes", "omittedBytes", "reason", "exited", "exitCode", "signal", "written",
		"command", "waitingForInput", "screen")
	// openOutput is readOutput with shell_open's integration.
	openOutput = withProp(readOutput, "integration", tBool)
	sizeProps  = schema{
		"cols": integer("With rows.", 1, pty.MaxSize),
		"rows": integer("With cols.", 1, pty.MaxSize),
	}
)

// withProp is object schema o with one more property, always present.
func withProp(o schema, name string, p schema) schema {
	out := schema{}
	for k, v := range o {
		out[k] = v
	}
	ps := schema{name: p}
	for k, v := range o["properties"].(schema) {
		ps[k] = v
	}
	out["properties"] = ps
	if req, ok := o["required"].([]string); ok {
		out["required"] = append(req[:len(req):len(req)], name)
	}
	return out
}

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
func (s *Table) shellTools() []server.ServerTool {
	return []server.ServerTool{s.shellOpenTool(), s.shellIOTool(), s.shellCloseTool(), s.shellListTool()}
}

// shellOpenTool is shell_open: start a program under a new terminal and read its first output.
func (s *Table) shellOpenTool() server.ServerTool {
	tool := mcp.NewTool("shell_open",
		mcp.WithDescription("Start a program (default: a shell) in a terminal kept between calls, for shells, REPLs, dev servers, prompts and TUIs; "+
			"returns its first output and a sessionId. Size and wait arguments as in shell_io. For builds and tests use tasks_run."),
		inputSchema(object(merge(schema{
			"command":     str("Run with sh -c. Default: an interactive $SHELL."),
			"cwd":         str("Relative to the workspace root."),
			"env":         stringMap("Extra environment variables."),
			"name":        str("A label."),
			"integration": boolean("Default true; run needs it."),
		}, bare(sizeProps), bare(readProps)))),
		outputSchema(openOutput),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return bind(s, tool, func(ctx context.Context, _ mcp.CallToolRequest, a openArgs) (*mcp.CallToolResult, error) {
		r, clamped, err := s.readOptions(a.readArgs)
		if err != nil {
			return nil, err
		}
		// Held open until the program has started in it, so a path swapped after the check
		// cannot move the program out of the workspace (workspace.Dir).
		dir, err := s.ws.OpenDir(a.Cwd)
		if err != nil {
			return nil, err
		}
		o := pty.OpenOptions{Command: a.Command, Dir: dir.Path, EnterDir: dir.ExecPath(), Env: a.Env,
			Cols: orZero(a.Cols), Rows: orZero(a.Rows), Name: a.Name, NoIntegration: a.Integration != nil && !*a.Integration}
		res, err := s.shells.Open(ctx, o, r)
		dir.Close()
		if err != nil {
			return nil, err
		}
		return readToolResult(res, clamped, true), nil
	})
}

// shellIOTool is shell_io: resize, type, wait and read, in one engine call.
func (s *Table) shellIOTool() server.ServerTool {
	tool := mcp.NewTool("shell_io",
		mcp.WithDescription("Type into a terminal session and read its output until waitFor matches, output goes quiet, it exits or timeoutMs. "+
			"In a shell use run; on reason input, answer. Without input it waits for new output: do not poll."),
		inputSchema(object(merge(schema{
			"sessionId": str("From shell_open."),
			"input":     str("Typed as is; end a command with \\n."),
			"keys":      array("Sent after input: Enter, Tab, Escape, BSpace, Up, Down, C-c, C-d, M-x, F1...", schema{"type": "string"}),
			"since":     integer("Re-read from this offset (a past cursor)."),
			"end":       integer("With since: re-read to here."),
			"run":       str("Command line to run at the shell prompt; returns its output and exit code."),
			"paste":     boolean("Send input as one bracketed paste."),
			"waitPort":  integer("End the wait when this TCP port listens.", 1, 65535),
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
		r.Since, r.End, r.WaitPort = a.Since, a.End, a.WaitPort
		keys, err := pty.ParseKeys(a.Keys)
		if err != nil {
			return nil, err
		}
		in := pty.Input{Data: append([]byte(a.Input), keys...), Cols: orZero(a.Cols), Rows: orZero(a.Rows), Run: a.Run, Paste: a.Paste}
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
		res, err := s.shells.IO(ctx, a.SessionID, in, r)
		stop()
		if err != nil {
			return nil, err
		}
		return readToolResult(res, clamped, false), nil
	})
}

// shellCloseTool is shell_close: end a session and return what it left unread.
func (s *Table) shellCloseTool() server.ServerTool {
	tool := mcp.NewTool("shell_close",
		mcp.WithDescription("End a terminal session: signal its process group, SIGKILL what is left after graceMs; returns the exit status and unread output."),
		inputSchema(object(schema{
			"sessionId": str("From shell_open."),
			"signal":    enum("First signal. Default SIGHUP.", "SIGHUP", "SIGINT", "SIGTERM", "SIGKILL", "SIGQUIT", "SIGUSR1", "SIGUSR2"),
			"graceMs":   integer("Default 2000, at most 60000."),
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
		var cut clampNotes
		grace, err := cut.ms("graceMs", a.GraceMs, pty.DefaultGrace, pty.MaxGrace, ", the longest grace")
		if err != nil {
			return nil, err
		}
		res, err := s.shells.Close(ctx, a.SessionID, sig, grace)
		if err != nil {
			return nil, err
		}
		out := closeResult{SessionID: res.SessionID, ExitCode: res.ExitCode, Signal: res.Signal, Output: res.Output}
		header := fmt.Sprintf("%s closed: %s", res.SessionID, exitStatus(true, res.ExitCode, res.Signal))
		for _, note := range cut {
			header += " (" + strings.TrimSuffix(note, ".") + ")"
		}
		if strings.TrimSpace(res.Output) != "" {
			header += "; unread output follows"
		}
		return mcp.NewToolResultStructured(out, header+"\n"+res.Output), nil
	})
}

// shellListTool is shell_list: the sessions not yet closed.
func (s *Table) shellListTool() server.ServerTool {
	tool := mcp.NewTool("shell_list",
		mcp.WithDescription("This server's terminal sessions, oldest first, with their unread output and listening ports."),
		inputSchema(object(schema{
			"sessionId": str("Only this one, with its command history."),
		})),
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
				"ports":          list(tInt),
				"commands": nullable(list(props(schema{"id": tInt, "text": tString, "exitCode": nullable(tInt), "cwd": tString,
					"startedAt": tString, "durationMs": tInt, "since": tInt, "cursor": tInt}))),
			}, "sessionId", "name", "pid", "command", "cwd", "cols", "rows", "startedAt", "lastActivityAt", "exited", "exitCode", "signal", "unreadBytes",
				"ports", "commands")),
		}, "sessions")),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return bind(s, tool, func(_ context.Context, _ mcp.CallToolRequest, a shellListArgs) (*mcp.CallToolResult, error) {
		var infos []pty.Info
		if a.SessionID != "" {
			in, err := s.shells.Get(a.SessionID)
			if err != nil {
				return nil, err
			}
			infos = []pty.Info{in}
		} else {
			infos = s.shells.List()
		}
		out := listResult{Sessions: make([]sessionInfo, 0, len(infos))}
		var text strings.Builder
		fmt.Fprintf(&text, "%d session(s)\n", len(infos))
		for _, in := range infos {
			si := sessionInfo{
				SessionID: in.ID, Name: in.Name, Pid: in.Pid, Command: in.Command, Cwd: in.Dir,
				Cols: in.Cols, Rows: in.Rows, StartedAt: timestamp(in.StartedAt), LastActivityAt: timestamp(in.LastActivityAt),
				Exited: in.Exited, ExitCode: in.ExitCode, Signal: in.Signal, UnreadBytes: in.UnreadBytes,
				Ports: append([]int{}, in.Ports...),
			}
			label := in.Command
			if in.Name != "" {
				label = in.Name + ": " + in.Command
			}
			fmt.Fprintf(&text, "%s  pid %d  %s  %s unread  %s  (cwd %s)", in.ID, in.Pid,
				exitStatus(in.Exited, in.ExitCode, in.Signal), fmtBytes(in.UnreadBytes), label, in.Dir)
			if len(in.Ports) > 0 {
				fmt.Fprintf(&text, "  ports %s", strings.Trim(fmt.Sprint(in.Ports), "[]"))
			}
			text.WriteString("\n")
			if a.SessionID != "" {
				si.Commands = s.history(in.Commands, &text)
			}
			out.Sessions = append(out.Sessions, si)
		}
		return mcp.NewToolResultStructured(out, strings.TrimSuffix(text.String(), "\n")), nil
	})
}

// history shapes a session's commands for shell_list, newest last, and lists them in
// text. Command lines are cut to a few hundred bytes (the output range says the rest), and
// the oldest commands are left out if the list would not fit the result budget.
func (s *Table) history(cmds []pty.Command, text *strings.Builder) []historyEntry {
	out := make([]historyEntry, 0, len(cmds))
	for _, c := range cmds {
		out = append(out, historyEntry{ID: c.ID, Text: clipText(c.Text), ExitCode: c.ExitCode, Cwd: c.Cwd,
			StartedAt: timestamp(c.StartedAt), DurationMs: c.Duration.Milliseconds(), Since: c.Since, Cursor: c.Cursor})
	}
	room := s.maxResult() / 2 // the structured list and its text share the budget with the rest
	for len(out) > 0 && jsonsize.Of(out) > room {
		out = out[1:]
	}
	if left := len(cmds) - len(out); left > 0 {
		fmt.Fprintf(text, "  (%d older commands left out to fit the result)\n", left)
	}
	for _, c := range cmds[len(cmds)-len(out):] {
		fmt.Fprintf(text, "  %s  since=%d end=%d\n", commandStatus(c), c.Since, c.Cursor)
	}
	return out
}

// readOptions turns the reading arguments into the engine's options, which the engine
// checks. Only what pty cannot see is decided here: the pattern's syntax, the default
// timeout for an absent timeoutMs (zero reaches pty as zero, "return what is there now"),
// and --max-wait. clamped reports that --max-wait cut the requested timeout, so the result
// can say how to go on waiting.
func (s *Table) readOptions(a readArgs) (r pty.ReadOptions, clamped bool, err error) {
	if len(a.WaitFor) > maxWaitForBytes {
		return r, false, invalidf("waitFor is %d bytes, at most %d are accepted; match a shorter, distinctive part of the output", len(a.WaitFor), maxWaitForBytes)
	}
	if a.WaitFor != "" {
		if r.WaitFor, err = regexp.Compile(a.WaitFor); err != nil {
			return r, false, invalidf("waitFor is not a valid regular expression: %v", err)
		}
	}
	// Millisecond and byte arguments take any integer: beyond their maximum they are cut
	// to it (args.go). An idle wait longer than --max-wait could never end a call, so it
	// is cut silently; a cut timeout is said in the result (clamped); output beyond what a
	// result can carry (--max-result) is left out in the middle with a marker that says so.
	var cut clampNotes
	if r.Idle, err = cut.ms("idleMs", a.IdleMs, 0, s.cfg.MaxWait, ""); err != nil { // zero: the engine's default for the kind of wait
		return r, false, err
	}
	if r.Timeout, err = cut.ms("timeoutMs", a.TimeoutMs, pty.DefaultTimeout, s.cfg.MaxWait, ""); err != nil {
		return r, false, err
	}
	clamped = a.TimeoutMs != nil && *a.TimeoutMs > s.cfg.MaxWait.Milliseconds()
	most := int64(min(pty.MaxReadBytes, s.maxOutput()))
	mb, err := cut.bytes("maxBytes", a.MaxBytes, min(pty.DefaultMaxBytes, most), 1, most, "")
	if err != nil {
		return r, false, err
	}
	r.MaxBytes = int(mb)
	r.Raw = a.Raw
	r.Screen = a.Screen
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
// open adds shell_open's integration field.
func readToolResult(r pty.ReadResult, clamped, open bool) *mcp.CallToolResult {
	out := readResult{
		SessionID: r.SessionID, Pid: r.Pid, Output: r.Output, Since: r.Since, Cursor: r.Cursor,
		DroppedBytes: r.DroppedBytes, OmittedBytes: r.OmittedBytes, Reason: string(r.Reason),
		Exited: r.Exited, ExitCode: r.ExitCode, Signal: r.Signal, Written: r.Written,
	}
	if open {
		out.Integration = &r.Integration
	}
	parts := []string{fmt.Sprintf("%s (pid %d)", r.SessionID, r.Pid), string(r.Reason), exitStatus(r.Exited, r.ExitCode, r.Signal),
		fmt.Sprintf("bytes %d-%d", r.Since, r.Cursor)}
	if c := r.Command; c != nil {
		out.Command = &commandResult{ID: c.ID, Text: c.Text, ExitCode: c.ExitCode, Cwd: c.Cwd,
			StartedAt: timestamp(c.StartedAt), DurationMs: c.Duration.Milliseconds(), Done: c.Done}
		parts = append(parts, commandStatus(*c))
	}
	if w := r.WaitingForInput; w != nil {
		out.WaitingForInput = &inputWanted{Kind: string(w.Kind), Prompt: w.Prompt}
		parts = append(parts, fmt.Sprintf("waits for %s input at %q: answer with input (or keys C-c)", w.Kind, w.Prompt))
	}
	if r.Written > 0 {
		parts = append(parts, "wrote "+fmtBytes(int64(r.Written)))
	}
	if r.OmittedBytes > 0 {
		parts = append(parts, fmtBytes(r.OmittedBytes)+" omitted in the middle")
	}
	if r.DroppedBytes > 0 {
		parts = append(parts, fmtBytes(r.DroppedBytes)+" dropped (buffer overflow)")
	}
	if r.Command != nil && !r.Command.Done && r.Reason != pty.ReasonInput && !r.Exited {
		parts = append(parts, "call shell_io with no input to wait for the rest")
	} else if r.Reason == pty.ReasonTimeout && !r.Exited {
		if clamped {
			parts = append(parts, "wait cut to the server's --max-wait: call shell_io again with no input to keep waiting")
		} else {
			parts = append(parts, "call shell_io with no input to keep waiting")
		}
	}
	text := strings.Join(parts, " · ") + "\n" + r.Output
	if sc := r.Screen; sc != nil {
		out.Screen = &screenResult{Cols: sc.Cols, Rows: sc.Rows, Lines: sc.Lines,
			Cursor: screenCursor{Row: sc.CursorRow, Col: sc.CursorCol}, AltScreen: sc.AltScreen, Title: sc.Title}
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += screenText(*sc)
	}
	return mcp.NewToolResultStructured(out, text)
}

// screenText is the screen for the text of a result, after the output: a model reads the
// text, not always the structured result. Blank rows at the bottom are left out.
func screenText(sc pty.Screen) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- screen %dx%d, cursor row %d col %d", sc.Cols, sc.Rows, sc.CursorRow, sc.CursorCol)
	if sc.AltScreen {
		b.WriteString(", alternate screen")
	}
	if sc.Title != "" {
		fmt.Fprintf(&b, ", title %q", sc.Title)
	}
	b.WriteString(" ---\n")
	lines := sc.Lines
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// commandStatus says in words what became of a shell command.
func commandStatus(c pty.Command) string {
	d := c.Duration.Round(time.Millisecond)
	switch {
	case !c.Done:
		return fmt.Sprintf("command %d %q running for %s", c.ID, clipText(c.Text), d)
	case c.ExitCode != nil:
		return fmt.Sprintf("command %d %q exited %d in %s (cwd %s)", c.ID, clipText(c.Text), *c.ExitCode, d, c.Cwd)
	}
	return fmt.Sprintf("command %d %q ended in %s (cwd %s)", c.ID, clipText(c.Text), d, c.Cwd)
}

// clipText shortens a command line for a header or a list.
func clipText(s string) string {
	const most = 200
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + " [...]"
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
