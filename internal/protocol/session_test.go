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

func TestFacade_TokenKey(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string
		ok   bool
	}{
		{`5`, `5`, true}, {`5.0`, `5`, true}, {`5e0`, `5`, true}, {`"5"`, `"5"`, true},
		{`"tok"`, `"tok"`, true}, {`null`, ``, false}, {``, ``, false}, {`{}`, ``, false}, {`[1]`, ``, false}, {`true`, ``, false},
	} {
		if got, ok := tokenKey(json.RawMessage(tc.raw)); got != tc.want || ok != tc.ok {
			t.Errorf("tokenKey(%s) = %q, %v, want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}

// Ids are keyed by value, exactly: one number's spellings are one id, two numbers one
// float64 apart are two, and a string is never a number.
func TestFacade_IDKey(t *testing.T) {
	same := [][]string{
		{`5`, `5.0`, `5e0`, `0.5e1`, `50E-1`},
		{`9007199254740993`, `9007199254740993.0`},
		{`-0`, `0`},
		{`"5"`, `"\u0035"`},
	}
	var keys []string
	for _, group := range same {
		first, ok := idKey(json.RawMessage(group[0]))
		if !ok {
			t.Fatalf("idKey(%s) refused it", group[0])
		}
		for _, raw := range group[1:] {
			if got, _ := idKey(json.RawMessage(raw)); got != first {
				t.Errorf("idKey(%s) = %q, want %q, the key of %s", raw, got, first, group[0])
			}
		}
		keys = append(keys, first)
	}
	k, _ := idKey(json.RawMessage(`9007199254740992`))
	keys = append(keys, k)
	slices.Sort(keys)
	if len(slices.Compact(keys)) != len(same)+1 {
		t.Errorf("distinct ids share a key: %q", keys)
	}
	for _, raw := range []string{`null`, ``, `{}`, `[1]`, `true`, `-`, `"x`} {
		if got, ok := idKey(json.RawMessage(raw)); ok {
			t.Errorf("idKey(%s) = %q, want it refused", raw, got)
		}
	}
	// A huge exponent is keyed by its spelling, not computed.
	if got, ok := idKey(json.RawMessage(`1e999999999`)); !ok || got != "n1e999999999" {
		t.Errorf("idKey(1e999999999) = %q, %v", got, ok)
	}
}

// withID replaces the id's value, and only it, byte for byte, wherever it is.
func TestFacade_WithID(t *testing.T) {
	for _, tc := range []struct{ in, id, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `7`, `{"jsonrpc":"2.0","id":7,"method":"ping"}`},
		{`{"method":"ping", "id" : "a\u00e9<" ,"params":{"id":3}}` + "\n", `12`, `{"method":"ping", "id" : 12 ,"params":{"id":3}}` + "\n"},
		{`{"id":1,"ID":2}`, `9007199254740993`, `{"id":1,"ID":9007199254740993}`},
		{`{"result":{},"id":9}`, `1.0e3`, `{"result":{},"id":1.0e3}`},
		{`{"method":"x"}`, `1`, `{"method":"x"}`},
		{`[1]`, `1`, `[1]`},
	} {
		if got := string(withID([]byte(tc.in), json.RawMessage(tc.id))); got != tc.want {
			t.Errorf("withID(%s, %s) = %s, want %s", tc.in, tc.id, got, tc.want)
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
	var wire struct{ ID json.RawMessage }
	if err := json.Unmarshal(f.Handle([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)), &wire); err != nil {
		t.Fatal(err)
	}
	write(t, f, `{"jsonrpc":"2.0","id":`+string(wire.ID)+`,"result":{"protocolVersion":"2025-06-18"}}`+"\n")
	if got := lines(t, &out); len(got) != 1 || got[0]["id"] != 0.0 {
		t.Fatalf("after initialize: wrote %v, want its response, with the client's id", got)
	}

	// A request mcp-go answers, and two tools/calls the session runs.
	forwarded := f.Handle([]byte(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x","_meta":{"progressToken":"tok"}}}` + "\n"))
	if json.Unmarshal(forwarded, &wire) != nil || len(wire.ID) == 0 {
		t.Fatalf("Handle handed on %q, want the request for mcp-go", forwarded)
	}
	toolCall := func(id, token string) *call {
		c := &call{id: json.RawMessage(id), token: token, tool: true, cancel: func() {}}
		key, _ := idKey(c.id)
		f.mu.Lock()
		f.trackLocked(key, c)
		f.running++
		f.mu.Unlock()
		return c
	}
	x := toolCall(`"x"`, "42")
	xKey, _ := idKey(x.id)
	write(t, f, progressLine(`"tok"`))
	write(t, f, progressLine(`42.0`))
	write(t, f, progressLine(`"unknown"`))
	if got := lines(t, &out); len(got) != 2 {
		t.Fatalf("while waiting: wrote %v, want the two progress notifications of live requests", got)
	}

	response := `{"jsonrpc":"2.0","id":` + string(wire.ID) + `,"result":{"contents":[{"uri":"x","text":"notifications/progress"}]}}` + "\n"
	write(t, f, response[:20])
	write(t, f, response[20:]+progressLine(`"tok"`)[:10])
	write(t, f, progressLine(`"tok"`)[10:])
	write(t, f, progressLine(`42`))
	got := lines(t, &out)
	if len(got) != 2 || got[0]["id"] != 7.0 || got[1]["method"] != "notifications/progress" {
		t.Fatalf("after the response to 7: wrote %v, want the response and the progress of \"x\" only", got)
	}

	f.finish(xKey, x, toolResponse(`"x"`))
	write(t, f, progressLine(`42`))
	if got := lines(t, &out); len(got) != 1 || got[0]["id"] != "x" {
		t.Fatalf("after the response to \"x\": wrote %v, want the response alone", got)
	}

	y := toolCall(`"y"`, `"t2"`)
	f.Handle([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"y"}}`))
	write(t, f, progressLine(`"t2"`))
	yKey, _ := idKey(y.id)
	f.finish(yKey, y, toolResponse(`"y"`))
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

// A progress token comes back as the client sent it, though mcp-go writes the float64 it
// decoded.
func TestFacade_ProgressTokenAsSent(t *testing.T) {
	var out bytes.Buffer
	f := New(t.Context(), Config{MCP: server.NewMCPServer("t", "1")}, &out)
	f.Handle([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	f.Handle([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x","_meta":{"progressToken":9007199254740993}}}`))
	write(t, f, progressLine(`9007199254740992`))
	var m struct {
		Params struct{ ProgressToken json.RawMessage }
	}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || string(m.Params.ProgressToken) != "9007199254740993" {
		t.Errorf("wrote %q (%v), want the notification with the client's token 9007199254740993", out.String(), err)
	}
}
