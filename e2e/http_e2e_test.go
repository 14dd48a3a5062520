package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// unguessableID is a terminal session's id under HTTP: the server number and 128 random
// bits (pty.RandomSessionIDs).
var unguessableID = regexp.MustCompile(`^s\d+-[a-z2-7]{26}$`)

// The official Go SDK's client over Streamable HTTP, in both eras: its default, revision
// 2026-07-28 (server/discover, then stateless requests with their headers), and the
// 2025 revisions (initialize, Mcp-Session-Id). Every result is checked against its
// tool's output schema; progress comes on the request's stream while a call waits.
func TestHTTP_GoSDKClient(t *testing.T) {
	s := startHTTP(t, "")
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("version="+orLatest(version), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
			defer cancel()
			var progress progressLog
			cs, err := s.goSDK(ctx, version, "", &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
					progress.add(req.Params.Message)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if version == "" && cs.ID() != "" {
				t.Errorf("revision 2026-07-28 has no session, got Mcp-Session-Id %q", cs.ID())
			}
			if version != "" && !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(cs.ID()) {
				t.Errorf("Mcp-Session-Id = %q, want 128 random bits in hex", cs.ID())
			}
			if got := cs.InitializeResult().ServerInfo.Name; got != "mcp-harness" {
				t.Errorf("server name = %q", got)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 9 {
				t.Fatalf("tools/list = %d tools, %v", len(tools.Tools), err)
			}

			open := structuredOf(t, sdkCall(t, ctx, cs, "shell_open", map[string]any{"command": "sh", "timeoutMs": 2000}))
			id := open["sessionId"].(string)
			if !unguessableID.MatchString(id) {
				t.Errorf("session id %q is not s<server>-<128 random bits>", id)
			}
			params := &sdk.CallToolParams{Name: "shell_io", Arguments: map[string]any{
				"sessionId": id, "input": "sleep 1.5; echo OUT_$((40+2))\n", "waitFor": "(?m)^OUT_42", "timeoutMs": 20000}}
			params.SetProgressToken("wait-" + orLatest(version))
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if sc := structuredOf(t, toMap(t, res)); sc["reason"] != "matched" {
				t.Errorf("shell_io = %v, want it matched", sc)
			}
			checkToolResult(t, "shell_io", toMap(t, res), defaultMaxResult)
			if progress.count() == 0 {
				t.Errorf("no progress while shell_io waited 1.5s")
			}

			graph := structuredOf(t, sdkCall(t, ctx, cs, "tasks_run", map[string]any{"tasks": []any{
				map[string]any{"id": "a", "command": "echo A"}, map[string]any{"id": "b", "command": "echo B", "dependsOn": []string{"a"}}}}))
			st := structuredOf(t, sdkCall(t, ctx, cs, "tasks_status", map[string]any{"graphId": graph["graphId"], "waitMs": 20000}))
			if st["status"] != "succeeded" {
				t.Errorf("tasks_status = %v", st["status"])
			}
			for _, name := range []string{"tasks_list", "tasks_graph", "shell_list"} {
				args := map[string]any{}
				if name == "tasks_graph" {
					args["graphId"] = graph["graphId"]
				}
				sdkCall(t, ctx, cs, name, args)
			}
			sdkCall(t, ctx, cs, "shell_close", map[string]any{"sessionId": id})
		})
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
}

func orLatest(v string) string {
	if v == "" {
		return "2026-07-28"
	}
	return v
}

func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Bad input gets a clear answer and changes nothing: a refused shell_open opens no
// session, whatever refused it.
func TestHTTP_RefusalsChangeNothing(t *testing.T) {
	s := startHTTP(t, "")
	ctx := t.Context()
	open := func(name string) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
			"params": map[string]any{"name": name, "arguments": map[string]any{"command": "sh"}, "_meta": modernMeta()}}
	}
	modern := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "shell_open"}
	legacy := s.legacySession(ctx, "2025-06-18")
	huge := open("shell_open")
	huge["params"].(map[string]any)["arguments"].(map[string]any)["command"] = strings.Repeat("x", 8<<20)

	for _, tc := range []struct {
		name       string
		body       any
		headers    []string
		status     int
		code       int    // the JSON-RPC error code, 0 for none
		wwwAuth    string // a prefix of WWW-Authenticate
		bodyHas    string
		legacyCall bool
	}{
		{name: "no token", body: open("shell_open"), headers: append([]string{"Authorization", ""}, modern...), status: 401, wwwAuth: "Bearer"},
		{name: "a wrong token", body: open("shell_open"), headers: append([]string{"Authorization", "Bearer " + strings.Repeat("0", 64)}, modern...), status: 401, wwwAuth: `Bearer error="invalid_token"`},
		{name: "not a bearer token", body: open("shell_open"), headers: append([]string{"Authorization", "Basic dXNlcjpwYXNz"}, modern...), status: 401, wwwAuth: "Bearer"},
		{name: "a foreign Origin", body: open("shell_open"), headers: append([]string{"Origin", "https://evil.example"}, modern...), status: 403, bodyHas: "--allow-origin"},
		{name: "the null Origin", body: open("shell_open"), headers: append([]string{"Origin", "null"}, modern...), status: 403},
		{name: "a Host that is not loopback", body: open("shell_open"), headers: append([]string{"Host", "evil.example:7433"}, modern...), status: 403, bodyHas: "loopback"},
		{name: "over 8 MiB", body: huge, headers: modern, status: 413, bodyHas: "8388608 bytes"},
		{name: "Mcp-Name not the body's", body: open("shell_open"), headers: []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "shell_list"}, status: 400, code: -32020},
		{name: "no Mcp-Method", body: open("shell_open"), headers: []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Name", "shell_open"}, status: 400, code: -32020},
		{name: "Mcp-Method not the body's", body: open("shell_open"), headers: []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list", "Mcp-Name", "shell_open"}, status: 400, code: -32020},
		{name: "no MCP-Protocol-Version", body: open("shell_open"), headers: []string{"Mcp-Method", "tools/call", "Mcp-Name", "shell_open"}, status: 400, code: -32020},
		{name: "MCP-Protocol-Version not the body's", body: open("shell_open"), headers: []string{"MCP-Protocol-Version", "2099-01-01", "Mcp-Method", "tools/call", "Mcp-Name", "shell_open"}, status: 400, code: -32020},
		{name: "an unsupported revision", body: withVersion(open("shell_open"), "2099-01-01"), headers: []string{"MCP-Protocol-Version", "2099-01-01", "Mcp-Method", "tools/call", "Mcp-Name", "shell_open"}, status: 400, code: -32022},
		{name: "initialize in revision 2026-07-28", body: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"_meta": modernMeta()}},
			headers: []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "initialize"}, status: 404, code: -32601},
		{name: "server/discover in a 2025 session", body: map[string]any{"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": map[string]any{}},
			headers: []string{"Mcp-Session-Id", legacy, "MCP-Protocol-Version", "2025-06-18"}, status: 200, code: -32601},
		{name: "a 2025 request without Mcp-Session-Id", body: map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": map[string]any{"name": "shell_open", "arguments": map[string]any{}}},
			headers: []string{"MCP-Protocol-Version", "2025-06-18"}, status: 400},
		{name: "an unknown Mcp-Session-Id", body: map[string]any{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": map[string]any{"name": "shell_open", "arguments": map[string]any{}}},
			headers: []string{"Mcp-Session-Id", strings.Repeat("ab", 16), "MCP-Protocol-Version", "2025-06-18"}, status: 404},
		{name: "a revision before 2025-03-26 in the header", body: map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": map[string]any{"name": "shell_open", "arguments": map[string]any{}}},
			headers: []string{"Mcp-Session-Id", legacy, "MCP-Protocol-Version", "2024-11-05"}, status: 400},
		{name: "a batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, status: 400, code: -32600},
		{name: "not JSON", body: `{"jsonrpc":`, status: 400, code: -32700},
		{name: "not application/json", body: open("shell_open"), headers: append([]string{"Content-Type", "text/plain"}, modern...), status: 415},
		{name: "nothing acceptable", body: open("shell_open"), headers: append([]string{"Accept", "text/html"}, modern...), status: 406},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.post(ctx, tc.body, tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tc.status, shortText(string(r.body), 300))
			}
			if tc.code != 0 && r.errorCode() != tc.code {
				t.Errorf("error code = %d, want %d: %s", r.errorCode(), tc.code, r.body)
			}
			if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, tc.wwwAuth) || (tc.wwwAuth == "") != (got == "") {
				t.Errorf("WWW-Authenticate = %q, want %q...", got, tc.wwwAuth)
			}
			if !strings.Contains(string(r.body), tc.bodyHas) {
				t.Errorf("body = %s, want it to say %q", shortText(string(r.body), 300), tc.bodyHas)
			}
		})
	}
	r := s.get(ctx)
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") == "" {
		t.Errorf("GET = %d (Allow %q), want 405 with Allow", r.status, r.header.Get("Allow"))
	}
	if sessions := structuredOf(t, s.call("shell_list", map[string]any{}))["sessions"].([]any); len(sessions) != 0 {
		t.Errorf("refused requests opened sessions: %v", sessions)
	}
}

func withVersion(msg map[string]any, version string) map[string]any {
	meta := modernMeta()
	meta["io.modelcontextprotocol/protocolVersion"] = version
	msg["params"].(map[string]any)["_meta"] = meta
	return msg
}

// get sends a GET to the endpoint with the server's token.
func (s *httpServer) get(ctx context.Context) reply {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	return s.do(req)
}

// legacySession opens an MCP session of a 2025 revision by hand and returns its id.
func (s *httpServer) legacySession(ctx context.Context, version string) string {
	s.t.Helper()
	r := s.post(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": version, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "1"}}})
	id := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || id == "" {
		s.t.Fatalf("initialize = %d %s, Mcp-Session-Id %q", r.status, r.body, id)
	}
	if got := r.last()["result"].(map[string]any)["protocolVersion"]; got != version {
		s.t.Fatalf("initialize negotiated %v, want %s", got, version)
	}
	if r := s.post(ctx, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, "Mcp-Session-Id", id, "MCP-Protocol-Version", version); r.status != http.StatusAccepted {
		s.t.Fatalf("notifications/initialized = %d, want 202", r.status)
	}
	return id
}

// A session of the 2025 revisions by hand: the later requests may say 2025-03-26 in their
// header (clients do), initialize negotiates 2025-06-18 for a client asking 2025-03-26,
// DELETE ends the session and its id is 404 after.
func TestHTTP_LegacySession(t *testing.T) {
	s := startHTTP(t, "")
	ctx := t.Context()
	r := s.post(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-03-26", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "old", "version": "1"}}})
	if got := r.last()["result"].(map[string]any)["protocolVersion"]; got != "2025-06-18" {
		t.Errorf("initialize asking 2025-03-26 negotiated %v, want 2025-06-18", got)
	}
	id := s.legacySession(ctx, "2025-11-25")
	call := map[string]any{"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": map[string]any{"name": "tasks_list", "arguments": map[string]any{}}}
	r = s.post(ctx, call, "Mcp-Session-Id", id, "MCP-Protocol-Version", "2025-03-26")
	if r.status != 200 || r.last()["id"] != "a" {
		t.Fatalf("tools/call = %d %s", r.status, r.body)
	}
	checkToolResult(t, "tasks_list", r.last()["result"].(map[string]any), defaultMaxResult)

	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Mcp-Session-Id", id)
	if r := s.do(req); r.status != http.StatusNoContent {
		t.Errorf("DELETE = %d %s, want 204", r.status, r.body)
	}
	if r := s.post(ctx, call, "Mcp-Session-Id", id, "MCP-Protocol-Version", "2025-11-25"); r.status != http.StatusNotFound {
		t.Errorf("a request on a deleted session = %d, want 404", r.status)
	}
}

// Load: 100 calls at once, half of them waits on a terminal that never prints; the quick
// half is answered while every wait still waits (each has had progress on its stream, and
// the cap, --max-waits, is full). Then the clients of the waits go away mid-wait: each
// wait ends (room again under --max-waits) and the server shuts down cleanly on SIGTERM.
func TestHTTP_LoadAndDisconnects(t *testing.T) {
	const waits, quick = 50, 50
	s := startHTTP(t, "", "--max-waits", fmt.Sprint(waits), "--max-wait", "60s")
	id := structuredOf(t, s.call("shell_open", map[string]any{"command": "exec sleep 1000", "timeoutMs": 0}))["sessionId"].(string)

	waitCtx, disconnect := context.WithCancel(t.Context())
	var waited, inFlight sync.WaitGroup
	var ended sync.Map
	for i := range waits {
		inFlight.Add(1)
		waited.Go(func() {
			defer ended.Store(i, true)
			meta := modernMeta()
			meta["progressToken"] = i
			req := map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": map[string]any{
				"name": "shell_io", "arguments": map[string]any{"sessionId": id, "waitFor": "NEVER_PRINTED", "timeoutMs": 55000}, "_meta": meta}}
			body, _ := json.Marshal(req)
			hr, _ := http.NewRequestWithContext(waitCtx, http.MethodPost, s.url, strings.NewReader(string(body)))
			setHeaders(hr, []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Authorization", "Bearer " + s.token,
				"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "shell_io"})
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				inFlight.Done()
				t.Errorf("wait %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			// The first event is progress: the call waits. The stream then stays open
			// until the client goes away.
			sc := bufio.NewScanner(resp.Body)
			signalled := false
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				if strings.Contains(data, `"notifications/progress"`) {
					if !signalled {
						signalled = true
						inFlight.Done()
					}
					continue
				}
				t.Errorf("wait %d: %s before its client went away", i, shortText(data, 200))
			}
			if !signalled {
				inFlight.Done()
				t.Errorf("wait %d: no progress (%s)", i, resp.Status)
			}
		})
	}
	inFlight.Wait()
	if res := s.call("shell_io", map[string]any{"sessionId": id, "waitFor": "NEVER", "timeoutMs": 100}); !strings.HasPrefix(resultText(res), "BUSY:") {
		t.Errorf("a wait beyond --max-waits = %s, want BUSY", shortText(resultText(res), 200))
	}
	// The quick calls are answered while every wait still waits: were they held up
	// behind the waits, they would end only when the waits time out, and the check of
	// ended below would fail.
	var quickDone sync.WaitGroup
	for i := range quick {
		quickDone.Go(func() {
			name := []string{"shell_list", "tasks_list"}[i%2]
			s.call(name, map[string]any{})
		})
	}
	quickDone.Wait()
	n := 0
	ended.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Fatalf("%d waits ended before their clients went away", n)
	}

	disconnect()
	waited.Wait()
	// Each wait ends with its client: the cap soon has room for as many waits again.
	deadline := time.Now().Add(e2eWait)
	for s.busyWaits(id, waits) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("waits of clients that went away still hold their places under --max-waits")
		}
		time.Sleep(100 * time.Millisecond) // the cancellations are on their way
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
}

// SIGTERM while a task runs and a call waits on its graph: the wait is answered, the
// task and the chain behind it are recorded as for stdio, no process of the graph
// outlives the server, and it exits 0. (That requests after the shutdown began are 503
// is internal/protocol's TestHTTP_Shutdown.)
func TestHTTP_SIGTERMDuringTask(t *testing.T) {
	ws := t.TempDir()
	s := startHTTP(t, ws)
	graphID := structuredOf(t, s.call("tasks_run", chainGraph(5)))["graphId"].(string)
	readPid(t, filepath.Join(ws, "grandchild.pid"))

	// The wait carries a progress token: its first progress event says it is in flight.
	inFlight, answered := make(chan struct{}), make(chan map[string]any, 1)
	go func() {
		meta := modernMeta()
		meta["progressToken"] = "p"
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": "tasks_status", "arguments": map[string]any{"graphId": graphID, "waitMs": 25000}, "_meta": meta}})
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(string(body)))
		setHeaders(req, []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Authorization", "Bearer " + s.token,
			"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "tasks_status"})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			close(inFlight)
			answered <- nil
			return
		}
		defer resp.Body.Close()
		var last map[string]any
		signalled := false
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			json.Unmarshal([]byte(data), &last)
			if !signalled {
				signalled = true
				close(inFlight)
			}
		}
		if !signalled {
			close(inFlight)
		}
		answered <- last
	}()
	<-inFlight
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case last := <-answered:
		res, _ := last["result"].(map[string]any)
		if res == nil {
			t.Errorf("the wait in flight at SIGTERM ended with %v, want its answer", last)
		} else if text := resultText(res); res["isError"] == true && !strings.HasPrefix(text, "SHUTTING_DOWN") {
			t.Errorf("the wait in flight at SIGTERM = %q, want SHUTTING_DOWN or the graph's status", shortText(text, 200))
		}
	case <-time.After(e2eWait):
		t.Fatal("the wait in flight at SIGTERM was not answered")
	}
	if code := s.waitExit(); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	wantShutdownRecorded(t, ws, graphID, 5)
	waitNoMarkedProcess(t, graphID)
}

// A listen address off loopback needs TLS (or --insecure-http), --auth none needs
// loopback, oauth needs its issuer and audience, and a token file others may read is
// refused: each a clear message and a non-zero exit, before anything is served.
func TestHTTP_StartRefusals(t *testing.T) {
	loose := filepath.Join(t.TempDir(), "token")
	os.WriteFile(loose, []byte(strings.Repeat("a", 64)), 0o644)
	os.Chmod(loose, 0o644)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, 2, "--tls-cert"},
		{[]string{"--listen", "192.0.2.1:7433", "--auth", "none", "--insecure-http"}, 2, "loopback"},
		{[]string{"--auth", "oauth"}, 2, "--issuer"},
		{[]string{"--auth", "oauth", "--issuer", "http://issuer.example", "--audience", "https://me.example/mcp"}, 1, "https"},
		{[]string{"--auth", "password"}, 2, "token, oauth or none"},
		{[]string{"--tls-cert", "x.pem"}, 2, "--tls-key"},
		{[]string{"--token-file", loose}, 1, "chmod 600"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(binPath, append([]string{"http", "--workspace", t.TempDir()}, tc.args...)...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.code || !strings.Contains(string(out), tc.says) {
				t.Errorf("exit %v, output %q; want exit %d saying %q", err, out, tc.code, tc.says)
			}
		})
	}
}

// The token file is made 0600 with 64 hex digits when missing, the start line names it,
// and a restart keeps it.
func TestHTTP_TokenFile(t *testing.T) {
	ws := t.TempDir()
	s := startHTTP(t, ws)
	path := filepath.Join(ws, ".mcp-harness", "http-token")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v, mode %v; want 0600", path, err, info.Mode())
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(s.token) {
		t.Errorf("token = %q, want 32 random bytes in hex", s.token)
	}
	first := s.token
	s.stop()
	if again := startHTTP(t, ws); again.token != first {
		t.Errorf("a restart made a new token")
	}
}

// HTTPS with --tls-cert and --tls-key: the start line says https, and the Go SDK client
// trusting the certificate works.
func TestHTTP_TLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	s := startHTTP(t, "", "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("endpoint = %s, want https", s.url)
	}
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()
	transport := &sdk.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: tlsWithHeader{pool, "Bearer " + s.token}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "tls", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	sdkCall(t, ctx, cs, "tasks_list", map[string]any{})
	if resp, err := http.Get(strings.Replace(s.url, "https://", "http://", 1)); err == nil {
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP to the TLS port was served")
		}
		resp.Body.Close()
	}
}

type tlsWithHeader struct {
	pool *x509.CertPool
	auth string
}

func (h tlsWithHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", h.auth)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: h.pool}}
	return tr.RoundTrip(req)
}

// selfSigned writes a certificate for 127.0.0.1 and its key to dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// The MCP Tasks extension over HTTP (--mcp-tasks): a tasks_run of a client that declares
// it is answered with a task, tasks/get reads it back.
func TestHTTP_MCPTasks(t *testing.T) {
	s := startHTTP(t, "", "--mcp-tasks")
	meta := modernMeta()
	meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	r := s.post(t.Context(), map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "tasks_run", "arguments": map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "true"}}}, "_meta": meta}},
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "tasks_run")
	task, _ := r.last()["result"].(map[string]any)
	if task["resultType"] != "task" {
		t.Fatalf("tasks_run = %s, want a task", r.body)
	}
	deadline := time.Now().Add(e2eWait)
	for {
		r = s.post(t.Context(), map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": map[string]any{"taskId": task["taskId"], "_meta": meta}},
			"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tasks/get")
		got, _ := r.last()["result"].(map[string]any)
		if got["status"] == "completed" {
			checkToolResult(t, "tasks_status", got["result"].(map[string]any), defaultMaxResult)
			return
		}
		if got == nil || time.Now().After(deadline) {
			t.Fatalf("tasks/get = %d %s", r.status, r.body)
		}
		time.Sleep(50 * time.Millisecond) // polling the task, as its pollIntervalMs says
	}
}

// busyWaits runs n short waits on session id at once and returns how many were BUSY.
func (s *httpServer) busyWaits(id string, n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	busy := 0
	for range n {
		wg.Go(func() {
			res := s.call("shell_io", map[string]any{"sessionId": id, "waitFor": "NEVER", "timeoutMs": 300})
			if strings.HasPrefix(resultText(res), "BUSY:") {
				mu.Lock()
				busy++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return busy
}
