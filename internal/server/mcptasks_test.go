package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
	"github.com/mcp-harness/mcp-harness/internal/tooltest"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// declaredMeta is a request _meta that declares the Tasks extension.
const declaredMeta = `{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// The response to a tasks_run that declared the extension becomes a task; without the
// declaration, with the flag off, or for a refused graph it is left alone.
func TestFacade_TaskResponse(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MCPTasks = true })
	var out bytes.Buffer
	on := s.newSession(t.Context(), &out)
	off := (&Server{cfg: Config{}, log: s.log, tasks: s.tasks, mcp: s.mcp}).newSession(t.Context(), &out)
	// Each session is initialized once: a second initialize is refused.
	on.Handle([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	off.Handle([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	run := func(f *protocol.Session, meta string, tasks string) map[string]any {
		t.Helper()
		f.Handle([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"tasks_run","arguments":{"tasks":` + tasks + `},"_meta":` + meta + `}}`))
		f.Wait()
		got := lines(t, &out)
		if len(got) != 1 || got[0]["id"] != "a" {
			t.Fatalf("wrote %v, want the response to a", got)
		}
		res, _ := got[0]["result"].(map[string]any)
		return res
	}
	good := `[{"id":"a","command":"true"}]`

	res := run(on, declaredMeta, good)
	graphID, _ := res["taskId"].(string)
	if res["resultType"] != "task" || !strings.HasPrefix(graphID, "g-") || res["pollIntervalMs"] != 2000.0 {
		t.Errorf("declared tasks_run answered %v, want a task for its graph", res)
	}
	for _, k := range []string{"status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs"} {
		if _, ok := res[k]; !ok {
			t.Errorf("task has no %s: %v", k, res)
		}
	}
	if _, ok := res["result"]; ok {
		t.Errorf("CreateTaskResult carries a result: %v", res)
	}
	waitGraph(t, s, graphID, nil)

	for name, tc := range map[string]struct {
		f           *protocol.Session
		meta, tasks string
		isError     bool
	}{
		"NotDeclared": {on, `{}`, good, false},
		"Refused":     {on, declaredMeta, `[]`, true},
		"FlagOff":     {off, declaredMeta, good, false},
	} {
		res := run(tc.f, tc.meta, tc.tasks)
		if _, isTask := res["resultType"]; isTask || res["content"] == nil || (res["isError"] == true) != tc.isError {
			t.Errorf("%s: answered %v, want the tool result unchanged (isError %v)", name, res, tc.isError)
		}
		if sc, _ := res["structuredContent"].(map[string]any); sc["graphId"] != nil {
			waitGraph(t, s, sc["graphId"].(string), nil)
		}
	}
}

// The extension's methods: every error path, and the results.
func TestFacade_Methods(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MCPTasks = true })
	failed := runGraph(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "ok", "command": "echo fine"},
		map[string]any{"id": "bad", "command": "echo broke; exit 3", "dependsOn": []string{"ok"}},
	}})
	waitGraph(t, s, failed, nil)
	var out bytes.Buffer
	f := s.newSession(t.Context(), &out)
	f.Handle([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	// handle sends one request of the extension and returns its answer's result and error.
	handle := func(t *testing.T, method, params string) (json.RawMessage, *methodError) {
		t.Helper()
		line := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"`
		if params != "" {
			line += `,"params":` + params
		}
		f.Handle([]byte(line + "}"))
		f.Wait()
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  *methodError    `json:"error"`
		}
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%s: answered %q: %v", method, out.String(), err)
		}
		out.Reset()
		return m.Result, m.Error
	}

	for _, tc := range []struct {
		name, method, params string
		code                 int
		message              string
	}{
		{"NotAnObject", "tasks/get", `[1]`, -32602, "tasks/get: params must be an object"},
		{"NoParams", "tasks/get", ``, -32602, "tasks/get: params must be an object with a taskId"},
		{"NotDeclared", "tasks/get", `{"taskId":"x"}`, -32021, "Missing required client capability: tasks/get needs the io.modelcontextprotocol/tasks extension"},
		{"DeclaredWrong", "tasks/cancel", `{"taskId":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":true}}}}`, -32021, "Missing required client capability: tasks/cancel"},
		{"NoTaskID", "tasks/get", `{"_meta":` + declaredMeta + `}`, -32602, "tasks/get: params.taskId is required"},
		{"NumberTaskID", "tasks/cancel", `{"taskId":5,"_meta":` + declaredMeta + `}`, -32602, "tasks/cancel: params.taskId must be a string, not 5"},
		{"EmptyTaskID", "tasks/update", `{"taskId":"","inputResponses":{},"_meta":` + declaredMeta + `}`, -32602, "tasks/update: params.taskId is empty"},
		{"NoInputResponses", "tasks/update", `{"taskId":"` + failed + `","_meta":` + declaredMeta + `}`, -32602, "tasks/update: params.inputResponses must be an object"},
		{"UnknownGet", "tasks/get", `{"taskId":"g-nope","_meta":` + declaredMeta + `}`, -32602, `tasks/get: task not found: "g-nope"`},
		{"UnknownUpdate", "tasks/update", `{"taskId":"g-nope","inputResponses":{},"_meta":` + declaredMeta + `}`, -32602, `tasks/update: task not found: "g-nope"`},
		{"UnknownCancel", "tasks/cancel", `{"taskId":"g-nope","_meta":` + declaredMeta + `}`, -32602, `tasks/cancel: task not found: "g-nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := handle(t, tc.method, tc.params)
			if err == nil {
				t.Fatalf("%s(%s) = %s, want error %d", tc.method, tc.params, res, tc.code)
			}
			if err.Code != tc.code || !strings.HasPrefix(err.Message, tc.message) {
				t.Errorf("%s(%s) error = %d %q, want %d %q...", tc.method, tc.params, err.Code, err.Message, tc.code, tc.message)
			}
			if tc.code == -32021 {
				b, _ := json.Marshal(err.Data)
				if want := `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`; string(b) != want {
					t.Errorf("data = %s, want %s", b, want)
				}
			}
		})
	}

	t.Run("GetFailedGraph", func(t *testing.T) {
		res, err := handle(t, "tasks/get", `{"taskId":"`+failed+`","_meta":`+declaredMeta+`}`)
		if err != nil {
			t.Fatal(err)
		}
		var got protocol.Task
		if err := json.Unmarshal(res, &got); err != nil {
			t.Fatal(err)
		}
		if got.ResultType != "complete" || got.Status != "completed" || got.TaskID != failed || got.Result == nil || !got.Result.IsError {
			t.Fatalf("tasks/get of a failed graph = %+v, want a completed task with an isError result", got)
		}
		var st tasks.StatusReport
		if b, err := json.Marshal(got.Result.StructuredContent); err != nil || json.Unmarshal(b, &st) != nil {
			t.Fatalf("inline result = %v, want a tasks_status result", got.Result.StructuredContent)
		}
		if st.Status != "failed" || len(st.Tasks) != 2 {
			t.Errorf("inline result = %+v, want the tasks_status result", st)
		}
		if got.StatusMessage != "graph failed: 2/2 tasks done (1 failed)" {
			t.Errorf("statusMessage = %q", got.StatusMessage)
		}
	})
	for _, method := range []string{"tasks/update", "tasks/cancel"} {
		t.Run(method, func(t *testing.T) {
			res, err := handle(t, method, `{"taskId":"`+failed+`","inputResponses":{"k":{}},"_meta":`+declaredMeta+`}`)
			if err != nil {
				t.Fatal(err)
			}
			if string(res) != `{"resultType":"complete"}` {
				t.Errorf("%s = %s, want an empty acknowledgement", method, res)
			}
		})
	}
}

// methodError is a JSON-RPC error as a test reads it.
type methodError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

func (e *methodError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Listen with the session in front: it answers the extension's methods itself, passes the
// rest to mcp-go, and returns once the input ends, having written every answer.
func TestFacade_Listen(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MCPTasks = true })
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"g-nope","_meta":` + declaredMeta + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"g-nope"}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := s.Listen(t.Context(), strings.NewReader(in), &out); err != nil {
		t.Fatalf("Listen = %v", err)
	}
	codes := map[float64]float64{}
	for _, m := range lines(t, &out) {
		e, _ := m["error"].(map[string]any)
		code, _ := e["code"].(float64)
		codes[m["id"].(float64)] = code
	}
	if want := map[float64]float64{0: 0, 1: -32602, 2: 0, 3: -32021}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("responses (id: error code) = %v, want %v", codes, want)
	}
}

// lines decodes what the session wrote, one JSON message a line.
var lines = tooltest.Lines
