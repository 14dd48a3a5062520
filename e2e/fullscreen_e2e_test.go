package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2E_VimWorkflowCost is the vim workflow of an agent through the built binary, at the
// default 120x40: open vim on a 5-line file, an edit, :wq. While vim shows its screen a
// result's output is that screen, each row trimmed, not the repaint stream with every ~
// row padded to the width; the whole workflow costs a few kilobytes.
func TestE2E_VimWorkflowCost(t *testing.T) {
	vim, err := exec.LookPath("vim")
	if err != nil {
		t.Skip("vim is not installed")
	}
	ws := t.TempDir()
	file := filepath.Join(ws, "notes.txt")
	if err := os.WriteFile(file, []byte("line 1\nline 2\nline 3\nline 4\nline 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, ws)
	s.initialize()
	total := 0
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res := s.toolCall(name, args)
		b, _ := json.Marshal(res)
		total += len(b)
		return structuredOf(t, res)
	}
	// No waitFor: vim's message comes before the file in its stream, and the read that
	// ends when vim waits for a key has the whole screen.
	open := call("shell_open", map[string]any{"command": vim + " -u NONE -N -i NONE notes.txt", "timeoutMs": 20000})
	out := open["output"].(string)
	rows := strings.Split(out, "\n")
	if len(rows) != 40 || rows[0] != "line 1" || rows[4] != "line 5" || rows[5] != "~" || !strings.HasPrefix(rows[39], `"notes.txt" 5L`) {
		t.Errorf("shell_open of vim: output (%d bytes, %d rows) %q, want the screen's 40 rows", len(out), len(rows), out)
	}
	id := open["sessionId"].(string)
	call("shell_io", map[string]any{"sessionId": id, "input": "ggA edited\x1b", "waitFor": "edited", "timeoutMs": 20000})
	end := call("shell_io", map[string]any{"sessionId": id, "input": ":wq\r", "timeoutMs": 20000})
	if end["exited"] != true || strings.Contains(end["output"].(string), "line") {
		t.Errorf(":wq: exited %v, output %q; want vim gone and none of its screen", end["exited"], end["output"])
	}
	if b, _ := os.ReadFile(file); !strings.HasPrefix(string(b), "line 1 edited\n") {
		t.Errorf("notes.txt after :wq = %q", b)
	}
	// 40 rows of screen in the text and in structuredContent, with the headers: about 2 KB
	// (the repaint stream alone was over 8 KB).
	if total > 4096 {
		t.Errorf("the workflow's three results are %d bytes of JSON, want at most 4096", total)
	}
	t.Logf("vim workflow: %d bytes of results", total)
}
