package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/store"
)

func TestStdio_MCPGoClient(t *testing.T) {
	ws := t.TempDir()
	c, err := mcpclient.NewStdioMCPClient(binPath, nil, "stdio", "--workspace", ws)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if want := binVersion(t); res.ServerInfo.Name != "mcp-harness" || res.ServerInfo.Version != want {
		t.Errorf("serverInfo = %+v, want mcp-harness %s", res.ServerInfo, want)
	}
	if !strings.Contains(res.Instructions, "shell_") || !strings.Contains(res.Instructions, "tasks_") {
		t.Errorf("instructions do not explain shell_* vs tasks_*: %q", res.Instructions)
	}
	if res.Capabilities.Tools == nil {
		t.Errorf("tools capability not advertised")
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	// A ping on the wire: Client.Ping is deprecated, and sends nothing once a connection
	// speaks a protocol without ping, so the request goes through the transport itself.
	ping := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("ping"), Method: string(mcp.MethodPing)}
	if resp, err := c.GetTransport().SendRequest(ctx, ping); err != nil || resp.Error != nil {
		t.Fatalf("ping = %+v, %v; want a result", resp, err)
	}
}

// The official Go SDK shares no code with our library, so it checks the wire format.
func TestStdio_GoSDKClient(t *testing.T) {
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e-sdk", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: exec.Command(binPath, "stdio", "--workspace", ws)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "mcp-harness" {
		t.Errorf("server name = %q, want mcp-harness", got)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestStdio_MalformedLineKeepsServing(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	s.sendLine(`{"jsonrpc":"2.0","id":`) // cut off mid-message
	m := s.next()
	errObj, _ := m["error"].(map[string]any)
	if code, _ := errObj["code"].(float64); code != -32700 {
		t.Fatalf("response to a malformed line = %v, want a -32700 parse error", m)
	}
	if resp := s.call("ping", nil, nil); resp["error"] != nil || resp["result"] == nil {
		t.Fatalf("ping after a malformed line = %v", resp)
	}
	resp := s.call("no/such/method", nil, nil)
	if errObj, _ := resp["error"].(map[string]any); errObj["code"] != float64(-32601) {
		t.Errorf("unknown method = %v, want -32601", resp)
	}
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	for _, line := range strings.Split(strings.TrimSpace(s.stdout.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil || v["jsonrpc"] != "2.0" {
			t.Errorf("stdout line is not JSON-RPC: %q", line)
		}
	}
}

// A clean shutdown, by stdin closing or by a signal, exits 0 and marks the runner stopped.
func TestStdio_CleanShutdown(t *testing.T) {
	for _, how := range []string{"stdin-eof", "SIGTERM", "SIGINT"} {
		t.Run(how, func(t *testing.T) {
			ws := t.TempDir()
			s := startServer(t, ws)
			s.initialize()
			switch how {
			case "stdin-eof":
				s.stdin.Close()
			case "SIGTERM":
				s.signal(syscall.SIGTERM)
			case "SIGINT":
				s.signal(syscall.SIGINT)
			}
			if code := s.waitExit(); code != 0 {
				t.Fatalf("exit code = %d, want 0", code)
			}
			runners := listRunners(t, ws)
			if len(runners) != 1 {
				t.Fatalf("runners = %d, want 1", len(runners))
			}
			if r := runners[0]; r.StoppedAt == nil || r.Pid != s.cmd.Process.Pid {
				t.Errorf("runner = %+v, want pid %d marked stopped", r, s.cmd.Process.Pid)
			}
		})
	}
}

// A second signal during the shutdown ends the server at once with status 1. The shutdown
// is held up by a terminal program that ignores the hangup it is sent first.
func TestStdio_SecondSignalExitsAtOnce(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	open := structuredOf(t, s.toolCall("shell_open", map[string]any{
		"command": "trap '' HUP; echo READY; exec sleep 1000", "waitFor": "READY", "timeoutMs": 20000}))
	pgid := int(open["pid"].(float64))
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) }) // the server that would have is gone
	s.signal(syscall.SIGTERM)
	deadline := time.Now().Add(e2eWait)
	for !strings.Contains(s.stderr.String(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown logged within %v of SIGTERM", e2eWait)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	s.signal(syscall.SIGTERM)
	if code := s.waitExit(); code != 1 {
		t.Errorf("exit code after a second SIGTERM = %d, want 1", code)
	}
	if !strings.Contains(s.stderr.String(), "second signal") {
		t.Errorf("stderr does not say why it exited at once:\n%s", s.stderr)
	}
}

// Two servers started at the same instant on one new workspace both come up.
func TestStdio_ConcurrentStartOnNewWorkspace(t *testing.T) {
	ws := t.TempDir()
	const n = 4
	servers := make([]*server, n)
	for i := range servers {
		servers[i] = startServer(t, ws)
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			// Fatal must not be called off the test goroutine: check the response here and
			// report with Error.
			resp := s.call("initialize", map[string]any{
				"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "e2e", "version": "1"},
			}, nil)
			if resp["result"] == nil {
				t.Errorf("initialize = %v", resp)
			}
		})
	}
	wg.Wait()
	for _, s := range servers {
		s.stdin.Close()
		if code := s.waitExit(); code != 0 {
			t.Errorf("exit code = %d, want 0; stderr:\n%s", code, s.stderr)
		}
		if strings.Contains(s.stderr.String(), "locked") {
			t.Errorf("stderr mentions a locked database:\n%s", s.stderr)
		}
	}
	if got := len(listRunners(t, ws)); got != n {
		t.Errorf("runners = %d, want %d", got, n)
	}
}

func TestStdio_UnusableWorkspace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{filepath.Join(dir, "missing"), file} {
		s := startServer(t, ws)
		if code := s.waitExit(); code == 0 {
			t.Errorf("workspace %s: exit code 0, want non-zero", ws)
		}
		if out := s.stdout.String(); out != "" {
			t.Errorf("workspace %s: stdout = %q, want nothing", ws, out)
		}
		if errLines := strings.Split(strings.TrimSpace(s.stderr.String()), "\n"); len(errLines) != 1 || !strings.Contains(errLines[0], "workspace") {
			t.Errorf("workspace %s: stderr = %q, want one line naming the workspace", ws, s.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("the missing workspace was created")
	}
}

// The store opens after the client is answered: with another process holding the
// database's write lock, initialize and tools/list are answered at once, and a tool call
// waits for the store rather than fail, then succeeds once the lock is released.
func TestStdio_AnswersWhileTheStoreOpens(t *testing.T) {
	ws := t.TempDir()
	first := startServer(t, ws)
	first.initialize()
	first.stdin.Close()
	if code := first.waitExit(); code != 0 {
		t.Fatalf("first server: exit code %d; stderr:\n%s", code, first.stderr)
	}
	release := holdDBLock(t, ws)
	// A busy timeout far past e2eWait: had initialize needed the store, it would not be
	// answered within the test's deadline.
	s := startServer(t, ws, "--busy-timeout", "5m")
	s.initialize()
	list, _ := s.call("tools/list", nil, nil)["result"].(map[string]any)
	if tools, _ := list["tools"].([]any); len(tools) == 0 {
		t.Fatalf("tools/list with the store still opening = %v", list)
	}
	s.send(map[string]any{"id": 1000, "method": "tools/call", "params": map[string]any{"name": "tasks_list", "arguments": map[string]any{}}})
	// The call waits for the store while the lock is held; the server still answers
	// what needs no store, so the ping's answer comes first.
	s.send(map[string]any{"id": 1001, "method": "ping"})
	if resp := s.next(); resp["id"] != float64(1001) {
		t.Fatalf("got %v, want the answer to the ping first: the tool call cannot have had the store", resp)
	}
	release()
	resp := s.next()
	if id, _ := resp["id"].(float64); id != 1000 {
		t.Fatalf("got %v, want the response to the tool call", resp)
	}
	s.checkResponse("tools/call", map[string]any{"name": "tasks_list"}, resp)
	if res, _ := resp["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("tasks_list sent while the store was opening = %v, want a result", resp)
	}
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Errorf("exit code %d; stderr:\n%s", code, s.stderr)
	}
}

// startLocked makes the workspace's database (a server runs on it and stops), takes its
// write lock as another process would, and starts a server with a short busy timeout on
// it; the first tool call answers BUSY, its open having found the lock held.
func startLocked(t *testing.T) (s *server, ws string, release func()) {
	t.Helper()
	ws = t.TempDir()
	first := startServer(t, ws)
	first.initialize()
	first.stdin.Close()
	if code := first.waitExit(); code != 0 {
		t.Fatalf("first server: exit code %d; stderr:\n%s", code, first.stderr)
	}
	release = holdDBLock(t, ws)
	s = startServer(t, ws, shortBusy...)
	s.initialize()
	checkOpenBusy(t, "tasks_run", s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "x", "command": "true"}}}))
	return s, ws, release
}

// checkOpenBusy checks the answer to a tool call whose store could not be opened because
// of another process's lock: BUSY, saying so and that a later call will do.
func checkOpenBusy(t *testing.T, tool string, res map[string]any) {
	t.Helper()
	if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "BUSY: ") ||
		!strings.Contains(text, "another process holds the workspace database's write lock") || !strings.Contains(text, "Call again") {
		t.Fatalf("%s with the database locked at open = %q, want BUSY saying another process holds the lock", tool, text)
	}
}

// Another process holds the database's write lock past the busy timeout when the server
// opens its store: the tool calls answer BUSY (not an error until a restart), each call
// tries the open again, and once the lock is released the next call opens the store and
// works: a graph runs to its end, and the runner is recorded and marked stopped at exit.
func TestStdio_StoreLockedAtOpen(t *testing.T) {
	s, ws, release := startLocked(t)
	checkOpenBusy(t, "shell_list", s.toolCall("shell_list", map[string]any{})) // tried again, still held
	release()
	run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "x", "command": "true"}}}))
	if ts := tasksOf(s.waitGraph(run["graphId"].(string))); ts["x"]["status"] != "succeeded" {
		t.Errorf("task x = %v/%v, want succeeded", ts["x"]["status"], ts["x"]["errorCode"])
	}
	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if strings.Contains(s.stderr.String(), "level=ERROR") || strings.Contains(s.stderr.String(), "INTERNAL") {
		t.Errorf("a held lock was logged as an error:\n%s", s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "another process holds the database's write lock") {
		t.Errorf("the server did not log why the store was not open:\n%s", s.stderr)
	}
	if runners := runnersOf(t, ws, s); len(runners) != 1 || runners[0].StoppedAt == nil {
		t.Errorf("runners = %+v, want this server's, marked stopped", runners)
	}
}

// runnersOf is the runners the server s recorded on workspace ws.
func runnersOf(t *testing.T, ws string, s *server) []store.Runner {
	var mine []store.Runner
	for _, r := range listRunners(t, ws) {
		if r.Pid == s.cmd.Process.Pid {
			mine = append(mine, r)
		}
	}
	return mine
}

// A shutdown while the store could not be opened for a held lock exits 0, whether the
// lock is still held (nothing was opened, so nothing ran: no runner is recorded) or was
// released in the meantime (the shutdown opens the store and leaves the runner's record,
// marked stopped, as every server does).
func TestStdio_ShutdownWhileStoreLocked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release bool
		stop    func(*server)
	}{
		{"held/stdin-eof", false, func(s *server) { s.stdin.Close() }},
		{"held/SIGTERM", false, func(s *server) { s.signal(syscall.SIGTERM) }},
		{"released/stdin-eof", true, func(s *server) { s.stdin.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ws, release := startLocked(t)
			if tc.release {
				release()
			}
			tc.stop(s)
			if code := s.waitExit(); code != 0 {
				t.Fatalf("exit code %d, want 0", code)
			}
			release()
			runners := runnersOf(t, ws, s)
			switch {
			case !tc.release && len(runners) != 0:
				t.Errorf("runners = %+v, want none: the store never opened", runners)
			case tc.release && (len(runners) != 1 || runners[0].StoppedAt == nil):
				t.Errorf("runners = %+v, want this server's, marked stopped", runners)
			}
			if !tc.release && !strings.Contains(s.stderr.String(), "stopped without opening the workspace's state") {
				t.Errorf("stderr does not say the state was never opened:\n%s", s.stderr)
			}
		})
	}
}

// A store that cannot be opened (here a database file that is not one) is reported where
// the user and the model see it: the error on stderr when it happens (once the client has
// the tool list), every tool call refused with its cause, and exit status 1 with the
// error when the client disconnects.
func TestStdio_StoreThatCannotOpen(t *testing.T) {
	ws := t.TempDir()
	state := filepath.Join(ws, workspace.StateDirName)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, workspace.DBFileName), []byte(strings.Repeat("not a database ", 300)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, ws)
	s.initialize()
	if list, _ := s.call("tools/list", nil, nil)["result"].(map[string]any); list["tools"] == nil {
		t.Errorf("tools/list = %v", list)
	}
	s.waitStderr("could not open the workspace's state")
	for _, tool := range []string{"tasks_list", "shell_list"} {
		res := s.toolCall(tool, map[string]any{})
		if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "INTERNAL: ") ||
			!strings.Contains(text, "could not open the workspace's state") || !strings.Contains(text, "not a database") {
			t.Errorf("%s = %q, want INTERNAL saying the state could not be opened and why", tool, text)
		}
	}
	s.stdin.Close()
	if code := s.waitExit(); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if lines := strings.Split(strings.TrimSpace(s.stderr.String()), "\n"); !strings.HasPrefix(lines[len(lines)-1], "mcp-harness: ") || !strings.Contains(lines[len(lines)-1], "not a database") {
		t.Errorf("stderr = %q, want it to end with the error", s.stderr)
	}
}

func TestStdio_FlagsFromEnvironment(t *testing.T) {
	ws, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	cmd := exec.Command(binPath, "stdio")
	cmd.Env = append(os.Environ(), "MCP_HARNESS_WORKSPACE="+ws, "MCP_HARNESS_STATE_DIR="+state)
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("stdio with env flags: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(state, workspace.DBFileName)); err != nil {
		t.Errorf("MCP_HARNESS_STATE_DIR not used: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, workspace.StateDirName)); !os.IsNotExist(err) {
		t.Errorf("default state dir created although MCP_HARNESS_STATE_DIR was set")
	}

	bad := exec.Command(binPath, "stdio", "--workspace", ws)
	bad.Env = append(os.Environ(), "MCP_HARNESS_MAX_WAIT=soon")
	out, err := bad.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 || !strings.Contains(string(out), "MCP_HARNESS_MAX_WAIT") {
		t.Errorf("bad env value: err=%v out=%q, want exit 2 naming the variable", err, out)
	}
}

// A person who runs the server by hand sees what it is; a client piping to it does not.
func TestStdio_TerminalNotice(t *testing.T) {
	ptmx, tty, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command(binPath, "stdio", "--workspace", t.TempDir())
	cmd.Stdin = tty
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	firstLine := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		firstLine <- line
		io.Copy(io.Discard, stderr)
	}()
	var line string
	select {
	case line = <-firstLine:
	case <-time.After(e2eWait):
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if !strings.Contains(line, "waits for a client on stdin") || !strings.Contains(line, "README") {
		t.Errorf("first stderr line with a terminal on stdin = %q, want the notice", line)
	}

	s := startServer(t, t.TempDir())
	s.initialize()
	s.stdin.Close()
	s.waitExit()
	if strings.Contains(s.stderr.String(), "waits for a client") {
		t.Errorf("notice printed although stdin is a pipe")
	}
}

func TestVersionAndHelp(t *testing.T) {
	out, err := exec.Command(binPath, "version").Output()
	if want := binVersion(t); err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("version = %q, %v; want %s", out, err, want)
	}
	out, err = exec.Command(binPath).Output()
	if err != nil || !strings.Contains(string(out), "stdio") {
		t.Errorf("no-argument run = %q, %v; want help listing stdio", out, err)
	}
}

func listRunners(t *testing.T, ws string) []store.Runner {
	t.Helper()
	db := openStore(t, ws)
	defer db.Close()
	rs, err := db.ListRunners(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
