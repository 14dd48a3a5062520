package tools

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/pty"
)

// readArgs are the arguments every reading shell call takes.
type readArgs struct {
	WaitFor   string     `json:"waitFor,omitempty" jsonschema:"RE2 regex that ends the wait; your input's echo counts: anchor it, (?m)^42$."`
	IdleMs    *int64     `json:"idleMs,omitempty" jsonschema:"Quiet ms that end the wait; default 300, none with waitFor."`
	TimeoutMs *int64     `json:"timeoutMs,omitempty" jsonschema:"Default 10000, at most --max-wait; 0: now."`
	MaxBytes  *int64     `json:"maxBytes,omitempty" jsonschema:"Default 16384." toolschema:"minimum=1"`
	Raw       bool       `json:"raw,omitempty" jsonschema:"Keep escape codes."`
	Screen    screenMode `json:"screen,omitempty" jsonschema:"Add the screen (TUIs); styled: colour."`
}

// termSize is a terminal's size, as shell_open and shell_io take it; the maximum is
// pty.MaxSize (TestSchemas_Bounds).
type termSize struct {
	Cols *int `json:"cols,omitempty" jsonschema:"With rows." toolschema:"minimum=1,maximum=1000"`
	Rows *int `json:"rows,omitempty" jsonschema:"With cols." toolschema:"minimum=1,maximum=1000"`
}

// readResult is the structured result of shell_io, and of shell_open with its
// integration.
type readResult struct {
	SessionID    string     `json:"sessionId" jsonschema:"The session."`
	Pid          int        `json:"pid" jsonschema:"Process id of the session's program."`
	Output       string     `json:"output" jsonschema:"What the program printed from since to cursor, cleaned unless raw; on a full screen, its rows."`
	Since        int64      `json:"since" jsonschema:"Byte offset in the session's output stream where output starts."`
	Cursor       int64      `json:"cursor" jsonschema:"Byte offset where output ends; the next read starts here."`
	DroppedBytes int64      `json:"droppedBytes" jsonschema:"Bytes that fell out of the session's buffer before they could be returned."`
	OmittedBytes int64      `json:"omittedBytes" jsonschema:"Bytes of cleaned text left out in the middle because of maxBytes."`
	Reason       pty.Reason `json:"reason" jsonschema:"Why the call returned."`
	programEnd
	Written int `json:"written" jsonschema:"Bytes of input delivered by this call."`
	// Integration turns false when the shell shows a prompt without its marks (a prompt
	// hook removed, exec of another shell), and true again at a marked prompt.
	Integration bool `json:"integration" jsonschema:"The shell reports its prompts and exit codes: run works."`
	// Command is the shell command the call ran or saw, WaitingForInput what the program
	// asks for (reason "input"); null when they do not apply.
	Command         *commandResult `json:"command"`
	WaitingForInput *inputWanted   `json:"waitingForInput"`
	// Screen is what the terminal shows, when asked for; null otherwise.
	Screen *screenResult `json:"screen"`
	personFacts
}

// personFacts is what every result that reports a session says of the people at it
// (shell_io, shell_open, shell_list): who watches (mcp-harness attach), and whether
// someone typed into it since the agent's last shell_io or shell_open on it.
type personFacts struct {
	Viewers     int  `json:"viewers" jsonschema:"People watching it (mcp-harness attach)."`
	PersonTyped bool `json:"personTyped" jsonschema:"A person typed into it since your last call; see output."`
}

// screenResult is the screen as shell_open and shell_io report it (pty.Screen).
type screenResult struct {
	Cols      int          `json:"cols"`
	Rows      int          `json:"rows"`
	Lines     []string     `json:"lines"`
	Cursor    screenCursor `json:"cursor"`
	AltScreen bool         `json:"altScreen"`
	Title     string       `json:"title"`
	// Styles, for screen "styled" only, is each row's runs of colour beside its text;
	// null for a plain screen.
	Styles [][]styleRun `json:"styles" toolschema:"nullable"`
}

type screenCursor struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// commandResult is a shell command as shell_io reports it.
type commandResult struct {
	commandFacts
	Done bool `json:"done"`
}

// commandFacts is what every result says of a shell command: shell_io's command (which
// may still run) and shell_list's history (which has finished) add to it.
type commandFacts struct {
	ID         int    `json:"id"`
	Text       string `json:"text"`
	ExitCode   *int   `json:"exitCode"`
	Cwd        string `json:"cwd"`
	StartedAt  string `json:"startedAt"`
	DurationMs int64  `json:"durationMs"`
}

// factsOf is c as results report it, its command line given as text.
func factsOf(c pty.Command, text string) commandFacts {
	return commandFacts{ID: c.ID, Text: text, ExitCode: c.ExitCode, Cwd: c.Cwd,
		StartedAt: timestamp(c.StartedAt), DurationMs: c.Duration.Milliseconds()}
}

type inputWanted struct {
	Kind pty.InputKind `json:"kind"`
	// Prompt is what the waiting program printed last, null when it printed nothing
	// since its command started (a silent cat).
	Prompt *string `json:"prompt"`
}

// readOptions turns the reading arguments into the engine's options, which the engine
// checks. Only what pty cannot see is decided here: the pattern's syntax, the default
// timeout for an absent timeoutMs (zero reaches pty as zero, "return what is there now"),
// and --max-wait, which bounds the whole wait: the timeout, given or the default, and an
// idle wait. clamped reports that --max-wait cut one of them, so the result can say how
// to go on waiting.
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
	// to it (args.go). The timeout ends every wait, so no call waits past --max-wait: an
	// idle wait longer than that could never end a call, and the default timeout is cut
	// to it too. A timeout that ends a cut wait says so in the result (clamped); output
	// beyond what a result can carry (--max-result) is left out in the middle with a
	// marker that says so.
	var cut clampNotes
	if r.Idle, err = cut.ms("idleMs", a.IdleMs, 0, s.cfg.MaxWait, ""); err != nil { // zero: the engine's default for the kind of wait
		return r, false, err
	}
	if r.Timeout, err = cut.ms("timeoutMs", a.TimeoutMs, min(pty.DefaultTimeout, s.cfg.MaxWait), s.cfg.MaxWait, ""); err != nil {
		return r, false, err
	}
	longest := s.cfg.MaxWait.Milliseconds()
	clamped = a.TimeoutMs != nil && *a.TimeoutMs > longest ||
		a.TimeoutMs == nil && pty.DefaultTimeout > s.cfg.MaxWait ||
		a.IdleMs != nil && *a.IdleMs > longest
	most := int64(min(pty.MaxReadBytes, s.maxOutput()))
	mb, err := cut.bytes("maxBytes", a.MaxBytes, min(pty.DefaultMaxBytes, most), 1, most, "")
	if err != nil {
		return r, false, err
	}
	r.MaxBytes = int(mb)
	r.Raw = a.Raw
	r.Screen, r.Styled = a.Screen != screenNone, a.Screen == screenStyled
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

// programEnd is how a session's program ended, said the same way by every result that
// reports it (shell_open, shell_io, shell_list).
type programEnd struct {
	Exited   bool    `json:"exited" jsonschema:"The program has exited."`
	ExitCode *int    `json:"exitCode" jsonschema:"Exit status, once it exited normally."`
	Signal   *string `json:"signal" jsonschema:"Signal that killed the program, e.g. SIGKILL."`
}

// shapeRead shapes a read of shell_open or shell_io: the structured result, and its text,
// a header line a model can scan, then the output verbatim.
func (s *Table) shapeRead(r pty.ReadResult, clamped bool) (readResult, string) {
	out := readResult{
		SessionID: r.SessionID, Pid: r.Pid, Output: r.Output, Since: r.Since, Cursor: r.Cursor,
		DroppedBytes: r.DroppedBytes, OmittedBytes: r.OmittedBytes, Reason: r.Reason,
		programEnd: programEnd{r.Exited, r.ExitCode, r.Signal}, Written: r.Written, Integration: r.Integration,
		personFacts: personFacts{Viewers: r.Viewers, PersonTyped: r.PersonTyped},
	}
	parts := []string{fmt.Sprintf("%s (pid %d)", r.SessionID, r.Pid), string(r.Reason), exitStatus(r.Exited, r.ExitCode, r.Signal),
		fmt.Sprintf("bytes %d-%d", r.Since, r.Cursor)}
	if c := r.Command; c != nil {
		out.Command = &commandResult{commandFacts: factsOf(*c, c.Text), Done: c.Done}
		parts = append(parts, commandStatus(*c))
	}
	if r.Command != nil && !r.Integration {
		parts = append(parts, "integration lost: the shell shows prompts without marks; type commands as input")
	}
	if w := r.WaitingForInput; w != nil {
		out.WaitingForInput = &inputWanted{Kind: w.Kind}
		at := "with no prompt"
		if w.Prompt != "" {
			out.WaitingForInput.Prompt = &w.Prompt
			at = fmt.Sprintf("at %q", w.Prompt)
		}
		if w.Kind == pty.InputPassword {
			// The secret is the person's: it never passes through the model.
			parts = append(parts, fmt.Sprintf("waits for a password %s: do not type one; ask the person to run `%s` in a terminal, then read on without input",
				at, s.answerCommand(r.SessionID)))
		} else {
			parts = append(parts, fmt.Sprintf("waits for %s input %s: answer with input (or keys C-c)", w.Kind, at))
		}
	}
	if r.PersonTyped {
		parts = append(parts, "a person typed into it since your last call")
	}
	if r.Viewers > 0 {
		parts = append(parts, fmt.Sprintf("%d watching", r.Viewers))
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
	cut := ""
	if clamped && r.Reason == pty.ReasonTimeout {
		cut = "wait cut to the server's --max-wait: "
	}
	if r.Command != nil && !r.Command.Done && r.Reason != pty.ReasonInput && !r.Exited {
		parts = append(parts, cut+"call shell_io with no input to wait for the rest")
	} else if r.Reason == pty.ReasonTimeout && !r.Exited {
		if clamped {
			parts = append(parts, cut+"call shell_io again with no input to keep waiting")
		} else {
			parts = append(parts, "call shell_io with no input to keep waiting")
		}
	}
	text := strings.Join(parts, " · ") + "\n" + r.Output
	if sc := r.Screen; sc != nil {
		out.Screen = &screenResult{Cols: sc.Cols, Rows: sc.Rows, Lines: sc.Lines,
			Cursor: screenCursor{Row: sc.CursorRow, Col: sc.CursorCol}, AltScreen: sc.AltScreen, Title: sc.Title, Styles: stylesOf(sc.Styles)}
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += screenText(*sc)
	}
	return out, text
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
