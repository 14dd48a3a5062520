package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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
	tok := mcpGoToken(t, forwarded)
	toolCall := func(id, token string) *call {
		c := &call{id: json.RawMessage(id), spelt: json.RawMessage(token), tool: true, cancel: func() {}}
		key, _ := idKey(c.id)
		f.mu.Lock()
		f.trackLocked(key, c)
		f.running++
		f.mu.Unlock()
		return c
	}
	x := toolCall(`"x"`, "42")
	xKey, _ := idKey(x.id)
	write(t, f, progressLine(tok))
	write(t, f, progressLine(string(x.token)+".0")) // a float64 as mcp-go may write it
	write(t, f, progressLine(`"unknown"`))
	write(t, f, progressLine(`"tok"`)) // the client's token, which mcp-go never sees
	if got := lines(t, &out); len(got) != 2 || tokenOf(got[0]) != "tok" || tokenOf(got[1]) != 42.0 {
		t.Fatalf("while waiting: wrote %v, want the two progress notifications of live requests, with the client's tokens", got)
	}

	response := `{"jsonrpc":"2.0","id":` + string(wire.ID) + `,"result":{"contents":[{"uri":"x","text":"notifications/progress"}]}}` + "\n"
	write(t, f, response[:20])
	write(t, f, response[20:]+progressLine(tok)[:10])
	write(t, f, progressLine(tok)[10:])
	write(t, f, progressLine(string(x.token)))
	got := lines(t, &out)
	if len(got) != 2 || got[0]["id"] != 7.0 || got[1]["method"] != "notifications/progress" {
		t.Fatalf("after the response to 7: wrote %v, want the response and the progress of \"x\" only", got)
	}

	f.finish(xKey, x, toolResponse(`"x"`))
	write(t, f, progressLine(string(x.token)))
	if got := lines(t, &out); len(got) != 1 || got[0]["id"] != "x" {
		t.Fatalf("after the response to \"x\": wrote %v, want the response alone", got)
	}

	y := toolCall(`"y"`, `"t2"`)
	f.Handle([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"y"}}`))
	write(t, f, progressLine(string(y.token)))
	yKey, _ := idKey(y.id)
	f.finish(yKey, y, toolResponse(`"y"`))
	if got := lines(t, &out); len(got) != 0 {
		t.Fatalf("after notifications/cancelled: wrote %v, want nothing (no progress, no response)", got)
	}
	if len(f.calls) != 0 || len(f.progress) != 0 || f.running != 0 {
		t.Errorf("facade still tracks calls %v, progress tokens %v, %d running", f.calls, f.progress, f.running)
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

// mcpGoToken is the progress token of a request handed on to mcp-go as mcp-go writes it
// back: decoded as mcp.Meta does (a number into a float64) and encoded again.
func mcpGoToken(t *testing.T, line []byte) string {
	t.Helper()
	var req mcp.ReadResourceRequest
	if err := json.Unmarshal(line, &req); err != nil || req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		t.Fatalf("no progress token in %s (%v)", line, err)
	}
	b, err := json.Marshal(req.Params.Meta.ProgressToken)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tokenOf is the progress token of a decoded notification.
func tokenOf(m map[string]any) any {
	params, _ := m["params"].(map[string]any)
	return params["progressToken"]
}

// rawTokens are the progress tokens of the notifications the session wrote, as written.
func rawTokens(t *testing.T, out *bytes.Buffer) []string {
	t.Helper()
	var tokens []string
	for _, line := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
		var m struct {
			Params struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"params"`
		}
		if len(line) == 0 {
			continue
		}
		if err := json.Unmarshal(line, &m); err != nil || m.Params.ProgressToken == nil {
			t.Fatalf("wrote %q, want a notification with a progress token (%v)", line, err)
		}
		tokens = append(tokens, string(m.Params.ProgressToken))
	}
	out.Reset()
	return tokens
}

// Progress tokens come back as the client sent them, each to its own request's
// notifications, though mcp-go takes a number for a float64: two tokens one float64
// apart stay two, and a spelling is kept.
func TestFacade_ProgressTokenAsSent(t *testing.T) {
	var out bytes.Buffer
	f := New(t.Context(), Config{MCP: server.NewMCPServer("t", "1")}, &out)
	f.Handle([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	sent := []string{`9007199254740992`, `9007199254740993`, `5.0`, `5`, `"a\u00e9<"`}
	var wrote []string // the tokens of the requests as mcp-go writes them back
	for i, token := range sent {
		// The names as mcp-go reads them: params and _meta in any case.
		line := f.Handle(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"resources/read","PARAMS":{"uri":"x","_Meta":{"progressToken":%s}}}`, i+1, token))
		wrote = append(wrote, mcpGoToken(t, line))
	}
	// Each request reports progress, the newest first.
	for i := len(wrote) - 1; i >= 0; i-- {
		write(t, f, progressLine(wrote[i]))
	}
	want := slices.Clone(sent)
	slices.Reverse(want)
	if got := rawTokens(t, &out); !slices.Equal(got, want) {
		t.Errorf("notifications came with the tokens %q, want each request's own as sent, %q", got, want)
	}
}

// A request with no token, a null one or one of another kind gets no wire token: mcp-go
// sees what the client sent, and progress with a token no request has is dropped.
func TestFacade_ProgressTokenOnlyStringsAndNumbers(t *testing.T) {
	var out bytes.Buffer
	f := New(t.Context(), Config{MCP: server.NewMCPServer("t", "1")}, &out)
	f.Handle([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	for i, meta := range []string{`{}`, `{"progressToken":null}`, `{"progressToken":{"a":1}}`, `{"progressToken":true}`} {
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"x","_meta":%s}}`, i+1, meta)
		if got := f.Handle([]byte(line)); !bytes.Equal(withID(got, json.RawMessage(strconv.Itoa(i+1))), []byte(line)) {
			t.Errorf("Handle(%s) handed on %s, want it as sent but for the id", line, got)
		}
	}
	write(t, f, progressLine(`{"a":1}`))
	write(t, f, progressLine(`true`))
	if out.Len() != 0 || len(f.progress) != 0 {
		t.Errorf("wrote %q, tracks %v, want nothing", out.String(), f.progress)
	}
}
