package tools

import (
	"encoding/json"
	"testing"
)

// Every tool says whether its calls may wait, and a new tool must be added here: a call
// that may wait counts against the cap on waiting calls, and the BUSY answer names them.
func TestDispatch_ToolsClassified(t *testing.T) {
	s := newTestServer(t)
	positive := map[string]json.RawMessage{"waitMs": json.RawMessage(`1000`)}
	want := map[string][2]bool{ // without, with a positive waitMs
		"shell_open": {true, true}, "shell_io": {true, true}, "shell_close": {true, true}, "shell_list": {false, false},
		"tasks_run": {false, false}, "tasks_status": {false, true}, "tasks_list": {false, false},
		"tasks_cancel": {false, false}, "tasks_graph": {false, false},
	}
	for _, tool := range s.registry() {
		name := tool.Tool.Name
		w, ok := want[name]
		if !ok {
			t.Errorf("tool %s is not classified here: say whether its calls may wait (its declaration's waits)", name)
			continue
		}
		if got := [2]bool{MayWait(name, nil), MayWait(name, positive)}; got != w {
			t.Errorf("MayWait(%s) without and with waitMs = %v, want %v", name, got, w)
		}
	}
	if !MayWait("no_such_tool", nil) {
		t.Error("an unknown tool counts as not waiting; it must count as waiting, the safe side")
	}
	if want := "shell_open, shell_io, shell_close, tasks_status with waitMs"; WaitingCalls != want {
		t.Errorf("WaitingCalls = %q, want %q", WaitingCalls, want)
	}
}
