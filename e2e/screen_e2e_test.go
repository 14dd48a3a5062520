package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2E_ScreenVim edits a file in vim through the built binary, reading the screen as
// a model would: shell_open and shell_io with screen, until vim has drawn.
func TestE2E_ScreenVim(t *testing.T) {
	vim, err := exec.LookPath("vim")
	if err != nil {
		t.Skip("vim is not installed")
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("first line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, ws)
	s.initialize()
	open := structuredOf(t, s.toolCall("shell_open", map[string]any{
		"command": vim + " -u NONE -N -i NONE notes.txt", "cols": 40, "rows": 6, "screen": true, "timeoutMs": 20000,
	}))
	id := open["sessionId"].(string)
	// waitScreen reads the screen until ok accepts its lines.
	waitScreen := func(what string, ok func(lines []string) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(e2eWait)
		for {
			res := s.toolCall("shell_io", map[string]any{"sessionId": id, "screen": true, "timeoutMs": 300})
			sc := structuredOf(t, res)["screen"].(map[string]any)
			var lines []string
			for _, l := range sc["lines"].([]any) {
				lines = append(lines, l.(string))
			}
			if ok(lines) {
				if !strings.Contains(resultText(res), "--- screen 40x6") {
					t.Errorf("the text of the result has no screen:\n%s", resultText(res))
				}
				return sc
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; screen %q", what, lines)
			}
		}
	}
	sc := waitScreen("vim to show the file", func(l []string) bool {
		return l[0] == "first line" && l[1] == "~" && strings.Contains(l[5], "notes.txt")
	})
	if sc["altScreen"] != true {
		t.Errorf("vim: altScreen %v, want true", sc["altScreen"])
	}
	s.toolCall("shell_io", map[string]any{"sessionId": id, "input": "Oadded above\x1b", "timeoutMs": 0})
	sc = waitScreen("the new line", func(l []string) bool {
		return l[0] == "added above" && l[1] == "first line" && !strings.Contains(l[5], "INSERT")
	})
	if cur := sc["cursor"].(map[string]any); cur["row"] != 0.0 || cur["col"] != 10.0 {
		t.Errorf("cursor %v, want row 0 col 10 (on the last character typed)", cur)
	}
	s.toolCall("shell_io", map[string]any{"sessionId": id, "input": ":wq\r", "timeoutMs": 0})
	deadline := time.Now().Add(e2eWait)
	for {
		b, _ := os.ReadFile(filepath.Join(ws, "notes.txt"))
		if string(b) == "added above\nfirst line\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("notes.txt = %q after :wq", b)
		}
		s.toolCall("shell_io", map[string]any{"sessionId": id, "timeoutMs": 300})
	}
}
