package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A task's cwd is checked again when it starts, not only when its graph is submitted:
// here task a replaces the directory sub with a symlink to a directory outside the
// workspace, and b, which runs in sub once a has finished, is refused at its start (it
// writes nothing outside) while the check at submission passed.
func TestE2E_CwdSwappedBeforeStart(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, ws)
	s.initialize()
	run := s.toolCall("tasks_run", map[string]any{"tasks": []any{
		map[string]any{"id": "a", "command": "mv sub sub.old && ln -s " + outside + " sub"},
		map[string]any{"id": "b", "command": "touch escaped; pwd -P", "cwd": "sub", "dependsOn": []string{"a"}},
	}})
	if run["isError"] == true {
		t.Fatalf("tasks_run = %s", resultText(run))
	}
	st := s.waitGraph(structuredOf(t, run)["graphId"].(string))
	tasks := tasksOf(st)
	if tasks["a"]["status"] != "succeeded" {
		t.Fatalf("a = %v, want it to have swapped the directory", tasks["a"])
	}
	b := tasks["b"]
	if b["status"] != "failed" || b["errorCode"] != "SPAWN_FAILED" || !strings.Contains(b["message"].(string), "outside the workspace") {
		t.Errorf("b = %v/%v %q, want failed SPAWN_FAILED saying outside the workspace", b["status"], b["errorCode"], b["message"])
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Errorf("b ran outside the workspace: %s/escaped exists", outside)
	}
}

// Neither a task nor a terminal may run in the server's state directory, or under it.
func TestE2E_StateDirIsNotACwd(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	for _, cwd := range []string{".mcp-harness", ".mcp-harness/logs"} {
		res := s.toolCall("tasks_run", map[string]any{"tasks": []any{map[string]any{"id": "a", "command": "touch x", "cwd": cwd}}})
		if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "CWD_OUTSIDE_WORKSPACE: ") || !strings.Contains(text, "state directory") {
			t.Errorf("tasks_run in %s = %q, want CWD_OUTSIDE_WORKSPACE naming the state directory", cwd, text)
		}
		res = s.toolCall("shell_open", map[string]any{"command": "touch x", "cwd": cwd})
		if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "CWD_OUTSIDE_WORKSPACE: ") {
			t.Errorf("shell_open in %s = %q, want CWD_OUTSIDE_WORKSPACE", cwd, text)
		}
	}
	list := structuredOf(t, s.toolCall("tasks_list", map[string]any{}))
	if n := len(list["graphs"].([]any)); n != 0 {
		t.Errorf("graphs after refused ones = %d, want none", n)
	}
}
