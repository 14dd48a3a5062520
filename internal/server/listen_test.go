package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/protocol"
)

// pipeClient speaks to a server's stdio transport over pipes, as a client over stdio.
type pipeClient struct {
	t    *testing.T
	f    *protocol.Session
	in   *io.PipeWriter
	msgs chan map[string]any
	done chan error
}

// listenPipes runs s's stdio service behind a session the test can look into.
func listenPipes(t *testing.T, s *Server) *pipeClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &pipeClient{t: t, f: s.newSession(t.Context(), outW), in: inW, msgs: make(chan map[string]any, 1000), done: make(chan error, 1)}
	go func() {
		c.done <- protocol.ServeStdio(t.Context(), c.f, inR)
		outW.Close()
	}()
	go func() {
		defer close(c.msgs)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"__unparsable": sc.Text()}
			}
			c.msgs <- m
		}
	}()
	t.Cleanup(func() {
		c.in.Close()
		<-c.done
		for range c.msgs {
		}
	})
	return c
}

func (c *pipeClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *pipeClient) next() map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("the server closed its output")
		}
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatal("no message within 30s")
	}
	return nil
}

// response reads messages up to the response to id, and fails on a response to another.
func (c *pipeClient) response(id float64) map[string]any {
	c.t.Helper()
	for {
		m := c.next()
		if m["method"] != nil {
			continue // a notification
		}
		if m["id"] != id {
			c.t.Fatalf("got %v, want the response to %v first", m, id)
		}
		return m
	}
}

func (c *pipeClient) initialize() {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := c.response(0); m["error"] != nil {
		c.t.Fatalf("initialize: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (c *pipeClient) callTool(id int, name, args string) {
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args))
}

// awaitInFlight waits until the session runs this many calls and waits.
func (c *pipeClient) awaitInFlight(running, waiting int) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, w := c.f.InFlight()
		if r == running && w == waiting {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("in flight: %d calls, %d waits; want %d, %d", r, w, running, waiting)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

func toolText(t *testing.T, m map[string]any) (string, bool) {
	t.Helper()
	res, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a tool result: %v", m)
	}
	var b strings.Builder
	for _, c := range res["content"].([]any) {
		b.WriteString(c.(map[string]any)["text"].(string))
	}
	return b.String(), res["isError"] == true
}

// openSleeper opens a session whose program prints nothing, for calls to wait on.
func (c *pipeClient) openSleeper(id int) string {
	c.t.Helper()
	c.callTool(id, "shell_open", `{"command":"exec sleep 1000","timeoutMs":0}`)
	m := c.response(float64(id))
	return m["result"].(map[string]any)["structuredContent"].(map[string]any)["sessionId"].(string)
}

// Waits beyond Config.MaxWaits are answered BUSY at once, saying how many are in flight;
// quick calls still run; once a wait ends there is room again.
func TestListen_BusyBeyondMaxWaits(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MaxWaits = 2 })
	c := listenPipes(t, s)
	c.initialize()
	sid := c.openSleeper(1)
	wait := fmt.Sprintf(`{"sessionId":%q,"waitFor":"NEVER","timeoutMs":25000}`, sid)
	c.callTool(10, "shell_io", wait)
	c.callTool(11, "shell_io", wait)
	c.awaitInFlight(2, 2)

	c.callTool(12, "shell_io", wait)
	text, isError := toolText(t, c.response(12))
	if !isError || !strings.HasPrefix(text, "BUSY: 2 waiting calls") || !strings.Contains(text, "retry") {
		t.Errorf("third wait = %q (isError %v), want BUSY: 2 waiting calls ... retry", text, isError)
	}
	c.callTool(13, "tasks_status", `{"graphId":"g-nope","waitMs":1000}`)
	if text, _ := toolText(t, c.response(13)); !strings.HasPrefix(text, "BUSY") {
		t.Errorf("tasks_status with waitMs = %q, want BUSY", text)
	}
	c.callTool(14, "shell_list", `{}`)
	if text, isError := toolText(t, c.response(14)); isError {
		t.Errorf("shell_list = %q, want it served", text)
	}

	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10}}`)
	c.awaitInFlight(1, 1)
	c.callTool(15, "shell_io", fmt.Sprintf(`{"sessionId":%q,"timeoutMs":0}`, sid))
	if text, isError := toolText(t, c.response(15)); isError {
		t.Errorf("a wait after one ended = %q, want it served", text)
	}
}

// A cancelled call ends at once, gets no response, and logs no error.
func TestListen_CancelledCall(t *testing.T) {
	var logs lockedLog
	s := newTestServer(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c := listenPipes(t, s)
	c.initialize()
	sid := c.openSleeper(1)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"shell_io","arguments":{"sessionId":%q,"waitFor":"NEVER","timeoutMs":25000},"_meta":{"progressToken":"p"}}}`, sid))
	c.awaitInFlight(1, 1)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10,"reason":"user"}}`)
	c.awaitInFlight(0, 0) // the wait ended, long before its timeout

	c.send(`{"jsonrpc":"2.0","id":11,"method":"ping"}`)
	c.response(11) // fails on a response to 10 first
	c.in.Close()
	if err := <-c.done; err != nil {
		t.Errorf("Listen = %v", err)
	}
	c.done <- nil // for the cleanup
	for m := range c.msgs {
		if m["id"] == 10.0 {
			t.Errorf("the cancelled call was answered: %v", m)
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a cancelled call logged an error:\n%s", logs.String())
	}
}

// lockedLog is a log destination safe for the server's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Before initialize only ping is answered; a request of the 2026-07-28 revision needs no
// handshake.
func TestListen_BeforeInitialize(t *testing.T) {
	s := newTestServer(t)
	c := listenPipes(t, s)
	for i, method := range []string{"tools/call", "tools/list", "resources/list"} {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"name":"shell_list","arguments":{}}}`, i+1, method))
		e, _ := c.response(float64(i + 1))["error"].(map[string]any)
		if e["code"] != -32600.0 || !strings.Contains(e["message"].(string), "before initialize") {
			t.Errorf("%s before initialize: error %v, want -32600 saying before initialize", method, e)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if m := c.response(5); m["result"] == nil {
		t.Errorf("ping before initialize = %v, want a result", m)
	}
	c.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"shell_list","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if text, isError := toolText(t, c.response(6)); isError {
		t.Errorf("a 2026-07-28 request without initialize = %q, want it served", text)
	}
	c.initialize()
	c.callTool(7, "shell_list", `{}`)
	if text, isError := toolText(t, c.response(7)); isError {
		t.Errorf("shell_list after initialize = %q", text)
	}
}

// The last message is served even without a newline after it.
func TestListen_LastLineWithoutNewline(t *testing.T) {
	s := newTestServer(t)
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell_list","arguments":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`
	var out bytes.Buffer
	if err := s.Listen(t.Context(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	ids := map[float64]bool{}
	for _, m := range lines(t, &out) {
		if id, ok := m["id"].(float64); ok && m["result"] != nil {
			ids[id] = true
		}
	}
	if !ids[0] || !ids[1] || !ids[2] {
		t.Errorf("answered %v, want 0, 1 and 2 (the last line has no newline)", ids)
	}
}

// An oversized message gets a JSON-RPC error by its id, and the next one is served.
func TestListen_OversizedMessage(t *testing.T) {
	s := newTestServer(t)
	c := listenPipes(t, s)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shell_io","arguments":{"sessionId":"s1","input":"` +
		strings.Repeat("x", protocol.MaxLineBytes) + `"}}}`)
	e, _ := c.response(3)["error"].(map[string]any)
	if msg, _ := e["message"].(string); e["code"] != -32600.0 || !strings.Contains(msg, fmt.Sprintf("at most %d bytes", protocol.MaxLineBytes)) || len(msg) > 500 {
		t.Errorf("oversized message: error %v, want -32600 saying the limit, briefly", e)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	c.response(4)
}

// A request whose id is neither a string nor a number is refused, not run.
func TestListen_BadID(t *testing.T) {
	s := newTestServer(t)
	c := listenPipes(t, s)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"shell_list","arguments":{}}}`)
	m := c.next()
	if e, _ := m["error"].(map[string]any); m["id"] != nil || e["code"] != -32600.0 || !strings.Contains(e["message"].(string), "string or a number") {
		t.Errorf("tools/call with an object id = %v, want -32600 with a null id", m)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	c.response(2)
}
