package e2e

import (
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
)

// A server started with signals ignored (nohup ignores SIGHUP; a background job of a
// script ignores SIGINT and SIGQUIT) does not hand that on to the programs of its
// sessions: as in a terminal, ^C, ^\ and a hangup reach them with their default actions.
func TestServe_SessionProgramsGetDefaultSignals(t *testing.T) {
	ws := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", `trap '' HUP INT QUIT; exec "$0" "$@"`, binPath, "stdio", "--workspace", ws, "--log-level", "info")
	s := startCmd(t, cmd)
	s.initialize()
	res := s.toolCall("shell_open", map[string]any{"command": "exec grep SigIgn /proc/self/status", "waitFor": `SigIgn:\s+\w+`, "timeoutMs": 20000})
	if res["isError"] == true {
		t.Fatalf("shell_open: %s", resultText(res))
	}
	m := regexp.MustCompile(`SigIgn:\s+([0-9a-f]+)`).FindStringSubmatch(structuredOf(t, res)["output"].(string))
	if m == nil {
		t.Fatalf("no SigIgn line in %q", structuredOf(t, res)["output"])
	}
	ignored, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT} {
		if ignored&(1<<(uint(sig)-1)) != 0 {
			t.Errorf("a session's program ignores %v (SigIgn %s): the server handed on what it was started with", sig, m[1])
		}
	}
}
