package pty

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// killWait bounds how long Close waits, after SIGKILL, for the processes of a session
// other than its program to be gone (awaitGone): dying takes milliseconds, but a process
// in uninterruptible sleep may not die at all.
const killWait = 5 * time.Second

// exitDrain bounds how long an exit waits for the rest of the output once the program's
// process has been reaped. Normally the master reports end of output at once; when a
// background grandchild still holds the terminal open it never does, and the exit must be
// reported anyway.
const exitDrain = 200 * time.Millisecond

// recordTimeout bounds a Recorder call, so a wedged database cannot hold up a session.
const recordTimeout = 5 * time.Second

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
	histories  histories  // the shells' history files
	nonce      string     // this Manager's part of its sessions' marks (markVar)
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
	if cfg.SessionID == nil {
		cfg.SessionID = defaultSessionID
	}
	return &Manager{cfg: cfg, log: cfg.Logger, sessions: make(map[string]*session), nonce: newNonce(),
		shellFiles: shellFiles{parent: cfg.ScriptsDir}}
}

// Open starts a program under a new terminal, then waits for its first output the way IO
// does with no input: until WaitFor matches, the output settles, the program exits, or the
// timeout. Unlike a plain read it does not return the moment a first byte is there, since
// a program's first output rarely arrives in one piece.
//
// When MaxSessions sessions exist, the oldest exited one is evicted to make room; if none
// has exited, Open fails with a *LimitError. A failed Open, or one whose ctx ends during
// the first wait, leaves no session and no process behind. The session's owner is ""
// (see Owned).
func (m *Manager) Open(ctx context.Context, o OpenOptions, r ReadOptions) (ReadResult, error) {
	return m.open(ctx, "", o, r)
}

// open is Open of a session that owner owns.
func (m *Manager) open(ctx context.Context, owner string, o OpenOptions, r ReadOptions) (ReadResult, error) {
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

	seq, evicted, err := m.reserve(op, owner)
	if err != nil {
		return ReadResult{}, err
	}
	id := m.cfg.SessionID(seq)
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
	s.owner = owner // before the session is published, never changed after
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
	s.addScreen(&res, r)
	return res, nil
}

// reserve takes a slot for a new session of owner (evicting the oldest exited session
// when all are taken: owner's own first) and its sequence number, which names it, and
// counts the Open in wg so Shutdown waits for it. The sessions a *LimitError names are
// owner's only.
func (m *Manager) reserve(op, owner string) (seq int, evicted *session, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	if len(m.sessions)+m.pending >= m.cfg.MaxSessions {
		ss := m.sortedLocked()
		var exited, live []string
		var others *session // the oldest exited session of another owner
		for _, s := range ss {
			switch {
			case s.owner != owner:
				if others == nil && s.hasExited() {
					others = s
				}
			case s.hasExited():
				if evicted == nil {
					evicted = s
				}
				exited = append(exited, s.id)
			default:
				live = append(live, s.id)
			}
		}
		if evicted == nil {
			evicted = others
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

// get finds session id, whoever owns it.
func (m *Manager) get(op, id string) (*session, error) { return m.getAs(op, anyOwner, id) }

// getAs finds session id if sc sees it; the error for one it does not see is the one for
// an id that does not exist, and names only the sessions sc sees.
func (m *Manager) getAs(op string, sc scope, id string) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	s, ok := m.sessions[id]
	if !ok || !sc.sees(s) {
		ids := make([]string, 0, len(m.sessions))
		for _, s := range m.sortedLocked() {
			if sc.sees(s) {
				ids = append(ids, s.id)
			}
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
	return m.io(ctx, anyOwner, id, in, r)
}

// io is IO of a session that sc sees.
func (m *Manager) io(ctx context.Context, sc scope, id string, in Input, r ReadOptions) (ReadResult, error) {
	const op = "pty.IO"
	ro, err := resolveRead(op, r)
	if err != nil {
		return ReadResult{}, err
	}
	// The keys' longest encoding (all modes on) bounds what they may send.
	keys, err := appendKeys(nil, in.Keys, vt.KeyModes{Cursor: true, Keypad: true})
	if err != nil {
		return ReadResult{}, err
	}
	if n := len(in.Data) + len(keys); n > MaxInputBytes {
		return ReadResult{}, invalidf(op, "input is %d bytes; send at most %d per call", n, MaxInputBytes)
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
	s, err := m.getAs(op, sc, id)
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
		s.addScreen(&res, r)
	}
	m.noteMembersLater(s)
	return res, err
}

// noteMembersLater scans the session's processes (noteMembers) on a goroutine of its own,
// after the call has its answer: the scan reads every process's /proc entry, which in the
// round trip cost more than the rest of an interactive step (0.5 ms became 1.3 ms on two
// cores even off the call's path). So scans run at most every noteEvery per session, and
// always once more after the newest call: a call that ends while a scan waits is covered
// by it, one that ends while a scan reads asks for another. The goroutine is the
// Manager's (m.wg), so Shutdown waits for it, and it gives up when the session's reader
// is done.
func (m *Manager) noteMembersLater(s *session) {
	s.noteAgain.Store(true)
	if !s.noting.CompareAndSwap(false, true) {
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		s.noting.Store(false)
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		defer s.noting.Store(false)
		for s.noteAgain.Swap(false) {
			if wait := time.Until(s.notedAt.Add(noteEvery)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-s.readerDone:
					t.Stop()
					return
				}
			}
			s.noteMembers()
			s.notedAt = time.Now()
		}
	}()
}

// noteEvery is the least time between two of a session's noteMembersLater scans.
const noteEvery = 200 * time.Millisecond

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
	return m.close(ctx, anyOwner, id, sig, grace)
}

// close is Close of a session that sc sees.
func (m *Manager) close(ctx context.Context, sc scope, id string, sig syscall.Signal, grace time.Duration) (CloseResult, error) {
	const op = "pty.Close"
	if sig < 1 || sig > 64 {
		return CloseResult{}, invalidf(op, "signal %d is not a signal number 1..64; SIGHUP (1) is the usual one to close with", int(sig))
	}
	if grace < 0 || grace > MaxGrace {
		return CloseResult{}, invalidf(op, "grace must be 0s..%v, got %v", MaxGrace, grace)
	}
	s, err := m.getAs(op, sc, id)
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
	out, _, _ := s.outputText(s.cursor, s.ring.End(), DefaultMaxBytes, false, false, false) // releases s.mu
	return CloseResult{SessionID: id, ExitCode: st.code, Signal: st.signal, Output: out}, nil
}

// List describes every session not yet closed, exited ones included, oldest first.
func (m *Manager) List() []Info { return m.list(anyOwner) }

// list is List of the sessions sc sees.
func (m *Manager) list(sc scope) []Info {
	m.mu.Lock()
	ss := slices.DeleteFunc(m.sortedLocked(), func(s *session) bool { return !sc.sees(s) })
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
	m.histories.remove()
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
	var killed []procKey // what the signals reached besides the programs: awaitGone's
	if sig != syscall.SIGKILL {
		for _, s := range live {
			killed = append(killed, s.kill(sig)...)
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
		killed = append(killed, s.kill(syscall.SIGKILL)...)
	}
	awaitGone(killed, time.Now().Add(killWait))
	for _, s := range ss {
		<-s.exitDone
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		_ = s.master.Close() // wakes the reader even if some process outside the session holds the terminal
	}
	for _, s := range ss {
		<-s.readerDone
		unregisterLeader(s.pid, s.mark)
		removeHistory(s.history)
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
