package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// vmHWM reads a process's peak resident set size in KiB.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skip("no /proc: ", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	t.Skip("no VmHWM")
	return 0
}

// A message over the limit (8 MiB) is answered with a JSON-RPC error by its id and
// skipped without being held whole: a 64 MiB line raises the server's peak memory by far
// less than its size. The next message is served.
func TestE2E_OversizedMessageIsSkipped(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	before := vmHWM(t, s.cmd.Process.Pid)
	const size = 64 << 20
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shell_io","arguments":{"sessionId":"s1","input":"`)
	b.Write(bytes.Repeat([]byte("x"), size))
	b.WriteString(`"}}}`)
	s.sendLine(b.String())
	e := wantRPCError(t, "a 64 MiB message", s.next(), -32600, "at most 8388608 bytes are accepted per message")
	if msg, _ := e["message"].(string); len(msg) > 500 {
		t.Errorf("the error message is %d bytes long", len(msg))
	}
	// The race detector multiplies what memory costs: the bound holds without it.
	if grew := vmHWM(t, s.cmd.Process.Pid) - before; grew > size/4/1024 && !raceEnabled {
		t.Errorf("peak memory grew by %d KiB for a %d KiB message, want far less than the message", grew, size/1024)
	}
	if resp := s.call("ping", nil, nil); resp["result"] == nil {
		t.Errorf("ping after the oversized message = %v", resp)
	}
}

// The last message is served even without a newline after it: a client (or a script)
// that writes its last request and closes stdin gets its answer.
func TestE2E_LastLineWithoutNewline(t *testing.T) {
	cmd := exec.Command(binPath, "stdio", "--workspace", t.TempDir())
	cmd.Stdin = strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tasks_list","arguments":{}}}`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !bytes.Contains(out, []byte(`"id":2,"result"`)) {
		t.Errorf("no answer to the last line (no newline after it); stdout:\n%s", out)
	}
}

// Before initialize, only ping is answered; anything else gets a JSON-RPC error that says
// to initialize first.
func TestE2E_RequestsBeforeInitialize(t *testing.T) {
	s := startServer(t, t.TempDir())
	wantRPCError(t, "tools/call before initialize", s.call("tools/call", map[string]any{"name": "shell_list", "arguments": map[string]any{}}, nil),
		-32600, "before initialize")
	wantRPCError(t, "tools/list before initialize", s.call("tools/list", nil, nil), -32600, "send initialize first")
	if resp := s.call("ping", nil, nil); resp["result"] == nil {
		t.Errorf("ping before initialize = %v, want a result", resp)
	}
	s.initialize()
	if res := s.toolCall("shell_list", map[string]any{}); res["isError"] == true {
		t.Errorf("shell_list after initialize = %v", res)
	}
}

// Each input has a limit, checked before anything happens; an error quotes at most a
// short prefix of what was sent.
func TestE2E_InputLimits(t *testing.T) {
	s := startServer(t, t.TempDir())
	s.initialize()
	mb := strings.Repeat("x", 1<<20)
	many := map[string]any{}
	for i := range 101 {
		many["V"+strconv.Itoa(i)] = "1"
	}
	task := func(extra map[string]any) []any {
		t := map[string]any{"id": "a", "command": "touch ran"}
		for k, v := range extra {
			t[k] = v
		}
		return []any{t}
	}
	for _, tc := range []struct {
		tool       string
		args       map[string]any
		code, text string
	}{
		{"shell_open", map[string]any{"command": mb}, "INVALID_ARGUMENT", "command is 1048576 bytes, at most 131071"},
		{"shell_open", map[string]any{"command": "true", "env": many}, "INVALID_ARGUMENT", "env has 101 variables, at most 100"},
		{"shell_open", map[string]any{"command": "true", "env": map[string]any{"BIG": strings.Repeat("v", 200<<10)}}, "INVALID_ARGUMENT", "at most 32768 are accepted per value"},
		{"shell_open", map[string]any{"command": "true", "waitFor": mb}, "INVALID_ARGUMENT", "waitFor is 1048576 bytes, at most 4096"},
		{"shell_open", map[string]any{"command": "true", "cwd": mb}, "INVALID_ARGUMENT", "a path is at most 4096"},
		{"shell_io", map[string]any{"sessionId": mb}, "NOT_FOUND", `"... (1048576 bytes)`},
		{"tasks_run", map[string]any{"tasks": task(map[string]any{"env": map[string]any{"BIG": strings.Repeat("v", 200<<10)}})}, "LIMIT_EXCEEDED", `env "BIG" is 204800 bytes long, at most 32768`},
		{"tasks_run", map[string]any{"idempotencyKey": mb, "tasks": task(nil)}, "LIMIT_EXCEEDED", "idempotencyKey is 1048576 bytes, at most 200"},
		{"tasks_run", map[string]any{"tasks": task(map[string]any{"id": mb})}, "INVALID_ARGUMENT", `"... (1048576 bytes) is 1048576 bytes long`},
		{"tasks_run", map[string]any{"tasks": task(map[string]any{"dependsOn": []string{mb}})}, "UNKNOWN_DEPENDENCY", `"... (1048576 bytes), which is not a task`},
		{"tasks_list", map[string]any{"cursor": mb}, "INVALID_ARGUMENT", `"... (1048576 bytes) is 1048576 bytes, longer than any cursor`},
		{"tasks_status", map[string]any{"graphId": mb}, "NOT_FOUND", `"... (1048576 bytes)`},
	} {
		res := s.toolCall(tc.tool, tc.args)
		text := resultText(res)
		if res["isError"] != true || !strings.HasPrefix(text, tc.code+": ") || !strings.Contains(text, tc.text) {
			t.Errorf("%s = %.300q, want %s saying %q", tc.tool, text, tc.code, tc.text)
		}
		if len(text) > 1000 {
			t.Errorf("%s: the error is %d bytes long: what was sent must be quoted short", tc.tool, len(text))
		}
	}
	// Nothing was started or stored.
	if list := structuredOf(t, s.toolCall("shell_list", map[string]any{})); len(list["sessions"].([]any)) != 0 {
		t.Errorf("sessions after refused calls: %v", list["sessions"])
	}
	if list := structuredOf(t, s.toolCall("tasks_list", map[string]any{})); len(list["graphs"].([]any)) != 0 {
		t.Errorf("graphs after refused calls: %v", list["graphs"])
	}
	s.stdin.Close()
	s.waitExit()
	if n := len(s.stderr.String()); n > 64<<10 {
		t.Errorf("the log is %d bytes after refused calls: values must not be logged whole", n)
	}
	io.Discard.Write(nil)
}
