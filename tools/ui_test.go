package tools

import (
	"encoding/json"
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/ui"
)

// rpc sends one JSON-RPC request to the table's mcp-go server and returns its result.
func rpc(t *testing.T, s *testServer, method string, params any) map[string]any {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(s.MCPServer().HandleMessage(t.Context(), b))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || resp.Error != nil {
		t.Fatalf("%s: %s", method, out)
	}
	return resp.Result
}

func initializeResult(t *testing.T, s *testServer) map[string]any {
	return rpc(t, s, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})["capabilities"].(map[string]any)
}

// With views (the default) the server declares MCP Apps beside any other extension,
// answers resources/list and resources/read with the two pages, and links the tools to
// them; the model-read part of tools/list is the same (TestToolsList_Budget).
func TestUI_Offered(t *testing.T) {
	s := newTestServer(t)
	// The Tasks extension is declared later, by the protocol layer: both stay.
	protocol.DeclareExtension(s.MCPServer(), "io.modelcontextprotocol/tasks", map[string]any{})
	caps := initializeResult(t, s)
	exts, _ := caps["extensions"].(map[string]any)
	apps, _ := exts[ui.Extension].(map[string]any)
	if apps == nil || exts["io.modelcontextprotocol/tasks"] == nil || caps["resources"] == nil {
		t.Fatalf("initialize capabilities = %v, want the ui and tasks extensions and resources", caps)
	}
	if types, _ := apps["mimeTypes"].([]any); len(types) != 1 || types[0] != ui.MIMEType {
		t.Errorf("ui extension settings = %v, want mimeTypes [%s]", apps, ui.MIMEType)
	}

	list := rpc(t, s, "resources/list", map[string]any{})["resources"].([]any)
	got := map[string]bool{}
	for _, r := range list {
		r := r.(map[string]any)
		if r["mimeType"] != ui.MIMEType {
			t.Errorf("resource %v: mimeType %v, want %s", r["uri"], r["mimeType"], ui.MIMEType)
		}
		got[r["uri"].(string)] = true
	}
	for _, v := range ui.Views() {
		if !got[v.URI] {
			t.Errorf("resources/list has no %s: %v", v.URI, list)
		}
		contents := rpc(t, s, "resources/read", map[string]any{"uri": v.URI})["contents"].([]any)
		c := contents[0].(map[string]any)
		if len(contents) != 1 || c["uri"] != v.URI || c["mimeType"] != ui.MIMEType || c["text"] != v.HTML {
			t.Errorf("resources/read %s = uri %v mimeType %v, %d bytes of text; want the page (%d bytes)",
				v.URI, c["uri"], c["mimeType"], len(c["text"].(string)), len(v.HTML))
		}
	}

	for _, tool := range rpc(t, s, "tools/list", map[string]any{})["tools"].([]any) {
		tool := tool.(map[string]any)
		name := tool["name"].(string)
		var uri any
		if meta, ok := tool["_meta"].(map[string]any); ok {
			uri = meta["ui"].(map[string]any)["resourceUri"]
		}
		if want := ui.LinkFor(name); want == "" && uri != nil || want != "" && uri != want {
			t.Errorf("%s: _meta.ui.resourceUri = %v, want %q", name, uri, want)
		}
	}
}

// --no-ui: no resources, no extension, no links; the tools are otherwise the same.
func TestUI_NoUI(t *testing.T) {
	s := newTestServer(t, func(c *testConfig) { c.NoUI = true })
	caps := initializeResult(t, s)
	if exts, _ := caps["extensions"].(map[string]any); exts[ui.Extension] != nil || caps["resources"] != nil {
		t.Errorf("--no-ui: initialize capabilities = %v, want no ui extension and no resources", caps)
	}
	for _, tool := range rpc(t, s, "tools/list", map[string]any{})["tools"].([]any) {
		if meta := tool.(map[string]any)["_meta"]; meta != nil {
			t.Errorf("--no-ui: %v carries _meta %v", tool.(map[string]any)["name"], meta)
		}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": map[string]any{"uri": ui.GraphURI}})
	out, _ := json.Marshal(s.MCPServer().HandleMessage(t.Context(), b))
	var resp struct{ Error map[string]any }
	if json.Unmarshal(out, &resp); resp.Error == nil {
		t.Errorf("--no-ui: resources/read of the graph = %s, want an error", out)
	}
}
