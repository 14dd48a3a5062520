package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/storetest"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// shortBusy makes a lock held past the busy timeout (and the store's retries) take
// seconds: the hidden test flag for the busy timeout.
var shortBusy = []string{"--busy-timeout", "200ms"}

// holdDBLock takes the write lock of workspace ws's database, as another process would,
// until the returned function is called.
func holdDBLock(t *testing.T, ws string) (release func()) {
	t.Helper()
	return storetest.HoldWriteLock(t, filepath.Join(ws, workspace.StateDirName, workspace.DBFileName))
}

// waitStderr waits until the server has logged want.
func (s *server) waitStderr(want string) {
	s.t.Helper()
	deadline := time.Now().Add(e2eWait)
	for !strings.Contains(s.stderr.String(), want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("the server never logged %q", want)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// gatedGraph is a task that runs until the file gate exists, and a chain behind it.
func gatedGraph(ws string) map[string]any {
	gate := filepath.Join(ws, "gate")
	return map[string]any{"tasks": []any{
		map[string]any{"id": "a", "command": "echo $$ > a.pid; while [ ! -f " + gate + " ]; do sleep 0.01; done; echo a done"},
		map[string]any{"id": "b", "command": "echo b ran", "dependsOn": []string{"a"}},
		map[string]any{"id": "c", "command": "echo c ran", "dependsOn": []string{"b"}},
	}}
}

// Another process holds the database's write lock past the busy timeout while a task
// finishes: no state is dropped, the server says it waits (and when it is through),
// tasks_run answers a retryable BUSY within --max-wait, and once the lock is released the
// dependents run and the graph finishes.
func TestE2E_LockHeldPastBusyTimeout(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws, append(shortBusy, "--max-wait", "3s")...)
	s.initialize()
	graphID := structuredOf(t, s.toolCall("tasks_run", gatedGraph(ws)))["graphId"].(string)
	readPid(t, filepath.Join(ws, "a.pid"))

	release := holdDBLock(t, ws)
	os.WriteFile(filepath.Join(ws, "gate"), nil, 0o600)
	s.waitStderr("waiting for the database to record task states")
	res := s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "x", "command": "true"}}})
	if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "BUSY") {
		t.Errorf("tasks_run with the database locked = %q, want a BUSY error", text)
	}
	release()

	ts := tasksOf(s.waitGraph(graphID))
	for _, id := range []string{"a", "b", "c"} {
		if ts[id]["status"] != "succeeded" {
			t.Errorf("task %s = %v/%v, want succeeded", id, ts[id]["status"], ts[id]["errorCode"])
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, workspace.StateDirName, "logs", graphID, "c.log")); string(b) != "c ran\n" {
		t.Errorf("c's log = %q: the dependent did not run", b)
	}
	s.waitStderr("the database records task states again")
	if strings.Contains(s.stderr.String(), "INTERNAL") || strings.Contains(s.stderr.String(), "level=ERROR") {
		t.Errorf("the server logged an error:\n%s", s.stderr)
	}
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	checkIntegrity(t, ws)
}

// A clean shutdown while another process holds the lock: the server still exits 0 in
// time, saving the states it could not write, and the next server records them, so the
// task that exited 0 is succeeded (not RUNNER_RESTARTED) and the tasks that never started
// are cancelled with RUNNER_SHUTDOWN.
func TestE2E_ShutdownWithDatabaseLocked(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws, shortBusy...)
	s.initialize()
	graphID := structuredOf(t, s.toolCall("tasks_run", gatedGraph(ws)))["graphId"].(string)
	readPid(t, filepath.Join(ws, "a.pid"))
	release := holdDBLock(t, ws)
	os.WriteFile(filepath.Join(ws, "gate"), nil, 0o600)
	s.waitStderr("waiting for the database to record task states")
	s.signal(syscall.SIGTERM)
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit code of a shutdown with the database locked = %d, want 0", code)
	}
	if !strings.Contains(s.stderr.String(), "saved for the next runner") {
		t.Errorf("the server did not say it saved the states it could not write:\n%s", s.stderr)
	}
	release()

	s2 := startServer(t, ws, shortBusy...)
	s2.initialize()
	ts := tasksOf(s2.waitGraph(graphID))
	want := map[string][2]any{"a": {"succeeded", nil}, "b": {"cancelled", "RUNNER_SHUTDOWN"}, "c": {"cancelled", "RUNNER_SHUTDOWN"}}
	for id, w := range want {
		if ts[id]["status"] != w[0] || ts[id]["errorCode"] != w[1] {
			t.Errorf("task %s = %v/%v, want %v/%v", id, ts[id]["status"], ts[id]["errorCode"], w[0], w[1])
		}
	}
	if ts["a"]["exitCode"] != float64(0) {
		t.Errorf("a's exit code = %v, want 0", ts["a"]["exitCode"])
	}
	checkIntegrity(t, ws)
}
