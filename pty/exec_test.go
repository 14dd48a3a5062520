package pty

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// pythonScript skips a test without python3 and returns a directory holding script as
// script.py.
func pythonScript(t *testing.T, script string) string {
	t.Helper()
	needPython(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.py"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readingTerminal waits until the session's program is blocked reading its terminal: a
// C-c that comes between printing a prompt and the read is held back by Python until the
// read returns, which would then wait forever.
func readingTerminal(t *testing.T, m *Manager, id string) {
	t.Helper()
	if !foregroundKnown {
		t.Skip("needs the kernel's view of who reads the terminal")
	}
	s, err := m.get("test", id)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the program to read its terminal", func() bool { _, ok := s.foreground(); return ok })
}

// A command is the session's own process (the shell execs it): its exit code, the
// signal it died of and its pid are the program's, not those of a sh -c waiting for it.
func TestManager_Open_execsCommand(t *testing.T) {
	ctrlC := string([]byte{3})
	t.Run("exit after a handled C-c is exit 0", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		pythonScript(t, "")
		m := newManager(t, Config{})
		// The REPL catches C-c (KeyboardInterrupt) and goes on.
		o := OpenOptions{Command: "python3 -q", Env: map[string]string{"PYTHONSTARTUP": "", "PYTHON_BASIC_REPL": "1"}}
		res := mustOpen(t, m, o, ReadOptions{WaitFor: regexp.MustCompile(`>>> $`)})
		readingTerminal(t, m, res.SessionID)
		got := mustIO(t, m, res.SessionID, ctrlC, ReadOptions{WaitFor: regexp.MustCompile(`KeyboardInterrupt\n>>> $`)})
		if got.Reason != ReasonMatched {
			t.Fatalf("C-c: reason %q, want the REPL back at its prompt; output %q", got.Reason, got.Output)
		}
		mustIO(t, m, res.SessionID, "exit()\n", ReadOptions{WaitFor: never})
		end := readToExit(t, m, res.SessionID, ReadOptions{})
		if end.ExitCode == nil || *end.ExitCode != 0 || end.Signal != nil {
			t.Errorf("python3 exit() after a C-c: exit code %v, signal %v, want 0 and no signal", ptrString(end.ExitCode), ptrString(end.Signal))
		}
	})
	t.Run("sys.exit(3) after C-c is exit 3", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		dir := pythonScript(t, "import sys\ntry:\n    input('name? ')\nexcept KeyboardInterrupt:\n    print('interrupted')\n    sys.exit(3)\n")
		m := newManager(t, Config{})
		res := mustOpen(t, m, OpenOptions{Command: "python3 script.py", Dir: dir}, ReadOptions{WaitFor: regexp.MustCompile(`name\? $`)})
		readingTerminal(t, m, res.SessionID)
		mustIO(t, m, res.SessionID, ctrlC, ReadOptions{WaitFor: never})
		end := readToExit(t, m, res.SessionID, ReadOptions{})
		if end.ExitCode == nil || *end.ExitCode != 3 || end.Signal != nil || !strings.Contains(end.Output, "interrupted") {
			t.Errorf("sys.exit(3) after C-c: exit code %v, signal %v, output %q; want 3, no signal, interrupted",
				ptrString(end.ExitCode), ptrString(end.Signal), end.Output)
		}
	})
	t.Run("kill -INT of the pid reaches the program", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		dir := pythonScript(t, "import signal, sys\n"+
			"def stop(*_):\n    print('got SIGINT', flush=True)\n    sys.exit(0)\n"+
			"signal.signal(signal.SIGINT, stop)\nprint('ready', flush=True)\nwhile True:\n    signal.pause()\n")
		m := newManager(t, Config{})
		res := mustOpen(t, m, OpenOptions{Command: "python3 script.py", Dir: dir}, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^ready$`)})
		if err := syscall.Kill(res.Pid, syscall.SIGINT); err != nil {
			t.Fatalf("kill -INT %d: %v", res.Pid, err)
		}
		got := mustIO(t, m, res.SessionID, "", ReadOptions{WaitFor: regexp.MustCompile(`got SIGINT`)})
		if got.Reason != ReasonMatched {
			t.Fatalf("after kill -INT %d: reason %q, output %q; want the program to have got the signal", res.Pid, got.Reason, got.Output)
		}
		end := readToExit(t, m, res.SessionID, ReadOptions{})
		if end.ExitCode == nil || *end.ExitCode != 0 {
			t.Errorf("exit code %v, want 0 (the program's own exit after the signal)", ptrString(end.ExitCode))
		}
	})
}

// ptrString shows an optional result field: its value, or nil.
func ptrString[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
