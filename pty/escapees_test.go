//go:build linux

package pty

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/internal/reaper"
)

// subreaper makes the test process a child subreaper for the test, as the server is.
func subreaper(t *testing.T) {
	t.Helper()
	stop, err := reaper.Start()
	if err != nil {
		t.Skipf("cannot become a child subreaper here: %v", err)
	}
	t.Cleanup(stop)
}

func needSetsid(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid (util-linux) is not installed")
	}
}

// escapeePid is the line an escapee prints (after bash's next prompt, as it runs in the
// background).
var escapeePid = regexp.MustCompile(`ESC_PID=(\d+)\r?\n`)

// escapee starts, at the prompt of a bash session, a program that leaves the session
// with setsid, and returns its pid once it runs outside the session.
func escapee(t *testing.T, m *Manager, res ReadResult, line string) int {
	t.Helper()
	got := mustIO(t, m, res.SessionID, line+"\n", ReadOptions{WaitFor: escapeePid})
	sm := escapeePid.FindStringSubmatch(got.Output)
	if sm == nil {
		t.Fatalf("no ESC_PID=<n> in %q", got.Output)
	}
	pid, _ := strconv.Atoi(sm[1])
	eventually(t, "the escapee to leave the session", func() bool {
		sid, err := unix.Getsid(pid)
		return err == nil && sid == pid
	})
	return pid
}

// Close ends what the session started with setsid, whether its parent still runs or it
// was orphaned, and leaves no zombie behind.
func TestManager_Close_endsSetsidProcesses(t *testing.T) {
	for _, tt := range []struct{ name, line string }{
		// bash runs the job in its own group, so setsid forks, and the forking parent
		// exits at once: the sleep is an orphan, adopted by the subreaper.
		{"orphaned", "setsid sh -c 'echo ESC_PID=$$; exec sleep 1000' &"},
		// setsid -w waits for its child: the sleep's parent is still in the session.
		{"parent alive", "setsid -w sh -c 'echo ESC_PID=$$; exec sleep 1000' &"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) })
			needSetsid(t)
			subreaper(t)
			m := newManager(t, Config{})
			res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
			pid := escapee(t, m, res, tt.line)
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // should it survive
			if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
				t.Fatal(err)
			}
			if state, ppid, ok := procStat(pid); ok {
				t.Errorf("after Close, the setsid'd sleep %d is still there: state %c, parent %d", pid, state, ppid)
			}
		})
	}
}

// waitPort and the session's ports see a server that left the session with setsid.
func TestManager_WaitPort_setsidServer(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	needSetsid(t)
	needPython(t)
	subreaper(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	pid := escapee(t, m, res, fmt.Sprintf("setsid sh -c 'echo ESC_PID=$$; exec python3 -m http.server --bind 127.0.0.1 %d >/dev/null 2>&1' &", port))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	got := mustIO(t, m, res.SessionID, "", ReadOptions{WaitPort: port, WaitFor: regexp.MustCompile(`(?m)^never-printed$`)})
	if got.Reason != ReasonPort {
		t.Fatalf("waitPort %d on a setsid'd server: reason %q, want %q; output %q", port, got.Reason, ReasonPort, got.Output)
	}
	if infos := m.List(); len(infos) != 1 || !slices.Contains(infos[0].Ports, port) {
		t.Errorf("List() = %+v, want the session with port %d", infos, port)
	}
	if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
		t.Fatal(err)
	}
	if state, _, ok := procStat(pid); ok {
		t.Errorf("after Close, the setsid'd server %d is still there (state %c)", pid, state)
	}
}

// Close ends an orphan whose environment was reset, so that it carries no mark: one that
// kept the session's terminal (env -i setsid -f), and one that holds no descriptor of it
// but was seen as the session's before its parent died (env -i, and sudo, whose
// env_reset drops the mark and whose use_pty gives the command a terminal of its own).
func TestManager_Close_endsEscapeesWithoutMark(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		sudo       bool
		killParent bool // the escapee is seen while its parent waits; then the parent dies
	}{
		{"env -i, terminal kept", "env -i setsid -f sh -c 'echo ESC_PID=$$; exec sleep 3173'", false, false},
		{"env -i, seen, then orphaned", "env -i setsid -w sh -c 'echo ESC_PID=$$; exec sleep 3174 </dev/null >/dev/null 2>&1' &", false, true},
		{"sudo, seen, then orphaned", "sudo setsid -w sh -c 'echo ESC_PID=$$; exec sleep 3172 </dev/null >/dev/null 2>&1' &", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) })
			needSetsid(t)
			if tt.sudo {
				if err := exec.Command("sudo", "-n", "true").Run(); err != nil {
					t.Skipf("sudo without a password: %v", err)
				}
			}
			subreaper(t)
			m := newManager(t, Config{})
			res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
			pid := escapee(t, m, res, tt.line)
			t.Cleanup(func() { // should it survive
				if syscall.Kill(pid, syscall.SIGKILL) == syscall.EPERM {
					_ = exec.Command("sudo", "-n", "kill", "-KILL", strconv.Itoa(pid)).Run()
				}
			})
			if tt.killParent {
				_, parent, ok := procStat(pid)
				if !ok {
					t.Fatalf("escapee %d is gone before Close", pid)
				}
				mustIO(t, m, res.SessionID, "", ReadOptions{Timeout: 10 * time.Millisecond}) // any call looks at the session
				s, err := m.get("test", res.SessionID)
				if err != nil {
					t.Fatal(err)
				}
				// The call's look runs after its answer (noteMembersLater): wait for it to end.
				eventually(t, "the call's look at the session's processes", func() bool { return !s.noting.Load() })
				if err := syscall.Kill(parent, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the escapee to be adopted by the subreaper", func() bool {
					_, ppid, ok := procStat(pid)
					return ok && ppid == os.Getpid()
				})
			}
			if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
				t.Fatal(err)
			}
			if state, ppid, ok := procStat(pid); ok {
				t.Errorf("after Close, the escapee %d is still there: state %c, parent %d", pid, state, ppid)
			}
		})
	}
}
