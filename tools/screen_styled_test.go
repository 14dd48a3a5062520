package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shell_io screen "styled" gives each row's colours beside its text, and a watcher that
// re-reads with since and end (an MCP App's terminal view) steals nothing: the agent's
// next read returns the output the watcher saw drawn.
func TestShellIO_StyledScreenPeek(t *testing.T) {
	s := newTestServer(t)
	goFile := filepath.Join(t.TempDir(), "go")
	open := structured(t, callTool(t, s, "shell_open", map[string]any{
		"command": `echo ready; while [ ! -e ` + goFile + ` ]; do sleep 0.01; done; ` +
			`printf '\033[1;31mRED\033[0m \033[7;48;5;202mX\033[0m\n'; exec cat`,
		"cols": 40, "rows": 4, "waitFor": "ready", "timeoutMs": 20000,
	}))
	id, cursor := open["sessionId"].(string), open["cursor"].(float64)
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	peek := map[string]any{"sessionId": id, "since": cursor, "end": cursor, "screen": "styled"}
	var sc map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := structured(t, callTool(t, s, "shell_io", peek))
		if r["output"] != "" || r["cursor"] != cursor {
			t.Fatalf("peek returned output %q, cursor %v; want none, %v", r["output"], r["cursor"], cursor)
		}
		sc = r["screen"].(map[string]any)
		if strings.Contains(sc["lines"].([]any)[1].(string), "RED X") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the styled line never showed on the screen: %v", sc["lines"])
		}
		time.Sleep(10 * time.Millisecond) // a view's refresh interval, not a synchronisation
	}
	styles := sc["styles"].([]any)
	if len(styles) != 4 || len(styles[0].([]any)) != 0 {
		t.Fatalf("styles = %v, want 4 rows, the first plain", styles)
	}
	runs := styles[1].([]any)
	want := []map[string]any{
		{"col": 0.0, "len": 3.0, "fg": 1.0, "bold": true},
		{"col": 4.0, "len": 1.0, "bg": 202.0, "inverse": true},
	}
	if len(runs) != len(want) {
		t.Fatalf("row 1 runs = %v, want %v", runs, want)
	}
	for i, w := range want {
		got := runs[i].(map[string]any)
		for k, v := range w {
			if got[k] != v {
				t.Errorf("run %d: %s = %v, want %v (run %v)", i, k, got[k], v, got)
			}
		}
	}
	// screen true stays plain text: styles null.
	plain := structured(t, callTool(t, s, "shell_io", map[string]any{"sessionId": id, "since": cursor, "end": cursor, "screen": true}))
	if v, ok := plain["screen"].(map[string]any)["styles"]; !ok || v != nil {
		t.Errorf("screen true: styles = %v (present %v), want null", v, ok)
	}
	// A value other than true, false or "styled" is refused, and nothing is read.
	bad := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "screen": "colour"})
	if !bad.IsError || !strings.HasPrefix(text(bad), `INVALID_ARGUMENT: screen must be true, false or "styled"`) {
		t.Errorf("screen \"colour\" = %q, want INVALID_ARGUMENT", text(bad))
	}
	// The agent's next read returns what the watcher saw.
	next := structured(t, callTool(t, s, "shell_io", map[string]any{"sessionId": id, "timeoutMs": 5000}))
	if !strings.Contains(next["output"].(string), "RED X") || next["since"] != cursor {
		t.Errorf("agent's next read = %q from %v, want RED X from %v", next["output"], next["since"], cursor)
	}
}
