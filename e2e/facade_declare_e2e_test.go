package e2e

import (
	"testing"
)

// A client declares the MCP Tasks extension once, in initialize's capabilities, or in each
// request's _meta, or both: either way tasks_run answers with a task and tasks/get,
// tasks/update and tasks/cancel serve it. A request that declares nothing, from a client
// that did not declare it at initialize, is refused (-32021); a client that never declares
// it gets plain tool results.
func TestE2E_FacadeDeclaration(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		atInitialize, perCall  bool
		wantTask, getUndeclare bool // a task; a tasks/get without _meta is served
	}{
		{"InitializeOnly", true, false, true, true},
		{"PerRequestOnly", false, true, true, false},
		{"Both", true, true, true, true},
		{"Neither", false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, t.TempDir(), "--mcp-tasks")
			caps := map[string]any{}
			if tc.atInitialize {
				caps["extensions"] = map[string]any{tasksExt: map[string]any{}}
			}
			resp := s.call("initialize", map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    caps,
				"clientInfo":      map[string]any{"name": "e2e", "version": "1"},
			}, nil)
			if resp["error"] != nil {
				t.Fatalf("initialize: %v", resp["error"])
			}
			s.send(map[string]any{"method": "notifications/initialized"})

			var meta map[string]any
			if tc.perCall {
				meta = declaring()
			}
			res := s.runAsTask(meta, map[string]any{"id": "a", "command": "true"})
			if got := res["resultType"] == "task"; got != tc.wantTask {
				t.Fatalf("tasks_run answered %v, want a task: %v", res, tc.wantTask)
			}
			id, _ := res["taskId"].(string)
			if !tc.wantTask {
				sc, _ := res["structuredContent"].(map[string]any)
				id, _ = sc["graphId"].(string)
			}

			// With the declaration in the request, every tasks/* method is served when the
			// client declared the extension at all.
			for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
				params := map[string]any{"taskId": id}
				if tc.perCall {
					params["_meta"] = declaring()
				}
				if method == "tasks/update" {
					params["inputResponses"] = map[string]any{}
				}
				resp := s.call(method, params, nil)
				if tc.wantTask {
					if resp["error"] != nil {
						t.Errorf("%s = %v, want it served", method, resp["error"])
					}
				} else {
					wantRPCError(t, method, resp, -32021, "Missing required client capability")
				}
			}
			// Without it in the request, only a declaration at initialize serves it.
			resp = s.call("tasks/get", map[string]any{"taskId": id}, nil)
			if tc.getUndeclare {
				if resp["error"] != nil {
					t.Errorf("tasks/get without _meta after a declaration at initialize = %v", resp["error"])
				}
			} else {
				wantRPCError(t, "tasks/get without _meta", resp, -32021, "initialize's capabilities.extensions")
			}
		})
	}
}
