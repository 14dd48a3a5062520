package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// logFaultGraph is a task that prints far more than its log can take, a dependent, and an
// independent task that prints nothing.
func logFaultGraph(fill string) map[string]any {
	return map[string]any{"tasks": []any{
		map[string]any{"id": "fill", "command": fill},
		map[string]any{"id": "dep", "command": "echo dep", "dependsOn": []string{"fill"}},
		map[string]any{"id": "quiet", "command": "true"},
	}}
}

// checkLogFault checks what a user would see of a log write that failed: the task failed,
// its record says why its log is cut short, the dependent was skipped, the independent
// task succeeded and the graph finished.
func checkLogFault(t *testing.T, st map[string]any, code, says string) {
	t.Helper()
	ts := tasksOf(st)
	msg, _ := ts["fill"]["message"].(string)
	if ts["fill"]["status"] != "failed" || ts["fill"]["errorCode"] != code || !strings.Contains(msg, says) {
		t.Errorf("fill = %v/%v %q, want failed/%s saying %q", ts["fill"]["status"], ts["fill"]["errorCode"], msg, code, says)
	}
	if ts["dep"]["status"] != "skipped" || ts["quiet"]["status"] != "succeeded" {
		t.Errorf("dep = %v, quiet = %v, want skipped and succeeded", ts["dep"]["status"], ts["quiet"]["status"])
	}
	if st["status"] != "failed" || st["finishedAt"] == nil {
		t.Errorf("graph = %v (finished %v), want failed and finished", st["status"], st["finishedAt"])
	}
}

// The logs directory on a full file system (a 256 KiB tmpfs): a write to a task's log fails
// with ENOSPC. The server stops taking the task's output, so the task's next write kills it
// with SIGPIPE. No state is lost, the task's record says its log's file system is full,
// and once there is room again the server runs the next graph as usual.
func TestE2E_LogOnFullDisk(t *testing.T) {
	ws := t.TempDir()
	logs := filepath.Join(ws, workspace.StateDirName, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", logs).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs for the logs (this needs root with CAP_SYS_ADMIN): %v %s; the tasks package's TestEngine_LogWriteFault covers a failed log write without it", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", logs).Run() }) // after the server's cleanup
	s := startServer(t, ws)
	s.initialize()
	graphID := structuredOf(t, s.toolCall("tasks_run", logFaultGraph("seq 1 10000000")))["graphId"].(string)
	st := s.waitGraph(graphID)
	checkLogFault(t, st, "SIGNALED", "no space left on device")
	if sig := tasksOf(st)["fill"]["signal"]; sig != "SIGPIPE" {
		t.Errorf("fill's signal = %v, want SIGPIPE", sig)
	}

	// Room again: the next graph runs and logs as usual.
	if err := os.Truncate(filepath.Join(logs, graphID, "fill.log"), 0); err != nil {
		t.Fatal(err)
	}
	next := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "ok", "command": "echo ok"}}}))["graphId"].(string)
	if st := s.waitGraph(next); st["status"] != "succeeded" {
		t.Errorf("the graph after the disk had room again = %v", st["status"])
	}
	if b, _ := os.ReadFile(filepath.Join(logs, next, "ok.log")); string(b) != "ok\n" {
		t.Errorf("ok.log = %q", b)
	}
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	checkIntegrity(t, ws)
}

// A task's own file size limit (ulimit -f, RLIMIT_FSIZE) does not cut its log short: the
// task writes its output to a pipe, which no file size limit applies to, and the server
// writes the log. (It used to write the log itself, so it was killed by SIGXFSZ at 16
// blocks.) The limit still holds for the files the task writes itself.
func TestE2E_TaskFileSizeLimitSparesItsLog(t *testing.T) {
	const want = 78888897 // the bytes of seq 1 10000000
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "fill", "command": "ulimit -f 16; exec seq 1 10000000"},
		map[string]any{"id": "own", "command": "ulimit -f 16; exec seq 1 10000000 > own.txt"},
	}}))["graphId"].(string)
	st := s.waitGraph(graphID)
	ts := tasksOf(st)
	if ts["fill"]["status"] != "succeeded" {
		t.Errorf("fill = %v/%v %v, want succeeded", ts["fill"]["status"], ts["fill"]["errorCode"], ts["fill"]["message"])
	}
	fi, err := os.Stat(filepath.Join(ws, workspace.StateDirName, "logs", graphID, "fill.log"))
	if err != nil || fi.Size() != want {
		t.Errorf("fill.log: %v, %v; want %d bytes", fi, err, want)
	}
	if ts["own"]["status"] != "failed" || ts["own"]["signal"] != "SIGXFSZ" {
		t.Errorf("own = %v/%v, want failed by SIGXFSZ: the limit holds for the task's own files", ts["own"]["status"], ts["own"]["signal"])
	}
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	checkIntegrity(t, ws)
}
