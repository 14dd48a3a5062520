package pty

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitLong bounds every wait in the tests. It is far above what any of them needs on an
// idle machine, so a loaded CI box slows the tests down instead of failing them; no test
// asserts an upper bound on wall-clock time.
const waitLong = 30 * time.Second

// never is a pattern that matches no text: with it a read waits for the exit (or the
// timeout) and not for output to settle.
var never = regexp.MustCompile(`[^\s\S]`)

func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	m := NewManager(cfg)
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		if err := m.Shutdown(context.WithoutCancel(t.Context())); err != nil {
			t.Errorf("Shutdown() = %v, want nil", err)
		}
	})
	return m
}

// mustOpen opens a session or fails the test. A zero Timeout waits up to waitLong: a
// test means "return at once" by calling m.Open itself.
func mustOpen(t *testing.T, m *Manager, o OpenOptions, r ReadOptions) ReadResult {
	t.Helper()
	if r.Timeout == 0 {
		r.Timeout = waitLong
	}
	res, err := m.Open(t.Context(), o, r)
	if err != nil {
		t.Fatalf("Open(%q) = %v", o.Command, err)
	}
	return res
}

// mustIO writes input and reads, or fails the test. A zero Timeout waits up to waitLong:
// a test means "return at once" by calling m.IO itself.
func mustIO(t *testing.T, m *Manager, id, input string, r ReadOptions) ReadResult {
	t.Helper()
	if r.Timeout == 0 {
		r.Timeout = waitLong
	}
	res, err := m.IO(t.Context(), id, Input{Data: []byte(input)}, r)
	if err != nil {
		t.Fatalf("IO(%s, %q) = %v", id, input, err)
	}
	return res
}

// readToExit reads a session's whole output once its program has exited.
func readToExit(t *testing.T, m *Manager, id string, r ReadOptions) ReadResult {
	t.Helper()
	var zero int64
	r.Since, r.WaitFor, r.Timeout = &zero, never, waitLong
	res := mustIO(t, m, id, "", r)
	if res.Reason != ReasonExited || !res.Exited {
		t.Fatalf("IO(%s) after exit: reason %q, exited %v, want %q, true; output %q", id, res.Reason, res.Exited, ReasonExited, res.Output)
	}
	return res
}

// bash is an interactive bash with a known prompt and no startup files, so the tests do
// not depend on the machine's dotfiles.
func bash(t *testing.T) OpenOptions {
	return OpenOptions{
		Command: "exec bash --norc --noprofile -i",
		Env:     map[string]string{"PS1": "PROMPT> ", "HOME": t.TempDir(), "HISTFILE": "/dev/null"},
	}
}

var prompt = regexp.MustCompile(`PROMPT> $`)

// eventually waits for cond, checking it every few milliseconds, up to waitLong. Used
// only for conditions outside the package's notifications (processes appearing or
// going away), never as a substitute for them.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitLong, what)
		}
		select {
		case <-tick.C:
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s", what)
		}
	}
}

// procStat returns the state and parent of pid, ok false if there is no such process.
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	ppid, _ = strconv.Atoi(string(f[1]))
	return f[0][0], ppid, true
}

// processGone reports whether pid is dead. A dead grandchild is re-parented to init, and
// the init of some sandboxes never reaps: a zombie that is not our child counts as gone,
// since it runs nothing and is not ours to reap. Our own children must be fully gone.
func processGone(pid int) bool {
	state, ppid, ok := procStat(pid)
	if !ok {
		return true
	}
	return (state == 'Z' || state == 'X') && ppid != os.Getpid()
}

// processesIn lists the processes in session sid running the program comm.
func processesIn(sid int, comm string) []int {
	var pids []int
	for _, pid := range sessionMembers(sid) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		if err == nil && strings.TrimSpace(string(b)) == comm {
			if state, _, _ := procStat(pid); state != 'Z' {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

var pidLine = regexp.MustCompile(`(?m)^PID=(\d+)$`)

func parsePid(t *testing.T, out string) int {
	t.Helper()
	m := pidLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no PID=<n> line in %q", out)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// fakeRecorder records the calls a Recorder gets, and fails them with err.
type fakeRecorder struct {
	err error

	mu     sync.Mutex
	opened []Record
	closed []string
}

func (f *fakeRecorder) SessionOpened(_ context.Context, r Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, r)
	return f.err
}

func (f *fakeRecorder) SessionClosed(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = append(f.closed, id)
	return f.err
}

func (f *fakeRecorder) calls() ([]Record, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.opened), slices.Clone(f.closed)
}
