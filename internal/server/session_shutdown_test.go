package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/storetest"
)

// listenWithLockHeld serves in (then its end) with --mcp-tasks while another connection
// holds the database's write lock, and a busy timeout so long that the store's open
// cannot end while the test waits. It returns what Listen wrote, failing unless Listen
// returned well within one busy timeout of the input's end: a client that closes its
// input gives the server a few seconds before it kills it.
func listenWithLockHeld(t *testing.T, in string) []map[string]any {
	t.Helper()
	cfg := Config{Workspace: t.TempDir(), Logger: discardLogger(), BusyTimeout: 30 * time.Second, MCPTasks: true}
	made, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := closeServer(made); err != nil {
		t.Fatal(err)
	}
	release := storetest.HoldWriteLock(t, made.ws.DBPath())
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeServer(s) })

	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- s.Listen(t.Context(), strings.NewReader(in), &out) }()
	// Without the fix Listen is still waiting: let the open through so that it returns.
	t.Cleanup(func() { release(); <-done })
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Listen = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Listen did not return within 10s of the input's end: a request of the tasks extension waited for the store's open, which the end of input must cut short")
	}
	var msgs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

const initializeLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// A tasks/get waiting for a store that another process keeps locked ends when the input
// does, as a tool call would: it is answered with an error saying it was not done, and
// Listen returns at once.
func TestFacade_TasksRequestEndsWithInput(t *testing.T) {
	msgs := listenWithLockHeld(t, initializeLine+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"g-old","_meta":`+declaredMeta+`}}`+"\n")
	var answer map[string]any
	for _, m := range msgs {
		if m["id"] == float64(1) {
			answer = m
		}
	}
	e, _ := answer["error"].(map[string]any)
	if msg, _ := e["message"].(string); e["code"] != float64(-32603) || !strings.Contains(msg, "server is shutting down") {
		t.Errorf("tasks/get's answer = %v, want an internal error saying the server is shutting down", answer)
	}
}

// A tasks/get the client cancels gets no answer, and holds up nothing.
func TestFacade_TasksRequestCancelled(t *testing.T) {
	msgs := listenWithLockHeld(t, initializeLine+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"g-old","_meta":`+declaredMeta+`}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`+"\n")
	for _, m := range msgs {
		if m["id"] == float64(1) {
			t.Errorf("the cancelled tasks/get was answered: %v", m)
		}
	}
	if len(msgs) != 1 || msgs[0]["id"] != float64(0) {
		t.Errorf("responses = %v, want initialize's alone", msgs)
	}
}
