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
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden tool schemas in testdata/")

// callTool sends one tools/call through the MCP server's JSON-RPC handling, as a client's
// message would arrive, and returns the tool result.
func callTool(t testing.TB, s *testServer, name string, args any) *mcp.CallToolResult {
	t.Helper()
	req, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := s.MCPServer().HandleMessage(t.Context(), req)
	b, err := json.Marshal(resp)
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

func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
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
