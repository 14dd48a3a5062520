package pty

import (
	"time"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
)

// ReadResult is what Open and IO return: the output read and the session's state.
type ReadResult struct {
	SessionID string
	Pid       int
	// Output is the text of [Since, Cursor): cleaned (see Text in pty/clean) unless Raw,
	// and while a full-screen program shows the alternate screen its rows instead of the
	// stream that painted them (see the package doc).
	Output       string
	Since        int64   // absolute raw offset where the returned output starts
	Cursor       int64   // absolute raw offset where it ends (the new read cursor, except after a run: see IO)
	DroppedBytes int64   // bytes between the requested start and the oldest byte still buffered
	OmittedBytes int64   // bytes of the (cleaned) text left out by MaxBytes
	Reason       Reason  // why the wait ended: one of Reasons()
	Exited       bool    // the program has exited and its output has been drained
	ExitCode     *int    // nil while running or when killed by a signal
	Signal       *string // e.g. "SIGKILL" when killed by a signal, else nil
	Written      int     // bytes of input delivered by this call
	// Command is the shell command this call ran (Run), or else the newest one the call
	// saw running or finishing; nil without one.
	Command *Command
	// WaitingForInput says what the program asks for when Reason is "input".
	WaitingForInput *InputWanted
	// Integration is true once the session's shell has sent integration marks, and while
	// its prompts come with them (see health.go).
	Integration bool
	// Screen is what the terminal shows once the output up to Cursor is drawn, when
	// ReadOptions.Screen asked for it.
	Screen *Screen
	// Sandbox is the policy the session's program runs under.
	Sandbox sandbox.Policy
	// Viewers counts the people watching the session (Attach) when the call returned.
	Viewers int
	// PersonTyped says that a person wrote to the session (a viewer's keys, an answer)
	// since the previous IO on it returned; what they typed shows in the output as any
	// input does.
	PersonTyped bool
}

// InputWanted describes a program blocked reading the terminal.
type InputWanted struct {
	Kind   InputKind // InputPassword, InputLine or InputKeys
	Prompt string    // the last non-empty line the program printed since its command started, trimmed; "" if none
}

// InputKind is the kind of input a program waits for, told from the terminal's modes.
type InputKind string

// Kinds of input a program waits for, from the terminal's modes.
const (
	InputPassword InputKind = "password" // line mode without echo
	InputLine     InputKind = "line"     // line mode with echo
	InputKeys     InputKind = "keys"     // raw mode: each key as it is pressed
)

// InputKinds returns every InputKind, in the order they are documented, for the adapter's
// schema enums: a new kind added here reaches the schema without a second list.
func InputKinds() []InputKind { return []InputKind{InputPassword, InputLine, InputKeys} }

// Reason is why a wait ended, as reported in ReadResult.Reason.
type Reason string

// Reasons a wait ended, as reported in ReadResult.Reason.
const (
	ReasonMatched Reason = "matched"
	ReasonExited  Reason = "exited"
	ReasonIdle    Reason = "idle"
	ReasonTimeout Reason = "timeout"
	ReasonPrompt  Reason = "prompt" // an integrated shell is back at its prompt
	ReasonInput   Reason = "input"  // the program waits for input from the terminal
	ReasonPort    Reason = "port"   // a process of the session listens on WaitPort
)

// Reasons returns every Reason, in the order they are documented, for the adapter's
// schema enums: a new reason added here reaches the schema without a second list.
func Reasons() []Reason {
	return []Reason{ReasonMatched, ReasonExited, ReasonIdle, ReasonTimeout, ReasonPrompt, ReasonInput, ReasonPort}
}

// CloseResult is what Close returns: how the program ended and what it printed that was
// never read.
type CloseResult struct {
	SessionID string
	ExitCode  *int
	Signal    *string
	Output    string // the unread tail, cleaned, capped at DefaultMaxBytes (head and tail kept)
}

// Info describes a session for List.
type Info struct {
	ID, Name, Command, Dir    string
	Pid, Cols, Rows           int
	StartedAt, LastActivityAt time.Time
	Exited                    bool
	ExitCode                  *int
	Signal                    *string
	UnreadBytes               int64 // bytes after the read cursor still in the buffer
	Integration               bool  // as in ReadResult: run works
	Ports                     []int // TCP ports the session's processes listen on (Linux)
	Sandbox                   sandbox.Policy
	Commands                  []Command // the last commands, oldest first: only from Get
	Viewers                   int       // people watching (Attach)
	// PersonTyped says a person wrote to the session since the last IO on it returned;
	// a listing does not clear it (the next IO reports it).
	PersonTyped bool
	// State and Waiting say what the session does now: only Overview sets them (it asks
	// the kernel); List and Get leave them zero.
	State   SessionState
	Waiting *InputWanted
}

// SessionState is what a session does, as a person's listing shows it (Overview).
type SessionState string

// States of a session.
const (
	StateRunning SessionState = "running" // its program works, or waits for something other than the terminal
	StatePrompt  SessionState = "prompt"  // an integrated shell waits at its prompt
	StateInput   SessionState = "input"   // a program waits for input from the terminal (Waiting says what)
	StateExited  SessionState = "exited"  // its program has exited; the session is not closed yet
)

// SessionStates returns every SessionState, in the order they are documented.
func SessionStates() []SessionState {
	return []SessionState{StateRunning, StatePrompt, StateInput, StateExited}
}
