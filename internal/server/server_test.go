package server

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/mcp-harness/mcp-harness/internal/schematest"
	"github.com/mcp-harness/mcp-harness/internal/tooltest"
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
// message would arrive, and holds its result to the contract (checkResult).
func callTool(t testing.TB, s *Server, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res := tooltest.Call(t, s.MCPServer(), name, args)
	checkResult(t, s, name, res)
	return res
}

var text = tooltest.Text

func runGraph(t *testing.T, s *Server, args map[string]any) string {
	t.Helper()
	return tooltest.RunGraph(t, func(name string, a any) *mcp.CallToolResult { return callTool(t, s, name, a) }, args)
}

func waitGraph(t *testing.T, s *Server, graphID string, extra map[string]any) map[string]any {
	t.Helper()
	return tooltest.WaitGraph(t, func(name string, a any) *mcp.CallToolResult { return callTool(t, s, name, a) }, graphID, extra)
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
