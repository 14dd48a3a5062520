package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/mcp-harness/mcp-harness/internal/schematest"
)

// codeBusy is the tool contract's code the server answers while the store is locked.
const codeBusy = "BUSY"

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// New resolves the workspace, opens its store, registers this process as a runner and
// starts the engines, all before it returns (Serve opens the store only once the client
// has its tool list). Nothing is written to stdout. Only tests start a server this way.
func New(ctx context.Context, cfg Config) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	a := &openAttempt{done: make(chan struct{}), cancel: func() {}}
	s.attempt = a
	s.run(ctx, a, false)
	if a.err != nil {
		return nil, a.err
	}
	return s, nil
}

// newTestServer opens a server on a fresh workspace; Close runs at cleanup.
func newTestServer(t *testing.T, mutate ...func(*Config)) *Server {
	t.Helper()
	cfg := Config{Workspace: t.TempDir(), Logger: discardLogger(), MaxWait: 30 * time.Second}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeServer(s); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// closeServer closes a server in a cleanup, where t.Context() is already cancelled.
func closeServer(s *Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Close(ctx)
}

// callTool sends one tools/call through the MCP server's JSON-RPC handling, as a client's
// message would arrive, and returns the tool result.
func callTool(t testing.TB, s *Server, name string, args any) *mcp.CallToolResult {
	t.Helper()
	req, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s.MCPServer().HandleMessage(t.Context(), req))
	if err != nil {
		t.Fatal(err)
	}
	var envelope struct {
		Result *mcp.CallToolResult `json:"result"`
		Error  any                 `json:"error"`
	}
	if err := json.Unmarshal(b, &envelope); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if envelope.Error != nil || envelope.Result == nil {
		t.Fatalf("%s: protocol error %v", name, envelope.Error)
	}
	checkResult(t, s, name, envelope.Result)
	return envelope.Result
}

var errorShape = regexp.MustCompile(`^[A-Z_]+: \S`)

// checkResult holds a tool result to the contract the tools package's tests hold every
// result to, as far as a client sees it: an error is a code and a sentence, and a
// successful result's structuredContent validates against the output schema the tool
// sends, made strict.
func checkResult(t testing.TB, s *Server, name string, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError {
		if got := text(res); !errorShape.MatchString(got) {
			t.Errorf("%s: error text %q: want CODE: a sentence", name, got)
		}
		return
	}
	if res.StructuredContent == nil {
		t.Errorf("%s: a successful result without structuredContent", name)
		return
	}
	if err := schematest.Validate(sentSchema(t, s, name), res.StructuredContent); err != nil {
		t.Errorf("%s: structuredContent does not match the output schema it sends: %v", name, err)
	}
}

// sent caches the strict form of each tool's sent output schema.
var sent sync.Map // tool name -> *jsonschema.Schema

func sentSchema(t testing.TB, s *Server, name string) *jsonschema.Schema {
	t.Helper()
	if sch, ok := sent.Load(name); ok {
		return sch.(*jsonschema.Schema)
	}
	tool := s.MCPServer().GetTool(name)
	if tool == nil {
		t.Fatalf("no tool %s", name)
	}
	sch, err := schematest.Compile(name, tool.Tool.RawOutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	sent.Store(name, sch)
	return sch
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured returns the result's structuredContent as a JSON object.
func structured(t testing.TB, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return m
}

func runGraph(t *testing.T, s *Server, args map[string]any) string {
	t.Helper()
	res := callTool(t, s, "tasks_run", args)
	if res.IsError {
		t.Fatalf("tasks_run: %s", text(res))
	}
	return structured(t, res)["graphId"].(string)
}

func waitGraph(t *testing.T, s *Server, graphID string, extra map[string]any) map[string]any {
	t.Helper()
	args := map[string]any{"graphId": graphID, "waitMs": 30000}
	for k, v := range extra {
		args[k] = v
	}
	res := callTool(t, s, "tasks_status", args)
	if res.IsError {
		t.Fatalf("tasks_status: %s", text(res))
	}
	st := structured(t, res)
	if st["status"] == "running" {
		t.Fatalf("graph still running after the wait: %s", text(res))
	}
	return st
}
