package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-harness/mcp-harness/internal/httpauth"
)

// httpTestServer is ServeHTTP in process on a free loopback port, with --auth none, and
// a client of its own (its own connections, so that closing them is the test's to do).
type httpTestServer struct {
	t      *testing.T
	url    string
	client *http.Client
	stop   context.CancelFunc
	served chan error
}

func startHTTPTestServer(t *testing.T, maxWaits int) *httpTestServer {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	s := &httpTestServer{t: t, stop: stop, served: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{}}}
	cfg := Config{Workspace: t.TempDir(), Logger: discardLogger(), MaxWait: 30 * time.Second, MaxWaits: maxWaits}
	h := HTTPConfig{Listen: "127.0.0.1:0", Auth: httpauth.Config{Mode: httpauth.ModeNone},
		Started: func(url, _ string) { urls <- url }}
	go func() { s.served <- ServeHTTP(ctx, cfg, h) }()
	select {
	case s.url = <-urls:
	case err := <-s.served:
		t.Fatalf("ServeHTTP = %v before it listened", err)
	}
	t.Cleanup(func() {
		s.stop()
		<-s.served
		s.client.CloseIdleConnections()
	})
	return s
}

// request makes a tools/call with a progress token: of revision 2026-07-28 (no
// session) when session is "", else in that MCP session of revision 2025-11-25.
func (s *httpTestServer) request(ctx context.Context, session string, id int, tool string, args map[string]any) *http.Request {
	s.t.Helper()
	meta := map[string]any{"progressToken": id}
	headers := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if session == "" {
		meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "t", "version": "1"}
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
		headers["MCP-Protocol-Version"], headers["Mcp-Method"], headers["Mcp-Name"] = "2026-07-28", "tools/call", tool
	} else {
		headers["MCP-Protocol-Version"], headers["Mcp-Session-Id"] = "2025-11-25", session
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args, "_meta": meta}})
	if err != nil {
		s.t.Fatal(err)
	}
	return s.newRequest(ctx, string(body), headers)
}

func (s *httpTestServer) newRequest(ctx context.Context, body string, headers map[string]string) *http.Request {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

// initialize opens an MCP session of revision 2025-11-25 and returns its id.
func (s *httpTestServer) initialize() string {
	s.t.Helper()
	headers := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	resp, err := s.client.Do(s.newRequest(s.t.Context(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, headers))
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		s.t.Fatalf("initialize = %s, Mcp-Session-Id %q", resp.Status, id)
	}
	headers["Mcp-Session-Id"], headers["MCP-Protocol-Version"] = id, "2025-11-25"
	resp, err = s.client.Do(s.newRequest(s.t.Context(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers))
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	return id
}

// structured is the structuredContent of the answer to a call that answers at once.
func (s *httpTestServer) structured(tool string, args map[string]any) map[string]any {
	s.t.Helper()
	resp, err := s.client.Do(s.request(s.t.Context(), "", 1, tool, args))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&answer) != nil || answer.Result.IsError {
		s.t.Fatalf("%s = %s, %+v", tool, resp.Status, answer)
	}
	return answer.Result.StructuredContent
}

// socketFDs counts this process's open sockets: a connection left open by either side of
// an HTTP exchange is one.
func socketFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range entries {
		if link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(link, "socket:") {
			n++
		}
	}
	return n
}

// Clients that go away while their calls wait end those waits and leave nothing behind
// in a server that goes on serving, in either era (stateless requests, and the calls of
// an MCP session, which stays): no goroutine (the calls', their Sessions', their
// connections') and no socket more than before the waits began. The server then still
// shuts down cleanly (and TestMain holds the package to no goroutine left at all).
func TestServeHTTP_DisconnectMidWaitLeaksNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts sockets in /proc/self/fd")
	}
	const waits = 20
	s := startHTTPTestServer(t, waits)
	id := s.structured("shell_open", map[string]any{"command": "exec sleep 1000", "timeoutMs": 0})["sessionId"].(string)
	// Stateless requests of 2026-07-28, then the calls of a 2025-11-25 MCP session,
	// which outlives them.
	for _, session := range []string{"", s.initialize()} {
		s.client.CloseIdleConnections()
		goroutinesBefore := goleak.IgnoreCurrent()
		socketsBefore := socketFDs(t)

		ctx, disconnect := context.WithCancel(t.Context())
		var inFlight, ended sync.WaitGroup
		errs := make(chan error, waits)
		for i := range waits {
			inFlight.Add(1)
			ended.Go(func() {
				signalled := false
				defer func() {
					if !signalled {
						inFlight.Done()
					}
				}()
				req := s.request(ctx, session, 100+i, "shell_io", map[string]any{"sessionId": id, "waitFor": "NEVER_PRINTED", "timeoutMs": 25000})
				resp, err := s.client.Do(req)
				if err != nil {
					errs <- fmt.Errorf("wait %d: %w", i, err)
					return
				}
				defer resp.Body.Close()
				// Its first event is progress: the call waits. Nothing else may come before
				// the client goes away.
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					data, ok := strings.CutPrefix(sc.Text(), "data: ")
					switch {
					case !ok:
					case strings.Contains(data, `"notifications/progress"`):
						if !signalled {
							signalled = true
							inFlight.Done()
						}
					default:
						errs <- fmt.Errorf("wait %d answered before its client went away: %.200s", i, data)
					}
				}
				if !signalled {
					errs <- fmt.Errorf("wait %d: %s and no progress", i, resp.Status)
				}
			})
		}
		inFlight.Wait()
		disconnect()
		ended.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		s.client.CloseIdleConnections()

		// The waits end as their cancellations arrive: goleak retries for a fraction of a
		// second each time, and a loaded machine may take longer.
		deadline := time.Now().Add(20 * time.Second)
		for err := goleak.Find(goroutinesBefore); err != nil; err = goleak.Find(goroutinesBefore) {
			if time.Now().After(deadline) {
				t.Fatalf("goroutines left after the clients went away mid-wait: %v", err)
			}
		}
		// A connection's goroutines close its socket before they return: none may be left.
		if after := socketFDs(t); after > socketsBefore {
			t.Errorf("%d sockets open after the clients went away, %d before the waits", after, socketsBefore)
		}
	}
	// The session is still there and serves a wait that is answered.
	if got := s.structured("shell_io", map[string]any{"sessionId": id, "waitFor": "NEVER", "timeoutMs": 50}); got["reason"] == nil {
		t.Errorf("shell_io after the disconnects = %v", got)
	}
	s.stop()
	if err := <-s.served; err != nil {
		t.Errorf("ServeHTTP = %v after its context ended, want nil", err)
	}
	s.served <- nil // for the cleanup
}
