package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// graphRunner reads the pid of a graph's runner from tasks_status.
func graphRunner(t *testing.T, s *server, graphID string) (pid int, live bool) {
	t.Helper()
	st := structuredOf(t, s.toolCall("tasks_status", map[string]any{"graphId": graphID, "logTail": 0}))
	r, _ := st["runner"].(map[string]any)
	if r == nil {
		t.Fatalf("tasks_status has no runner: %v", st)
	}
	return int(r["pid"].(float64)), r["live"] == true
}

// runnerOf is graphRunner for a detached runner: the process must be gone when the test
// ends.
func runnerOf(t *testing.T, s *server, graphID string) (pid int, live bool) {
	t.Helper()
	pid, live = graphRunner(t, s, graphID)
	t.Cleanup(func() {
		if !processGone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("detached runner %d still runs at the end of the test", pid)
		}
	})
	return pid, live
}

// runsOf reads the side-effect file the tasks append one line to per run.
func runsOf(t *testing.T, ws string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, "runs.txt"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// A detached graph outlives its client: the client closes the server at once, the work
// completes, and a new server reads the result; a graph of the same server that is not
// detached still ends RUNNER_SHUTDOWN.
func TestE2E_DetachedOutlivesClient(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"detach": true, "tasks": []any{
		// The first task waits for the server to be gone: the graph can only finish in
		// its own runner.
		map[string]any{"id": "a", "command": "while [ ! -e server.gone ]; do sleep 0.02; done; echo a >> runs.txt"},
		map[string]any{"id": "b", "command": "echo b >> runs.txt", "dependsOn": []string{"a"}},
	}}))
	if run["detached"] != true {
		t.Fatalf("tasks_run detached = %v, want true", run["detached"])
	}
	graphID := run["graphId"].(string)
	attached := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "long", "command": "exec sleep 1000"},
	}}))["graphId"].(string)
	runner, live := runnerOf(t, s, graphID)
	if runner == s.cmd.Process.Pid || !live {
		t.Fatalf("runner pid %d (live %v), server pid %d: want a live runner of its own", runner, live, s.cmd.Process.Pid)
	}
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Fatalf("server exit = %d", code)
	}
	if err := os.WriteFile(filepath.Join(ws, "server.gone"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	s2 := startServer(t, ws)
	s2.initialize()
	st := s2.waitGraph(graphID)
	if st["status"] != "succeeded" {
		t.Errorf("detached graph = %v, want succeeded: %v", st["status"], st)
	}
	if got := runsOf(t, ws); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("runs = %v, want [a b]", got)
	}
	ts := tasksOf(s2.waitGraph(attached))
	if ts["long"]["status"] != "failed" || ts["long"]["errorCode"] != "RUNNER_SHUTDOWN" {
		t.Errorf("attached task = %v/%v, want failed/RUNNER_SHUTDOWN", ts["long"]["status"], ts["long"]["errorCode"])
	}
	waitGone(t, runner) // it exits once its graph is finished
	waitNoMarkedProcess(t, graphID)
}

// kill -9 of a detached runner mid-graph: its running task ends RUNNER_RESTARTED, its
// dependent is skipped, its pending task is adopted by the live server and runs once,
// and nothing is left running.
func TestE2E_DetachedRunnerKilled(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws, "--lease", "1s", "--stale-after", "1s")
	s.initialize()
	run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"detach": true, "maxParallel": 1, "tasks": []any{
		map[string]any{"id": "long", "command": "echo long >> runs.txt; echo $$ > long.pid; exec sleep 1000"},
		map[string]any{"id": "dep", "command": "echo dep >> runs.txt", "dependsOn": []string{"long"}},
		map[string]any{"id": "later", "command": "echo later >> runs.txt"},
	}}))
	graphID := run["graphId"].(string)
	if run["detached"] != true {
		t.Fatalf("tasks_run detached = %v, want true", run["detached"])
	}
	long := readPid(t, filepath.Join(ws, "long.pid"))
	runner, _ := runnerOf(t, s, graphID)
	syscall.Kill(runner, syscall.SIGKILL)
	waitGone(t, runner)
	waitGone(t, long) // the parent-death signal points at the runner

	ts := tasksOf(s.waitGraph(graphID))
	if ts["long"]["status"] != "failed" || ts["long"]["errorCode"] != "RUNNER_RESTARTED" {
		t.Errorf("long = %v/%v, want failed/RUNNER_RESTARTED", ts["long"]["status"], ts["long"]["errorCode"])
	}
	if ts["dep"]["status"] != "skipped" {
		t.Errorf("dep = %v, want skipped", ts["dep"]["status"])
	}
	if ts["later"]["status"] != "succeeded" {
		t.Errorf("later = %v, want succeeded (adopted by the server)", ts["later"]["status"])
	}
	got := runsOf(t, ws)
	slices.Sort(got)
	if !slices.Equal(got, []string{"later", "long"}) {
		t.Errorf("runs = %v, want each of long and later once", got)
	}
	if pid, _ := graphRunner(t, s, graphID); pid != s.cmd.Process.Pid {
		t.Errorf("graph's runner pid = %d, want the server's %d (it adopted the graph)", pid, s.cmd.Process.Pid)
	}
	waitNoMarkedProcess(t, graphID)
}

// A detached graph is cancelled from a second server, after the first one is gone; its
// runner then exits and nothing of it is left running.
func TestE2E_DetachedCancelFromAnotherServer(t *testing.T) {
	ws := t.TempDir()
	a := startServer(t, ws, "--detach")
	a.initialize()
	run := structuredOf(t, a.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "serve", "command": "echo $$ > serve.pid; exec sleep 1000"},
		map[string]any{"id": "after", "command": "true", "dependsOn": []string{"serve"}},
	}}))
	graphID := run["graphId"].(string)
	if run["detached"] != true {
		t.Fatalf("tasks_run with --detach: detached = %v, want true", run["detached"])
	}
	serve := readPid(t, filepath.Join(ws, "serve.pid"))
	runner, _ := runnerOf(t, a, graphID)
	a.stdin.Close()
	a.waitExit()
	if processGone(serve) {
		t.Fatalf("the server's shutdown stopped a detached task")
	}

	b := startServer(t, ws)
	b.initialize()
	structuredOf(t, b.toolCall("tasks_cancel", map[string]any{"graphId": graphID, "graceMs": 500}))
	st := b.waitGraph(graphID)
	ts := tasksOf(st)
	if st["status"] != "cancelled" || ts["serve"]["status"] != "cancelled" {
		t.Errorf("after cancel: graph %v, serve %v/%v", st["status"], ts["serve"]["status"], ts["serve"]["errorCode"])
	}
	waitGone(t, serve)
	waitGone(t, runner)
	waitNoMarkedProcess(t, graphID)
}

// `tasks run -f` submits a graph from a terminal, detached: it prints the id (--json: the
// tasks_run result), and with --wait exits with the graph's outcome.
func TestOperator_RunDetached(t *testing.T) {
	ws := t.TempDir()
	write := func(name string, graph map[string]any) string {
		b, err := json.Marshal(graph)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(ws, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.json", map[string]any{"name": "ok", "tasks": []any{
		map[string]any{"id": "a", "command": "echo a >> runs.txt"},
		map[string]any{"id": "b", "command": "echo b >> runs.txt", "dependsOn": []string{"a"}},
	}})
	bad := write("bad.json", map[string]any{"tasks": []any{map[string]any{"id": "x", "command": "exit 3"}}})
	cycle := write("cycle.json", map[string]any{"tasks": []any{
		map[string]any{"id": "p", "command": "true", "dependsOn": []string{"q"}},
		map[string]any{"id": "q", "command": "true", "dependsOn": []string{"p"}},
	}})

	out := runBinary(t, nil, "tasks", "run", "-f", ok, "--wait", "--workspace", ws)
	id := strings.TrimSpace(out.stdout)
	if out.code != 0 || !strings.HasPrefix(id, "g-") {
		t.Fatalf("run --wait of a graph that succeeds = %+v, want exit 0 and its id", out)
	}
	if got := runsOf(t, ws); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("runs = %v, want [a b]", got)
	}
	if out := runBinary(t, nil, "tasks", "run", "-f", bad, "--wait", "--workspace", ws); out.code != 1 {
		t.Errorf("run --wait of a graph that fails = %+v, want exit 1", out)
	}
	if out := runBinary(t, nil, "tasks", "run", "-f", cycle, "--workspace", ws); out.code != 1 || !strings.Contains(out.stderr, "cycle") {
		t.Errorf("run of a cyclic graph = %+v, want exit 1 naming the cycle", out)
	}
	out = runBinary(t, nil, "tasks", "run", "-f", ok, "--json", "--workspace", ws)
	var res map[string]any
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != 0 {
		t.Fatalf("run --json = %+v (%v)", out, err)
	}
	if res["detached"] != true || res["created"] != true || res["taskCount"] != float64(2) {
		t.Errorf("run --json = %v, want a created, detached graph of 2 tasks", res)
	}
	g := res["graphId"].(string)
	if out := runBinary(t, nil, "tasks", "logs", "-f", "--exit-status", g, "--workspace", ws); out.code != 0 {
		t.Errorf("the graph submitted with --json = %+v, want it to succeed", out)
	}
	waitNoMarkedProcess(t, g)
}

// A detached runner does not linger: it exits when the workspace's state directory is
// removed (stopping its tasks), and when it lost its lease to a server that adopted its
// graph (it stalled).
func TestE2E_DetachedRunnerDoesNotLinger(t *testing.T) {
	t.Run("StateDirRemoved", func(t *testing.T) {
		ws := t.TempDir()
		s := startServer(t, ws, "--lease", "1s")
		s.initialize()
		run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"detach": true, "tasks": []any{
			map[string]any{"id": "long", "command": "echo $$ > long.pid; exec sleep 1000"},
		}}))
		long := readPid(t, filepath.Join(ws, "long.pid"))
		runner, _ := runnerOf(t, s, run["graphId"].(string))
		s.stdin.Close()
		s.waitExit()
		if err := os.RemoveAll(filepath.Join(ws, ".mcp-harness")); err != nil {
			t.Fatal(err)
		}
		waitGone(t, runner)
		waitGone(t, long)
	})
	t.Run("LeaseLost", func(t *testing.T) {
		ws := t.TempDir()
		s := startServer(t, ws, "--lease", "1s", "--stale-after", "1s")
		s.initialize()
		run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"detach": true, "tasks": []any{
			map[string]any{"id": "long", "command": "echo $$ > long.pid; exec sleep 1000"},
		}}))
		graphID := run["graphId"].(string)
		long := readPid(t, filepath.Join(ws, "long.pid"))
		runner, _ := runnerOf(t, s, graphID)
		// The runner is stopped while this test holds the database's write lock, so it
		// cannot be stopped inside a write of its own (a lease renewal): a stopped process
		// holding that lock would keep the server from writing at all, which is not what
		// this test is about, and under load it happened.
		release := holdDBLock(t, ws)
		syscall.Kill(runner, syscall.SIGSTOP)
		release()
		t.Cleanup(func() { syscall.Kill(runner, syscall.SIGCONT) })
		// The server judges the stalled runner gone, adopts the graph and kills its task.
		ts := tasksOf(s.waitGraph(graphID))
		if ts["long"]["status"] != "failed" || ts["long"]["errorCode"] != "RUNNER_RESTARTED" {
			t.Errorf("long = %v/%v, want failed/RUNNER_RESTARTED", ts["long"]["status"], ts["long"]["errorCode"])
		}
		waitGone(t, long)
		syscall.Kill(runner, syscall.SIGCONT)
		waitGone(t, runner) // it finds its lease lost, and exits
		if ts := tasksOf(s.waitGraph(graphID)); ts["long"]["errorCode"] != "RUNNER_RESTARTED" {
			t.Errorf("after the runner woke: long = %v/%v", ts["long"]["status"], ts["long"]["errorCode"])
		}
	})
}

// 20 detached graphs at once, each with its own runner; the time from tasks_run to its
// answer (detached: true) is logged (median and slowest).
func TestE2E_DetachedMany(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	const n = 20
	var ids []string
	var took []time.Duration
	for i := range n {
		start := time.Now()
		run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"detach": true, "tasks": []any{
			map[string]any{"id": "wait", "command": "while [ ! -e gate ]; do sleep 0.02; done"},
			map[string]any{"id": "log", "command": fmt.Sprintf("echo g%d >> runs.txt", i), "dependsOn": []string{"wait"}},
		}}))
		took = append(took, time.Since(start))
		if run["detached"] != true {
			t.Fatalf("graph %d: detached = %v", i, run["detached"])
		}
		ids = append(ids, run["graphId"].(string))
	}
	runners := map[int]bool{}
	for _, id := range ids {
		pid, live := runnerOf(t, s, id)
		if !live || pid == s.cmd.Process.Pid {
			t.Errorf("graph %s: runner pid %d live %v", id, pid, live)
		}
		runners[pid] = true
	}
	if len(runners) != n {
		t.Errorf("%d runners for %d detached graphs, want one each", len(runners), n)
	}
	slices.Sort(took)
	t.Logf("tasks_run detach:true answered in median %v, slowest %v (%d graphs)", took[n/2], took[n-1], n)
	if err := os.WriteFile(filepath.Join(ws, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if st := s.waitGraph(id); st["status"] != "succeeded" {
			t.Errorf("graph %s = %v", id, st["status"])
		}
	}
	if got := runsOf(t, ws); len(got) != n {
		t.Errorf("%d runs, want %d", len(got), n)
	}
	for pid := range runners {
		waitGone(t, pid)
	}
}

// The MCP Tasks facade treats a detached graph like any graph: with --detach, tasks_run
// answers a task; the task outlives the server that made it, and another server gets it
// (tasks/get) and cancels it (tasks/cancel).
func TestFacade_E2EDetached(t *testing.T) {
	ws := t.TempDir()
	a := startServer(t, ws, "--mcp-tasks", "--detach")
	a.initialize()
	created := a.runAsTask(declaring(), map[string]any{"id": "forever", "command": "echo $$ > forever.pid; exec sleep 600"})
	taskID, _ := created["taskId"].(string)
	if created["resultType"] != "task" || taskID == "" {
		t.Fatalf("tasks_run declaring the extension = %v, want a task", created)
	}
	forever := readPid(t, filepath.Join(ws, "forever.pid"))
	runner, _ := runnerOf(t, a, taskID)
	a.stdin.Close()
	a.waitExit()

	b := startServer(t, ws, "--mcp-tasks")
	b.initialize()
	if got := resultOf(t, b.taskMethod("tasks/get", taskID)); got["status"] != "working" {
		t.Errorf("tasks/get of the detached graph from another server = %v, want working", got)
	}
	if got := resultOf(t, b.taskMethod("tasks/cancel", taskID)); got["resultType"] != "complete" {
		t.Errorf("tasks/cancel = %v", got)
	}
	if st := b.waitGraph(taskID); st["status"] != "cancelled" {
		t.Errorf("graph after tasks/cancel = %v", st["status"])
	}
	if got := resultOf(t, b.taskMethod("tasks/get", taskID)); got["status"] != "cancelled" {
		t.Errorf("tasks/get after tasks/cancel = %v", got)
	}
	waitGone(t, forever)
	waitGone(t, runner)
}
