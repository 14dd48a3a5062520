package protocol

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"
)

// httpFixture is the transport in process behind an httptest server, with two tools:
// echo answers at once, wait waits until its call is cancelled and says why on ended. The
// principal is the X-Principal header (what internal/httpauth would set from a token).
type httpFixture struct {
	t      *testing.T
	h      *HTTPHandler
	srv    *httptest.Server
	client *http.Client
	ended  chan error // each wait's context.Cause when it ended
}

func newHTTPFixture(t *testing.T, maxWaits int) *httpFixture {
	t.Helper()
	f := &httpFixture{t: t, ended: make(chan error, 100)}
	mcpServer := server.NewMCPServer("http-test", "1", server.WithToolCapabilities(false))
	mcpServer.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "") + " from " + Principal(context.Background())), nil
	})
	mcpServer.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(Principal(ctx)), nil
	})
	mcpServer.AddTool(mcp.NewTool("wait"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		stop := ReportProgress(ctx, req, func() string { return "waiting" })
		<-ctx.Done()
		stop()
		f.ended <- context.Cause(ctx)
		return mcp.NewToolResultText("ended: " + context.Cause(ctx).Error()), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	f.h = NewHTTPHandler(ctx, HTTPConfig{Session: Config{MCP: mcpServer, MaxWaits: maxWaits, MayWait: func(tool string, _ map[string]json.RawMessage) bool { return tool == "wait" }}})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.h.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), r.Header.Get("X-Principal"))))
	}))
	f.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		f.h.Shutdown()
		cancel()
		f.client.CloseIdleConnections()
		f.srv.Close()
	})
	return f
}

// post sends a message as principal with the headers given (name, value pairs).
func (f *httpFixture) post(ctx context.Context, principal, body string, headers ...string) (*http.Response, string) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Principal", principal)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ""
		}
		f.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

const testMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// call is a stateless tools/call of revision 2026-07-28.
func (f *httpFixture) call(ctx context.Context, principal, id, tool string) (*http.Response, string) {
	return f.post(ctx, principal, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},`+testMeta+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool)
}

// initialize opens an MCP session of revision 2025-11-25 for principal.
func (f *httpFixture) initialize(principal string) string {
	f.t.Helper()
	resp, body := f.post(f.t.Context(), principal, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || len(id) != 32 {
		f.t.Fatalf("initialize = %d %s, Mcp-Session-Id %q", resp.StatusCode, body, id)
	}
	return id
}

// A stateless request is served whole by a Session of its own, carries the principal to
// the tool, and gets no Mcp-Session-Id.
func TestHTTP_StatelessRequest(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 0)
	resp, body := f.call(t.Context(), "alice", `"x"`, "whoami")
	if resp.StatusCode != 200 || !strings.Contains(body, `"id":"x"`) || !strings.Contains(body, `"text":"alice"`) || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("= %d %s (Mcp-Session-Id %q)", resp.StatusCode, body, resp.Header.Get("Mcp-Session-Id"))
	}
	f.h.mu.Lock()
	live := len(f.h.live)
	f.h.mu.Unlock()
	if live != 0 {
		t.Errorf("%d Sessions left after the request was answered", live)
	}
}

// An MCP session belongs to the principal that opened it: to another, its id is 404.
func TestHTTP_SessionsBelongToTheirPrincipal(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 0)
	id := f.initialize("alice")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp, body := f.post(t.Context(), "bob", list, "Mcp-Session-Id", id); resp.StatusCode != 404 {
		t.Errorf("bob on alice's session = %d %s, want 404", resp.StatusCode, body)
	}
	if resp, body := f.post(t.Context(), "alice", list, "Mcp-Session-Id", id); resp.StatusCode != 200 || !strings.Contains(body, `"tools"`) {
		t.Errorf("alice on her session = %d %s", resp.StatusCode, body)
	}
}

// A client that closes its request mid-wait cancels the call: the tool sees a plain
// cancellation (not the shutdown's cause), and its place among the waits is free again.
func TestHTTP_DisconnectCancelsTheCall(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 1)
	for _, legacy := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if legacy {
				id := f.initialize("alice")
				f.post(ctx, "alice", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, "Mcp-Session-Id", id)
			} else {
				f.call(ctx, "alice", "5", "wait")
			}
		}()
		waitFor(t, func() bool { return f.waiting("alice") == 1 })
		cancel()
		<-done
		select {
		case cause := <-f.ended:
			if !errors.Is(cause, context.Canceled) || errors.Is(cause, ErrShuttingDown) {
				t.Errorf("legacy=%v: the wait ended with %v, want a cancellation", legacy, cause)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("legacy=%v: the wait did not end when its client went away", legacy)
		}
		waitFor(t, func() bool { return f.waiting("alice") == 0 })
	}
}

// waiting is how many waits of principal are in flight.
func (f *httpFixture) waiting(principal string) int {
	f.h.mu.Lock()
	w := f.h.waits[principal]
	f.h.mu.Unlock()
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond) // polling state that other goroutines change
	}
}

// --max-waits holds per principal, over all its requests: alice's second wait is BUSY,
// bob's first is not.
func TestHTTP_WaitsCapPerPrincipal(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 1)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { f.call(ctx, "alice", "1", "wait") })
	waitFor(t, func() bool { return f.waiting("alice") == 1 })
	if _, body := f.call(t.Context(), "alice", "2", "wait"); !strings.Contains(body, "BUSY: 1 waiting calls") {
		t.Errorf("alice's second wait = %s, want BUSY", body)
	}
	wg.Go(func() { f.call(ctx, "bob", "1", "wait") })
	waitFor(t, func() bool { return f.waiting("bob") == 1 })
	cancel()
	wg.Wait()
}

// Two requests in flight with one id on one session: the second is refused, the first
// goes on.
func TestHTTP_IDInUse(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 0)
	id := f.initialize("alice")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		f.post(ctx, "alice", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, "Mcp-Session-Id", id)
	})
	waitFor(t, func() bool { return f.waiting("alice") == 1 })
	_, body := f.post(t.Context(), "alice", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, "Mcp-Session-Id", id)
	if !strings.Contains(body, "already that of a request in flight") {
		t.Errorf("a second request with id 7 = %s", body)
	}
	cancel()
	wg.Wait()
}

// notifications/cancelled (2025 revisions) ends the call, which gets no answer: the
// request that waited for it ends with an empty stream.
func TestHTTP_NotificationsCancelled(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 0)
	id := f.initialize("alice")
	answered := make(chan string, 1)
	go func() {
		resp, body := f.post(t.Context(), "alice", `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait","arguments":{}}}`, "Mcp-Session-Id", id)
		answered <- resp.Header.Get("Content-Type") + " " + body
	}()
	waitFor(t, func() bool { return f.waiting("alice") == 1 })
	if resp, _ := f.post(t.Context(), "alice", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`, "Mcp-Session-Id", id); resp.StatusCode != 202 {
		t.Errorf("notifications/cancelled = %d, want 202", resp.StatusCode)
	}
	select {
	case got := <-answered:
		if got != "text/event-stream " {
			t.Errorf("the cancelled request's answer = %q, want an empty stream", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled request did not end")
	}
	<-f.ended
}

// Progress reaches the request's own stream as events, before its answer.
func TestHTTP_ProgressOnTheRequestsStream(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{},"_meta":{"progressToken":"tok","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "X-Principal": "alice",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "wait"} {
		req.Header.Set(k, v)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	events := bufio.NewReader(resp.Body)
	line, err := events.ReadString('\n')
	for err == nil && !strings.HasPrefix(line, "data: ") {
		line, err = events.ReadString('\n')
	}
	if !strings.Contains(line, `"notifications/progress"`) || !strings.Contains(line, `"progressToken":"tok"`) {
		t.Errorf("first event = %q, %v", line, err)
	}
	cancel()
	<-f.ended
}

// Shutdown answers the calls in flight (their cause is ErrShuttingDown) and refuses
// every request after it (503).
func TestHTTP_Shutdown(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 0)
	answered := make(chan string, 1)
	go func() {
		_, body := f.call(t.Context(), "alice", "1", "wait")
		answered <- body
	}()
	waitFor(t, func() bool { return f.waiting("alice") == 1 })
	f.h.Shutdown()
	if got := <-answered; !strings.Contains(got, "ended: "+ErrShuttingDown.Error()) {
		t.Errorf("the call in flight at shutdown = %s", got)
	}
	if cause := <-f.ended; !errors.Is(cause, ErrShuttingDown) {
		t.Errorf("cause = %v, want ErrShuttingDown", cause)
	}
	if resp, _ := f.call(t.Context(), "alice", "2", "echo"); resp.StatusCode != 503 {
		t.Errorf("a request after Shutdown = %d, want 503", resp.StatusCode)
	}
}

// An MCP session unused for SessionIdle is ended when the next one is opened; its id is
// then 404.
func TestHTTP_IdleSessionsEnd(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 0)
	now := time.Now()
	var mu sync.Mutex
	f.h.mu.Lock()
	f.h.nowFunc = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f.h.mu.Unlock()
	old := f.initialize("alice")
	mu.Lock()
	now = now.Add(DefaultHTTPSessionIdle + time.Minute)
	mu.Unlock()
	f.initialize("bob")
	if resp, _ := f.post(t.Context(), "alice", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", old); resp.StatusCode != 404 {
		t.Errorf("an idle session's id after the sweep = %d, want 404", resp.StatusCode)
	}
}

// A request whose id is null is answered with -32600 and a null id.
func TestHTTP_NullID(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := newHTTPFixture(t, 0)
	_, body := f.post(t.Context(), "alice", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo","arguments":{},`+testMeta+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
	if !strings.Contains(body, `"id":null`) || !strings.Contains(body, `"code":-32600`) {
		t.Errorf("= %s", body)
	}
}
