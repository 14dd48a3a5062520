package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-harness/mcp-harness/internal/storetest"
	"github.com/mcp-harness/mcp-harness/store"
)

// syncBuffer is a log destination that several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// callAll makes n tools/call of tool at once, as a client's concurrent requests arrive,
// and returns their results once all are answered.
func callAll(t *testing.T, s *Server, n int, tool string) []*mcp.CallToolResult {
	t.Helper()
	req, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": map[string]any{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	resps := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { resps[i] = s.MCPServer().HandleMessage(t.Context(), req) })
	}
	wg.Wait()
	results := make([]*mcp.CallToolResult, n)
	for i, resp := range resps {
		b, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		var envelope struct {
			Result *mcp.CallToolResult `json:"result"`
		}
		if err := json.Unmarshal(b, &envelope); err != nil || envelope.Result == nil {
			t.Fatalf("%s: response %s", tool, b)
		}
		checkResult(t, s, tool, envelope.Result)
		results[i] = envelope.Result
	}
	return results
}

// A store whose write lock another process holds when the server opens it: calls that
// come at once, while it is held, all answer BUSY, and once it is released the next calls
// open it, once (the race detector sees two opens at once; the log, engines started
// twice), and are answered; Close then marks the runner stopped.
func TestServer_OpenAgainAfterBusy(t *testing.T) {
	cfg := Config{Workspace: t.TempDir(), Logger: discardLogger(), BusyTimeout: 20 * time.Millisecond}
	made, err := New(t.Context(), cfg) // makes the database
	if err != nil {
		t.Fatal(err)
	}
	if err := closeServer(made); err != nil {
		t.Fatal(err)
	}
	dbPath := made.ws.DBPath()
	release := storetest.HoldWriteLock(t, dbPath)

	var logs syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			closeServer(s)
		}
	})
	for range 2 { // a call after the failed attempt opens again, and finds the lock again
		for _, res := range callAll(t, s, 8, "tasks_list") {
			if txt := text(res); !res.IsError || !strings.HasPrefix(txt, codeBusy+": tasks_list failed: another process holds the workspace database's write lock") {
				t.Fatalf("tasks_list with the lock held = %q, want BUSY", txt)
			}
		}
	}
	release()
	for _, res := range callAll(t, s, 8, "tasks_list") {
		if res.IsError {
			t.Fatalf("tasks_list once the lock is released = %q", text(res))
		}
	}
	if got := strings.Count(logs.String(), "runner started"); got != 1 {
		t.Errorf("the engines started %d times, want once; log:\n%s", got, logs.String())
	}
	closed = true
	if err := closeServer(s); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.openFailed(); err != nil {
		t.Errorf("openFailed after a store that opened = %v", err)
	}
	db, err := store.Open(t.Context(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.GetRunner(t.Context(), s.runnerID)
	if err != nil || r.StoppedAt == nil {
		t.Errorf("runner = %+v, %v; want it marked stopped", r, err)
	}
}

// Close on a server whose store is still opening, with the lock held: at its deadline it
// tells the attempt to stop, waits for it (the store gives up at the end of the busy
// timeout it is in: SQLite's wait for a lock is not interrupted), and returns nil, since
// nothing was opened and so nothing ran; a tool call after Close starts no new open.
func TestServer_CloseWithLockHeld(t *testing.T) {
	cfg := Config{Workspace: t.TempDir(), Logger: discardLogger(), BusyTimeout: 200 * time.Millisecond}
	made, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := closeServer(made); err != nil {
		t.Fatal(err)
	}
	storetest.HoldWriteLock(t, made.ws.DBPath())
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.startOpen()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close with the lock held = %v, want nil", err)
	}
	if err := s.openFailed(); err != nil {
		t.Errorf("openFailed = %v, want nil: a held lock is no failure of the server", err)
	}
	last := s.attempt
	res := callAll(t, s, 1, "tasks_list")[0]
	if txt := text(res); !res.IsError || !strings.HasPrefix(txt, codeBusy+": ") {
		t.Errorf("tasks_list after Close = %q, want the BUSY of the last attempt", txt)
	}
	if s.attempt != last {
		t.Errorf("a tool call after Close started another open")
	}
}
