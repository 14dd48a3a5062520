package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcp-harness/mcp-harness/internal/cli"
	"github.com/mcp-harness/mcp-harness/internal/schematest"
	"github.com/mcp-harness/mcp-harness/internal/workspace"
	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// binPath is the mcp-harness binary built once for the end-to-end tests.
var binPath string

// mainPackage is the command these tests build: named by import path, the build does not
// depend on the directory the tests run in.
const mainPackage = "github.com/mcp-harness/mcp-harness"

// helperPackage is the server's remote helper (internal/remote), built beside it.
const helperPackage = mainPackage + "/cmd/mcp-harness-remote"

// fakeOperatorEnv names the state directory in which the test binary, started as a fake
// server (fakeop_linux_test.go), listens.
const fakeOperatorEnv = "E2E_FAKE_OPERATOR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(fakeOperatorEnv); dir != "" {
		os.Exit(fakeOperator(dir)) // this test binary, started as a fake server (fakeop_linux_test.go)
	}
	dir, err := os.MkdirTemp("", "mcp-harness-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The server and, beside it where the server looks for it, its remote helper.
	binPath = filepath.Join(dir, "mcp-harness")
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, mainPackage, helperPackage)...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mcp-harness:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// A binary built with the race detector sleeps a second before it exits, by default;
	// the servers these tests stop would each pay it.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// e2eWait is the deadline for anything the tests wait on. It is generous because the
// machines are shared and the binary may carry the race detector; it bounds a failure, it
// does not measure speed (the benchmarks do that).
const e2eWait = 30 * time.Second

// server is the built binary run as `mcp-harness stdio`, spoken to in raw JSON-RPC lines.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	msgs   chan map[string]any // every message the server wrote, in order
	stdout *lockedBuffer       // every byte of stdout, to check it is all protocol
	stderr *lockedBuffer
	exited chan struct{}
	state  *os.ProcessState
	nextID int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer runs `mcp-harness stdio --workspace ws --log-level info args...`, or exactly
// args when ws is "". The info level puts the server's story on stderr, which a failing
// test prints and some tests wait on ("shutting down"); a normal start says nothing there.
func startServer(t *testing.T, ws string, args ...string) *server {
	t.Helper()
	if ws != "" {
		args = append([]string{"stdio", "--workspace", ws, "--log-level", "info"}, args...)
	}
	return startCmd(t, exec.Command(binPath, args...))
}

// startCmd runs cmd as a server, as startServer does: cmd is the built binary (or a
// program that executes it) with its arguments, and whatever else the caller set on it
// (Env, SysProcAttr); its standard streams are the server's.
func startCmd(t *testing.T, cmd *exec.Cmd) *server {
	t.Helper()
	s := &server{t: t, msgs: make(chan map[string]any, 1000), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	s.cmd = cmd
	s.cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(s.msgs)
		sc := bufio.NewScanner(io.TeeReader(out, s.stdout))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"__unparsable": sc.Text()}
			}
			s.msgs <- m
		}
	}()
	go func() {
		<-readDone // Wait closes the pipe: read it all first
		s.cmd.Wait()
		s.state = s.cmd.ProcessState
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.stderr)
		}
	})
	return s
}

func (s *server) sendLine(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("write to server: %v", err)
	}
}

func (s *server) send(msg map[string]any) {
	s.t.Helper()
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.sendLine(string(b))
}

// next returns the next message the server writes.
func (s *server) next() map[string]any {
	s.t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			s.t.Fatalf("server closed stdout (exited: %v)", s.state)
		}
		if line, bad := m["__unparsable"]; bad {
			s.t.Fatalf("server wrote a line that is not JSON: %q", line)
		}
		return m
	case <-time.After(e2eWait):
		s.t.Fatalf("no message from the server within %v", e2eWait)
	}
	return nil
}

// call sends a request and returns its response; notifications that arrive first are
// passed to onNote if it is not nil.
func (s *server) call(method string, params any, onNote func(map[string]any)) map[string]any {
	s.t.Helper()
	s.nextID++
	id := s.nextID
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	s.send(msg)
	for {
		m := s.next()
		if _, isResponse := m["id"]; isResponse && m["method"] == nil {
			if got, _ := m["id"].(float64); int(got) == id {
				s.checkResponse(method, params, m)
				return m
			}
			s.t.Fatalf("response to another request: %v", m)
		}
		if onNote != nil {
			onNote(m)
		}
	}
}

func (s *server) initialize() map[string]any {
	s.t.Helper()
	resp := s.call("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "e2e", "version": "1"},
	}, nil)
	if resp["error"] != nil {
		s.t.Fatalf("initialize: %v", resp["error"])
	}
	s.send(map[string]any{"method": "notifications/initialized"})
	return resp
}

// waitExit waits for the process to end and returns its exit code (-1 if signalled).
func (s *server) waitExit() int {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(e2eWait):
		s.t.Fatalf("server still running %v after it was asked to stop", e2eWait)
	}
	return s.state.ExitCode()
}

func (s *server) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

// checkResponse holds every tool result a test receives from the binary to the contract
// (the in-process tests of tools do the same): its text and its structuredContent fit
// --max-result, and a successful result's structuredContent validates, with a real JSON
// Schema validator, against the output schema the tool sends (its golden file, the whole
// contract), made strict (every field present, no other). A tasks/get that carries a tool result inline (the MCP Tasks facade)
// is held to tasks_status's schema.
func (s *server) checkResponse(method string, params any, resp map[string]any) {
	s.t.Helper()
	result, _ := resp["result"].(map[string]any)
	var name string
	switch method {
	case "tools/call":
		b, _ := json.Marshal(params)
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(b, &p)
		name = p.Name
	case "tasks/get":
		name = "tasks_status"
		result, _ = result["result"].(map[string]any)
	}
	if name == "" || result == nil || result["resultType"] == "task" {
		return
	}
	checkToolResult(s.t, name, result, s.maxResult())
}

// maxResult is the --max-result the server was started with.
func (s *server) maxResult() int {
	for i, a := range s.cmd.Args {
		v, ok := strings.CutPrefix(a, "--max-result=")
		if !ok && a == "--max-result" && i+1 < len(s.cmd.Args) {
			v, ok = s.cmd.Args[i+1], true
		}
		if ok {
			if n, err := cli.ParseByteSize(v); err == nil {
				return int(n)
			}
		}
	}
	return tasks.DefaultMaxResult
}

// outputSchemas holds each tool's output schemas, made strict, compiled once: the one
// tools/list sends, the whole contract of its results. It is read from tools/testdata,
// where TestToolSchemas_Golden pins it to the code (<tool>.json, as tools/list sends the
// tool).
var outputSchemas sync.Map // tool name -> []*jsonschema.Schema

// checkToolResult checks one tool result (decoded JSON) against the contract; see
// checkResponse.
func checkToolResult(t testing.TB, name string, result map[string]any, limit int) {
	t.Helper()
	content, _ := result["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			if text, _ := m["text"].(string); len(text) > limit {
				t.Errorf("%s: text is %d bytes, over --max-result %d", name, len(text), limit)
			}
		}
	}
	sc, has := result["structuredContent"]
	if has {
		b, _ := json.Marshal(sc)
		if len(b) > limit {
			t.Errorf("%s: structuredContent is %d bytes, over --max-result %d", name, len(b), limit)
		}
	}
	if result["isError"] == true {
		return
	}
	if !has {
		t.Errorf("%s: a successful result without structuredContent", name)
		return
	}
	schemas, ok := outputSchemas.Load(name)
	if !ok {
		schemas, _ = outputSchemas.LoadOrStore(name, loadOutputSchemas(t, name))
	}
	for _, sch := range schemas.([]*jsonschema.Schema) {
		if err := schematest.Validate(sch, sc); err != nil {
			b, _ := json.Marshal(sc)
			t.Errorf("%s: structuredContent does not match its output schema (%s): %v\n%s", name, sch.Location, err, shortText(string(b), 2000))
		}
	}
}

// loadOutputSchemas compiles the strict form of a tool's output schema from
// tools/testdata, as tools/list sends it.
func loadOutputSchemas(t testing.TB, name string) []*jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "tools", "testdata", name+".json"))
	if err != nil {
		t.Fatalf("output schema of %s: %v", name, err)
	}
	var tool struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &tool); err != nil {
		t.Fatalf("tools/testdata/%s.json: %v", name, err)
	}
	sch, err := schematest.Compile(name+".sent", tool.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	return []*jsonschema.Schema{sch}
}

func shortText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// openStore opens the store of workspace ws as another process would (the caller closes
// it): what a later server, the operator CLI or a person with sqlite3 finds.
func openStore(t *testing.T, ws string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), filepath.Join(ws, workspace.StateDirName, workspace.DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	return db
}
