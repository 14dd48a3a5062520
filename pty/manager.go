package pty

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
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

// exitDrain bounds how long an exit waits for the rest of the output once the program's
// process has been reaped. Normally the master reports end of output at once; when a
// background grandchild still holds the terminal open it never does, and the exit must be
// reported anyway.
const exitDrain = 200 * time.Millisecond

// recordTimeout bounds a Recorder call, so a wedged database cannot hold up a session.
const recordTimeout = 5 * time.Second

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
}

// sessionDefaults are set whatever the server inherited, because a pager waiting for "q"
// or a dumb TERM is how an agent gets stuck; only OpenOptions.Env overrides them.
var sessionDefaults = map[string]string{
	"TERM":      "xterm-256color",
	"PAGER":     "cat",
	"GIT_PAGER": "cat",
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
}

// Input is what IO sends to a session before it reads.
type Input struct {
	// Data is written to the terminal verbatim (ParseKeys turns key names into bytes); at
	// most MaxInputBytes.
	Data []byte
	// Cols and Rows, when given (both, each 1..MaxSize), resize the terminal before Data
	// is written, so the program draws its answer at the new size; both zero leave the
	// size alone.
	Cols, Rows int
	// Run is one command line to type at the prompt of an integrated shell: the call
	// waits for the shell to come back to its prompt and returns only that command's
	// output (see IO). Not with Data.
	Run string
	// Paste sends Data as one bracketed paste when the program has turned bracketed
	// paste on, a final newline as Enter after it; otherwise Data is typed as it is.
	Paste bool
}

// ReadResult is what Open and IO return: the output read and the session's state.
type ReadResult struct {
	SessionID    string
	Pid          int
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
	// Integration is true once the session's shell has sent integration marks.
	Integration bool
	// Screen is what the terminal shows once the output up to Cursor is drawn, when
	// ReadOptions.Screen asked for it.
	Screen *Screen
}

// InputWanted describes a program blocked reading the terminal.
type InputWanted struct {
	Kind   InputKind // InputPassword, InputLine or InputKeys
	Prompt string    // the last non-empty line of output: the question, trimmed
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
	UnreadBytes               int64     // bytes after the read cursor still in the buffer
	Ports                     []int     // TCP ports the session's processes listen on (Linux)
	Commands                  []Command // the last commands, oldest first: only from Get
}

// Manager owns the sessions of one server process. Its methods are safe for concurrent
// use; a wait in one call never delays a call on another session.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	seq      int  // ids handed out so far
	pending  int  // Opens that reserved a slot but have not registered yet
	closed   bool // Shutdown has begun

	// wg counts session goroutines and Opens in flight, so Shutdown returns only when
	// nothing the Manager started is still running.
	wg sync.WaitGroup

	shellFiles shellFiles // the shell integration scripts
}

// NewManager returns a Manager with cfg's zero fields set to their defaults.
func NewManager(cfg Config) *Manager {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultBufferSize
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Manager{cfg: cfg, log: cfg.Logger, sessions: make(map[string]*session)}
}

// readOpts is ReadOptions validated, with defaults applied.
type readOpts struct {
	since    *int64
	re       *regexp.Regexp
	idle     time.Duration // 0: no idle ending
	timeout  time.Duration
	maxBytes int
	raw      bool
	idleSet  bool // idle was given, not defaulted
	end      *int64
	port     int
}

func resolveRead(op string, r ReadOptions) (readOpts, error) {
	switch {
	case r.Since != nil && *r.Since < 0:
		return readOpts{}, invalidf(op, "since must be 0 or more, got %d", *r.Since)
	case r.Idle < 0:
		return readOpts{}, invalidf(op, "idle must be 0 or more, got %v", r.Idle)
	case r.Timeout < 0:
		return readOpts{}, invalidf(op, "timeout must be 0 or more, got %v", r.Timeout)
	case r.MaxBytes < 0 || r.MaxBytes > MaxReadBytes:
		return readOpts{}, invalidf(op, "maxBytes must be 1..%d, got %d", MaxReadBytes, r.MaxBytes)
	}
	if err := checkRange(op, r); err != nil {
		return readOpts{}, err
	}
	o := readOpts{since: r.Since, re: r.WaitFor, idle: r.Idle, timeout: r.Timeout, maxBytes: r.MaxBytes, raw: r.Raw,
		idleSet: r.Idle > 0, end: r.End, port: r.WaitPort}
	if o.idle == 0 && o.re == nil {
		o.idle = DefaultIdle
	}
	if o.maxBytes == 0 {
		o.maxBytes = DefaultMaxBytes
	}
	return o, nil
}

// checkSize refuses a terminal size out of range; a caller for which both zero means "not
// given" checks that first.
func checkSize(op string, cols, rows int) error {
	switch {
	case cols >= 1 && cols <= MaxSize && rows >= 1 && rows <= MaxSize:
		return nil
	case (cols == 0) != (rows == 0):
		return invalidf(op, "give cols and rows together, each 1..%d, got %dx%d", MaxSize, cols, rows)
	}
	return invalidf(op, "cols and rows must be 1..%d, got %dx%d", MaxSize, cols, rows)
}

// checkOpen refuses OpenOptions that cannot start a program, before anything is started.
func checkOpen(op string, o OpenOptions) error {
	if err := checkSize(op, o.Cols, o.Rows); err != nil {
		return err
	}
	// Sizes first: a megabyte of command is refused before it is scanned or quoted.
	switch {
	case len(o.Command) > MaxCommandBytes:
		return invalidf(op, "command is %d bytes, at most %d are accepted; put a long script in a file in the workspace and run that",
			len(o.Command), MaxCommandBytes)
	case len(o.Name) > MaxNameLen:
		return invalidf(op, "name is %d bytes long; give one of at most %d", len(o.Name), MaxNameLen)
	case len(o.Env) > MaxEnvVars:
		return invalidf(op, "env has %d variables, at most %d are accepted", len(o.Env), MaxEnvVars)
	}
	envBytes := 0
	for _, k := range slices.Sorted(maps.Keys(o.Env)) { // sorted: the same call gets the same message
		if len(o.Env[k]) > MaxEnvValueBytes {
			return invalidf(op, "env %s is %d bytes long, at most %d are accepted per value; pass a long value in a file instead",
				quote.Short(k), len(o.Env[k]), MaxEnvValueBytes)
		}
		envBytes += len(k) + len(o.Env[k])
	}
	if envBytes > MaxEnvBytes {
		return invalidf(op, "env is %d bytes (names and values), at most %d are accepted", envBytes, MaxEnvBytes)
	}
	if err := checkDir(op, o); err != nil {
		return err
	}
	switch {
	case o.Command != "" && strings.TrimSpace(o.Command) == "":
		return invalidf(op, "command is blank; omit it to start an interactive shell")
	case strings.ContainsRune(o.Command, 0):
		return invalidf(op, "command contains a NUL byte, which no command line can carry; remove it")
	}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return invalidf(op, "env name %s is not a valid variable name; use a non-empty name without '=' or NUL", quote.Short(k))
		}
		if strings.ContainsRune(o.Env[k], 0) {
			return invalidf(op, "env %s contains a NUL byte, which no program can receive; remove it", quote.Short(k))
		}
	}
	return nil
}

// checkDir refuses a working directory the program could not start in. exec reports a
// missing directory as the shell missing ("fork/exec /bin/sh: no such file or
// directory"), which would send a model looking in the wrong place.
func checkDir(op string, o OpenOptions) error {
	if o.Dir == "" {
		if o.EnterDir != "" {
			return invalidf(op, "enterDir is given without the dir it enters")
		}
		return nil
	}
	if !filepath.IsAbs(o.Dir) {
		return invalidf(op, "dir must be an absolute path, got %s", quote.Short(o.Dir))
	}
	if fi, err := os.Stat(o.enterDir()); err != nil || !fi.IsDir() {
		return invalidf(op, "dir %s is not a directory that exists; give an existing directory", quote.Short(o.Dir))
	}
	return nil
}

// enterDir is the path the program changes into (see OpenOptions.EnterDir).
func (o OpenOptions) enterDir() string {
	if o.EnterDir != "" {
		return o.EnterDir
	}
	return o.Dir
}

// Open starts a program under a new terminal, then waits for its first output the way IO
// does with no input: until WaitFor matches, the output settles, the program exits, or the
// timeout. Unlike a plain read it does not return the moment a first byte is there, since
// a program's first output rarely arrives in one piece.
//
// When MaxSessions sessions exist, the oldest exited one is evicted to make room; if none
// has exited, Open fails with a *LimitError. A failed Open, or one whose ctx ends during
// the first wait, leaves no session and no process behind.
func (m *Manager) Open(ctx context.Context, o OpenOptions, r ReadOptions) (ReadResult, error) {
	const op = "pty.Open"
	ro, err := resolveRead(op, r)
	if err != nil {
		return ReadResult{}, err
	}
	if ro.since != nil && *ro.since != 0 {
		return ReadResult{}, invalidf(op, "since must be 0 or omitted for a new session, got %d", *ro.since)
	}
	if ro.end != nil {
		return ReadResult{}, invalidf(op, "end re-reads the output of an open session; omit it when opening one")
	}
	if o.Cols == 0 && o.Rows == 0 {
		o.Cols, o.Rows = DefaultCols, DefaultRows
	}
	if err := checkOpen(op, o); err != nil {
		return ReadResult{}, err
	}
	if err := m.checkScreen(op, r.Screen, o.Cols, o.Rows); err != nil {
		return ReadResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return ReadResult{}, fmt.Errorf("%s: %w", op, err)
	}

	seq, evicted, err := m.reserve(op)
	if err != nil {
		return ReadResult{}, err
	}
	id := "s" + strconv.Itoa(seq)
	defer m.wg.Done()
	registered := false
	defer func() {
		if !registered {
			m.mu.Lock()
			m.pending--
			m.mu.Unlock()
		}
	}()
	if evicted != nil {
		m.stop(ctx, []*session{evicted}, syscall.SIGKILL, 0)
		m.recordClosed(ctx, evicted.id)
		m.log.Info("pty: evicted exited session to make room", "id", evicted.id, "for", id)
	}

	s, err := m.start(id, seq, o)
	if err != nil {
		return ReadResult{}, fmt.Errorf("%s: %w", op, err)
	}
	m.mu.Lock()
	m.pending--
	registered = true
	if m.closed {
		m.mu.Unlock()
		m.stop(ctx, []*session{s}, syscall.SIGKILL, 0)
		return ReadResult{}, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	m.sessions[id] = s
	m.mu.Unlock()
	m.log.Debug("pty: session started", "id", id, "pid", s.pid, "command", s.command, "dir", s.dir)
	m.recordOpened(ctx, s)

	res, err := m.exchange(ctx, op, s, Input{}, ro, true)
	if err != nil {
		// The caller never learns the id of a session whose Open failed, so nobody could
		// close it: take it down now (unless a Shutdown already is).
		m.mu.Lock()
		ours := m.sessions[id] == s
		delete(m.sessions, id)
		m.mu.Unlock()
		if ours {
			m.stop(ctx, []*session{s}, syscall.SIGKILL, 0)
			m.recordClosed(ctx, id)
		}
		return ReadResult{}, err
	}
	s.addScreen(&res, r.Screen)
	return res, nil
}

// reserve takes a slot for a new session (evicting the oldest exited session when all
// are taken) and its sequence number, which names it, and counts the Open in wg so
// Shutdown waits for it.
func (m *Manager) reserve(op string) (seq int, evicted *session, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	if len(m.sessions)+m.pending >= m.cfg.MaxSessions {
		ss := m.sortedLocked()
		var exited, live []string
		for _, s := range ss {
			if s.hasExited() {
				if evicted == nil {
					evicted = s
				}
				exited = append(exited, s.id)
			} else {
				live = append(live, s.id)
			}
		}
		if evicted == nil {
			return 0, nil, fmt.Errorf("%s: %w", op, &LimitError{Max: m.cfg.MaxSessions, Closable: append(exited, live...)})
		}
		delete(m.sessions, evicted.id)
	}
	m.seq++
	m.pending++
	m.wg.Add(1)
	return m.seq, evicted, nil
}

func (m *Manager) sortedLocked() []*session {
	ss := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(a, b *session) int { return cmp.Compare(a.seq, b.seq) })
	return ss
}

func (m *Manager) get(op, id string) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	s, ok := m.sessions[id]
	if !ok {
		ids := make([]string, 0, len(m.sessions))
		for _, s := range m.sortedLocked() {
			ids = append(ids, s.id)
		}
		open := "none"
		if len(ids) > 0 {
			open = strings.Join(ids, ", ")
		}
		return nil, fmt.Errorf("%s: %w %s (open sessions: %s)", op, ErrNoSession, quote.Short(id), open)
	}
	return s, nil
}

// IO resizes the session's terminal if asked, writes the input, then waits and reads
// like this:
//
// It returns at the first of: WaitFor matches the cleaned text the call would return
// ("matched"); the program exits and its output has been drained ("exited"); the output
// has been quiet for Idle after something new arrived ("idle"); Timeout ("timeout"). A
// read with no input and no WaitFor that finds unread output returns it at once ("idle");
// with none it waits for output to arrive and settle. The write shares the Timeout: input
// the program does not read is given up at the deadline, and Written says how much went
// in. Cancelling ctx ends the wait with ctx's error and leaves the read cursor alone.
//
// Output runs from Since (or the read cursor) to the end of what is buffered, and the read
// cursor moves to the end of it (it never moves back). Input to a session whose program
// has exited is refused with ErrExited. The arguments are checked before the session is
// looked up, so a call refused for its arguments neither resizes nor writes.
func (m *Manager) IO(ctx context.Context, id string, in Input, r ReadOptions) (ReadResult, error) {
	const op = "pty.IO"
	ro, err := resolveRead(op, r)
	if err != nil {
		return ReadResult{}, err
	}
	if len(in.Data) > MaxInputBytes {
		return ReadResult{}, invalidf(op, "input is %d bytes; send at most %d per call", len(in.Data), MaxInputBytes)
	}
	if err := checkInput(op, in, r); err != nil {
		return ReadResult{}, err
	}
	resizing := in.Cols != 0 || in.Rows != 0
	if resizing {
		if err := checkSize(op, in.Cols, in.Rows); err != nil {
			return ReadResult{}, err
		}
	}
	s, err := m.get(op, id)
	if err != nil {
		return ReadResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return ReadResult{}, fmt.Errorf("%s: session %q: %w", op, id, err)
	}
	if err := s.checkScreen(op, r.Screen, in.Cols, in.Rows); err != nil {
		return ReadResult{}, err
	}
	if resizing {
		if err := resize(op, s, in.Cols, in.Rows); err != nil {
			return ReadResult{}, err
		}
	}
	res, err := m.exchange(ctx, op, s, in, ro, false)
	if err == nil {
		s.addScreen(&res, r.Screen)
	}
	return res, err
}

// Resize sets the terminal size; the kernel sends SIGWINCH to the foreground program.
func (m *Manager) Resize(id string, cols, rows int) error {
	const op = "pty.Resize"
	if err := checkSize(op, cols, rows); err != nil {
		return err
	}
	s, err := m.get(op, id)
	if err != nil {
		return err
	}
	return resize(op, s, cols, rows)
}

// resize sets the size of a session found by get.
func resize(op string, s *session, cols, rows int) error {
	if err := s.resize(cols, rows); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return fmt.Errorf("%s: %w %q (closed)", op, ErrNoSession, s.id)
		}
		return fmt.Errorf("%s: session %q: %w", op, s.id, err)
	}
	return nil
}

// Close ends a session: sig to its process group and session, up to grace for it to
// exit, then SIGKILL to whatever is left, which is reaped. It returns the exit status and
// the output nobody read, and forgets the session. Closing a session whose program has
// exited only kills what it left running and removes it. If ctx ends during the grace,
// SIGKILL is sent at once: a Close always finishes the job.
//
// Both arguments mean what they say, so a caller passes what it wants: sig is a signal
// number 1..64 (SIGHUP for the usual close; ParseSignal reads a name), and grace is
// 0..MaxGrace (DefaultGrace for the usual close), where zero sends SIGKILL right after sig.
func (m *Manager) Close(ctx context.Context, id string, sig syscall.Signal, grace time.Duration) (CloseResult, error) {
	const op = "pty.Close"
	if sig < 1 || sig > 64 {
		return CloseResult{}, invalidf(op, "signal %d is not a signal number 1..64; SIGHUP (1) is the usual one to close with", int(sig))
	}
	if grace < 0 || grace > MaxGrace {
		return CloseResult{}, invalidf(op, "grace must be 0s..%v, got %v", MaxGrace, grace)
	}
	s, err := m.get(op, id)
	if err != nil {
		return CloseResult{}, err
	}
	m.mu.Lock()
	if m.sessions[id] != s { // a concurrent Close or Shutdown got there first
		m.mu.Unlock()
		return CloseResult{}, fmt.Errorf("%s: %w %q (already closing)", op, ErrNoSession, id)
	}
	delete(m.sessions, id)
	m.mu.Unlock()

	m.stop(ctx, []*session{s}, sig, grace)
	m.recordClosed(ctx, id)

	s.mu.Lock()
	st := s.status
	out, _, _ := s.outputText(s.cursor, s.ring.End(), DefaultMaxBytes, false, false) // releases s.mu
	return CloseResult{SessionID: id, ExitCode: st.code, Signal: st.signal, Output: out}, nil
}

// List describes every session not yet closed, exited ones included, oldest first.
func (m *Manager) List() []Info {
	m.mu.Lock()
	ss := m.sortedLocked()
	m.mu.Unlock()
	infos := make([]Info, len(ss))
	for i, s := range ss {
		infos[i] = s.info()
	}
	withPorts(infos)
	return infos
}

// Shutdown ends every session: SIGHUP to each, SIGKILL after Grace to whatever is left,
// reaping, and waiting for every goroutine the Manager started. Afterwards the Manager
// refuses Open (and every other call) with ErrClosed. If ctx ends first, SIGKILL is sent
// at once; Shutdown still reaps and waits, and returns ctx's error.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	ss := m.sortedLocked()
	clear(m.sessions)
	m.mu.Unlock()

	cut := m.stop(ctx, ss, syscall.SIGHUP, m.cfg.Grace)
	for _, s := range ss {
		m.recordClosed(ctx, s.id)
	}
	m.wg.Wait()
	m.shellFiles.remove()
	if cut {
		return fmt.Errorf("pty.Shutdown: grace cut short, sessions killed: %w", ctx.Err())
	}
	return nil
}

// stop takes sessions down together, so a shutdown costs one grace period rather than one
// per session: sig to the live ones, up to grace for them to exit (none when grace is
// zero), SIGKILL to all of them (an exited program may have left a background job), then
// the reader goroutines are released by closing the masters and waited for. It reports
// whether ctx ended the grace early.
func (m *Manager) stop(ctx context.Context, ss []*session, sig syscall.Signal, grace time.Duration) (cut bool) {
	var live []*session
	for _, s := range ss {
		if !s.hasExited() {
			live = append(live, s)
		}
	}
	if sig != syscall.SIGKILL {
		for _, s := range live {
			s.kill(sig)
		}
	}
	if sig != syscall.SIGKILL && grace > 0 && len(live) > 0 {
		t := time.NewTimer(grace)
	wait:
		for _, s := range live {
			select {
			case <-s.exitDone:
			case <-t.C:
				break wait
			case <-ctx.Done():
				cut = true
				break wait
			}
		}
		t.Stop()
	}
	for _, s := range ss {
		s.kill(syscall.SIGKILL)
	}
	for _, s := range ss {
		<-s.exitDone
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		_ = s.master.Close() // wakes the reader even if some process outside the session holds the terminal
	}
	for _, s := range ss {
		<-s.readerDone
	}
	return cut
}

func (m *Manager) recordOpened(ctx context.Context, s *session) {
	if m.cfg.Recorder == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	rec := Record{ID: s.id, Name: s.name, Command: s.command, Dir: s.dir, Pid: s.pid, Pgid: s.pid, StartedAt: s.startedAt}
	if err := m.cfg.Recorder.SessionOpened(ctx, rec); err != nil {
		m.log.Warn("pty: recording session start failed", "id", s.id, "pid", s.pid, "err", err)
	}
}

func (m *Manager) recordClosed(ctx context.Context, id string) {
	if m.cfg.Recorder == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := m.cfg.Recorder.SessionClosed(ctx, id); err != nil {
		m.log.Warn("pty: recording session end failed", "id", id, "err", err)
	}
}
