package server

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcp-harness/mcp-harness/internal/reaper"
	"github.com/mcp-harness/mcp-harness/internal/tooltest"
)

// The server is a child subreaper while it runs: a dev server a session started with
// setsid, whose parent exited at once, is seen by waitPort and ended by shell_close.
func TestServer_SetsidServerIsTheSessions(t *testing.T) {
	for _, p := range []string{"python3", "setsid"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	s := newTestServer(t)
	if !reaper.Active() {
		t.Fatal("a running server is no child subreaper")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	open := callTool(t, s, "shell_open", map[string]any{
		"command": "exec bash --norc --noprofile -i", "env": map[string]any{"PS1": "PROMPT> ", "HOME": t.TempDir()},
		"waitFor": "PROMPT> $", "timeoutMs": 20000,
	})
	if open.IsError {
		t.Fatalf("shell_open: %s", text(open))
	}
	id := tooltest.Structured(t, open)["sessionId"].(string)
	line := fmt.Sprintf("setsid sh -c 'echo ESC_PID=$$; exec python3 -m http.server --bind 127.0.0.1 %d >/dev/null 2>&1' &\n", port)
	io := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "input": line, "waitPort": port, "timeoutMs": 20000})
	if r := tooltest.Structured(t, io); io.IsError || r["reason"] != "port" {
		t.Fatalf("waitPort %d on a setsid'd server = %s", port, text(io))
	}
	all := tooltest.Structured(t, callTool(t, s, "shell_io", map[string]any{"sessionId": id, "since": 0, "timeoutMs": 0}))
	m := regexp.MustCompile(`ESC_PID=(\d+)`).FindStringSubmatch(all["output"].(string))
	if m == nil {
		t.Fatalf("no ESC_PID in %q", all["output"])
	}
	pid, _ := strconv.Atoi(m[1])
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) }) // should it survive
	if sid, err := unix.Getsid(pid); err != nil || sid != pid {
		t.Fatalf("the server %d is in session %d (%v), want one of its own", pid, sid, err)
	}
	if c := callTool(t, s, "shell_close", map[string]any{"sessionId": id}); c.IsError {
		t.Fatalf("shell_close: %s", text(c))
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		t.Errorf("after shell_close the setsid'd server is still there: %s", stat)
	}
}
