package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/tasks"
)

// declaredMeta is a request _meta that declares the Tasks extension.
const declaredMeta = `{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

func TestFacade_DeclaresTasks(t *testing.T) {
	for _, tc := range []struct {
		meta string
		want bool
	}{
		{declaredMeta, true},
		{`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{"x":1},"other/ext":{}}}}`, true},
		{`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":true}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":null}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"other/ext":{}}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"extensions":[]}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities":{"io.modelcontextprotocol/tasks":{}}}`, false},
		{`{"io.modelcontextprotocol/tasks":{}}`, false},
		{`{}`, false},
		{`"meta"`, false},
		{``, false},
	} {
		if got := declaresTasks(members(json.RawMessage(tc.meta))); got != tc.want {
			t.Errorf("declaresTasks(%s) = %v, want %v", tc.meta, got, tc.want)
		}
	}
}

func TestFacade_JSONKey(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string
		ok   bool
	}{
		{`5`, `5`, true}, {`5.0`, `5`, true}, {`5e0`, `5`, true}, {`"5"`, `"5"`, true},
		{`"tok"`, `"tok"`, true}, {`null`, ``, false}, {``, ``, false}, {`{}`, ``, false}, {`[1]`, ``, false}, {`true`, ``, false},
	} {
		if got, ok := jsonKey(json.RawMessage(tc.raw)); got != tc.want || ok != tc.ok {
			t.Errorf("jsonKey(%s) = %q, %v, want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

// lines decodes what the facade wrote, one JSON message a line.
func lines(t *testing.T, out *bytes.Buffer) []map[string]any {
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

func write(t *testing.T, f *facade, s string) {
	t.Helper()
	if n, err := f.Write([]byte(s)); n != len(s) || err != nil {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func progressLine(token string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":%s,"message":"1/2 done"}}`+"\n", token)
}

// A progress notification passes while its request is unanswered and is dropped once the
// response went out, or the client cancelled the request; so is one for a token no request
// carries. Lines split across writes are put together first.
func TestFacade_DropsLateProgress(t *testing.T) {
	s := newTestServer(t)
	var out bytes.Buffer
	f := s.newFacade(t.Context(), &out)
	f.route([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))

	// A request mcp-go answers, and two tools/calls the facade runs.
	if !f.route([]byte(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x","_meta":{"progressToken":"tok"}}}` + "\n")) {
		t.Fatal("route kept a request for mcp-go")
	}
	toolCall := func(id, token string) *call {
		c := &call{token: token, tool: true, cancel: func() {}}
		f.mu.Lock()
		f.trackLocked(id, c)
		f.running++
		f.mu.Unlock()
		return c
	}
	x := toolCall(`"x"`, "42")
	write(t, f, progressLine(`"tok"`))
	write(t, f, progressLine(`42.0`))
	write(t, f, progressLine(`"unknown"`))
	if got := lines(t, &out); len(got) != 2 {
		t.Fatalf("while waiting: wrote %v, want the two progress notifications of live requests", got)
	}

	response := `{"jsonrpc":"2.0","id":7,"result":{"contents":[{"uri":"x","text":"notifications/progress"}]}}` + "\n"
	write(t, f, response[:20])
	write(t, f, response[20:]+progressLine(`"tok"`)[:10])
	write(t, f, progressLine(`"tok"`)[10:])
	write(t, f, progressLine(`42`))
	got := lines(t, &out)
	if len(got) != 2 || got[0]["id"] != 7.0 || got[1]["method"] != "notifications/progress" {
		t.Fatalf("after the response to 7: wrote %v, want the response and the progress of \"x\" only", got)
	}

	f.finish(`"x"`, x, toolResponse(`"x"`))
	write(t, f, progressLine(`42`))
	if got := lines(t, &out); len(got) != 1 || got[0]["id"] != "x" {
		t.Fatalf("after the response to \"x\": wrote %v, want the response alone", got)
	}

	y := toolCall(`"y"`, `"t2"`)
	f.route([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"y"}}`))
	write(t, f, progressLine(`"t2"`))
	f.finish(`"y"`, y, toolResponse(`"y"`))
	if got := lines(t, &out); len(got) != 0 {
		t.Fatalf("after notifications/cancelled: wrote %v, want nothing (no progress, no response)", got)
	}
	if len(f.calls) != 0 || len(f.tokens) != 0 || f.running != 0 {
		t.Errorf("facade still tracks calls %v, tokens %v, %d running", f.calls, f.tokens, f.running)
	}
}

// toolResponse is a tool call's response as mcp-go returns it to the facade.
func toolResponse(id string) mcp.JSONRPCMessage {
	var raw any
	json.Unmarshal([]byte(id), &raw)
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(raw), mcp.NewToolResultText("done"))
}

// The response to a tasks_run that declared the extension becomes a task; without the
// declaration, with the flag off, or for a refused graph it is left alone.
func TestFacade_TaskResponse(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MCPTasks = true })
	var out bytes.Buffer
	on := s.newFacade(t.Context(), &out)
	off := (&Server{cfg: Config{}, log: s.log, tasks: s.tasks, mcp: s.mcp}).newFacade(t.Context(), &out)
	run := func(f *facade, meta string, tasks string) map[string]any {
		t.Helper()
		f.route([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
		f.route([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"tasks_run","arguments":{"tasks":` + tasks + `},"_meta":` + meta + `}}`))
		f.wg.Wait()
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
		f           *facade
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

// The task's _meta is the tool result's.
func TestFacade_AsTaskKeepsMeta(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MCPTasks = true })
	graphID := runGraph(t, s, map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true"}}})
	f := s.newFacade(t.Context(), &bytes.Buffer{})
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":"a","result":{"_meta":{"k":"v"},"content":[{"type":"text","text":"ok"}],"structuredContent":{"graphId":%q}}}`+"\n", graphID)
	var m map[string]any
	if err := json.Unmarshal(f.asTask([]byte(line)), &m); err != nil {
		t.Fatal(err)
	}
	res, _ := m["result"].(map[string]any)
	if meta, _ := res["_meta"].(map[string]any); res["resultType"] != "task" || meta["k"] != "v" {
		t.Errorf("task = %v, want a task with the tool result's _meta", res)
	}
	waitGraph(t, s, graphID, nil)
}

// The extension's methods: every error path, and the results.
func TestFacade_Methods(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MCPTasks = true })
	failed := runGraph(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "ok", "command": "echo fine"},
		map[string]any{"id": "bad", "command": "echo broke; exit 3", "dependsOn": []string{"ok"}},
	}})
	waitGraph(t, s, failed, nil)
	f := s.newFacade(t.Context(), &bytes.Buffer{})

	for _, tc := range []struct {
		name, method, params string
		code                 int
		message              string
	}{
		{"NotAnObject", "tasks/get", `[1]`, -32602, "tasks/get: params must be an object with a taskId"},
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
			res, err := f.handle(t.Context(), tc.method, json.RawMessage(tc.params))
			if err == nil {
				t.Fatalf("%s(%s) = %v, want error %d", tc.method, tc.params, res, tc.code)
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
		res, err := f.handle(t.Context(), "tasks/get", json.RawMessage(`{"taskId":"`+failed+`","_meta":`+declaredMeta+`}`))
		if err != nil {
			t.Fatal(err)
		}
		got := res.(task)
		if got.ResultType != "complete" || got.Status != "completed" || got.TaskID != failed || got.Result == nil || !got.Result.IsError {
			t.Fatalf("tasks/get of a failed graph = %+v, want a completed task with an isError result", got)
		}
		if st := got.Result.StructuredContent.(tasks.StatusReport); st.Status != "failed" || len(st.Tasks) != 2 {
			t.Errorf("inline result = %+v, want the tasks_status result", st)
		}
		if got.StatusMessage != "graph failed: 2/2 tasks done (1 failed)" {
			t.Errorf("statusMessage = %q", got.StatusMessage)
		}
	})
	for _, method := range []string{"tasks/update", "tasks/cancel"} {
		t.Run(method, func(t *testing.T) {
			res, err := f.handle(t.Context(), method, json.RawMessage(`{"taskId":"`+failed+`","inputResponses":{"k":{}},"_meta":`+declaredMeta+`}`))
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(res); string(b) != `{"resultType":"complete"}` {
				t.Errorf("%s = %s, want an empty acknowledgement", method, b)
			}
		})
	}
}

// Listen with the facade in front: it answers the extension's methods itself, passes the
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
