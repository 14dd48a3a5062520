package tools

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/pty"
)

// A password question tells the model to ask the person to run the answer command, not
// to type it; a person's keys and viewers show in shell_io and shell_list.
func TestShell_person(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("input-wanted needs the kernel's view of the terminal")
	}
	s := newTestServer(t, func(c *testConfig) {
		c.AnswerCommand = func(id string) string { return "mcp-harness answer " + id + " --workspace /ws" }
	})
	open := structured(t, callTool(t, s, "shell_open", bashArgs(nil)))
	id := open["sessionId"].(string)
	if open["viewers"] != 0.0 || open["personTyped"] != false {
		t.Errorf("shell_open viewers %v personTyped %v, want 0, false", open["viewers"], open["personTyped"])
	}
	res := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "input": "read -rs -p 'Password: ' pw\n", "timeoutMs": 20000})
	head := strings.SplitN(text(res), "\n", 2)[0]
	want := "waits for a password at \"Password:\": do not type one; ask the person to run `mcp-harness answer " + id + " --workspace /ws` in a terminal"
	if !strings.Contains(head, want) || strings.Contains(head, "answer with input") {
		t.Errorf("shell_io text = %q, want it to contain %q", head, want)
	}

	v, err := s.shells.Attach(id, pty.AttachOptions{Write: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Write(context.Background(), []byte("typed\r")); err != nil {
		t.Fatal(err)
	}
	list := structured(t, callTool(t, s, "shell_list", map[string]any{}))
	entry := list["sessions"].([]any)[0].(map[string]any)
	if entry["viewers"] != 1.0 || entry["personTyped"] != true {
		t.Errorf("shell_list entry viewers %v personTyped %v, want 1, true", entry["viewers"], entry["personTyped"])
	}
	io := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "waitFor": "PROMPT> $", "timeoutMs": 20000})
	r := structured(t, io)
	if r["viewers"] != 1.0 || r["personTyped"] != true || !strings.Contains(text(io), "a person typed into it since your last call · 1 watching") {
		t.Errorf("shell_io after the person typed: viewers %v personTyped %v text %q", r["viewers"], r["personTyped"], strings.SplitN(text(io), "\n", 2)[0])
	}
	again := structured(t, callTool(t, s, "shell_io", map[string]any{"sessionId": id, "timeoutMs": 0}))
	if again["personTyped"] != false {
		t.Errorf("the next shell_io says personTyped %v, want false", again["personTyped"])
	}
}
