// Package tooltest is what the in-process tests of the tool table (tools/) and of the
// composition root (internal/server) share: calling a tool through an mcp-go server's
// JSON-RPC handling as a client's message would arrive, reading its result, and driving a
// graph to its end. Each package holds results to the contract with checks of its own;
// this package only speaks the protocol.
package tooltest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Call sends one tools/call to srv and returns the tool result; a protocol error (no
// result) fails the test.
func Call(t testing.TB, srv *server.MCPServer, name string, args any) *mcp.CallToolResult {
	t.Helper()
	req, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(srv.HandleMessage(t.Context(), req))
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
	return envelope.Result
}

// Text is a result's text blocks, one a line.
func Text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Structured returns the result's structuredContent as a JSON object.
func Structured(t testing.TB, r *mcp.CallToolResult) map[string]any {
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

// Caller calls a tool the way a package's tests do (Call, then that package's checks).
type Caller func(name string, args any) *mcp.CallToolResult

// RunGraph submits a graph with tasks_run and returns its id; a refusal fails the test.
func RunGraph(t testing.TB, call Caller, args map[string]any) string {
	t.Helper()
	res := call("tasks_run", args)
	if res.IsError {
		t.Fatalf("tasks_run: %s", Text(res))
	}
	return Structured(t, res)["graphId"].(string)
}

// WaitGraph waits with tasks_status (extra adds arguments) until the graph has ended and
// returns its status; a graph still running after the longest wait fails the test.
func WaitGraph(t testing.TB, call Caller, graphID string, extra map[string]any) map[string]any {
	t.Helper()
	args := map[string]any{"graphId": graphID, "waitMs": 30000}
	for k, v := range extra {
		args[k] = v
	}
	res := call("tasks_status", args)
	if res.IsError {
		t.Fatalf("tasks_status: %s", Text(res))
	}
	st := Structured(t, res)
	if st["status"] == "running" {
		t.Fatalf("graph still running after the wait: %s", Text(res))
	}
	return st
}

// Lines decodes what a protocol session wrote to out, one JSON message a line, and
// empties out for the next read.
func Lines(t testing.TB, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var msgs []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		msgs = append(msgs, m)
	}
	out.Reset()
	return msgs
}
