package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func (s *server) waitGraph(graphID string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(2 * e2eWait)
	for time.Now().Before(deadline) {
		st := structuredOf(s.t, s.toolCall("tasks_status", map[string]any{"graphId": graphID, "waitMs": 20000}))
		if st["status"] != "running" {
			return st
		}
	}
	s.t.Fatalf("graph %s still running", graphID)
	return nil
}

func tasksOf(st map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, x := range st["tasks"].([]any) {
		m := x.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

// The task tools through the built binary: a diamond with a failing branch and an
// independent one, a timeout, a refused graph, and a cancel that leaves nothing running.
func TestE2E_TaskGraphs(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()

	run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"name": "diamond", "tasks": []any{
		map[string]any{"id": "a", "command": "echo a"},
		map[string]any{"id": "b", "command": "echo b; exit 1", "dependsOn": []string{"a"}},
		map[string]any{"id": "c", "command": "echo c", "dependsOn": []string{"a"}},
		map[string]any{"id": "d", "command": "echo d", "dependsOn": []string{"b", "c"}},
		map[string]any{"id": "solo", "command": "cat; echo read-nothing"},
		map[string]any{"id": "hang", "command": "sleep 600", "timeoutSec": 1},
	}}))
	graphID := run["graphId"].(string)
	st := s.waitGraph(graphID)
	tasks := tasksOf(st)
	want := map[string][2]any{
		"a": {"succeeded", nil}, "b": {"failed", "EXIT_NONZERO"}, "c": {"succeeded", nil},
		"d": {"skipped", "UPSTREAM_FAILED"}, "solo": {"succeeded", nil}, "hang": {"failed", "TIMEOUT"},
	}
	for id, w := range want {
		if tasks[id]["status"] != w[0] || tasks[id]["errorCode"] != w[1] {
			t.Errorf("task %s = %v/%v, want %v/%v", id, tasks[id]["status"], tasks[id]["errorCode"], w[0], w[1])
		}
	}
	if log := tasks["solo"]["log"].(map[string]any)["text"]; log != "read-nothing\n" {
		t.Errorf("solo log = %q", log)
	}

	bad := s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "x", "command": "true", "dependsOn": []string{"y"}},
		map[string]any{"id": "y", "command": "true", "dependsOn": []string{"x"}},
	}})
	if bad["isError"] != true || !strings.HasPrefix(resultText(bad), "CYCLE: ") {
		t.Errorf("cyclic graph = %v", bad)
	}
	list := structuredOf(t, s.toolCall("tasks_list", map[string]any{}))
	if n := len(list["graphs"].([]any)); n != 1 {
		t.Errorf("graphs after a refused one = %d, want 1", n)
	}

	pidFile := filepath.Join(ws, "grandchild.pid")
	run = structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "serve", "command": "sleep 1000 & echo $! > grandchild.pid; wait"},
	}}))
	graphID = run["graphId"].(string)
	pid := readPid(t, pidFile)
	s.toolCall("tasks_cancel", map[string]any{"graphId": graphID, "graceMs": 500})
	st = s.waitGraph(graphID)
	if st["status"] != "cancelled" {
		t.Errorf("cancelled graph status = %v", st["status"])
	}
	waitGone(t, pid)
}

// Closing the server while a task runs records it RUNNER_SHUTDOWN and kills it.
func TestE2E_ShutdownStopsTasks(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"maxParallel": 1, "tasks": []any{
		map[string]any{"id": "long", "command": "sleep 1000 & echo $! > pid; wait"},
		map[string]any{"id": "next", "command": "true"},
	}}))
	pid := readPid(t, filepath.Join(ws, "pid"))
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit code = %d", code)
	}
	waitGone(t, pid)

	s2 := startServer(t, ws)
	s2.initialize()
	st := structuredOf(t, s2.toolCall("tasks_status", map[string]any{"graphId": run["graphId"]}))
	tasks := tasksOf(st)
	if tasks["long"]["status"] != "failed" || tasks["long"]["errorCode"] != "RUNNER_SHUTDOWN" ||
		tasks["next"]["status"] != "cancelled" || tasks["next"]["errorCode"] != "RUNNER_SHUTDOWN" {
		t.Errorf("after shutdown: long=%v/%v next=%v/%v", tasks["long"]["status"], tasks["long"]["errorCode"], tasks["next"]["status"], tasks["next"]["errorCode"])
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(e2eWait)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	t.Fatalf("no pid in %s", path)
	return 0
}
