package operator

import (
	"time"

	"github.com/mcp-harness/mcp-harness/pty"
)

// The wire: JSON, one object a line, both ways. A connection does one thing, named by
// the Op of its first Request: hello, sessions, attach or answer. The server answers
// each with Replies; attach and answer then go on with the Requests below until the
// view or the answer ends.

// Ops of a connection's first Request, and of the Requests that follow in one.
const (
	OpHello    = "hello"    // who the server is: Reply.Server
	OpSessions = "sessions" // its sessions: Reply.Server and Reply.Sessions
	OpAttach   = "attach"   // watch a session: Reply.Attached, then Frames until End
	OpAnswer   = "answer"   // answer a session's question: Reply.Asking, then a line
	// Within an attach.
	OpInput  = "input"  // Data: what the person typed (refused while read-only)
	OpSize   = "size"   // Cols, Rows: the person's terminal changed size
	OpWrite  = "write"  // On: the person may type (true) or not
	OpDetach = "detach" // the person leaves: Reply.End, then the server closes
	// Within an answer.
	OpLine = "line" // Data: the line to write, without its Enter
)

// Request is a message from a client.
type Request struct {
	Op      string `json:"op"`
	Session string `json:"session,omitempty"` // attach, answer: the session id
	Cols    int    `json:"cols,omitempty"`    // attach, size: the person's terminal
	Rows    int    `json:"rows,omitempty"`
	Write   bool   `json:"write,omitempty"`  // attach: the person types from the start
	Resize  bool   `json:"resize,omitempty"` // attach: the person's size is the session's
	On      bool   `json:"on,omitempty"`     // write
	Data    []byte `json:"data,omitempty"`   // input, line (base64 in JSON)
}

// Reply is a message from the server; one of its fields is set.
type Reply struct {
	Server   *ServerInfo `json:"server,omitempty"`
	Sessions []Session   `json:"sessions,omitempty"`
	Attached *Session    `json:"attached,omitempty"`
	Frame    *Frame      `json:"frame,omitempty"`
	End      *End        `json:"end,omitempty"`
	Asking   *Waiting    `json:"asking,omitempty"`
	Answered bool        `json:"answered,omitempty"`
	Error    *Error      `json:"error,omitempty"`
}

// ServerInfo is a server on the workspace as operator commands show it.
type ServerInfo struct {
	// Number is the server's number on the workspace, which its session ids carry
	// (s<number>-<k>).
	Number    int    `json:"number"`
	Pid       int    `json:"pid"`
	RunnerID  string `json:"runnerId"`
	Version   string `json:"version"`
	Workspace string `json:"workspace"`
	StartedAt string `json:"startedAt"`
}

// Session is a terminal session as `mcp-harness sessions` shows it (and --json prints
// it): every field is always present, null where it does not apply; times are RFC 3339
// UTC with milliseconds.
type Session struct {
	Server         ServerInfo       `json:"server"`
	SessionID      string           `json:"sessionId"`
	Name           string           `json:"name"`
	Command        string           `json:"command"`
	Cwd            string           `json:"cwd"`
	Pid            int              `json:"pid"`
	Cols           int              `json:"cols"`
	Rows           int              `json:"rows"`
	State          pty.SessionState `json:"state"`
	Waiting        *Waiting         `json:"waiting"`
	Viewers        int              `json:"viewers"`
	StartedAt      string           `json:"startedAt"`
	LastActivityAt string           `json:"lastActivityAt"`
	ExitCode       *int             `json:"exitCode"`
	Signal         *string          `json:"signal"`
}

// Waiting is what a program waits for: its kind of input and the line that asks.
type Waiting struct {
	Kind   pty.InputKind `json:"kind"`
	Prompt string        `json:"prompt"`
	// Asker is the process that asks, in an answer's Asking reply only (a listing does not
	// look): the person sees who gets the line before they type it.
	Asker *Asker `json:"asker,omitempty"`
}

// Asker is the process that waits for an answer (pty.Asker).
type Asker struct {
	Pid  int      `json:"pid"`
	Exe  string   `json:"exe"`  // its executable; "" where the kernel does not show it
	Args []string `json:"args"` // its command line
	// Setuid: it runs with rights its user does not have (sudo, su, a setuid program).
	Setuid bool `json:"setuid"`
	// Relay: it passes what it reads on, to another program or machine (sudo, su, ssh,
	// docker exec, a terminal multiplexer).
	Relay bool `json:"relay"`
}

// Frame is a screen to paint (pty.Frame, which says what each field means). A view's
// first frame, and the first after a change of size, carries every row in Lines; the
// others carry only the rows that changed since the frame before, in Update (Apply
// makes the whole screen of them again).
type Frame struct {
	Cols         int         `json:"cols"`
	Rows         int         `json:"rows"`
	Lines        []string    `json:"lines,omitempty"`
	Update       []RowUpdate `json:"update,omitempty"`
	Top          int         `json:"top"`
	Left         int         `json:"left"`
	ScreenCols   int         `json:"screenCols"`
	ScreenRows   int         `json:"screenRows"`
	CursorRow    int         `json:"cursorRow"`
	CursorCol    int         `json:"cursorCol"`
	CursorHidden bool        `json:"cursorHidden"`
	AltScreen    bool        `json:"altScreen"`
	Title        string      `json:"title"`
	NoScreen     bool        `json:"noScreen"`
	Viewers      int         `json:"viewers"`
}

// RowUpdate is one row of a Frame that changed: its index and its new text.
type RowUpdate struct {
	Row  int    `json:"row"`
	Text string `json:"text"`
}

// Apply returns the whole screen of frame f, given the screen of the frame before it
// (nil for the first): f's Lines when it has them, else prev with f's updates laid over
// it. prev is not changed.
func (f *Frame) Apply(prev []string) []string {
	if f.Lines != nil || len(prev) != f.Rows {
		if len(f.Lines) == f.Rows {
			return f.Lines
		}
		lines := make([]string, f.Rows)
		copy(lines, f.Lines)
		return lines
	}
	lines := append([]string(nil), prev...)
	for _, u := range f.Update {
		if u.Row >= 0 && u.Row < len(lines) {
			lines[u.Row] = u.Text
		}
	}
	return lines
}

// End says why a view ended.
type End struct {
	Reason   string  `json:"reason"` // one of the End reasons below
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

// Reasons a view ends.
const (
	EndExited   = "exited"   // the session's program exited (or the session was closed)
	EndDetached = "detached" // the person detached
	EndShutdown = "shutdown" // the server is shutting down
)

// Error is a refusal: Code is one of the codes below, Message says what was wrong and
// what to do, for a person.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Error codes.
const (
	CodeRefused       = "REFUSED"        // the peer may not use the socket
	CodeInvalid       = "INVALID"        // a malformed request
	CodeNotFound      = "NOT_FOUND"      // no such session
	CodeExited        = "EXITED"         // the session's program has exited
	CodeNotAsking     = "NOT_ASKING"     // answer: the program does not wait for input
	CodeAnswerPending = "ANSWER_PENDING" // answer: another person's answer is pending
	CodeShuttingDown  = "SHUTTING_DOWN"  // the server is shutting down
	CodeInternal      = "INTERNAL"       // the server's fault; its log says more
)

// timestamp formats a time as every operator shape does: RFC 3339, milliseconds, UTC.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
