package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tasksExt = "io.modelcontextprotocol/tasks"

// declaring is a request _meta that declares the MCP Tasks extension.
func declaring() map[string]any {
	return map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"extensions": map[string]any{tasksExt: map[string]any{}},
	}}
}

// runAsTask sends a tools/call of tasks_run; meta may declare the extension.
func (s *server) runAsTask(meta map[string]any, taskSpecs ...any) map[string]any {
	s.t.Helper()
	params := map[string]any{"name": "tasks_run", "arguments": map[string]any{"tasks": taskSpecs}}
	if meta != nil {
		params["_meta"] = meta
	}
	resp := s.call("tools/call", params, nil)
	res, ok := resp["result"].(map[string]any)
	if !ok {
		s.t.Fatalf("tasks_run: %v", resp)
	}
	return res
}

// taskMethod calls tasks/get, tasks/update or tasks/cancel for taskID, declaring the extension.
func (s *server) taskMethod(method, taskID string) map[string]any {
	s.t.Helper()
	params := map[string]any{"taskId": taskID, "_meta": declaring()}
	if method == "tasks/update" {
		params["inputResponses"] = map[string]any{}
	}
	return s.call(method, params, nil)
}

func resultOf(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	res, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", resp)
	}
	return res
}

// wantRPCError checks resp is a JSON-RPC error with code whose message contains msg.
func wantRPCError(t *testing.T, what string, resp map[string]any, code int, msg string) map[string]any {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	if !ok {
		t.Errorf("%s = %v, want error %d", what, resp, code)
		return nil
	}
	if got, _ := e["code"].(float64); int(got) != code || !strings.Contains(e["message"].(string), msg) {
		t.Errorf("%s error = %v %q, want %d with %q", what, e["code"], e["message"], code, msg)
	}
	return e
}

// Without --mcp-tasks nothing of the extension exists: not advertised, its methods are
// unknown, and a tools/call that declares it gets the tool result.
func TestFacade_E2EOff(t *testing.T) {
	s := startServer(t, t.TempDir())
	caps := resultOf(t, s.initialize())["capabilities"].(map[string]any)
	if exts, ok := caps["extensions"].(map[string]any); ok && exts[tasksExt] != nil {
		t.Errorf("capabilities.extensions = %v without --mcp-tasks", exts)
	}
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		wantRPCError(t, method, s.taskMethod(method, "g-any"), -32601, "")
	}
	res := s.runAsTask(declaring(), map[string]any{"id": "a", "command": "true"})
	if res["resultType"] == "task" || structuredOf(t, res)["graphId"] == nil {
		t.Errorf("tasks_run declaring the extension = %v, want the tool result", res)
	}
}

// With --mcp-tasks: advertised; tasks_run becomes a task for a client that declares the
// extension; tasks/get, tasks/update and tasks/cancel work and refuse bad input.
func TestFacade_E2EOn(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws, "--mcp-tasks")
	caps := resultOf(t, s.initialize())["capabilities"].(map[string]any)
	if exts, _ := caps["extensions"].(map[string]any); exts == nil || exts[tasksExt] == nil {
		t.Fatalf("capabilities = %v, want extensions[%q]", caps, tasksExt)
	}

	// A graph that succeeds.
	created := s.runAsTask(declaring(), map[string]any{"id": "hello", "command": "echo hello"})
	taskID, _ := created["taskId"].(string)
	if created["resultType"] != "task" || taskID == "" || created["pollIntervalMs"] != 2000.0 {
		t.Fatalf("tasks_run declaring the extension = %v, want a task", created)
	}
	if st := created["status"]; st != "working" && st != "completed" {
		t.Errorf("created task status = %v", st)
	}
	for _, k := range []string{"createdAt", "lastUpdatedAt", "statusMessage"} {
		if v, _ := created[k].(string); v == "" {
			t.Errorf("created task %s = %v", k, created[k])
		}
	}
	if v, ok := created["ttlMs"]; !ok || v != nil {
		t.Errorf("ttlMs = %v (present %v), want null", v, ok)
	}
	if _, ok := created["content"]; ok {
		t.Errorf("a task carries tool content: %v", created)
	}
	s.waitGraph(taskID) // the task id is the graph id
	got := resultOf(t, s.taskMethod("tasks/get", taskID))
	inline, _ := got["result"].(map[string]any)
	if got["resultType"] != "complete" || got["status"] != "completed" || got["taskId"] != taskID || inline == nil {
		t.Fatalf("tasks/get of a finished graph = %v", got)
	}
	if inline["isError"] == true || structuredOf(t, inline)["status"] != "succeeded" || !strings.Contains(resultText(inline), "hello") {
		t.Errorf("inline result = %v, want the tasks_status result of a succeeded graph", inline)
	}
	if got := resultOf(t, s.taskMethod("tasks/update", taskID)); len(got) != 1 || got["resultType"] != "complete" {
		t.Errorf("tasks/update = %v, want {resultType: complete}", got)
	}

	// A graph that fails is a completed task whose result is an error.
	failing := s.runAsTask(declaring(), map[string]any{"id": "boom", "command": "echo broken; exit 2"})
	s.waitGraph(failing["taskId"].(string))
	got = resultOf(t, s.taskMethod("tasks/get", failing["taskId"].(string)))
	inline, _ = got["result"].(map[string]any)
	if got["status"] != "completed" || inline == nil || inline["isError"] != true || structuredOf(t, inline)["status"] != "failed" {
		t.Errorf("tasks/get of a failed graph = %v, want completed with an isError result", got)
	}

	// A cancel.
	long := s.runAsTask(declaring(), map[string]any{"id": "forever", "command": "sleep 600"})
	longID := long["taskId"].(string)
	if got := resultOf(t, s.taskMethod("tasks/get", longID)); got["status"] != "working" || got["result"] != nil {
		t.Errorf("tasks/get of a running graph = %v, want working, no result", got)
	}
	if got := resultOf(t, s.taskMethod("tasks/cancel", longID)); len(got) != 1 || got["resultType"] != "complete" {
		t.Errorf("tasks/cancel = %v, want {resultType: complete}", got)
	}
	if st := s.waitGraph(longID); st["status"] != "cancelled" {
		t.Errorf("graph after tasks/cancel = %v", st["status"])
	}
	if got := resultOf(t, s.taskMethod("tasks/get", longID)); got["status"] != "cancelled" {
		t.Errorf("tasks/get after tasks/cancel = %v", got)
	}

	// A client that does not declare the extension gets tool results, and no tasks/*.
	plain := s.runAsTask(nil, map[string]any{"id": "a", "command": "true"})
	if plain["resultType"] == "task" || structuredOf(t, plain)["graphId"] == nil {
		t.Errorf("tasks_run not declaring the extension = %v, want the tool result", plain)
	}
	e := wantRPCError(t, "tasks/get not declaring", s.call("tasks/get", map[string]any{"taskId": taskID}, nil), -32021, "Missing required client capability")
	if data, _ := e["data"].(map[string]any); data == nil || data["requiredCapabilities"] == nil {
		t.Errorf("-32021 data = %v, want requiredCapabilities", e["data"])
	}

	// Unknown ids and bad input.
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		wantRPCError(t, method+" unknown", s.taskMethod(method, "g-nope"), -32602, `task not found: "g-nope"`)
	}
	wantRPCError(t, "no taskId", s.call("tasks/get", map[string]any{"_meta": declaring()}, nil), -32602, "params.taskId is required")
	wantRPCError(t, "numeric taskId", s.call("tasks/cancel", map[string]any{"taskId": 7, "_meta": declaring()}, nil), -32602, "params.taskId must be a string")
	wantRPCError(t, "no params", s.call("tasks/get", nil, nil), -32602, "params must be an object")
	wantRPCError(t, "no inputResponses", s.call("tasks/update", map[string]any{"taskId": taskID, "_meta": declaring()}, nil), -32602, "params.inputResponses")
	wantRPCError(t, "tasks/list", s.call("tasks/list", map[string]any{"_meta": declaring()}, nil), -32601, "")
}

// A waiting call with a progressToken gets progress notifications while it waits and none
// after its response: the next response (a ping's) follows with no progress between.
func TestFacade_E2EProgressOrdering(t *testing.T) {
	for name, args := range map[string][]string{"Off": nil, "On": {"--mcp-tasks"}} {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			s := startServer(t, ws, args...)
			s.initialize()
			run := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{
				map[string]any{"id": "gate", "command": "while [ ! -e open ]; do sleep 0.05; done"},
			}}))
			s.send(map[string]any{"id": "wait", "method": "tools/call", "params": map[string]any{
				"name": "tasks_status", "arguments": map[string]any{"graphId": run["graphId"], "waitMs": 25000},
				"_meta": map[string]any{"progressToken": "wait-token"},
			}})
			isProgress := func(m map[string]any) bool {
				p, _ := m["params"].(map[string]any)
				return m["method"] == "notifications/progress" && p["progressToken"] == "wait-token"
			}
			for m := s.next(); !isProgress(m); m = s.next() {
				if m["id"] == "wait" {
					t.Fatalf("the wait ended before any progress: %v", m)
				}
			}
			if err := os.WriteFile(filepath.Join(ws, "open"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			for m := s.next(); m["id"] != "wait"; m = s.next() {
				if m["method"] == nil {
					t.Fatalf("unexpected response: %v", m)
				}
			}
			s.send(map[string]any{"id": "ping", "method": "ping"})
			for m := s.next(); m["id"] != "ping"; m = s.next() {
				if isProgress(m) {
					t.Fatalf("progress after its call's response: %v", m)
				}
			}
		})
	}
}
