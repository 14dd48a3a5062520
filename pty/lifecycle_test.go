package pty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestManager_IO_exitCode(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "echo bye; exit 3"}, ReadOptions{})
	got := readToExit(t, m, res.SessionID, ReadOptions{})
	if got.ExitCode == nil || *got.ExitCode != 3 || got.Signal != nil || got.Output != "bye\n" {
		t.Fatalf("exit: code %v signal %v output %q, want 3, nil, bye", got.ExitCode, got.Signal, got.Output)
	}

	_, err := m.IO(t.Context(), res.SessionID, Input{Data: []byte("x")}, ReadOptions{})
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit code 3") {
		t.Errorf("IO(input) on an exited session = %v, want ErrExited naming the exit code", err)
	}
	// A plain read is fine and answers at once.
	read := mustIO(t, m, res.SessionID, "", ReadOptions{})
	if read.Reason != ReasonExited || read.Output != "" || !read.Exited {
		t.Errorf("IO() on an exited session: reason %q output %q, want %q, empty", read.Reason, read.Output, ReasonExited)
	}
	if err := m.Resize(res.SessionID, 80, 24); err != nil {
		t.Errorf("Resize() on an exited session = %v, want nil", err)
	}
	infos := m.List()
	if len(infos) != 1 || !infos[0].Exited || infos[0].ExitCode == nil || *infos[0].ExitCode != 3 {
		t.Errorf("List() = %+v, want the exited session until it is closed", infos)
	}
	cr, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace)
	if err != nil || cr.ExitCode == nil || *cr.ExitCode != 3 {
		t.Errorf("Close() = %+v, %v, want exit code 3", cr, err)
	}
	if infos := m.List(); len(infos) != 0 {
		t.Errorf("List() after Close = %+v, want none", infos)
	}
}

func TestManager_IO_signalled(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, sig := range []string{"TERM", "KILL"} {
		res := mustOpen(t, m, OpenOptions{Command: "kill -" + sig + " $$"}, ReadOptions{})
		got := readToExit(t, m, res.SessionID, ReadOptions{})
		if got.Signal == nil || *got.Signal != "SIG"+sig || got.ExitCode != nil {
			t.Errorf("kill -%s: signal %v exit code %v, want SIG%s, nil", sig, got.Signal, got.ExitCode, sig)
		}
	}
}

func TestManager_IO_exitWhileGrandchildHoldsTerminal(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	// The job must ignore SIGHUP: the kernel hangs up the foreground group when the
	// session leader exits. It inherits the ignored signal at fork, so there is no race.
	res := mustOpen(t, m, OpenOptions{Command: "trap '' HUP; sleep 1000 & echo PID=$!; exit 0"}, ReadOptions{})
	got := readToExit(t, m, res.SessionID, ReadOptions{})
	pid := parsePid(t, got.Output)
	if got.ExitCode == nil || *got.ExitCode != 0 {
		t.Errorf("exit code %v, want 0", got.ExitCode)
	}
	if processGone(pid) {
		t.Fatalf("background sleep %d died with its parent; the test needs it alive", pid)
	}
	if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the background sleep to die", func() bool { return processGone(pid) })
}

func TestManager_Close_killsBackgroundJobs(t *testing.T) {
	t.Run("same process group", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		m := newManager(t, Config{})
		res := mustOpen(t, m, OpenOptions{Command: "sleep 1000 & echo PID=$!; wait"}, ReadOptions{WaitFor: pidLine})
		pid := parsePid(t, res.Output)
		cr, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, waitLong)
		if err != nil {
			t.Fatal(err)
		}
		if cr.Signal == nil || *cr.Signal != "SIGHUP" {
			t.Errorf("Close() signal %v, want SIGHUP", cr.Signal)
		}
		eventually(t, "the background sleep to die", func() bool { return processGone(pid) })
		if !processGone(res.Pid) {
			t.Errorf("the session's shell %d was not reaped", res.Pid)
		}
	})
	t.Run("job in its own group ignoring SIGHUP", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		m := newManager(t, Config{})
		res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
		// An interactive shell puts the job in a process group of its own; only the
		// session (and SIGKILL after the grace) reaches it.
		got := mustIO(t, m, res.SessionID, "(trap '' HUP; exec sleep 1000) & echo PID=$!\n", ReadOptions{WaitFor: pidLine})
		pid := parsePid(t, got.Output)
		eventually(t, "the job to run sleep", func() bool { return len(processesIn(res.Pid, "sleep")) == 1 })
		if pgid, _ := syscall.Getpgid(pid); pgid == res.Pid {
			t.Fatalf("job %d is in the shell's process group; the test needs job control", pid)
		}
		if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the job to die", func() bool { return processGone(pid) })
	})
}

func TestManager_Close_output(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	rec := &fakeRecorder{}
	m := newManager(t, Config{Recorder: rec})
	// The program prints its first line, then waits for a gate file before the rest
	// (more than one read of the terminal can hold): Open returns at the first line, and
	// the rest arrives only once the gate exists, so it is certainly left unread however
	// slowly the reader runs.
	gate := filepath.Join(t.TempDir(), "gate")
	cmd := "echo 1; while [ ! -e " + gate + " ]; do sleep 0.01; done; seq 2 50000; exec sleep 1000"
	res := mustOpen(t, m, OpenOptions{Command: cmd}, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^1$`)})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var total int64
	for i := 1; i <= 50000; i++ {
		total += int64(len(strconv.Itoa(i))) + 2
	}
	s, _ := m.get("test", res.SessionID)
	eventually(t, "all the output to be buffered", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.ring.End() == total
	})
	cr, err := m.Close(t.Context(), res.SessionID, syscall.SIGTERM, waitLong)
	if err != nil {
		t.Fatal(err)
	}
	if cr.SessionID != res.SessionID || cr.Signal == nil || *cr.Signal != "SIGTERM" || cr.ExitCode != nil {
		t.Errorf("Close() = id %q signal %v code %v, want %s, SIGTERM, nil", cr.SessionID, cr.Signal, cr.ExitCode, res.SessionID)
	}
	// The unread part starts wherever Open's read stopped, possibly inside a line, but
	// never at the start of the output, which Open returned.
	if strings.HasPrefix(cr.Output, "1\n2\n") || !strings.HasSuffix(cr.Output, "49999\n50000\n") || !strings.Contains(cr.Output, "bytes omitted") || len(cr.Output) > DefaultMaxBytes+100 {
		t.Errorf("Close() output (%d bytes) is not the capped unread tail: %q...", len(cr.Output), cr.Output[:min(60, len(cr.Output))])
	}
	if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); !errors.Is(err, ErrNoSession) {
		t.Errorf("second Close() = %v, want ErrNoSession", err)
	}
	_, closed := rec.calls()
	if !cmp.Equal(closed, []string{res.SessionID}) {
		t.Errorf("SessionClosed calls %q, want [%s]", closed, res.SessionID)
	}
}

func TestManager_Open_failureLeavesNothing(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	rec := &fakeRecorder{}
	m := newManager(t, Config{Recorder: rec})
	_, err := m.Open(t.Context(), OpenOptions{Command: "echo hi", Dir: "/no/such/dir"}, ReadOptions{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "/no/such/dir") {
		t.Errorf("Open(dir missing) = %v, want ErrInvalid naming the dir", err)
	}
	// A cancelled first wait leaves nothing either: the caller never got the id.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := m.Open(ctx, OpenOptions{Command: "exec sleep 1000"}, ReadOptions{WaitFor: never, Timeout: waitLong})
		done <- err
	}()
	eventually(t, "Open to wait", func() bool {
		for _, s := range m.sessionsForTest() {
			if s.waiting() > 0 {
				return true
			}
		}
		return false
	})
	pid := m.List()[0].Pid
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Open() with ctx cancelled = %v, want context.Canceled", err)
	}
	if infos := m.List(); len(infos) != 0 {
		t.Errorf("List() after failed Opens = %+v, want none", infos)
	}
	eventually(t, "the cancelled session's program to be reaped", func() bool { return processGone(pid) })
	opened, closed := rec.calls()
	if len(opened) != 1 || !cmp.Equal(closed, []string{opened[0].ID}) {
		t.Errorf("recorder opened %+v closed %q, want the cancelled session opened and closed", opened, closed)
	}
}

func TestManager_Open_limit(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	rec := &fakeRecorder{}
	m := newManager(t, Config{MaxSessions: 2, Recorder: rec})
	ready := ReadOptions{WaitFor: regexp.MustCompile(`ready`)}
	s1 := mustOpen(t, m, OpenOptions{Command: "echo ready; exec sleep 1000"}, ready)
	s2 := mustOpen(t, m, OpenOptions{Command: "echo ready; read x"}, ready)

	_, err := m.Open(t.Context(), OpenOptions{Command: "true"}, ReadOptions{})
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrLimit) || le.Max != 2 || !cmp.Equal(le.Closable, []string{"s1", "s2"}) {
		t.Fatalf("Open() over the limit = %v, want *LimitError{2, [s1 s2]}", err)
	}
	if !strings.Contains(err.Error(), "s1, s2") {
		t.Errorf("limit error %q does not name what to close", err)
	}

	// Once s2 has exited, it makes room.
	mustIO(t, m, s2.SessionID, "\n", ReadOptions{})
	readToExit(t, m, s2.SessionID, ReadOptions{})
	s3 := mustOpen(t, m, OpenOptions{Command: "echo ready; exec sleep 1000"}, ready)
	var ids []string
	for _, info := range m.List() {
		ids = append(ids, info.ID)
	}
	if want := []string{s1.SessionID, s3.SessionID}; !cmp.Equal(ids, want) {
		t.Errorf("List() after eviction = %q, want %q", ids, want)
	}
	if _, closed := rec.calls(); !cmp.Equal(closed, []string{s2.SessionID}) {
		t.Errorf("SessionClosed calls %q, want the evicted %s", closed, s2.SessionID)
	}
	if _, err := m.IO(t.Context(), s2.SessionID, Input{}, ReadOptions{}); !errors.Is(err, ErrNoSession) {
		t.Errorf("IO(evicted) = %v, want ErrNoSession", err)
	}
}

func TestManager_Shutdown(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	rec := &fakeRecorder{}
	m := newManager(t, Config{Grace: 200 * time.Millisecond, Recorder: rec})
	var pids []int

	sh := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	job := mustIO(t, m, sh.SessionID, "(trap '' HUP; exec sleep 1000) & echo PID=$!\n", ReadOptions{WaitFor: pidLine})
	pids = append(pids, sh.Pid, parsePid(t, job.Output))
	eventually(t, "the job to run sleep", func() bool { return len(processesIn(sh.Pid, "sleep")) == 1 })
	stubborn := mustOpen(t, m, OpenOptions{Command: `trap '' HUP; echo ready; while :; do sleep 1; done`}, ReadOptions{WaitFor: regexp.MustCompile(`ready`)})
	pids = append(pids, stubborn.Pid)
	exited := mustOpen(t, m, OpenOptions{Command: "trap '' HUP; sleep 1000 & echo PID=$!"}, ReadOptions{WaitFor: pidLine})
	pids = append(pids, exited.Pid, parsePid(t, exited.Output))

	if err := m.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown() = %v", err)
	}
	for _, pid := range pids {
		if !processGone(pid) {
			// Killed processes may take a moment to be torn down by the kernel.
			eventually(t, fmt.Sprintf("process %d to be gone", pid), func() bool { return processGone(pid) })
		}
	}
	for _, pid := range []int{sh.Pid, stubborn.Pid, exited.Pid} {
		if _, _, ok := procStat(pid); ok {
			t.Errorf("session leader %d is still there after Shutdown (not reaped)", pid)
		}
	}
	if infos := m.List(); len(infos) != 0 {
		t.Errorf("List() after Shutdown = %+v", infos)
	}
	if _, err := m.Open(t.Context(), OpenOptions{Command: "true"}, ReadOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Open() after Shutdown = %v, want ErrClosed", err)
	}
	if _, err := m.IO(t.Context(), sh.SessionID, Input{}, ReadOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("IO() after Shutdown = %v, want ErrClosed", err)
	}
	if _, closed := rec.calls(); len(closed) != 3 {
		t.Errorf("SessionClosed calls %q, want one per session", closed)
	}
}

// TestManager_Close_readerBlocked holds the terminal open from outside the session, so
// the reader never sees end of output: Close and Shutdown must still return, which only
// works if closing the master wakes the blocked read.
func TestManager_Close_readerBlocked(t *testing.T) {
	for _, viaShutdown := range []bool{false, true} {
		t.Run(fmt.Sprintf("shutdown=%v", viaShutdown), func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) })
			m := newManager(t, Config{Grace: 100 * time.Millisecond})
			res := mustOpen(t, m, OpenOptions{Command: "echo ready; exec sleep 1000"}, ReadOptions{WaitFor: regexp.MustCompile(`ready`)})
			tty, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", res.Pid))
			if err != nil {
				t.Fatal(err)
			}
			slave, err := os.OpenFile(tty, os.O_RDWR|syscall.O_NOCTTY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer slave.Close()
			if viaShutdown {
				err = m.Shutdown(t.Context())
			} else {
				_, err = m.Close(t.Context(), res.SessionID, syscall.SIGKILL, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestManager_Open_env(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	t.Setenv("TERM", "dumb")
	t.Setenv("PAGER", "less")
	t.Setenv("GIT_PAGER", "less")
	m := newManager(t, Config{})
	cmd := `echo "T=$TERM P=$PAGER G=$GIT_PAGER X=$X"`
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"X": "1"}, "T=xterm-256color P=cat G=cat X=1\n"},
		{map[string]string{"TERM": "vt100", "PAGER": "more"}, "T=vt100 P=more G=cat X=\n"},
	} {
		res := mustOpen(t, m, OpenOptions{Command: cmd, Env: tt.env}, ReadOptions{})
		if got := readToExit(t, m, res.SessionID, ReadOptions{}); got.Output != tt.want {
			t.Errorf("env %v: output %q, want %q", tt.env, got.Output, tt.want)
		}
	}
}

func TestManager_Open_dirAndRecorder(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	rec := &fakeRecorder{err: errors.New("database is on fire")} // logged, not fatal
	m := newManager(t, Config{Recorder: rec})
	dir := t.TempDir()
	res := mustOpen(t, m, OpenOptions{Command: "pwd; exec sleep 1000", Dir: dir, Name: "web"}, ReadOptions{WaitFor: regexp.MustCompile(`\n`)})
	if res.Output != dir+"\n" {
		t.Errorf("pwd = %q, want %q", res.Output, dir)
	}
	opened, _ := rec.calls()
	if len(opened) != 1 {
		t.Fatalf("SessionOpened calls %+v, want one", opened)
	}
	r := opened[0]
	if r.ID != res.SessionID || r.Pid != res.Pid || r.Pgid != res.Pid || r.Name != "web" || r.Dir != dir || r.Command != "pwd; exec sleep 1000" || r.StartedAt.IsZero() {
		t.Errorf("SessionOpened(%+v), want id %s, pid and pgid %d, the name, dir and command", r, res.SessionID, res.Pid)
	}
	if pgid, err := syscall.Getpgid(res.Pid); err != nil || pgid != r.Pgid {
		t.Errorf("getpgid(%d) = %d, %v, want the recorded %d", res.Pid, pgid, err, r.Pgid)
	}
	if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
		t.Errorf("Close() = %v, want nil despite the recorder failing", err)
	}
	if _, closed := rec.calls(); !cmp.Equal(closed, []string{res.SessionID}) {
		t.Errorf("SessionClosed calls %q, want [%s]", closed, res.SessionID)
	}
}

func TestManager_List(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	a := mustOpen(t, m, OpenOptions{Command: "echo aaa; exec sleep 1000", Name: "a", Cols: 80, Rows: 24}, ReadOptions{WaitFor: regexp.MustCompile(`aaa\n`)})
	b := mustOpen(t, m, OpenOptions{Command: "echo bbbb; exec sleep 1000"}, ReadOptions{Timeout: 50 * time.Millisecond, WaitFor: never})
	infos := m.List()
	if len(infos) != 2 || infos[0].ID != a.SessionID || infos[1].ID != b.SessionID {
		t.Fatalf("List() = %+v, want %s then %s", infos, a.SessionID, b.SessionID)
	}
	ia := infos[0]
	if ia.Name != "a" || ia.Cols != 80 || ia.Rows != 24 || ia.Pid != a.Pid || ia.Exited || ia.UnreadBytes != 0 || ia.StartedAt.IsZero() || ia.LastActivityAt.Before(ia.StartedAt) {
		t.Errorf("List()[0] = %+v", ia)
	}
	if infos[1].Cols != DefaultCols || infos[1].Rows != DefaultRows {
		t.Errorf("List()[1] size %dx%d, want the default", infos[1].Cols, infos[1].Rows)
	}
}
