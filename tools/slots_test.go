package tools

import (
	"strings"
	"testing"
	"time"
)

// A ready task that has not started: tasks_graph and tasks_status say which running tasks
// hold the slots, by the graph's cap or by the server's.
func TestTasks_SlotHoldersNamed(t *testing.T) {
	s := newTestServer(t, func(c *testConfig) { c.MaxParallel = 1 })
	dev := runGraph(t, s, map[string]any{"maxParallel": 1, "tasks": []any{
		map[string]any{"id": "devserver", "command": "sleep 600"},
		map[string]any{"id": "seed", "command": "true"},
	}})
	waitRunning(t, s, dev, "devserver") // so that the reasons are settled
	for _, tool := range []string{"tasks_graph", "tasks_status"} {
		got := text(callTool(t, s, tool, map[string]any{"graphId": dev}))
		if !strings.Contains(got, "this graph's maxParallel (1) is taken by devserver (running ") {
			t.Errorf("%s text =\n%s\nwant it to name devserver as holding the graph's slot", tool, got)
		}
	}

	// A second graph with two tasks: the first takes the slot every graph may take, the
	// second waits for the server's --max-parallel, held by devserver and that first one.
	ci := runGraph(t, s, map[string]any{"maxParallel": 4, "tasks": []any{
		map[string]any{"id": "build", "command": "sleep 600"},
		map[string]any{"id": "lint", "command": "true"},
	}})
	waitRunning(t, s, ci, "build")
	for _, tool := range []string{"tasks_graph", "tasks_status"} {
		got := text(callTool(t, s, tool, map[string]any{"graphId": ci}))
		if !strings.Contains(got, "the server's --max-parallel is taken by "+dev+"/devserver (running ") || !strings.Contains(got, ", build (running ") {
			t.Errorf("%s text =\n%s\nwant it to name %s/devserver and build as holding the server's slots", tool, got, dev)
		}
	}
	for _, g := range []string{dev, ci} {
		callTool(t, s, "tasks_cancel", map[string]any{"graphId": g, "graceMs": 0})
		waitGraph(t, s, g, nil)
	}

	// Nothing ready: no note.
	if got := text(callTool(t, s, "tasks_graph", map[string]any{"graphId": dev})); strings.Contains(got, "free slot") {
		t.Errorf("tasks_graph of a finished graph =\n%s\nwant no slot note", got)
	}
}

// waitRunning waits until a task of the graph is running.
func waitRunning(t *testing.T, s *testServer, graphID, taskID string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		// A short wait for a change: a change that came before the call is not waited for.
		st := structured(t, callTool(t, s, "tasks_status", map[string]any{"graphId": graphID, "taskIds": []string{taskID}, "waitMs": 200, "until": "change"}))
		if taskByID(t, st, taskID)["status"] == "running" {
			return
		}
	}
	t.Fatalf("task %s of %s not running within 30s", taskID, graphID)
}
