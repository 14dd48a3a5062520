package e2e

import (
	"strings"
	"testing"
)

// 200 waiting calls in flight, shell_io on terminals and tasks_status on a graph, do not
// delay a quick call: shell_list is answered before any of them (they wait up to a minute
// for something that never comes). Then closing stdin shuts the server down cleanly with
// all of them still waiting: it exits 0, having answered each one.
func TestE2E_ManyWaitsDoNotDelayQuickCalls(t *testing.T) {
	s := startServer(t, t.TempDir(), "--max-wait", "60s")
	s.initialize()
	var sessions []string
	for range 3 {
		open := structuredOf(t, s.toolCall("shell_open", map[string]any{"command": "exec sleep 1000", "timeoutMs": 0}))
		sessions = append(sessions, open["sessionId"].(string))
	}
	graph := structuredOf(t, s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "long", "command": "sleep 1000"}}}))

	const shellWaits, statusWaits = 150, 50
	for i := range shellWaits {
		s.send(map[string]any{"id": 1000 + i, "method": "tools/call", "params": map[string]any{
			"name": "shell_io", "arguments": map[string]any{"sessionId": sessions[i%len(sessions)], "waitFor": "NEVER_PRINTED", "timeoutMs": 60000},
		}})
	}
	for i := range statusWaits {
		s.send(map[string]any{"id": 2000 + i, "method": "tools/call", "params": map[string]any{
			"name": "tasks_status", "arguments": map[string]any{"graphId": graph["graphId"], "waitMs": 60000},
		}})
	}
	s.send(map[string]any{"id": 3000, "method": "tools/call", "params": map[string]any{"name": "shell_list", "arguments": map[string]any{}}})
	first := s.next()
	if first["id"] != 3000.0 {
		t.Fatalf("first response = %v, want the quick shell_list (id 3000) before any of the %d waits", first, shellWaits+statusWaits)
	}
	if sc := structuredOf(t, first["result"].(map[string]any)); len(sc["sessions"].([]any)) != len(sessions) {
		t.Errorf("shell_list = %v", sc)
	}

	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit code = %d, want 0", code)
	}
	answered := map[float64]bool{}
	for m := range s.msgs {
		if id, ok := m["id"].(float64); ok {
			answered[id] = true
		}
	}
	if len(answered) != shellWaits+statusWaits {
		t.Errorf("answered %d of the %d waits in flight at the end of input", len(answered), shellWaits+statusWaits)
	}
}

// A cancelled call gets no response and logs no error, and its wait ends at once: with
// the waits cap full of waits, cancelling one makes room for another.
func TestE2E_CancelledCallGetsNoResponse(t *testing.T) {
	s := startServer(t, t.TempDir(), "--max-wait", "60s")
	s.initialize()
	open := structuredOf(t, s.toolCall("shell_open", map[string]any{"command": "exec sleep 1000", "timeoutMs": 0}))
	wait := func(id int) {
		s.send(map[string]any{"id": id, "method": "tools/call", "params": map[string]any{
			"name": "shell_io", "arguments": map[string]any{"sessionId": open["sessionId"], "waitFor": "NEVER_PRINTED", "timeoutMs": 60000},
		}})
	}
	const maxWaits = 256 // the server's default cap (protocol.DefaultMaxWaits)
	for i := range maxWaits {
		wait(1000 + i)
	}
	// The cap is full once one more is refused.
	wait(5000)
	if m := s.next(); m["id"] != 5000.0 || !strings.HasPrefix(resultText(m["result"].(map[string]any)), "BUSY: 256 waiting calls") {
		t.Fatalf("a wait beyond the cap = %v, want BUSY", m)
	}

	s.send(map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": 1000, "reason": "changed my mind"}})
	// Room again, as soon as the cancelled wait has ended: a wait sent now is either
	// refused (the cancel not yet through) or runs. It is retried until it runs, which
	// proves the cancelled wait ended long before its 60 s.
	for attempt := 6000; ; attempt++ {
		wait(attempt)
		refused := false
		s.send(map[string]any{"id": 9000 + attempt, "method": "ping"})
		for {
			m := s.next()
			if m["id"] == float64(attempt) {
				refused = true
				continue
			}
			if m["id"] == float64(9000+attempt) {
				break
			}
		}
		if !refused {
			break // the wait is running in the place of the cancelled one
		}
		if attempt > 6000+1000 {
			t.Fatal("the cancelled wait never made room")
		}
	}

	s.stdin.Close()
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit code = %d", code)
	}
	for m := range s.msgs {
		if m["id"] == 1000.0 {
			t.Errorf("the cancelled call was answered: %v", m)
		}
	}
	if strings.Contains(s.stderr.String(), "level=ERROR") {
		t.Errorf("stderr has an error:\n%s", s.stderr)
	}
}
