package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/internal/cli"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/tasks"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in the top-level testdata/cli/")

// runOut is one run of the built binary.
type runOut struct {
	stdout, stderr string
	code           int
}

// runEnv is added to every run of the binary: a binary built with -race sleeps a second before it
// exits 0, to let other goroutines report; the CLI's work is done by then.
var runEnv = []string{"GORACE=atexit_sleep_ms=0"}

// runBinary runs the built binary with args and env added to the test's environment (the
// MCP_HARNESS_ variables and NO_COLOR cleared first, so the caller's shell does not leak in).
func runBinary(t *testing.T, env []string, args ...string) runOut {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, cli.EnvPrefix) && !strings.HasPrefix(kv, "NO_COLOR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, runEnv...)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %v: %v", args, err)
	}
	return runOut{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// runTasks runs `mcp-harness tasks args... --workspace ws` and wants exit status 0.
func runTasks(t *testing.T, ws string, args ...string) string {
	t.Helper()
	out := runBinary(t, nil, append(append([]string{"tasks"}, args...), "--workspace", ws)...)
	if out.code != 0 {
		t.Fatalf("tasks %v: exit %d, stderr:\n%s", args, out.code, out.stderr)
	}
	return out.stdout
}

// submit runs a graph through the live server and returns its id.
func submit(t *testing.T, s *server, args map[string]any) string {
	t.Helper()
	res := s.toolCall("tasks_run", args)
	if res["isError"] == true {
		t.Fatalf("tasks_run: %s", resultText(res))
	}
	return structuredOf(t, res)["graphId"].(string)
}

var (
	graphIDPattern  = regexp.MustCompile(`g-[0-9A-Z]{16}`)
	runnerIDPattern = regexp.MustCompile(`r-[0-9A-Z]{16}`)
)

// normalize replaces what changes from run to run in CLI output: the workspace path, graph
// and runner ids (numbered in order of appearance), and, in JSON, the values of times,
// durations, pids and host names.
func normalize(t *testing.T, ws, out string, isJSON bool) string {
	t.Helper()
	if resolved, err := filepath.EvalSymlinks(ws); err == nil {
		out = strings.ReplaceAll(out, resolved, "<ws>")
	}
	out = strings.ReplaceAll(out, ws, "<ws>")
	for _, p := range []struct {
		re   *regexp.Regexp
		name string
	}{{graphIDPattern, "graph"}, {runnerIDPattern, "runner"}} {
		seen := map[string]string{}
		out = p.re.ReplaceAllStringFunc(out, func(id string) string {
			if _, ok := seen[id]; !ok {
				seen[id] = "<" + p.name + string(rune('1'+len(seen))) + ">"
			}
			return seen[id]
		})
	}
	if !isJSON {
		return out
	}
	if !json.Valid([]byte(out)) {
		t.Fatalf("not JSON:\n%s", out)
	}
	// The output is indented, one field a line: replace values in place, keeping the
	// order of the fields, which is part of what the golden files pin.
	for _, r := range jsonVolatile {
		out = r.re.ReplaceAllString(out, r.with)
	}
	return out
}

var jsonVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`("(?:createdAt|startedAt|finishedAt)": )"[^"]*"`), `$1"<time>"`},
	{regexp.MustCompile(`("durationMs": )\d+`), `$1"<ms>"`},
	{regexp.MustCompile(`("pid": )\d+`), `$1"<pid>"`},
	{regexp.MustCompile(`("hostname": )"[^"]*"`), `$1"<host>"`},
}

// golden compares got with testdata/cli/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "cli", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./e2e -run Operator -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; go test ./e2e -run Operator -update rewrites it):\n%s", path, diff)
	}
}

// The read commands against a live server's finished graph: list, status, logs, graph in
// all its forms, the --json shapes, bad ids, completion, environment and colours.
func TestOperator_ReadCommands(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g := submit(t, s, map[string]any{"name": "ci", "tasks": []any{
		map[string]any{"id": "fetch", "command": "echo fetching; echo fetched"},
		map[string]any{"id": "build", "command": "printf 'one\\ntwo\\nthree\\n'", "dependsOn": []string{"fetch"}},
		map[string]any{"id": "lint", "command": "echo 'main.go:3: unused x' >&2; exit 3", "dependsOn": []string{"fetch"}},
		map[string]any{"id": "test", "command": "echo ok", "dependsOn": []string{"build"}},
		map[string]any{"id": "package", "command": "echo tar", "dependsOn": []string{"build", "lint"}},
	}})
	s.waitGraph(g)

	t.Run("list", func(t *testing.T) {
		out := runTasks(t, ws, "list")
		for _, want := range []string{"GRAPH", g, "ci", "failed", "5/5", "live (pid "} {
			if !strings.Contains(out, want) {
				t.Errorf("tasks list = %q, want %q in it", out, want)
			}
		}
		golden(t, "list.json", normalize(t, ws, runTasks(t, ws, "list", "--json"), true))
		if out := runTasks(t, ws, "list", "--status", "running"); out != "no graphs are running\n" {
			t.Errorf("tasks list --status running = %q", out)
		}
		if out := runTasks(t, ws, "list", "--status", "running,failed", "--json"); !strings.Contains(out, g) {
			t.Errorf("tasks list --status running,failed misses the failed graph: %s", out)
		}
	})

	t.Run("status", func(t *testing.T) {
		out := runTasks(t, ws, "status", g)
		for _, want := range []string{
			`graph ` + g + ` "ci": failed`,
			"5/5 done: 1 failed (lint: exit 3), 1 skipped, 3 succeeded",
			"server live (pid ",
			"TASK     STATUS     RESULT           ATTEMPT  DURATION  NOTE",
			"package  skipped    UPSTREAM_FAILED  0        -         dependency lint failed",
			"why lint failed: mcp-harness tasks logs " + g + " lint",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("tasks status =\n%s\nwant %q in it", out, want)
			}
		}
		if strings.Contains(out, "\x1b[") {
			t.Errorf("colours in output to a pipe: %q", out)
		}
		golden(t, "status.json", normalize(t, ws, runTasks(t, ws, "status", g, "--json"), true))
	})

	t.Run("logs", func(t *testing.T) {
		if out := runTasks(t, ws, "logs", g, "fetch"); out != "fetching\nfetched\n" {
			t.Errorf("logs fetch = %q", out)
		}
		if out := runTasks(t, ws, "logs", g, "lint"); out != "main.go:3: unused x\n" {
			t.Errorf("logs lint (stderr of the task) = %q", out)
		}
		for _, tt := range []struct {
			tail, want string
		}{{"2", "two\nthree\n"}, {"0", ""}, {"3", "one\ntwo\nthree\n"}, {"10", "one\ntwo\nthree\n"}} {
			if out := runTasks(t, ws, "logs", g, "build", "--tail", tt.tail); out != tt.want {
				t.Errorf("logs build --tail %s = %q, want %q", tt.tail, out, tt.want)
			}
		}
		// A finished task's log with -f prints it and ends at once.
		if out := runTasks(t, ws, "logs", "-f", g, "build"); out != "one\ntwo\nthree\n" {
			t.Errorf("logs -f of a finished task = %q", out)
		}
		out := runBinary(t, nil, "tasks", "logs", g, "package", "--workspace", ws)
		if out.code != 0 || out.stdout != "" || !strings.Contains(out.stderr, "never started") {
			t.Errorf("logs of a skipped task = %+v, want exit 0, nothing, a note on stderr", out)
		}
	})

	t.Run("graph", func(t *testing.T) {
		golden(t, "graph.txt", normalize(t, ws, runTasks(t, ws, "graph", g), false))
		golden(t, "graph.mermaid", normalize(t, ws, runTasks(t, ws, "graph", g, "--mermaid"), false))
		golden(t, "graph.dot", normalize(t, ws, runTasks(t, ws, "graph", g, "--dot"), false))
		golden(t, "graph.json", normalize(t, ws, runTasks(t, ws, "graph", g, "--json"), true))
	})

	t.Run("bad ids", func(t *testing.T) {
		for _, args := range [][]string{
			{"status", "g-NOSUCHGRAPH"}, {"graph", "g-NOSUCHGRAPH"}, {"logs", "g-NOSUCHGRAPH", "x"},
			{"cancel", "g-NOSUCHGRAPH"}, {"status", "g-NOSUCHGRAPH", "--json"},
		} {
			out := runBinary(t, nil, append(append([]string{"tasks"}, args...), "--workspace", ws)...)
			if out.code != 1 || out.stdout != "" || !strings.Contains(out.stderr, `no graph "g-NOSUCHGRAPH"`) ||
				!strings.Contains(out.stderr, "mcp-harness tasks list") {
				t.Errorf("tasks %v = %+v, want exit 1 naming the graph and suggesting tasks list", args, out)
			}
		}
		for _, args := range [][]string{{"logs", g, "nope"}, {"cancel", g, "lint", "nope"}} {
			out := runBinary(t, nil, append(append([]string{"tasks"}, args...), "--workspace", ws)...)
			if out.code != 1 || !strings.Contains(out.stderr, `has no task "nope"`) || !strings.Contains(out.stderr, "mcp-harness tasks status "+g) {
				t.Errorf("tasks %v = %+v, want exit 1 naming the task and suggesting tasks status", args, out)
			}
		}
	})

	t.Run("cancel finished graph", func(t *testing.T) {
		out := runTasks(t, ws, "cancel", g)
		if !strings.Contains(out, "nothing to cancel") {
			t.Errorf("cancel of a finished graph = %q", out)
		}
		out = runTasks(t, ws, "cancel", g, "lint", "--json")
		if !strings.Contains(out, `"outcome": "already_terminal"`) {
			t.Errorf("cancel of a finished task = %s", out)
		}
	})

	t.Run("environment", func(t *testing.T) {
		out := runBinary(t, []string{"MCP_HARNESS_WORKSPACE=" + ws}, "tasks", "list")
		if out.code != 0 || !strings.Contains(out.stdout, g) {
			t.Errorf("tasks list with MCP_HARNESS_WORKSPACE = %+v", out)
		}
		out = runBinary(t, []string{"MCP_HARNESS_STATE_DIR=" + filepath.Join(ws, workspace.StateDirName)}, "tasks", "list", "--workspace", t.TempDir())
		if out.code != 0 || !strings.Contains(out.stdout, g) {
			t.Errorf("tasks list with MCP_HARNESS_STATE_DIR = %+v", out)
		}
		// Only the two location variables count: one named after a subcommand's flag does not.
		out = runBinary(t, []string{"MCP_HARNESS_WORKSPACE=" + ws, "MCP_HARNESS_STATUS=running"}, "tasks", "list")
		if out.code != 0 || !strings.Contains(out.stdout, g) {
			t.Errorf("tasks list with MCP_HARNESS_STATUS set = %+v, want it ignored", out)
		}
	})

	t.Run("completion", func(t *testing.T) {
		out := runBinary(t, nil, "__complete", "tasks", "status", "--workspace", ws, "")
		if out.code != 0 || !strings.Contains(out.stdout, g+"\tci · failed") {
			t.Errorf("completion of GRAPH = %+v", out)
		}
		out = runBinary(t, nil, "__complete", "tasks", "logs", "--workspace", ws, g, "")
		for _, id := range []string{"fetch\tsucceeded", "lint\tfailed", "package\tskipped"} {
			if out.code != 0 || !strings.Contains(out.stdout, id) {
				t.Errorf("completion of TASK = %+v, want %q", out, id)
			}
		}
		out = runBinary(t, nil, "__complete", "tasks", "cancel", "--workspace", ws, g, "lint", "")
		if strings.Contains(out.stdout, "lint\t") || !strings.Contains(out.stdout, "build\t") {
			t.Errorf("completion of a second TASK = %+v, want the others only", out)
		}
		if out := runBinary(t, nil, "completion", "bash"); out.code != 0 || !strings.Contains(out.stdout, "mcp-harness") {
			t.Errorf("completion bash = exit %d", out.code)
		}
	})

	t.Run("colours", func(t *testing.T) {
		if out := statusOnTerminal(t, ws, g, nil); !strings.Contains(out, "\x1b[31mfailed\x1b[0m") {
			t.Errorf("tasks status on a terminal = %q, want failed in red", out)
		}
		if out := statusOnTerminal(t, ws, g, []string{"NO_COLOR=1"}); strings.Contains(out, "\x1b[") {
			t.Errorf("tasks status on a terminal with NO_COLOR = %q, want no colours", out)
		}
	})
}

// statusOnTerminal runs `tasks status` with stdout a terminal and returns what it printed.
func statusOnTerminal(t *testing.T, ws, graphID string, env []string) string {
	t.Helper()
	ptmx, tty, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command(binPath, "tasks", "status", graphID, "--workspace", ws)
	cmd.Env = append(append(os.Environ(), runEnv...), "TERM=xterm-256color")
	for i, kv := range cmd.Env {
		if strings.HasPrefix(kv, "NO_COLOR=") {
			cmd.Env[i] = "NO_COLOR="
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout = tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out, _ := io.ReadAll(ptmx) // ends with EIO once the command has exited
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tasks status on a terminal: %v\n%s", err, out)
	}
	return string(out)
}

// logs -f prints a live task's output as it comes and ends by itself when the task ends.
func TestOperator_LogsFollow(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()

	g := submit(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "count", "command": "for i in 1 2 3; do echo $i; sleep 0.2; done"},
	}})
	out := runBinary(t, nil, "tasks", "logs", "-f", g, "count", "--workspace", ws)
	if out.code != 0 || out.stdout != "1\n2\n3\n" || !strings.Contains(out.stderr, "task count succeeded (exit 0)") {
		t.Errorf("logs -f count = %+v, want 1 2 3, exit 0 and how it ended", out)
	}

	// A task that waits for a gate file: the first line must come through while it still
	// runs, and the follow must end once the gate opens and the task ends. The second task
	// is pending until the first succeeds: following it waits for it to start.
	g = submit(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "gated", "command": "echo before; while [ ! -e gate ]; do sleep 0.02; done; echo after; exit 4"},
		map[string]any{"id": "next", "command": "echo next ran", "dependsOn": []string{"gated"}},
	}})
	cmd, lines, stderr := followBinary(t, "tasks", "logs", "--follow", g, "gated", "--workspace", ws)
	if line := nextLine(t, lines); line != "before" {
		t.Fatalf("first line followed = %q, want before", line)
	}
	if err := os.WriteFile(filepath.Join(ws, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if line := nextLine(t, lines); line != "after" {
		t.Errorf("second line followed = %q, want after", line)
	}
	noMoreLines(t, lines, "the task ended")
	if err := cmd.Wait(); err != nil {
		t.Errorf("logs -f of a failing task: %v, want exit 0 (the log was followed to its end)", err)
	}
	if !strings.Contains(stderr.String(), "task gated failed (exit 4)") {
		t.Errorf("stderr = %q, want how the task ended", stderr.String())
	}
	// next was skipped when gated failed: following it ends at once with nothing.
	out = runBinary(t, nil, "tasks", "logs", "-f", g, "next", "--workspace", ws)
	if out.code != 0 || out.stdout != "" || !strings.Contains(out.stderr, "task next skipped: dependency gated failed") {
		t.Errorf("logs -f of a skipped task = %+v", out)
	}
}

// followBinary starts the built binary with args and hands its stdout over line by line
// as it comes; the channel closes when stdout does. The process is killed at cleanup.
func followBinary(t *testing.T, args ...string) (*exec.Cmd, <-chan string, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), runEnv...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 10)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines, stderr
}

// noMoreLines fails unless lines ends, within e2eWait, without another line: a follow
// that does not stop when what it follows ended is a failure, not a hang.
func noMoreLines(t *testing.T, lines <-chan string, ended string) {
	t.Helper()
	select {
	case line, open := <-lines:
		if open {
			t.Errorf("more output after %s: %q", ended, line)
		}
	case <-time.After(e2eWait):
		t.Fatalf("logs -f still runs %v after %s", e2eWait, ended)
	}
}

func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatal("logs -f ended early")
		}
		return line
	case <-time.After(e2eWait):
		t.Fatalf("no line from logs -f within %v", e2eWait)
	}
	return ""
}

// cancel acts on a graph of the live server through the store: the running task ends
// cancelled, its whole process group is gone, and its dependent is skipped.
func TestOperator_Cancel(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g := submit(t, s, map[string]any{"name": "dev", "tasks": []any{
		map[string]any{"id": "serve", "command": "sleep 1000 & echo $! > serve.pid; wait"},
		map[string]any{"id": "smoke", "command": "true", "dependsOn": []string{"serve"}},
		map[string]any{"id": "quick", "command": "true"},
	}})
	pid := readPid(t, filepath.Join(ws, "serve.pid"))
	s.waitGraphTask(g, "quick")

	// A long grace: the task stops at SIGTERM, and the wait for it (grace and a few
	// seconds) must not run out on a loaded machine.
	out := runTasks(t, ws, "cancel", g, "serve", "--grace", "60s", "--json")
	golden(t, "cancel.json", normalize(t, ws, out, true))
	waitGone(t, pid)

	var st tasks.Detail
	if err := json.Unmarshal([]byte(runTasks(t, ws, "status", g, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	got := map[string]tasks.State{}
	for _, task := range st.Tasks {
		got[task.ID] = task.Status
	}
	want := map[string]tasks.State{"serve": tasks.Cancelled, "smoke": tasks.Skipped, "quick": tasks.Succeeded}
	if diff := cmp.Diff(want, got); diff != "" || st.Status != tasks.GraphCancelled {
		t.Errorf("after cancel: graph %s, tasks (-want +got):\n%s", st.Status, diff)
	}

	// The text form, on a second graph: every unfinished task by default.
	g2 := submit(t, s, map[string]any{"maxParallel": 1, "tasks": []any{
		map[string]any{"id": "long", "command": "sleep 1000 & echo $! > long.pid; wait"},
		map[string]any{"id": "queued", "command": "true"},
	}})
	pid = readPid(t, filepath.Join(ws, "long.pid"))
	text := runTasks(t, ws, "cancel", g2, "--grace", "30s")
	for _, want := range []string{"2 task(s) concerned", "long    running  cancelled  cancelled", "queued  pending  cancelled  cancelled"} {
		if !strings.Contains(text, want) {
			t.Errorf("tasks cancel =\n%s\nwant %q in it", text, want)
		}
	}
	waitGone(t, pid)

	// --no-wait returns once the server has taken the request: the running task may not
	// have stopped yet.
	g3 := submit(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "spin", "command": "echo $$ > spin.pid; exec sleep 1000"},
	}})
	pid = readPid(t, filepath.Join(ws, "spin.pid"))
	var res tasks.CancelReport
	if err := json.Unmarshal([]byte(runTasks(t, ws, "cancel", g3, "--no-wait", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].Outcome != tasks.OutcomeCancelling && res.Tasks[0].Outcome != tasks.OutcomeCancelled {
		t.Errorf("cancel --no-wait = %+v, want spin cancelling or cancelled", res)
	}
	waitGone(t, pid)

	var list cli.GraphList
	if err := json.Unmarshal([]byte(runTasks(t, ws, "list", "--limit", "1", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Graphs) != 1 || list.Graphs[0].GraphID != g3 || !list.More {
		t.Errorf("list --limit 1 = %+v, want the newest graph and more", list)
	}
	if text := runTasks(t, ws, "list", "-n", "1"); !strings.Contains(text, "(the newest 1; --limit shows more)") {
		t.Errorf("list -n 1 =\n%s\nwant a note that there are more", text)
	}
}

// waitGraphTask waits until one task of a graph is finished.
func (s *server) waitGraphTask(graphID, taskID string) {
	s.t.Helper()
	st := structuredOf(s.t, s.toolCall("tasks_status", map[string]any{"graphId": graphID, "taskIds": []string{taskID}, "waitMs": 20000}))
	if task := tasksOf(st)[taskID]; task["status"] == "pending" || task["status"] == "running" {
		s.t.Fatalf("task %s still %v", taskID, task["status"])
	}
}

// When the server that owns a graph is gone, cancel says so (exit 1) and logs -f stops
// instead of waiting for ever.
func TestOperator_OwnerGone(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g := submit(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "long", "command": "echo started; echo $$ > long.pid; exec sleep 1000"},
	}})
	pid := readPid(t, filepath.Join(ws, "long.pid"))
	// The server copies a task's output from a pipe into its log: "started" is written
	// before the pid, but is in the log only once the server has copied it, and a server
	// killed before then takes it with it.
	logPath := filepath.Join(ws, workspace.StateDirName, "logs", g, "long.log")
	waitFor(t, "started in the task's log", func() bool {
		b, _ := os.ReadFile(logPath)
		return string(b) == "started\n"
	})
	s.signal(syscall.SIGKILL)
	s.waitExit()
	waitGone(t, pid) // the task dies with its server (parent-death signal)

	out := runBinary(t, nil, "tasks", "cancel", g, "--workspace", ws)
	if out.code != 1 || !strings.Contains(out.stderr, "gone") {
		t.Errorf("cancel with the owner gone = %+v, want exit 1 saying the server is gone", out)
	}
	out = runBinary(t, nil, "tasks", "logs", "-f", g, "long", "--workspace", ws)
	if out.code != 1 || out.stdout != "started\n" || !strings.Contains(out.stderr, "stopped following") {
		t.Errorf("logs -f with the owner gone = %+v, want the log, then exit 1", out)
	}
	out = runBinary(t, nil, "tasks", "list", "--workspace", ws)
	if out.code != 0 || !strings.Contains(out.stdout, "gone (pid ") {
		t.Errorf("list with the owner gone = %+v", out)
	}
}

// Command-line mistakes exit 2 before anything is opened; a workspace without state
// exits 1 and is left as it was.
func TestOperator_UsageAndState(t *testing.T) {
	empty := t.TempDir()
	for _, args := range [][]string{
		{"tasks", "frob"}, {"tasks", "lst"}, {"tasks", "status"}, {"tasks", "status", "a", "b"}, {"tasks", "logs"}, {"tasks", "logs", "g", "t", "x"},
		{"tasks", "graph"}, {"tasks", "cancel"}, {"tasks", "list", "extra"},
		{"tasks", "list", "--limit", "0"}, {"tasks", "list", "--limit", "x"}, {"tasks", "list", "--status", "done"},
		{"tasks", "list", "--bogus"}, {"tasks", "status", "g", "--bogus"}, {"tasks", "graph", "g", "--dot", "--mermaid"},
		{"tasks", "logs", "g", "t", "--tail", "-1"}, {"tasks", "cancel", "g", "--grace", "-1s"}, {"tasks", "cancel", "g", "--grace", "soon"},
	} {
		out := runBinary(t, nil, append(args, "--workspace", empty)...)
		if out.code != 2 || out.stdout != "" || !strings.HasPrefix(out.stderr, "mcp-harness: ") {
			t.Errorf("%v = %+v, want exit 2 and a message", args, out)
		}
	}
	if out := runBinary(t, nil, "tasks", "lst"); !strings.Contains(out.stderr, "did you mean list?") {
		t.Errorf("tasks lst = %q, want a suggestion", out.stderr)
	}
	if out := runBinary(t, []string{"MCP_HARNESS_WORKSPACE=" + empty}, "tasks"); out.code != 0 || !strings.Contains(out.stdout, "Available Commands") {
		t.Errorf("tasks with no subcommand = %+v, want help", out)
	}

	for _, args := range [][]string{{"list"}, {"status", "g-X"}, {"list", "--json"}} {
		out := runBinary(t, nil, append(append([]string{"tasks"}, args...), "--workspace", empty)...)
		if out.code != 1 || out.stdout != "" || !strings.Contains(out.stderr, "no mcp-harness state in "+resolve(t, empty)) {
			t.Errorf("tasks %v in an empty workspace = %+v, want exit 1, no mcp-harness state", args, out)
		}
	}
	state := filepath.Join(t.TempDir(), "state")
	if out := runBinary(t, nil, "tasks", "list", "--workspace", empty, "--state-dir", state); out.code != 1 || !strings.Contains(out.stderr, "no mcp-harness state in "+state) {
		t.Errorf("tasks list with a missing --state-dir = %+v", out)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("the empty workspace now holds %v, want nothing created", entries)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the missing state dir was created")
	}
	if out := runBinary(t, nil, "tasks", "list", "--workspace", filepath.Join(empty, "missing")); out.code != 1 || !strings.Contains(out.stderr, "workspace") {
		t.Errorf("tasks list in a missing workspace = %+v", out)
	}
}

func resolve(t *testing.T, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
