package e2e

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/cli"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// The command line as a person meets it: the version, exit statuses, what the server says
// on stderr and in its log file, and `tasks logs` for a whole graph.

// binVersion is the version the test binary should report: it was built without -X, so
// the one its build info gives.
func binVersion(t *testing.T) string {
	t.Helper()
	info, err := buildinfo.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	return cli.VersionOf(info)
}

// serverVersion is serverInfo.version of the binary at bin.
func serverVersion(t *testing.T, bin string) string {
	t.Helper()
	c, err := mcpclient.NewStdioMCPClient(bin, nil, "stdio", "--workspace", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	return res.ServerInfo.Version
}

// version, --version and serverInfo agree: the build info's version for a plain build, the
// release's for one built with -X main.version.
func TestVersion(t *testing.T) {
	want := binVersion(t)
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		if out := runBinary(t, nil, args...); out.code != 0 || out.stdout != want+"\n" {
			t.Errorf("%v = %+v, want %q and exit 0", args, out, want)
		}
	}
	if got := serverVersion(t, binPath); got != want {
		t.Errorf("serverInfo.version = %q, want %q", got, want)
	}

	// A release build: the version it was given, everywhere.
	rel := filepath.Join(t.TempDir(), "mcp-harness")
	args := []string{"build", "-o", rel, "-ldflags=-X main.version=9.8.7-test"}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, mainPackage)...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, a := range []string{"version", "--version"} {
		out, err := exec.Command(rel, a).Output()
		if err != nil || string(out) != "9.8.7-test\n" {
			t.Errorf("release build %s = %q, %v; want 9.8.7-test", a, out, err)
		}
	}
	if got := serverVersion(t, rel); got != "9.8.7-test" {
		t.Errorf("release build serverInfo.version = %q, want 9.8.7-test", got)
	}
}

// Every command-line mistake exits 2, says what is wrong on stderr (with a suggestion
// where there is one), prints nothing on stdout and creates nothing.
func TestUsageErrors(t *testing.T) {
	ws := t.TempDir()
	for _, tt := range []struct {
		args []string
		env  []string
		want string
	}{
		{args: []string{"stdoi"}, want: `unknown command "stdoi" for "mcp-harness"; did you mean stdio?`},
		{args: []string{"verson"}, want: "did you mean version?"},
		{args: []string{"tasks", "lst"}, want: "did you mean list?"},
		{args: []string{"completion", "bsh"}, want: "did you mean bash"},
		{args: []string{"--bogus"}, want: "unknown flag: --bogus"},
		{args: []string{"stdio", "--bogus"}, want: "unknown flag: --bogus"},
		{args: []string{"stdio", "extra"}, want: `unknown command "extra"`},
		{args: []string{"version", "extra"}, want: `unknown command "extra"`},
		{args: []string{"completion", "bash", "extra"}, want: `unknown command "extra"`},
		{args: []string{"stdio", "--max-wait", "5"}, want: `invalid argument "5" for "--max-wait"`},
		{args: []string{"stdio", "--max-wait", "-1s"}, want: "--max-wait -1s: want more than 0"},
		{args: []string{"stdio", "--max-wait", "0s"}, want: "--max-wait 0s: want more than 0"},
		{args: []string{"stdio", "--retention", "-1h"}, want: "--retention -1h0m0s: want more than 0"},
		{args: []string{"stdio", "--max-parallel", "0"}, want: "--max-parallel 0: want more than 0"},
		{args: []string{"stdio", "--max-sessions", "-2"}, want: "--max-sessions -2: want more than 0"},
		{args: []string{"stdio", "--max-tasks", "0"}, want: "--max-tasks 0: want more than 0"},
		{args: []string{"stdio", "--shell-buffer", "0"}, want: "is not a size"},
		{args: []string{"stdio", "--log-level", "loud"}, want: `--log-level "loud": want debug, info, warn or error`},
		{args: []string{"stdio"}, env: []string{"MCP_HARNESS_MAX_WAIT=-5s"}, want: "--max-wait -5s: want more than 0"},
		{args: []string{"tasks", "logs", "g", "t", "--tail", "-1"}, want: "--tail -1"},
	} {
		args := append(tt.args, "--workspace", ws)
		if tt.args[0] == "--bogus" || tt.args[0] == "completion" || tt.args[0] == "version" || len(tt.args) == 1 && tt.args[0] != "stdio" {
			args = tt.args // commands without --workspace
		}
		out := runBinary(t, tt.env, args...)
		if out.code != 2 || out.stdout != "" || !strings.HasPrefix(out.stderr, "mcp-harness: ") || !strings.Contains(out.stderr, tt.want) {
			t.Errorf("%v (env %v) = %+v, want exit 2 and %q on stderr", tt.args, tt.env, out, tt.want)
		}
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("the workspace holds %v after usage errors, want nothing created", entries)
	}
}

// A normal start and stop says nothing on stderr; the log file in the state dir has the
// story, 0600. --log-level info puts it on stderr too.
func TestStdio_QuietStartAndLogFile(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, "", "stdio", "--workspace", ws) // the default level
	s.initialize()
	submit(t, s, map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true"}}})
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got := s.stderr.String(); got != "" {
		t.Errorf("stderr of a normal start and stop = %q, want nothing", got)
	}
	path := filepath.Join(ws, workspace.StateDirName, cli.LogFileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s mode = %v, want 0600", path, fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{`level=INFO msg="runner started"`, "pid=" + strconv.Itoa(s.cmd.Process.Pid), `msg="runner stopped"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("server.log =\n%s\nwant %q in it", b, want)
		}
	}

	// A second server appends to the same file; --log-level info shows it on stderr too.
	s2 := startServer(t, "", "stdio", "--workspace", ws, "--log-level", "info")
	s2.initialize()
	s2.stdin.Close()
	s2.waitExit()
	if !strings.Contains(s2.stderr.String(), `msg="runner started"`) {
		t.Errorf("stderr with --log-level info = %q, want the start", s2.stderr)
	}
	b, _ = os.ReadFile(path)
	if n := strings.Count(string(b), `msg="runner started"`); n != 2 {
		t.Errorf("server.log has %d starts, want 2 (appended):\n%s", n, b)
	}
}

// waitFor waits until ok holds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(e2eWait)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, e2eWait)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

// Graph ids by a unique prefix (in either case) or @latest; task ids by a unique prefix.
func TestOperator_ShortIDs(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g1 := submit(t, s, map[string]any{"name": "first", "tasks": []any{map[string]any{"id": "fetch", "command": "echo one"}}})
	s.waitGraph(g1)
	g2 := submit(t, s, map[string]any{"name": "second", "tasks": []any{
		map[string]any{"id": "fetch", "command": "echo two"}, map[string]any{"id": "fetch-all", "command": "echo all"},
	}})
	s.waitGraph(g2)

	var d tasks.Detail
	if err := json.Unmarshal([]byte(runTasks(t, ws, "status", "@latest", "--json")), &d); err != nil || d.GraphID != g2 {
		t.Errorf("status @latest = %s, %v; want %s", d.GraphID, err, g2)
	}
	if out := runTasks(t, ws, "logs", strings.ToLower(g1[:len(g1)-2]), "fe"); out != "one\n" {
		t.Errorf("logs <lower-case prefix of %s> fe = %q, want one", g1, out)
	}
	if out := runTasks(t, ws, "logs", g2[:len(g2)-2], "fetch"); out != "two\n" {
		t.Errorf("logs <prefix> fetch = %q, want two (an exact task id wins over a prefix)", out)
	}
	if out := runTasks(t, ws, "logs", "@latest", "fetch-"); out != "all\n" {
		t.Errorf("logs @latest fetch- = %q, want all", out)
	}
	if out := runTasks(t, ws, "graph", "@latest"); !strings.Contains(out, g2) {
		t.Errorf("graph @latest =\n%s\nwant %s", out, g2)
	}
	out := runBinary(t, nil, "tasks", "status", "g-", "--workspace", ws)
	if out.code != 1 || !strings.Contains(out.stderr, `graph id prefix "g-" is ambiguous: it matches `+g1+", "+g2) {
		t.Errorf("status g- = %+v, want exit 1 naming both graphs", out)
	}
	out = runBinary(t, nil, "tasks", "logs", g2, "f", "--workspace", ws)
	if out.code != 1 || !strings.Contains(out.stderr, `task id prefix "f" is ambiguous: it matches fetch, fetch-all`) {
		t.Errorf("logs G f = %+v, want exit 1 naming both tasks", out)
	}
	empty := t.TempDir()
	e := startServer(t, empty)
	e.initialize()
	e.toolCall("tasks_list", map[string]any{}) // a state dir (opened by the first call at the latest), no graphs
	if out := runBinary(t, nil, "tasks", "status", "@latest", "--workspace", empty); out.code != 1 || !strings.Contains(out.stderr, "no graphs in ") {
		t.Errorf("status @latest with no graphs = %+v", out)
	}
}

// `logs -f GRAPH` follows every task with its name before each line, says on stderr why
// a task waits and how each ended, and stops when the graph has ended; --exit-status
// gives the outcome.
func TestOperator_LogsFollowGraph(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g := submit(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "build", "command": "echo compiling; while [ ! -e gate ]; do sleep 0.02; done; echo built"},
		map[string]any{"id": "unit-tests", "command": "echo ran 3; exit 5", "dependsOn": []string{"build"}},
	}})
	cmd, lines, stderr := followBinary(t, "tasks", "logs", "-f", "--exit-status", g, "--workspace", ws)
	if line := nextLine(t, lines); line != "build      | compiling" {
		t.Fatalf("first line = %q, want build's, after its name", line)
	}
	waitFor(t, "unit-tests waiting", func() bool {
		return strings.Contains(stderr.String(), "mcp-harness: task unit-tests is waiting on build (running)\n")
	})
	if err := os.WriteFile(filepath.Join(ws, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"build      | built", "unit-tests | ran 3"} {
		if line := nextLine(t, lines); line != want {
			t.Errorf("line = %q, want %q", line, want)
		}
	}
	noMoreLines(t, lines, "the graph ended")
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("logs -f --exit-status of a failed graph: exit %d (%v), want 1", code, err)
	}
	for _, want := range []string{
		"mcp-harness: task build succeeded (exit 0)\n",
		"mcp-harness: task unit-tests started\n",
		"mcp-harness: task unit-tests failed (exit 5)\n",
		"mcp-harness: graph " + g + " failed: 1 succeeded, 1 failed, 0 cancelled, 0 skipped\n",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr =\n%s\nwant %q in it", stderr.String(), want)
		}
	}

	// Without -f: the same lines, one task after the other.
	if out := runTasks(t, ws, "logs", g); out != "build      | compiling\nbuild      | built\nunit-tests | ran 3\n" {
		t.Errorf("logs GRAPH = %q", out)
	}
}

// --exit-status: a task's own exit status, 0 for success, 1 for a task that has not
// finished (no outcome yet) or a graph that did not succeed.
func TestOperator_LogsExitStatus(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g := submit(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "ok", "command": "echo fine"},
		map[string]any{"id": "bad", "command": "exit 7"},
		map[string]any{"id": "after", "command": "true", "dependsOn": []string{"bad"}},
	}})
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"-f", "--exit-status", g, "ok"}, 0},
		{[]string{"-f", "--exit-status", g, "bad"}, 7},
		{[]string{"-f", "--exit-status", g, "after"}, 1}, // skipped
		{[]string{"-f", "--exit-status", g}, 1},
		{[]string{"--exit-status", g, "bad"}, 7}, // finished by now: no -f needed
		{[]string{"-f", g, "bad"}, 0},            // without --exit-status: the log was printed
	} {
		if out := runBinary(t, nil, append(append([]string{"tasks", "logs"}, tt.args...), "--workspace", ws)...); out.code != tt.code {
			t.Errorf("logs %v = exit %d (%+v), want %d", tt.args, out.code, out, tt.code)
		}
	}
	ok := submit(t, s, map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true"}, map[string]any{"id": "b", "command": "true"}}})
	if out := runBinary(t, nil, "tasks", "logs", "-f", "--exit-status", ok, "--workspace", ws); out.code != 0 {
		t.Errorf("logs -f --exit-status of a graph that succeeded = %+v, want exit 0", out)
	}
	gate := submit(t, s, map[string]any{"tasks": []any{map[string]any{"id": "long", "command": "while [ ! -e gate2 ]; do sleep 0.02; done"}}})
	out := runBinary(t, nil, "tasks", "logs", "--exit-status", gate, "long", "--workspace", ws)
	if out.code != 1 || !strings.Contains(out.stderr, "has not finished") {
		t.Errorf("logs --exit-status of a running task without -f = %+v, want exit 1: no outcome yet", out)
	}
	os.WriteFile(filepath.Join(ws, "gate2"), nil, 0o600)
	s.waitGraph(gate)
}

// --json: NDJSON, one record a line; a followed graph gives waiting, started, log and
// ended records.
func TestOperator_LogsJSON(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g := submit(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "gen", "command": "printf 'a\\nb\\n'; printf 'no end'"},
		map[string]any{"id": "use", "command": "echo used", "dependsOn": []string{"gen"}},
	}})
	records := func(out string) []tasks.LogEvent {
		t.Helper()
		var evs []tasks.LogEvent
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			var ev tasks.LogEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("not an NDJSON record: %q: %v", line, err)
			}
			evs = append(evs, ev)
		}
		return evs
	}
	var got []string
	for _, ev := range records(runTasks(t, ws, "logs", "-f", "--json", g)) {
		switch {
		case ev.GraphID != g:
			t.Errorf("record of another graph: %+v", ev)
		case ev.Type == tasks.EventLog:
			got = append(got, ev.TaskID+" log "+*ev.Text)
		case ev.Type == tasks.EventEnded:
			got = append(got, ev.TaskID+" ended "+string(ev.Task.Status))
		}
	}
	want := []string{"gen log a", "gen log b", "gen log no end", "gen ended succeeded", "use log used", "use ended succeeded"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logs -f --json records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	evs := records(runTasks(t, ws, "logs", "--json", g, "gen"))
	if len(evs) != 3 || *evs[2].Text != "no end" || evs[0].TaskID != "gen" || evs[0].Type != tasks.EventLog {
		t.Errorf("logs --json G gen = %+v, want three log records", evs)
	}
	// The raw line keeps every field, null where it does not apply.
	line := strings.SplitN(runTasks(t, ws, "logs", "--json", g, "use"), "\n", 2)[0]
	if want := `{"type":"log","graphId":"` + g + `","taskId":"use","text":"used","wait":null,"task":null}`; line != want {
		t.Errorf("record = %s, want %s", line, want)
	}
}
