package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mcp-harness/mcp-harness/internal/tooltest"
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

func write(t *testing.T, f *Session, s string) {
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
	var out bytes.Buffer
	f := New(t.Context(), Config{MCP: server.NewMCPServer("t", "1")}, &out)
	f.Handle([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))

	// A request mcp-go answers, and two tools/calls the session runs.
	if !f.Handle([]byte(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x","_meta":{"progressToken":"tok"}}}` + "\n")) {
		t.Fatal("Handle kept a request for mcp-go")
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
	f.Handle([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"y"}}`))
	write(t, f, progressLine(`"t2"`))
	f.finish(`"y"`, y, toolResponse(`"y"`))
	if got := lines(t, &out); len(got) != 0 {
		t.Fatalf("after notifications/cancelled: wrote %v, want nothing (no progress, no response)", got)
	}
	if len(f.calls) != 0 || len(f.tokens) != 0 || f.running != 0 {
		t.Errorf("facade still tracks calls %v, tokens %v, %d running", f.calls, f.tokens, f.running)
	}
}

// toolResponse is a tool call's response as mcp-go returns it to the session.
func toolResponse(id string) mcp.JSONRPCMessage {
	var raw any
	json.Unmarshal([]byte(id), &raw)
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(raw), mcp.NewToolResultText("done"))
}

// The task's _meta is the tool result's.
func TestFacade_AsTaskKeepsMeta(t *testing.T) {
	graphID := "g-1"
	f := New(t.Context(), Config{MCP: server.NewMCPServer("t", "1"), Tasks: &TasksExtension{Store: knownTasks{graphID}, Tool: "tasks_run", IDField: "graphId"}}, &bytes.Buffer{})
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":"a","result":{"_meta":{"k":"v"},"content":[{"type":"text","text":"ok"}],"structuredContent":{"graphId":%q}}}`+"\n", graphID)
	var m map[string]any
	if err := json.Unmarshal(f.asTask([]byte(line)), &m); err != nil {
		t.Fatal(err)
	}
	res, _ := m["result"].(map[string]any)
	if meta, _ := res["_meta"].(map[string]any); res["resultType"] != "task" || meta["k"] != "v" {
		t.Errorf("task = %v, want a task with the tool result's _meta", res)
	}
}

// knownTasks is a TaskStore that knows the tasks of its ids, all of them working.
type knownTasks []string

func (k knownTasks) Ready(context.Context) error { return nil }

func (k knownTasks) Task(_ context.Context, id string, _ bool) (Task, error) {
	if slices.Contains(k, id) {
		return Task{TaskID: id, Status: "working"}, nil
	}
	return Task{}, ErrTaskNotFound
}

func (k knownTasks) Cancel(ctx context.Context, id string) error {
	_, err := k.Task(ctx, id, false)
	return err
}

// lines decodes what the session wrote, one JSON message a line.
var lines = tooltest.Lines
