package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The protocol points of the spec, in raw JSON-RPC over the built binary's stdio: what a
// client that is not mcp-go's or the Go SDK's sends.

// wireServer reads the server's messages with the lines they came in, to see ids byte for
// byte (decoding a number into a float64 would hide what the server wrote).
type wireServer struct {
	*server
	seen int // messages read so far: the index of the next one's line in stdout
}

func startWire(t *testing.T, args ...string) *wireServer {
	t.Helper()
	return &wireServer{server: startServer(t, t.TempDir(), args...)}
}

// next returns the next message and its line as written.
func (r *wireServer) next() (map[string]any, string) {
	r.t.Helper()
	m := r.server.next()
	lines := strings.Split(r.stdout.String(), "\n") // the tee wrote the line before it was decoded
	r.seen++
	return m, lines[r.seen-1]
}

// exchange sends one request line and returns the response to it, skipping notifications.
func (r *wireServer) exchange(line string) (map[string]any, string) {
	r.t.Helper()
	r.sendLine(line)
	for {
		m, raw := r.next()
		if _, isNote := m["method"]; !isNote {
			return m, raw
		}
	}
}

// toolCall calls a tool (through exchange, so that every line is counted) and returns its
// result, held to the tool's contract.
func (r *wireServer) toolCall(name string, args map[string]any) map[string]any {
	r.t.Helper()
	r.nextID++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.nextID, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	if err != nil {
		r.t.Fatal(err)
	}
	resp, line := r.exchange(string(b))
	res, _ := resp["result"].(map[string]any)
	if res == nil {
		r.t.Fatalf("%s: %s", name, line)
	}
	checkToolResult(r.t, name, res, r.maxResult())
	return res
}

// rawID is the id of a response line exactly as written.
func rawID(t *testing.T, line string) string {
	t.Helper()
	var m struct{ ID json.RawMessage }
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("response %q: %v", line, err)
	}
	return string(m.ID)
}

// wantError checks that a response is a JSON-RPC error of the code, with the id as sent.
func wantError(t *testing.T, resp map[string]any, line string, code int, id string) {
	t.Helper()
	e, _ := resp["error"].(map[string]any)
	if e == nil || e["code"] != float64(code) {
		t.Errorf("answered %s, want error %d", line, code)
	}
	if got := rawID(t, line); got != id {
		t.Errorf("answered with id %s, want %s: %s", got, id, line)
	}
}

func initializeLine(id, version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, id, version)
}

// initialize runs the handshake for the version and returns the version the server chose.
func (r *wireServer) initialize(version string) string {
	r.t.Helper()
	resp, line := r.exchange(initializeLine("0", version))
	res, _ := resp["result"].(map[string]any)
	if res == nil {
		r.t.Fatalf("initialize: %s", line)
	}
	r.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	v, _ := res["protocolVersion"].(string)
	return v
}

// Every id comes back exactly as the client wrote it: past 2^53, negative, a fraction,
// an exponent, a string with escapes and characters JSON encoders like to escape; for
// requests the server answers itself and for tool calls.
func TestProtocol_IDsComeBackAsSent(t *testing.T) {
	r := startWire(t)
	resp, line := r.exchange(initializeLine("9007199254740993", "2025-06-18"))
	if resp["error"] != nil || rawID(t, line) != "9007199254740993" {
		t.Fatalf("initialize answered %s, want a result with id 9007199254740993", line)
	}
	r.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{`9007199254740995`, `-42`, `1.0`, `2.5e3`, `123456789012345678901234567890`, `"a\u00e9<&>"`, `""`} {
		_, line := r.exchange(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if got := rawID(t, line); got != id {
			t.Errorf("ping with id %s answered with id %s: %s", id, got, line)
		}
		resp, line = r.exchange(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"shell_list","arguments":{}}}`)
		if got := rawID(t, line); got != id {
			t.Errorf("tools/call with id %s answered with id %s: %s", id, got, line)
		}
		if res, _ := resp["result"].(map[string]any); res == nil || res["isError"] == true {
			t.Errorf("shell_list: %s", line)
		} else {
			checkToolResult(t, "shell_list", res, r.maxResult())
		}
	}
}

// params of the wrong type are invalid params (-32602), whoever decodes them, and nothing
// is run.
func TestProtocol_WrongParamsAreInvalidParams(t *testing.T) {
	r := startWire(t)
	r.initialize("2025-06-18")
	for i, params := range []string{
		`5`,
		`"x"`,
		`[]`,
		`{"name":"shell_open","arguments":5}`,
		`{"name":"shell_open","arguments":"x"}`,
		`{"name":5,"arguments":{}}`,
	} {
		id := fmt.Sprint(i + 1)
		resp, line := r.exchange(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`)
		wantError(t, resp, line, -32602, id)
	}
	resp, line := r.exchange(`{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"cursor":5}}`)
	wantError(t, resp, line, -32602, "10")
	resp, line = r.exchange(`{"jsonrpc":"2.0","id":11,"method":"ping","params":5}`)
	wantError(t, resp, line, -32602, "11")
	// Nothing was opened.
	res := r.toolCall("shell_list", map[string]any{})
	if sessions, _ := structuredOf(t, res)["sessions"].([]any); len(sessions) != 0 {
		t.Errorf("a refused shell_open opened a session: %v", sessions)
	}
}

// A request whose id is null is refused with a null id, at once: the client does not
// wait for an answer that never comes.
func TestProtocol_NullIDIsRefused(t *testing.T) {
	r := startWire(t)
	r.initialize("2025-06-18")
	r.sendLine(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"shell_list","arguments":{}}}`)
	r.sendLine(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	resp, line := r.next()
	if resp["error"] == nil {
		t.Fatalf("a request with a null id: the next line is %s, want its error", line)
	}
	wantError(t, resp, line, -32600, "null")
	if resp, line = r.next(); resp["result"] == nil || rawID(t, line) != "2" {
		t.Errorf("after the null id: %s, want the answer to ping 2", line)
	}
}

// A second initialize on one connection is refused, and the connection goes on.
func TestProtocol_SecondInitializeIsRefused(t *testing.T) {
	r := startWire(t)
	if v := r.initialize("2025-06-18"); v != "2025-06-18" {
		t.Fatalf("negotiated %s, want 2025-06-18", v)
	}
	resp, line := r.exchange(initializeLine("1", "2025-11-25"))
	wantError(t, resp, line, -32600, "1")
	if res, _ := resp["result"].(map[string]any); res != nil {
		t.Errorf("a second initialize negotiated %v", res["protocolVersion"])
	}
	r.toolCall("shell_list", map[string]any{})
}

// 2025-03-26 (JSON-RPC batches, which the server does not take) is not negotiated:
// 2025-06-18 is offered instead, and server/discover does not list it. The stateless
// revision works without a handshake, and an unknown one gets -32022.
func TestProtocol_Versions(t *testing.T) {
	r := startWire(t)
	if v := r.initialize("2025-03-26"); v != "2025-06-18" {
		t.Errorf("a client asking for 2025-03-26 was offered %s, want 2025-06-18", v)
	}

	r = startWire(t)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"%s","io.modelcontextprotocol/clientCapabilities":{}}`
	resp, line := r.exchange(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + fmt.Sprintf(meta, "2026-07-28") + `}}`)
	res, _ := resp["result"].(map[string]any)
	var versions []string
	for _, v := range res["supportedVersions"].([]any) {
		versions = append(versions, v.(string))
	}
	if !slices.Contains(versions, "2026-07-28") || !slices.Contains(versions, "2025-06-18") || slices.Contains(versions, "2025-03-26") {
		t.Errorf("server/discover lists %v, want 2026-07-28 and 2025-06-18 and not 2025-03-26: %s", versions, line)
	}
	resp, line = r.exchange(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell_list","arguments":{},` + fmt.Sprintf(meta, "2026-07-28") + `}}`)
	if res, _ := resp["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("a stateless tools/call: %s", line)
	} else {
		checkToolResult(t, "shell_list", res, r.maxResult())
	}
	resp, line = r.exchange(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + fmt.Sprintf(meta, "2099-01-01") + `}}`)
	wantError(t, resp, line, -32022, "3")
}

// Two calls waiting at once, with progress tokens one float64 apart, each get progress
// with their own token as sent, and about their own wait.
func TestProtocol_ProgressTokensOneFloatApart(t *testing.T) {
	r := startWire(t)
	r.initialize("2025-06-18")
	waits := map[string]string{ // token as sent -> what its call waits for
		"9007199254740992": "never-printed-A",
		"9007199254740993": "never-printed-B",
	}
	var sids []string
	id := 200
	for token, pattern := range waits {
		sid := structuredOf(t, r.toolCall("shell_open", bashOpen))["sessionId"].(string)
		sids = append(sids, sid)
		id++
		r.sendLine(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shell_io","_meta":{"progressToken":%s},`+
			`"arguments":{"sessionId":%q,"waitFor":%q,"timeoutMs":25000}}}`, id, token, sid, pattern))
	}
	seen := map[string]bool{}
	for len(seen) < len(waits) {
		m, line := r.next()
		var note struct {
			Params struct {
				ProgressToken json.RawMessage
				Message       string
			}
		}
		if m["method"] != "notifications/progress" || json.Unmarshal([]byte(line), &note) != nil {
			t.Fatalf("while both calls wait: %s, want their progress", line)
		}
		token := string(note.Params.ProgressToken)
		pattern, ok := waits[token]
		if !ok {
			t.Fatalf("progress with the token %s, which no call sent (want 9007199254740992 or 9007199254740993): %s", token, line)
		}
		if !strings.Contains(note.Params.Message, pattern) {
			t.Fatalf("progress with the token %s says %q, about another call's wait: want /%s/", token, note.Params.Message, pattern)
		}
		seen[token] = true
	}
	for i := 201; i <= id; i++ {
		r.sendLine(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i))
	}
	for _, sid := range sids {
		r.toolCall("shell_close", map[string]any{"sessionId": sid})
	}
	r.stdin.Close()
	if code := r.waitExit(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// A call still waiting when the server shuts down (its stdin closed, or SIGTERM) is
// answered with SHUTTING_DOWN, not an internal error to report: a terminal wait and a
// graph wait alike.
func TestProtocol_ShutdownAnswersShuttingDown(t *testing.T) {
	for _, how := range []string{"stdin-eof", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			r := startWire(t)
			r.initialize("2025-06-18")
			sid := structuredOf(t, r.toolCall("shell_open", bashOpen))["sessionId"].(string)
			graph := structuredOf(t, r.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "long", "command": "sleep 60"}}}))["graphId"].(string)
			calls := map[string]string{ // id -> tool
				"101": "shell_io",
				"102": "tasks_status",
			}
			// A progress token past 2^53 comes back as sent, like an id.
			r.sendLine(`{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"shell_io","_meta":{"progressToken":9007199254740993},` +
				`"arguments":{"sessionId":"` + sid + `","waitFor":"never-printed","timeoutMs":25000}}}`)
			r.send(map[string]any{"id": 102, "method": "tools/call", "params": map[string]any{"name": "tasks_status", "_meta": map[string]any{"progressToken": "st"},
				"arguments": map[string]any{"graphId": graph, "waitMs": 25000}}})
			// Both calls are waiting once each has reported progress.
			waiting := map[string]bool{}
			for len(waiting) < 2 {
				m, line := r.next()
				var note struct {
					Params struct{ ProgressToken json.RawMessage }
				}
				if m["method"] != "notifications/progress" || json.Unmarshal([]byte(line), &note) != nil {
					t.Fatalf("before the shutdown: %s", line)
				}
				waiting[string(note.Params.ProgressToken)] = true
			}
			if !waiting["9007199254740993"] || !waiting[`"st"`] {
				t.Fatalf("progress came with the tokens %v, want 9007199254740993 and \"st\" as sent", waiting)
			}
			if how == "SIGTERM" {
				r.signal(syscall.SIGTERM)
			} else {
				r.stdin.Close()
			}
			for len(calls) > 0 {
				m, line := r.next()
				if m["method"] != nil {
					continue
				}
				id := rawID(t, line)
				tool, ok := calls[id]
				if !ok {
					t.Fatalf("answer to an unknown request: %s", line)
				}
				delete(calls, id)
				res, _ := m["result"].(map[string]any)
				if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "SHUTTING_DOWN: "+tool) || strings.Contains(text, "INTERNAL") {
					t.Errorf("%s cut short by the shutdown answered %s, want SHUTTING_DOWN", tool, line)
				}
				checkToolResult(t, tool, res, r.maxResult())
			}
			if code := r.waitExit(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
		})
	}
}

// No call waits past --max-wait, whatever idleMs says: a shell_io without timeoutMs
// whose output never goes quiet ends at --max-wait (reason timeout) and says so; it does
// not wait out the default timeout of 10 s, by which the program has printed what the
// call waits for.
func TestProtocol_MaxWaitBoundsEveryWait(t *testing.T) {
	r := startWire(t, "--max-wait", "2s")
	r.initialize("2025-06-18")
	open := map[string]any{}
	for k, v := range bashOpen {
		open[k] = v
	}
	open["timeoutMs"] = 2000
	sid := structuredOf(t, r.toolCall("shell_open", open))["sessionId"].(string)
	t.Cleanup(func() {
		r.toolCall("shell_close", map[string]any{"sessionId": sid})
		r.stdin.Close()
		r.waitExit()
	})
	res := r.toolCall("shell_io", map[string]any{
		"sessionId": sid,
		// Ticks for 6 s, then the line the call waits for.
		"input":   "i=0; while [ $i -lt 24 ]; do echo tick; sleep 0.25; i=$((i+1)); done; echo fin-$((6*7))\n",
		"waitFor": "(?m)^fin-42", "idleMs": 100000000,
	})
	sc := structuredOf(t, res)
	if sc["reason"] != "timeout" {
		t.Errorf("shell_io under --max-wait 2s ended %v, want timeout (it waited past --max-wait)", sc["reason"])
	}
	if text := resultText(res); !strings.Contains(text, "--max-wait") {
		t.Errorf("the result does not say the wait was cut to --max-wait:\n%s", text)
	}
}

// A close's grace is waited out inside the call, so it too ends at --max-wait: a program
// that ignores SIGHUP is killed there, whatever graceMs asked.
func TestProtocol_MaxWaitBoundsCloseGrace(t *testing.T) {
	r := startWire(t, "--max-wait", "1s")
	r.initialize("2025-06-18")
	t.Cleanup(func() {
		r.stdin.Close()
		r.waitExit()
	})
	open := structuredOf(t, r.toolCall("shell_open", map[string]any{
		"command": "trap '' HUP; echo ignoring-hup; while :; do sleep 0.1; done",
		"waitFor": "ignoring-hup",
	}))
	res := r.toolCall("shell_close", map[string]any{"sessionId": open["sessionId"], "graceMs": 60000})
	sc := structuredOf(t, res)
	if sc["signal"] != "SIGKILL" {
		t.Errorf("shell_close of a program ignoring SIGHUP ended with signal %v, want SIGKILL at the bound", sc["signal"])
	}
	if text := resultText(res); !strings.Contains(text, "--max-wait") {
		t.Errorf("the result does not say the grace was cut to --max-wait:\n%s", text)
	}
}
