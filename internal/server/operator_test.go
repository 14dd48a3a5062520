package server

import (
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/operator"
	"github.com/mcp-harness/mcp-harness/internal/tooltest"
)

// Two servers on one workspace take server numbers of their own, so their sessions' ids
// differ; each has an operator socket while it runs, and Close removes it.
func TestServer_sessionIDsAndSocket(t *testing.T) {
	ws := t.TempDir()
	a := newTestServer(t, func(c *Config) { c.Workspace = ws })
	b := newTestServer(t, func(c *Config) { c.Workspace = ws })
	open := func(s *Server) string {
		t.Helper()
		res := callTool(t, s, "shell_open", map[string]any{"command": "exec cat", "timeoutMs": 0})
		id, _ := tooltest.Structured(t, res)["sessionId"].(string)
		return id
	}
	if ida, idb := open(a), open(b); ida != "s1-1" || idb != "s2-1" {
		t.Errorf("first sessions of two servers = %q, %q, want s1-1, s2-1", ida, idb)
	}
	if idb := open(b); idb != "s2-2" {
		t.Errorf("second session of server 2 = %q, want s2-2", idb)
	}
	eps, err := operator.Endpoints(a.ws.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 || eps[0].Number != 1 || eps[1].Number != 2 {
		t.Fatalf("sockets = %+v, want servers 1 and 2", eps)
	}
	out, err := operator.Survey(t.Context(), a.ws.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range out {
		if srv.Err != nil || len(srv.Sessions) != srv.Number {
			t.Errorf("server %d: %d sessions (%v), want %d", srv.Number, len(srv.Sessions), srv.Err, srv.Number)
		}
	}
	if err := closeServer(b); err != nil {
		t.Fatal(err)
	}
	if eps, _ := operator.Endpoints(a.ws.StateDir); len(eps) != 1 || eps[0].Number != 1 {
		t.Errorf("sockets after server 2 closed = %+v, want server 1's only", eps)
	}
}
