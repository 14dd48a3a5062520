package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/operator"
	"github.com/mcp-harness/mcp-harness/pty"
)

func TestRenderSessions(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	srv := operator.ServerInfo{Number: 2, Pid: 300}
	gone := "server 1 (pid 100) has gone"
	list := SessionList{
		Servers: []ServerEntry{{Number: 1, Pid: 100, Error: &gone}, {Number: 2, Pid: 300, Live: true, Server: &srv}},
		Sessions: []operator.Session{
			{Server: srv, SessionID: "s2-1", Command: "bash", Pid: 301, Cols: 80, Rows: 24, State: pty.StatePrompt, LastActivityAt: "2026-12-01T10:00:04.000Z"},
			{Server: srv, SessionID: "s2-2", Name: "deploy", Command: "make deploy", Pid: 302, Cols: 120, Rows: 40, State: pty.StateInput, Viewers: 2,
				Waiting: &operator.Waiting{Kind: pty.InputPassword, Prompt: "[sudo] password for you:"}, LastActivityAt: "2026-12-01T10:00:00.000Z"},
		},
	}
	var out, errs bytes.Buffer
	if err := renderSessions(&out, &errs, palette{}, list, now); err != nil {
		t.Fatal(err)
	}
	want := `SESSION  SERVER       PID  SIZE    STATE   VIEWERS  ACTIVE    COMMAND
s2-1     2 (pid 300)  301  80x24   prompt  0        1.0s ago  bash
s2-2     2 (pid 300)  302  120x40  input   2        5.0s ago  deploy: make deploy  (password at "[sudo] password for you:")
`
	if out.String() != want {
		t.Errorf("renderSessions() =\n%s\nwant\n%s", out.String(), want)
	}
	if !strings.Contains(errs.String(), "mcp-harness: server 1 (pid 100) has gone") {
		t.Errorf("stderr = %q, want the gone server mentioned", errs.String())
	}
}
