package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// storedTasks reads a graph's tasks from the workspace's store: what a later server, the
// operator CLI or a person with sqlite3 would find.
func storedTasks(t *testing.T, ws, graphID string) map[string]store.TaskRow {
	t.Helper()
	db := openStore(t, ws)
	defer db.Close()
	rows, err := db.GraphTasks(t.Context(), graphID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.TaskRow{}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out
}

func wantStored(t *testing.T, rows map[string]store.TaskRow, id, status, code string) {
	t.Helper()
	r := rows[id]
	got := ""
	if r.ErrorCode != nil {
		got = *r.ErrorCode
	}
	if r.Status != status || got != code {
		msg := ""
		if r.Message != nil {
			msg = *r.Message
		}
		t.Errorf("task %s = %s/%q (%s), want %s/%q", id, r.Status, got, msg, status, code)
	}
}

// markedProcesses lists the processes whose environment carries a task marker of the
// graph (MCP_HARNESS_TASK=<graphId>/...): a task's process or anything it started.
func markedProcesses(graphID string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || processGone(pid) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(env), "MCP_HARNESS_TASK="+graphID+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitNoMarkedProcess fails unless every process of the graph's tasks is gone in time.
func waitNoMarkedProcess(t *testing.T, graphID string) {
	t.Helper()
	deadline := time.Now().Add(e2eWait)
	for {
		left := markedProcesses(graphID)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes of graph %s outlived the server: %v", graphID, left)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// chainGraph is a running task with a grandchild and a chain of tasks pending behind it.
func chainGraph(n int) map[string]any {
	tasks := []any{map[string]any{"id": "long", "command": "sleep 1000 & echo $! > grandchild.pid; echo $$ > long.pid; wait"}}
	for i := 1; i <= n; i++ {
		dep := "long"
		if i > 1 {
			dep = fmt.Sprintf("c%d", i-1)
		}
		tasks = append(tasks, map[string]any{"id": fmt.Sprintf("c%d", i), "command": "true", "dependsOn": []string{dep}})
	}
	return map[string]any{"tasks": tasks}
}

func wantShutdownRecorded(t *testing.T, ws, graphID string, n int) {
	t.Helper()
	rows := storedTasks(t, ws, graphID)
	wantStored(t, rows, "long", "failed", "RUNNER_SHUTDOWN")
	for i := 1; i <= n; i++ {
		wantStored(t, rows, fmt.Sprintf("c%d", i), "cancelled", "RUNNER_SHUTDOWN")
	}
}

// SIGHUP (the terminal of a hand-run server closing) is a clean shutdown: the running task
// is stopped and recorded, every task of the chain behind it is recorded cancelled with
// RUNNER_SHUTDOWN, and no process of the graph outlives the server.
func TestE2E_SIGHUPIsACleanShutdown(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	graphID := structuredOf(t, s.toolCall("tasks_run", chainGraph(50)))["graphId"].(string)
	readPid(t, filepath.Join(ws, "grandchild.pid"))
	s.signal(syscall.SIGHUP)
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit code after SIGHUP = %d (%v), want 0", code, s.state)
	}
	wantShutdownRecorded(t, ws, graphID, 50)
	waitNoMarkedProcess(t, graphID)
}

// A client that closes its end of stdout while stdin stays open: the server's next write
// fails with EPIPE, which ends the session cleanly instead of killing the server with
// SIGPIPE.
func TestE2E_ClosedStdoutIsACleanShutdown(t *testing.T) {
	ws := t.TempDir()
	cmd := exec.Command(binPath, "stdio", "--workspace", ws)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // the server holds the only write end
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	})
	out := bufio.NewReader(r)
	call := func(id int, method string, params any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		for {
			line, err := out.ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading the response to %s: %v", method, err)
			}
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["id"] != nil {
				return m
			}
		}
	}
	call(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "1"}})
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	resp := call(2, "tools/call", map[string]any{"name": "tasks_run", "arguments": chainGraph(5)})
	res, _ := resp["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	graphID, _ := sc["graphId"].(string)
	if graphID == "" {
		t.Fatalf("tasks_run: %v", resp)
	}
	readPid(t, filepath.Join(ws, "grandchild.pid"))

	r.Close() // the client stops reading; stdin stays open
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
		"params": map[string]any{"name": "tasks_list", "arguments": map[string]any{}}})
	if _, err := stdin.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(e2eWait):
		t.Fatalf("the server still runs %v after its stdout was closed", e2eWait)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signaled() || ws.ExitStatus() != 0 {
		t.Fatalf("server ended with %v, want exit status 0 (a clean shutdown, not SIGPIPE)", cmd.ProcessState)
	}
	wantShutdownRecorded(t, ws, graphID, 5)
	waitNoMarkedProcess(t, graphID)
}

// The documented fast exit: a second SIGTERM during the shutdown exits at once with status
// 1, but first records the running task (which ignores SIGTERM, so the shutdown would
// otherwise wait out its grace) failed with RUNNER_SHUTDOWN and kills it.
func TestE2E_SecondSIGTERMRecordsWhatItCan(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	graphID := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "stubborn", "command": "trap '' TERM; echo $$ > stubborn.pid; while :; do sleep 0.05; done"},
		map[string]any{"id": "next", "command": "true", "dependsOn": []string{"stubborn"}},
	}}))["graphId"].(string)
	pid := readPid(t, filepath.Join(ws, "stubborn.pid"))
	s.signal(syscall.SIGTERM)
	deadline := time.Now().Add(e2eWait)
	for !strings.Contains(s.stderr.String(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatal("the server did not start shutting down")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	s.signal(syscall.SIGTERM)
	if code := s.waitExit(); code != 1 {
		t.Fatalf("exit code after a second SIGTERM = %d, want 1", code)
	}
	rows := storedTasks(t, ws, graphID)
	wantStored(t, rows, "stubborn", "failed", "RUNNER_SHUTDOWN")
	wantStored(t, rows, "next", "cancelled", "RUNNER_SHUTDOWN")
	waitGone(t, pid)
	waitNoMarkedProcess(t, graphID)
}
