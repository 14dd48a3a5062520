package tools

import (
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcp-harness/mcp-harness/internal/tooltest"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden tool schemas in testdata/")

// callTool sends one tools/call through the MCP server's JSON-RPC handling, as a client's
// message would arrive, and holds its result to the contract (checkResult).
func callTool(t testing.TB, s *testServer, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res := tooltest.Call(t, s.MCPServer(), name, args)
	checkResult(t, s, name, res)
	return res
}

// caller is callTool on s, for tooltest's graph helpers.
func caller(t testing.TB, s *testServer) tooltest.Caller {
	return func(name string, args any) *mcp.CallToolResult { return callTool(t, s, name, args) }
}

var (
	text       = tooltest.Text
	structured = tooltest.Structured
)

// Each tool as tools/list sends it (schemas, description, annotations) is pinned in
// testdata/<tool>.json, where the end-to-end tests read its output schema, the contract of
// its results: a change to what a model reads before every call, or to what a result
// holds, must be deliberate (go test ./tools -update rewrites them).
func TestToolSchemas_Golden(t *testing.T) {
	s := newTestServer(t)
	for _, tool := range s.registry() {
		name := tool.Tool.Name
		for _, g := range []struct {
			file string
			v    any
		}{{name + ".json", tool.Tool}} {
			got, err := json.MarshalIndent(g.v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", g.file)
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./tools -update)", err)
			}
			if diff := cmp.Diff(strings.TrimSpace(string(want)), strings.TrimSpace(string(got))); diff != "" {
				t.Errorf("testdata/%s changed (-golden +now); run go test ./tools -update if intended:\n%s", g.file, diff)
			}
		}
	}
}

// Every tool has a description, an output schema, and annotations: read-only tools say so.
func TestTools_Contract(t *testing.T) {
	s := newTestServer(t)
	readOnly := map[string]bool{"shell_list": true, "tasks_status": true, "tasks_list": true, "tasks_graph": true}
	for _, tool := range s.registry() {
		tl := tool.Tool
		if tl.Description == "" || len(tl.RawInputSchema) == 0 || len(tl.RawOutputSchema) == 0 {
			t.Errorf("%s lacks a description or a schema", tl.Name)
		}
		ro := tl.Annotations.ReadOnlyHint != nil && *tl.Annotations.ReadOnlyHint
		if ro != readOnly[tl.Name] {
			t.Errorf("%s readOnlyHint = %v, want %v", tl.Name, ro, readOnly[tl.Name])
		}
		// A read-only tool's destructiveHint means nothing (MCP): it is left out to keep
		// tools/list small; every other tool says whether it destroys.
		if !ro && tl.Annotations.DestructiveHint == nil {
			t.Errorf("%s has no destructiveHint", tl.Name)
		}
		if ow := tl.Annotations.OpenWorldHint; ow == nil || *ow {
			t.Errorf("%s: openWorldHint = %v, want false (it touches this machine only)", tl.Name, ow)
		}
	}
}

// requiredFields is the output schema's list of fields, every one always present.
func requiredFields(t *testing.T, s *testServer, tool string) []string {
	t.Helper()
	for _, st := range s.registry() {
		if st.Tool.Name == tool {
			var sch struct {
				Properties map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(st.Tool.RawOutputSchema, &sch); err != nil {
				t.Fatal(err)
			}
			return keys(sch.Properties)
		}
	}
	t.Fatalf("no tool %s", tool)
	return nil
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
