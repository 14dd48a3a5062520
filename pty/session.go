package pty

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	creackpty "github.com/creack/pty"

	"github.com/mcp-harness/mcp-harness/internal/sandbox"
	"github.com/mcp-harness/mcp-harness/pty/clean"
	"github.com/mcp-harness/mcp-harness/pty/marks"
	"github.com/mcp-harness/mcp-harness/pty/ring"
)

// session is one program under one terminal. The fields above mu never change after
// start; the ones below are guarded by mu.
type session struct {
	id, name, command, dir string
	mark                   string      // markVar's value in its processes' environment
	noting                 atomic.Bool // a noteMembersLater goroutine runs
	noteAgain              atomic.Bool // a call ended since that goroutine's last scan began
	notedAt                time.Time   // when its last scan ended; only that goroutine uses it
	seq                    int
	pid                    int // also the process group and session id: the program runs under setsid
	startedAt              time.Time
	cmd                    *exec.Cmd
	master                 *os.File
	pts                    string // the terminal's slave side, /dev/pts/N ("" where unknown)
	kind                   shellKind
	policy                 sandbox.Policy // what confines the program
	history                string         // the shell's history file (historyVars), removed at close
	owner                  string         // the principal that opened it (Owned); set before it is published

	// filter takes the integration marks out of the output; only readLoop uses it.
	filter marks.Filter

	term *term // answers terminal queries and keeps the screen (screen.go); nil with Config.NoEmulator

	// wsem lets one write at a time hold the master: the write deadline belongs to the
	// file, so two writers would cut each other's deadlines short.
	wsem chan struct{}

	readerDone chan struct{} // closed when the reader goroutine has returned
	exitDone   chan struct{} // closed when the exit is published (status set, output drained)

	mu            sync.Mutex
	ring          ring.Buffer
	cursor        int64 // the read cursor: where a read without Since starts
	cols, rows    int
	widths        []clean.Width // the width over the output, after a resize (see widthsLocked)
	lastOutput    time.Time
	lastWrite     time.Time
	writing       int    // input noted and not yet all written (noteInputLocked)
	inputSeq      uint64 // inputs noted so far: a look at the kernel across one is void
	lastActivity  time.Time
	sh            shellState     // what the shell integration marks said
	openRun       int            // the run command whose last result said done: false (see exchange)
	changed       chan struct{}  // closed (and cleared) on new output or exit; made by a waiter
	event         chan struct{}  // the same, but not on output without integration marks
	marked        bool           // the reader's chunk held a mark (outputSink)
	image         string         // the shell's command line at its last marked prompt (health.go)
	unmarked      unmarkedPrompt // a prompt without marks seen once, to be confirmed (health.go)
	waiters       int            // calls waiting on this session (tests use it to order events)
	reaped        bool           // the leader has been waited for: its pid may be reused now
	inputNoted    bool           // a call ended with "input" while the output ended at inputNotedEnd
	inputNotedEnd int64
	syncAsked     uint64        // syncReader calls so far
	syncDone      uint64        // the last of them the reader has answered
	synced        chan struct{} // closed (and cleared) when the reader answers; made by syncReader
	closed        bool          // the master has been closed by stop
	status        exitStatus
	viewers       []*Viewer // people watching (viewer.go)
	personInputs  uint64    // writes of a person's input that went in (personWrite)
	personSeen    uint64    // personInputs when the agent's last call returned (PersonTyped)
	answering     bool      // a person's answer is pending (ask.go)
}

// exitStatus is the published end of a program.
type exitStatus struct {
	exited bool
	code   *int
	signal *string
}

func (st exitStatus) String() string {
	switch {
	case st.code != nil:
		return fmt.Sprintf("exit code %d", *st.code)
	case st.signal != nil:
		return "killed by " + *st.signal
	}
	return "exited"
}

// startUnder starts cmd under a new terminal of size ws, confined to policy, in o's
// directory. Setsid makes the program a session and process group leader, so one
// kill(-pgid) reaches everything it starts; Setctty makes the terminal its controlling
// tty, so C-c and job control work as in a real terminal. It returns the master.
func (m *Manager) startUnder(policy sandbox.Policy, cmd *exec.Cmd, ws *creackpty.Winsize, o OpenOptions) (*os.File, error) {
	master, tty, err := creackpty.Open()
	if err != nil {
		return nil, err
	}
	defer tty.Close() // the program has its own copy once started
	if err := creackpty.Setsize(master, ws); err != nil {
		master.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	var where *sandbox.Where
	if o.Dir != "" || o.EnterDir != "" {
		where = &sandbox.Where{Path: o.Dir, Exec: o.enterDir(), File: o.DirFile}
	}
	if err := m.cfg.Sandbox.Start(policy, cmd, where); err != nil {
		master.Close()
		return nil, err
	}
	return master, nil
}

// start runs the program and the session's two goroutines: one drains the master into the
// ring, so the program never blocks on a full terminal however little anyone reads; the
// other reaps the program and publishes its exit.
func (m *Manager) start(id string, seq int, o OpenOptions) (*session, error) {
	history := m.historyFile(id)
	env := sessionEnv(m.cfg.Env, history, o.Env)
	argv, display := commandLine(o.Command, env)
	kind, nonce := kindNone, ""
	if !o.NoIntegration {
		if shArgv, k, ok := shellCommand(o.Command, argv, env); ok {
			if dir, err := m.shellFiles.path(); err != nil {
				m.log.Warn("pty: starting the shell without integration", "id", id, "err", err)
			} else {
				nonce = markNonce()
				argv, env = integrate(k, shArgv, env, dir, nonce)
				kind = k
			}
		}
	}
	dir := o.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	policy := m.cfg.Sandbox.Policy()
	if o.Sandbox != nil {
		policy = *o.Sandbox
	}
	mark := id + "." + m.nonce
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(env, markVar+"="+mark) // last, so no Env given can take it away
	ws := &creackpty.Winsize{Cols: uint16(o.Cols), Rows: uint16(o.Rows)}
	master, err := m.startUnder(policy, cmd, ws, o)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(argv, " "), err)
	}
	// creack/pty leaves the master in blocking mode (it calls Fd()). Switch it back so
	// reads and writes go through Go's poller: Close then wakes a blocked Read, and write
	// deadlines work. Fd() must not be called again, as it would undo this.
	if err := setNonblock(master); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		_ = master.Close()
		return nil, fmt.Errorf("start %s: set non-blocking: %w", argv[0], err)
	}
	now := time.Now()
	s := &session{
		id: id, name: o.Name, command: display, dir: dir, mark: mark,
		seq:        seq,
		pid:        cmd.Process.Pid,
		startedAt:  now,
		cmd:        cmd,
		master:     master,
		wsem:       make(chan struct{}, 1),
		readerDone: make(chan struct{}),
		exitDone:   make(chan struct{}),
		ring:       ring.New(m.cfg.BufferSize),
		cols:       o.Cols, rows: o.Rows,
		lastActivity: now,
		pts:          ptsPath(master),
		kind:         kind,
		filter:       marks.Filter{Consume: kind != kindNone, Nonce: nonce},
		sh:           shellState{kind: kind, promptAt: -1, inputAt: -1, drawnAt: -1},
		image:        strings.Join(cmd.Args, "\x00") + "\x00",
		policy:       policy,
		history:      history,
	}
	registerLeader(s.pid, mark)
	m.startTerm(s)
	m.wg.Add(2)
	go func() { defer m.wg.Done(); s.readLoop() }()
	go func() { defer m.wg.Done(); s.waitLoop(m) }()
	return s, nil
}

func setNonblock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), true) }); err != nil {
		return err
	}
	return serr
}

// sessionEnv is base (nil: the inherited environment) with the session defaults, the
// history variables (for a history file, if any) and then extra laid over it. The
// overrides are simply appended, in key order so the result is the same every time:
// os/exec hands the program only the last value of a key that appears twice, and
// commandLine reads SHELL the same way.
func sessionEnv(base []string, history string, extra map[string]string) []string {
	over := maps.Clone(sessionDefaults)
	if history != "" {
		maps.Copy(over, historyVars(history))
	}
	maps.Copy(over, extra)
	env := slices.Clone(base)
	if base == nil {
		env = os.Environ()
	}
	for _, k := range slices.Sorted(maps.Keys(over)) {
		env = append(env, k+"="+over[k])
	}
	return env
}

// commandLine returns the argv to run and the command to show for it. A command runs
// under sh -c, which execs its last simple command (execLast): the session's process is
// the program's, not a shell waiting for it.
func commandLine(command string, env []string) (argv []string, display string) {
	if command != "" {
		return []string{"/bin/sh", "-c", execLast(command)}, command
	}
	var shell string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SHELL="); ok {
			shell = v
		}
	}
	for _, sh := range []string{shell, "/bin/bash", "/bin/sh"} {
		if isExecutable(sh) {
			return []string{sh, "-i"}, sh
		}
	}
	return []string{"/bin/sh", "-i"}, "/bin/sh"
}

func isExecutable(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// readHook, when set (by tests only), sees each chunk the reader read before the reader
// puts it into the session: a slow hook plays a reader held up by a loaded machine.
var readHook func(p []byte)

func (s *session) readLoop() {
	defer close(s.readerDone)
	buf := make([]byte, 64<<10)
	for {
		n, err := s.master.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.answerSync()
			continue
		}
		if n > 0 && readHook != nil {
			readHook(buf[:n])
		}
		if n > 0 {
			now := time.Now()
			s.mu.Lock()
			s.filter.Feed(buf[:n], outputSink{s, now})
			s.lastOutput = now
			s.lastActivity = now
			s.wakeLocked(s.marked)
			s.wakeViewersLocked()
			s.marked = false
			s.mu.Unlock()
			s.term.wake()
		}
		if err != nil {
			// EIO: every holder of the terminal's slave side is gone (Linux says so
			// instead of EOF). ErrClosed: stop closed the master.
			s.mu.Lock()
			s.filter.Flush(outputSink{s, time.Now()})
			s.wakeLocked(true)
			s.mu.Unlock()
			return
		}
	}
}

// syncReader returns once the reader goroutine has put everything it had read from the
// master when the call began into the ring (and the marks in it into the shell state),
// so that what the kernel says left the terminal can be looked for in the session. It
// cuts the reader's blocked Read short with a read deadline in the past; the reader
// answers the next time it is between reads. It returns false, at once, where the
// master takes no deadline, and when the reader is gone or ctx ends first.
func (s *session) syncReader(ctx context.Context) bool {
	s.mu.Lock()
	s.syncAsked++
	n := s.syncAsked
	s.mu.Unlock()
	if err := s.master.SetReadDeadline(time.Unix(1, 0)); err != nil {
		return false
	}
	for {
		s.mu.Lock()
		if s.syncDone >= n {
			s.mu.Unlock()
			return true
		}
		if s.synced == nil {
			s.synced = make(chan struct{})
		}
		ch := s.synced
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.readerDone:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// answerSync is the reader's side of syncReader, between two reads: everything it read
// so far is in the ring. The deadline is lifted first, so a syncReader that sets it
// again after this answer is answered by the next round, never left waiting.
func (s *session) answerSync() {
	_ = s.master.SetReadDeadline(time.Time{})
	s.mu.Lock()
	s.syncDone = s.syncAsked
	if s.synced != nil {
		close(s.synced)
		s.synced = nil
	}
	s.mu.Unlock()
}

func (s *session) waitLoop(m *Manager) {
	_ = s.cmd.Wait() // the status is in ProcessState; a non-zero exit is not an error here
	st := exitStatus{exited: true}
	if ps := s.cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			name := SignalName(ws.Signal())
			st.signal = &name
		} else {
			code := ps.ExitCode()
			st.code = &code
		}
	}
	s.mu.Lock()
	s.reaped = true
	s.mu.Unlock()

	// Publish the exit only once the output is drained, so a caller told "exited" has
	// seen everything, unless a background grandchild keeps the terminal open.
	t := time.NewTimer(exitDrain)
	select {
	case <-s.readerDone:
	case <-t.C:
	}
	t.Stop()
	s.mu.Lock()
	s.status = st
	s.wakeLocked(true)
	s.wakeViewersLocked()
	s.mu.Unlock()
	m.log.Debug("pty: session program exited", "id", s.id, "pid", s.pid, "status", st.String())
	close(s.exitDone)
}

// outputSink puts what the mark filter passes on into the session: output into the ring,
// marks into the shell state at the offset where they were. The session's mu is held.
type outputSink struct {
	s   *session
	now time.Time
}

func (o outputSink) Output(p []byte) { o.s.ring.Write(p) }
func (o outputSink) Mark(m marks.Mark) {
	o.s.sh.cols = o.s.cols
	o.s.sh.onMark(m, o.s.ring.End(), o.now, &o.s.ring)
	o.s.marked = true
	if m.Kind == 'A' {
		// The shell that marks its prompts now: one that an exec handed the integration
		// to is integrated too.
		if c := cmdlineOf(o.s.pid); c != "" {
			o.s.image = c
		}
	}
}
func (o outputSink) PasteMode(on bool) { o.s.sh.paste = on }

// wakeLocked tells the waiters that something changed: an event (an exit, the end of
// the output, an integration mark) or output alone.
func (s *session) wakeLocked(event bool) {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	if event && s.event != nil {
		close(s.event)
		s.event = nil
	}
}

// eventLocked returns a channel closed at the next event (see wakeLocked): a waiter
// that output alone cannot end sleeps through bulk output instead of waking at every
// read of it, which cost the program's throughput a goroutine wake-up per read.
func (s *session) eventLocked() <-chan struct{} {
	if s.event == nil {
		s.event = make(chan struct{})
	}
	return s.event
}

// changedLocked returns a channel closed at the next change.
func (s *session) changedLocked() <-chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// hasExited reports whether the exit has been published (what callers see as Exited).
func (s *session) hasExited() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status.exited
}

// kill sends sig to the program's process group and to every process of the session,
// also those that called setsid (see signalSession), and SIGCONT after it so a stopped job
// acts on it now rather than after the grace. It returns the processes other than the
// program that took sig.
func (s *session) kill(sig syscall.Signal) []procKey {
	ref := s.ref()
	hit := signalSession(ref, sig)
	if sig != syscall.SIGKILL && sig != syscall.SIGCONT && sig != syscall.SIGSTOP {
		signalSession(ref, syscall.SIGCONT)
	}
	return hit
}

// ref names the session to the process checks (sessionTree).
func (s *session) ref() sessionRef {
	s.mu.Lock()
	reaped := s.reaped
	s.mu.Unlock()
	// Once the leader is reaped its pid is free. While any process of the session is left,
	// the kernel keeps that number as their group and session id and hands it to nobody
	// else; if a process with that pid exists now, the number was reused, nothing of ours
	// is left in the group or the session, and the signal must not go to a stranger's.
	// What the mark finds is still ours.
	bySid := !reaped || syscall.Kill(s.pid, 0) == syscall.ESRCH
	return sessionRef{leader: s.pid, mark: s.mark, bySid: bySid, pts: s.pts}
}

// noteMembers looks at the session's processes, so that one that leaves later with its
// environment reset is still known as the session's (see escapees_linux.go).
func (s *session) noteMembers() {
	if !s.isClosed() {
		noteSession(s.ref())
	}
}

func (s *session) resize(cols, rows int) error {
	ws := creackpty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}
	rc, err := s.master.SyscallConn()
	if err == nil && s.isClosed() {
		err = os.ErrClosed
	}
	if err != nil {
		return err
	}
	// The ioctl is made through the raw fd here, not creackpty.Setsize, which calls Fd()
	// and would put the master back into blocking mode under the reader.
	// The resize is recorded at the end of the output under the same hold of mu as the
	// ioctl: the program redraws at the new size as soon as SIGWINCH arrives, and the
	// reader must not put that redraw in the ring before the place the screen is resized
	// at, or the emulator would draw it at the old size.
	var errno syscall.Errno
	s.mu.Lock()
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws)))
	})
	if err == nil && errno == 0 {
		s.widthChangedLocked(cols)
		s.cols, s.rows = cols, rows
		s.term.resized(s.ring.End(), cols, rows)
		s.wakeViewersLocked()
	}
	s.mu.Unlock()
	if err != nil {
		if s.isClosed() { // closed meanwhile: rawConn errors are not os.ErrClosed
			return os.ErrClosed
		}
		return err
	}
	if errno != 0 {
		return fmt.Errorf("set size: %w", errno)
	}
	return nil
}

// write delivers p to the program, giving up at deadline or when ctx ends, and returns how
// many bytes went in.
func (s *session) write(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case s.wsem <- struct{}{}:
	case <-t.C:
		return 0, os.ErrDeadlineExceeded
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-s.wsem }()
	if err := s.master.SetWriteDeadline(deadline); err != nil {
		return 0, err
	}
	// Cancellation pulls the deadline in, which is the only way to interrupt a Write.
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		_ = s.master.SetWriteDeadline(time.Unix(1, 0))
	})
	n, err := s.master.Write(p)
	if !stop() {
		<-done // it ran, or is running: let it finish before the next writer sets a deadline
		if ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			err = ctx.Err()
		}
	}
	if n > 0 {
		s.mu.Lock()
		s.lastActivity = time.Now()
		s.lastWrite = s.lastActivity
		s.mu.Unlock()
	}
	return n, err
}

func (s *session) info() Info {
	// Bounded: a listing waits for nobody's reader long.
	ctx, cancel := context.WithTimeout(context.Background(), inputConfirm)
	s.checkIntegration(ctx, time.Now())
	cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := s.dir
	if s.sh.cwd != "" {
		dir = s.sh.cwd // where the shell is now, as its integration reports
	}
	return Info{
		ID: s.id, Name: s.name, Command: s.command, Dir: dir,
		Pid: s.pid, Cols: s.cols, Rows: s.rows,
		StartedAt: s.startedAt, LastActivityAt: s.lastActivity,
		Exited: s.status.exited, ExitCode: s.status.code, Signal: s.status.signal,
		UnreadBytes: s.ring.End() - max(s.cursor, s.ring.Start()),
		Integration: s.sh.integrated(),
		Sandbox:     s.policy,
		Viewers:     len(s.viewers),
		PersonTyped: s.personInputs != s.personSeen,
	}
}
