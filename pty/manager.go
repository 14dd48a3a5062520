package pty

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults applied where a Config, OpenOptions or ReadOptions field is zero. They are
// exported so the MCP adapter can quote them in tool descriptions.
const (
	DefaultMaxSessions = 32
	DefaultBufferSize  = 4 << 20
	DefaultGrace       = 2 * time.Second
	DefaultCols        = 120
	DefaultRows        = 40
	DefaultIdle        = 300 * time.Millisecond
	DefaultTimeout     = 10 * time.Second
	DefaultMaxBytes    = 16384
	// MaxSize is the largest terminal width or height accepted.
	MaxSize = 1000
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
	Grace       time.Duration // shutdown grace between SIGHUP and SIGKILL; default DefaultGrace
	Recorder    Recorder      // optional; nil means no persistence
	Logger      *slog.Logger  // optional; default slog.Default()
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
	// Env is added to the inherited environment, overriding it and the session defaults
	// (TERM=xterm-256color, PAGER=cat, GIT_PAGER=cat).
	Env map[string]string
	// Cols and Rows give the terminal size; default 120x40, each at most MaxSize.
	Cols, Rows int
	// Name is a label for List.
	Name string
}

// sessionDefaults are set whatever the server inherited, because a pager waiting for "q"
// or a dumb TERM is how an agent gets stuck; only OpenOptions.Env overrides them.
var sessionDefaults = map[string]string{
	"TERM":      "xterm-256color",
	"PAGER":     "cat",
	"GIT_PAGER": "cat",
}

// ReadOptions says how long to wait for output and how to return it.
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
	// Timeout bounds the whole call, the write included; default DefaultTimeout. The
	// caller clamps it.
	Timeout time.Duration
	// MaxBytes caps the returned (cleaned or raw) text; default DefaultMaxBytes.
	MaxBytes int
	// Raw returns the bytes as the terminal sent them instead of cleaned text.
	Raw bool
}

// ReadResult is what Open and IO return: the output read and the session's state.
type ReadResult struct {
	SessionID    string
	Pid          int
	Output       string
	Since        int64   // absolute raw offset where the returned output starts
	Cursor       int64   // absolute raw offset where it ends (the new read cursor)
	DroppedBytes int64   // bytes between the requested start and the oldest byte still buffered
	OmittedBytes int64   // bytes of the (cleaned) text left out by MaxBytes
	Reason       string  // "matched" | "exited" | "idle" | "timeout"
	Exited       bool    // the program has exited and its output has been drained
	ExitCode     *int    // nil while running or when killed by a signal
	Signal       *string // e.g. "SIGKILL" when killed by a signal, else nil
	Written      int     // bytes of input delivered by this call
}

// Reasons a wait ended, as reported in ReadResult.Reason.
const (
	ReasonMatched = "matched"
	ReasonExited  = "exited"
	ReasonIdle    = "idle"
	ReasonTimeout = "timeout"
)

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
}

func resolveRead(op string, r ReadOptions) (readOpts, error) {
	switch {
	case r.Since != nil && *r.Since < 0:
		return readOpts{}, fmt.Errorf("%s: %w: since %d is negative", op, ErrInvalid, *r.Since)
	case r.Idle < 0:
		return readOpts{}, fmt.Errorf("%s: %w: idle %v is negative", op, ErrInvalid, r.Idle)
	case r.Timeout < 0:
		return readOpts{}, fmt.Errorf("%s: %w: timeout %v is negative", op, ErrInvalid, r.Timeout)
	case r.MaxBytes < 0:
		return readOpts{}, fmt.Errorf("%s: %w: maxBytes %d is negative", op, ErrInvalid, r.MaxBytes)
	}
	o := readOpts{since: r.Since, re: r.WaitFor, idle: r.Idle, timeout: r.Timeout, maxBytes: r.MaxBytes, raw: r.Raw}
	if o.idle == 0 && o.re == nil {
		o.idle = DefaultIdle
	}
	if o.timeout == 0 {
		o.timeout = DefaultTimeout
	}
	if o.maxBytes == 0 {
		o.maxBytes = DefaultMaxBytes
	}
	return o, nil
}

func checkSize(op string, cols, rows int) error {
	if cols < 1 || cols > MaxSize || rows < 1 || rows > MaxSize {
		return fmt.Errorf("%s: %w: size %dx%d out of range: cols and rows must be 1..%d", op, ErrInvalid, cols, rows, MaxSize)
	}
	return nil
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
		return ReadResult{}, fmt.Errorf("%s: %w: since must be empty or 0 for a new session", op, ErrInvalid)
	}
	if o.Cols == 0 {
		o.Cols = DefaultCols
	}
	if o.Rows == 0 {
		o.Rows = DefaultRows
	}
	if err := checkSize(op, o.Cols, o.Rows); err != nil {
		return ReadResult{}, err
	}
	if o.Dir != "" {
		if !filepath.IsAbs(o.Dir) {
			return ReadResult{}, fmt.Errorf("%s: %w: dir %q is not absolute", op, ErrInvalid, o.Dir)
		}
		// exec reports a missing directory as the shell missing ("fork/exec /bin/sh: no
		// such file or directory"), which would send a model looking in the wrong place.
		if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
			return ReadResult{}, fmt.Errorf("%s: %w: dir %q is not a directory that exists", op, ErrInvalid, o.Dir)
		}
	}
	if o.Command != "" && strings.TrimSpace(o.Command) == "" {
		return ReadResult{}, fmt.Errorf("%s: %w: command is blank; omit it to start an interactive shell", op, ErrInvalid)
	}
	if strings.ContainsRune(o.Command, 0) {
		return ReadResult{}, fmt.Errorf("%s: %w: command contains a NUL byte", op, ErrInvalid)
	}
	for k, v := range o.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return ReadResult{}, fmt.Errorf("%s: %w: env %q: names must be non-empty without '=' and no NUL bytes anywhere", op, ErrInvalid, k)
		}
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

	res, err := m.exchange(ctx, op, s, nil, ro, true)
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
		return nil, fmt.Errorf("%s: %w %q (open sessions: %s)", op, ErrNoSession, id, open)
	}
	return s, nil
}

// IO writes input to the session's terminal, then waits and reads like this:
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
// has exited is refused with ErrExited.
func (m *Manager) IO(ctx context.Context, id string, input []byte, r ReadOptions) (ReadResult, error) {
	const op = "pty.IO"
	s, err := m.get(op, id)
	if err != nil {
		return ReadResult{}, err
	}
	ro, err := resolveRead(op, r)
	if err != nil {
		return ReadResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return ReadResult{}, fmt.Errorf("%s: session %q: %w", op, id, err)
	}
	return m.exchange(ctx, op, s, input, ro, false)
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
	if err := s.resize(cols, rows); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return fmt.Errorf("%s: %w %q (closed)", op, ErrNoSession, id)
		}
		return fmt.Errorf("%s: session %q: %w", op, id, err)
	}
	return nil
}

// Close ends a session: sig (default SIGHUP) to its process group and session, up to
// grace (default the Manager's Grace) for it to exit, then SIGKILL to whatever is left,
// which is reaped. It returns the exit status and the output nobody read, and forgets the
// session. Closing a session whose program has exited only kills what it left running
// and removes it. If ctx ends during the grace, SIGKILL is sent at once: a Close always
// finishes the job.
func (m *Manager) Close(ctx context.Context, id string, sig syscall.Signal, grace time.Duration) (CloseResult, error) {
	const op = "pty.Close"
	if sig == 0 {
		sig = syscall.SIGHUP
	}
	if sig < 0 || sig > 64 {
		return CloseResult{}, fmt.Errorf("%s: %w: signal %d out of range 1..64", op, ErrInvalid, int(sig))
	}
	if grace < 0 {
		return CloseResult{}, fmt.Errorf("%s: %w: grace %v is negative", op, ErrInvalid, grace)
	}
	if grace == 0 {
		grace = m.cfg.Grace
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
	data, _ := s.ring.appendFrom(nil, s.cursor)
	st := s.status
	s.mu.Unlock()
	out, _ := capText([]byte(Clean(data)), DefaultMaxBytes, nil)
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
	if cut {
		return fmt.Errorf("pty.Shutdown: grace cut short, sessions killed: %w", ctx.Err())
	}
	return nil
}

// stop takes sessions down together, so a shutdown costs one grace period rather than one
// per session: sig to the live ones, up to grace for them to exit, SIGKILL to all of
// them (an exited program may have left a background job), then the reader goroutines
// are released by closing the masters and waited for. It reports whether ctx ended the
// grace early.
func (m *Manager) stop(ctx context.Context, ss []*session, sig syscall.Signal, grace time.Duration) (cut bool) {
	var live []*session
	for _, s := range ss {
		if !s.hasExited() {
			live = append(live, s)
		}
	}
	if sig != syscall.SIGKILL && grace > 0 && len(live) > 0 {
		for _, s := range live {
			s.kill(sig)
		}
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
