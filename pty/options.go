package pty

import (
	"context"
	"log/slog"
	"os"
	"regexp"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
)

// Defaults. Those of Config, OpenOptions and ReadOptions apply where a field is zero and
// zero could not be meant literally (see ReadOptions); DefaultTimeout and DefaultGrace are
// what a caller passes for the usual wait and the usual close, since there zero means
// "now". They are exported so the MCP adapter can apply and quote them.
const (
	DefaultMaxSessions = 32
	DefaultBufferSize  = 4 << 20
	DefaultGrace       = 2 * time.Second
	DefaultCols        = 120
	DefaultRows        = 40
	DefaultIdle        = 300 * time.Millisecond
	DefaultTimeout     = 10 * time.Second
	DefaultMaxBytes    = 16384
)

// Limits on arguments: far beyond what a sensible call needs, low enough that a runaway
// argument cannot make the server allocate or wait without bound. They are exported for
// the MCP adapter's schemas.
const (
	// MaxSize is the largest terminal width or height accepted.
	MaxSize = 1000
	// MaxNameLen is the longest session name accepted, in bytes.
	MaxNameLen = 200
	// MaxCommandBytes is the longest command accepted, in bytes: the command is one
	// argument of sh -c, and Linux refuses an argument of 128 KiB or more
	// (MAX_ARG_STRLEN counts its terminating NUL).
	MaxCommandBytes = 128<<10 - 1
	// MaxEnvVars is the most environment variables one Open may set.
	MaxEnvVars = 100
	// MaxEnvValueBytes is the longest value of one environment variable, in bytes.
	MaxEnvValueBytes = 32 << 10
	// MaxEnvBytes bounds the names and values of all the variables one Open sets: the
	// environment and the command line share the kernel's limit on what a program is
	// started with.
	MaxEnvBytes = 128 << 10
	// MaxInputBytes is the most input one IO call may write.
	MaxInputBytes = 1 << 20
	// MaxReadBytes is the largest ReadOptions.MaxBytes accepted.
	MaxReadBytes = 1 << 20
	// MaxGrace is the longest grace Close accepts.
	MaxGrace = time.Minute
)

// Config configures a Manager.
type Config struct {
	MaxSessions int           // default DefaultMaxSessions when 0
	BufferSize  int           // ring buffer bytes per session; default DefaultBufferSize when 0
	Grace       time.Duration // Shutdown's grace between SIGHUP and SIGKILL; default DefaultGrace when 0
	Recorder    Recorder      // optional; nil means no persistence
	Logger      *slog.Logger  // optional; default slog.Default()
	// NoEmulator runs sessions without their terminal side (screen.go): no answers to
	// terminal queries, no screens. Benchmarks measure what the emulator costs with it.
	NoEmulator bool
	// Sandbox starts every program under its session's policy (OpenOptions.Sandbox); nil
	// starts them unconfined.
	Sandbox *sandbox.Launcher
	// Env is the environment programs inherit, before the session defaults and
	// OpenOptions.Env; nil is this process's own (os.Environ). The server passes its
	// environment less what the env policy withholds (internal/envpolicy).
	Env []string
	// ScriptsDir is where the shell integration scripts are kept (integration.go); "" is
	// the temp directory. The server gives its state directory, which a confined command
	// cannot write: a script there cannot be changed by one session to run code in the
	// next, which may be confined less.
	ScriptsDir string
	// SessionID names the seq'th session (seq 1, 2, ... in creation order); nil names
	// them "s1", "s2", .... A server sharing its workspace gives ServerSessionIDs (ids.go).
	SessionID func(seq int) string
}

// Recorder persists session identities so a later process can kill what a crashed one
// left. It is implemented elsewhere (the SQLite store); its errors are logged and never
// fail the session, because a session works fine without its record.
type Recorder interface {
	SessionOpened(ctx context.Context, r Record) error
	SessionClosed(ctx context.Context, id string) error
}

// Record identifies a session's process for the Recorder. Pgid is the process group (and
// session) the program leads, which is what a later process must signal.
type Record struct {
	ID, Name, Command, Dir string
	Pid, Pgid              int
	StartedAt              time.Time
}

// OpenOptions says what to run under a new terminal.
type OpenOptions struct {
	// Command runs via /bin/sh -c. Empty starts $SHELL (fallback /bin/bash, then /bin/sh)
	// as an interactive shell (-i).
	Command string
	// Dir is the absolute working directory, already validated by the caller; "" is the
	// server's current directory.
	Dir string
	// EnterDir, when not empty, is the path the program changes into in place of Dir,
	// which still names the directory in List and records: the caller gives
	// /proc/self/fd/N of Dir held open (workspace.Dir.ExecPath), so that a path swapped after
	// the caller checked it cannot move the program elsewhere. It must stay valid until
	// Open returns.
	EnterDir string
	// Env is added to the inherited environment, overriding it and the session defaults
	// (TERM=xterm-256color, PAGER=cat, GIT_PAGER=cat). Names are non-empty without '=' or
	// NUL, values without NUL: nothing else can be passed to a program. At most
	// MaxEnvVars variables, each value at most MaxEnvValueBytes, all of it at most
	// MaxEnvBytes.
	Env map[string]string
	// Cols and Rows give the terminal size, both or neither: each 1..MaxSize, or both
	// zero for DefaultCols x DefaultRows.
	Cols, Rows int
	// Name is a label for List, at most MaxNameLen bytes.
	Name string
	// NoIntegration starts an interactive shell without shell integration (see
	// integration.go); by default bash, zsh, fish and sh/dash are started with it.
	NoIntegration bool
	// DirFile is the directory Dir held open (workspace.Dir), which a confined program
	// starts in only if its own view of Dir is that very directory (sandbox.Where).
	DirFile *os.File
	// Sandbox is the policy the program runs under (Config.Sandbox); nil is the
	// launcher's own.
	Sandbox *sandbox.Policy
}

// sessionDefaults are set whatever the server inherited, because a pager waiting for "q"
// or a dumb TERM is how an agent gets stuck; only OpenOptions.Env overrides them.
var sessionDefaults = map[string]string{
	"TERM":      "xterm-256color",
	"PAGER":     "cat",
	"GIT_PAGER": "cat",
}

// historyVars point a shell's history at the session's own file in the temp directory
// (HISTFILE, read by bash and zsh), or keep fish's out of its file (an empty
// fish_history: fish then keeps history in memory only, as it can name no other file):
// the agent's commands do not fill the person's history, and a confined shell is not
// refused the write to a history file in the home directory. OpenOptions.Env overrides
// them.
func historyVars(file string) map[string]string {
	return map[string]string{"HISTFILE": file, "fish_history": ""}
}

// ReadOptions says how long to wait for output and how to return it.
//
// Zero means zero where zero is a request a caller can mean: a zero Timeout returns what
// is there now (pass DefaultTimeout for the usual wait). Where zero could not be meant
// literally, a zero field selects the default instead: an Idle of zero would end every
// wait at the first byte, a MaxBytes of zero would return nothing.
type ReadOptions struct {
	// Since is an absolute raw byte offset to re-read from; nil reads from the session's
	// read cursor.
	Since *int64
	// WaitFor ends the wait when it matches the cleaned text the call would return (from
	// Since or the read cursor to the end, so unread buffered output and the tty's echo of
	// the input count). nil waits for output to settle instead.
	WaitFor *regexp.Regexp
	// Idle ends the wait once output has been quiet this long after something new arrived.
	// Zero means DefaultIdle without WaitFor, and no idle ending with WaitFor (the caller
	// asked for a pattern, so a pause in the output is not an answer); set it to have both.
	Idle time.Duration
	// Timeout bounds the whole call, the write included. Zero means no wait: the call
	// returns what is there now, though input is still given up to a second to be written
	// (see IO). The caller clamps it.
	Timeout time.Duration
	// MaxBytes caps the returned (cleaned or raw) text: 1..MaxReadBytes, or zero for
	// DefaultMaxBytes.
	MaxBytes int
	// Raw returns the bytes as the terminal sent them instead of cleaned text.
	Raw bool
	// End, with Since, re-reads exactly the bytes [Since, End) (a command's range from
	// History) and returns at once; it moves no cursor and takes no input.
	End *int64
	// WaitPort, 1..65535, ends the wait when a process of the session listens on that
	// TCP port (Linux only).
	WaitPort int
	// Screen adds what the terminal shows after the output read (ReadResult.Screen).
	Screen bool
	// Styled, with Screen, adds each row's colours and attributes (Screen.Styles).
	Styled bool
}

// Input is what IO sends to a session before it reads.
type Input struct {
	// Data is written to the terminal verbatim; at most MaxInputBytes with Keys.
	Data []byte
	// Keys are tmux-style key names (vt.Key lists them) sent after Data, as a terminal
	// sends them in the modes the program has set at the moment they are written: the
	// cursor keys under application cursor mode (DECCKM) send ESC O A, not ESC [ A.
	Keys []string
	// Cols and Rows, when given (both, each 1..MaxSize), resize the terminal before Data
	// is written, so the program draws its answer at the new size; both zero leave the
	// size alone.
	Cols, Rows int
	// Run is one command line to type at the prompt of an integrated shell: the call
	// waits for the shell to come back to its prompt and returns only that command's
	// output (see IO). Not with Data.
	Run string
	// Paste sends Data (and Keys) as one bracketed paste when the program has turned
	// bracketed paste on, a final newline as Enter after it; otherwise Data is typed as it is.
	Paste bool
}

// typed reports whether the input sends anything besides a run's line.
func (in Input) typed() bool { return len(in.Data) > 0 || len(in.Keys) > 0 }
