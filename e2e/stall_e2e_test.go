package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
)

// fastLease makes a stalled server be judged gone in seconds rather than 45 s: the hidden
// test flags for the lease and the stale time.
var fastLease = []string{"--lease", "2s", "--stale-after", "2s"}

// ownerOf is the runner that owns a graph now, as the store has it.
func ownerOf(t *testing.T, ws, graphID string) store.Runner {
	t.Helper()
	db := openStore(t, ws)
	defer db.Close()
	g, err := db.GetGraph(t.Context(), graphID)
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.GetRunner(t.Context(), g.RunnerID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A server stopped (SIGSTOP, as a debugger, a frozen cgroup or heavy swapping do) past its
// lease and the stale time is judged gone by a peer, which adopts its graph. When it wakes
// it registers again as a new runner before it accepts anything: its next graph belongs to
// a live runner of its process, the peer can cancel it, the operator's list shows live
// owners, and when the woken server is then killed -9 a third server reconciles what it
// accepted after waking.
func TestE2E_StalledServerComesBackAsANewRunner(t *testing.T) {
	ws := t.TempDir()
	a := startServer(t, ws, fastLease...)
	a.initialize()
	b := startServer(t, ws, fastLease...)
	b.initialize()
	g1 := structuredOf(t, a.toolCall("tasks_run", map[string]any{"maxParallel": 1, "tasks": []any{
		map[string]any{"id": "long", "command": "echo $$ > long.pid; exec sleep 1000"},
		map[string]any{"id": "after", "command": "true", "dependsOn": []string{"long"}},
		map[string]any{"id": "free", "command": "echo adopted"},
	}}))["graphId"].(string)
	longPid := readPid(t, filepath.Join(ws, "long.pid"))
	first := ownerOf(t, ws, g1).ID

	a.signal(syscall.SIGSTOP)
	stopped := true
	t.Cleanup(func() {
		if stopped {
			a.cmd.Process.Signal(syscall.SIGCONT) // let the cleanup's kill through
		}
	})
	st := b.waitGraph(g1) // b adopts the graph once a is judged gone, and finishes it
	ts := tasksOf(st)
	if ts["long"]["errorCode"] != "RUNNER_RESTARTED" || ts["after"]["status"] != "skipped" || ts["free"]["status"] != "succeeded" {
		t.Fatalf("the adopted graph = long %v/%v, after %v, free %v", ts["long"]["status"], ts["long"]["errorCode"], ts["after"]["status"], ts["free"]["status"])
	}
	waitGone(t, longPid)
	a.signal(syscall.SIGCONT)
	stopped = false

	// The first graph the woken server accepts belongs to a new, live runner of its process.
	g2 := structuredOf(t, a.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "serve", "command": "echo $$ > serve.pid; exec sleep 1000"},
	}}))["graphId"].(string)
	servePid := readPid(t, filepath.Join(ws, "serve.pid"))
	if r := ownerOf(t, ws, g2); r.ID == first || !r.Live(time.Now()) || r.Pid != a.cmd.Process.Pid {
		t.Errorf("the woken server's graph belongs to %+v, want a new live runner of pid %d (not %s)", r, a.cmd.Process.Pid, first)
	}
	// The adopted graph ran once: the woken server did not run its tasks again.
	if b, _ := os.ReadFile(filepath.Join(ws, ".mcp-harness", "logs", g1, "free.log")); string(b) != "adopted\n" {
		t.Errorf("free's log = %q, want it to have run once", b)
	}

	// The peer cancels the woken server's graph through the store.
	res := b.toolCall("tasks_cancel", map[string]any{"graphId": g2, "graceMs": 500})
	if res["isError"] == true {
		t.Fatalf("tasks_cancel from the peer: %s", resultText(res))
	}
	if st := a.waitGraph(g2); st["status"] != "cancelled" {
		t.Errorf("the cancelled graph = %v", st["status"])
	}
	waitGone(t, servePid)

	// The operator's list shows every graph's owner live.
	var list struct {
		Graphs []struct {
			ID     string `json:"id"`
			Runner struct {
				ID   string `json:"id"`
				Live bool   `json:"live"`
			} `json:"runner"`
		} `json:"graphs"`
	}
	if err := json.Unmarshal([]byte(runTasks(t, ws, "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Graphs) != 2 {
		t.Fatalf("tasks list shows %d graphs, want 2", len(list.Graphs))
	}
	for _, g := range list.Graphs {
		if !g.Runner.Live {
			t.Errorf("tasks list shows graph %s's runner %s gone, want live", g.ID, g.Runner.ID)
		}
	}
	if text := runTasks(t, ws, "list"); strings.Contains(text, "gone") {
		t.Errorf("tasks list says gone:\n%s", text)
	}

	// With the peer shut down, the woken server takes a graph and is killed -9: a third
	// server reconciles it.
	b.stdin.Close()
	if code := b.waitExit(); code != 0 {
		t.Fatalf("peer exit code %d", code)
	}
	g3 := structuredOf(t, a.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "run", "command": "echo $$ > run.pid; exec sleep 1000"},
		map[string]any{"id": "next", "command": "true", "dependsOn": []string{"run"}},
	}}))["graphId"].(string)
	runPid := readPid(t, filepath.Join(ws, "run.pid"))
	a.signal(syscall.SIGKILL)
	a.waitExit()
	waitGone(t, runPid)
	c := startServer(t, ws, fastLease...)
	c.initialize()
	ts = tasksOf(c.waitGraph(g3))
	if r := ownerOf(t, ws, g3); r.Pid != c.cmd.Process.Pid {
		t.Errorf("the graph of the killed server belongs to %+v, want the third server (pid %d)", r, c.cmd.Process.Pid)
	}
	if ts["run"]["status"] != "failed" || ts["run"]["errorCode"] != "RUNNER_RESTARTED" ||
		ts["next"]["status"] != "skipped" || ts["next"]["errorCode"] != "UPSTREAM_FAILED" {
		t.Errorf("after the third server reconciled: run %v/%v, next %v/%v", ts["run"]["status"], ts["run"]["errorCode"], ts["next"]["status"], ts["next"]["errorCode"])
	}
	deadline := time.Now().Add(e2eWait)
	for !strings.Contains(a.stderr.String(), "registered again as a new runner") {
		if time.Now().After(deadline) {
			t.Fatalf("the woken server did not say it registered again; its log:\n%s", a.stderr)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	checkIntegrity(t, ws)
}
