package cli

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// What a server says reaches the person's terminal only as text: a session's command,
// name, prompt and state come from the agent, and escape sequences in them (a title, an
// erased line, OSC 52 for the clipboard, a C1 CSI) are shown as escapes.
func TestRenderSessions_escapes(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	srv := operator.ServerInfo{Number: 2, Pid: 300}
	hostile := "refused: \x1b[2K\x1b]52;c;ZXZpbA==\x07 sorry"
	list := SessionList{
		Servers: []ServerEntry{{Number: 2, Pid: 300, Live: true, Server: &srv}, {Number: 3, Pid: 400, Live: true, Error: &hostile}},
		Sessions: []operator.Session{{Server: srv, SessionID: "s2-1", Name: "n\x1b[31mred", Command: "bash # \x1b]0;PWNED\x07\x1b[1A\x1b[2K\u009b2J\u202e",
			State: pty.SessionState("input\x1b[5m"), Waiting: &operator.Waiting{Kind: pty.InputPassword, Prompt: "Pass\x1b[8m:\x7f\xff"}, LastActivityAt: "2026-12-01T10:00:04.000Z"}},
	}
	var out, errs bytes.Buffer
	if err := renderSessions(&out, &errs, palette{}, list, now); err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{out.String(), errs.String()} {
		if strings.ContainsAny(got, "\x1b\x07\x7f\u009b\u202e") || !utf8.ValidString(got) {
			t.Errorf("printed %q: want no control character in it", got)
		}
	}
	for _, want := range []string{`n\x1b[31mred: bash # \x1b]0;PWNED\x07\x1b[1A\x1b[2K\u009b2J\u202e`, `input\x1b[5m`, `Pass\x1b[8m:\x7f\xff`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("sessions printed\n%s\nwant %s in it", out.String(), want)
		}
	}
	if want := `refused: \x1b[2K\x1b]52;c;ZXZpbA==\x07 sorry`; !strings.Contains(errs.String(), want) {
		t.Errorf("stderr %q, want %s in it", errs.String(), want)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, spaces and all": "plain text, spaces and all",
		"tab\there\r\n":              `tab\there\r\n`,
		"\x1b[1mbold\x1b[m":          `\x1b[1mbold\x1b[m`,
		"del\x7f c1\u0085\u009b":     `del\x7f c1\u0085\u009b`,
		"bad \xff\xfe utf-8":         `bad \xff\xfe utf-8`,
		"rtl \u202eevil\u202c ok é":  `rtl \u202eevil\u202c ok é`,
		"日本語 ok":                     "日本語 ok",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %s, want %s", in, got, want)
		}
	}
	if got := printableLines("one\x1b[2K\ntwo"); got != "one\\x1b[2K\ntwo" {
		t.Errorf("printableLines() = %q, want the line break kept and the escape shown", got)
	}
}

// The line answer shows before the person types says which process asks, and escapes
// what the agent controls in it: the command line, the executable and the prompt.
func TestAskingText(t *testing.T) {
	w := &operator.Waiting{Kind: pty.InputPassword, Prompt: "[sudo] password for you:\x1b[8m", Asker: &operator.Asker{
		Pid: 42, Exe: "/usr/bin/sudo", Args: []string{"sudo", "apt", "upgrade\x1b]0;x\x07"}, Setuid: true, Relay: true}}
	got := askingText("s1-1", w, "bash")
	want := `s1-1: sudo apt upgrade\x1b]0;x\x07 (pid 42, /usr/bin/sudo, setuid, a relay: the answer goes on to another program or machine) asks for a password (it will not be shown):` +
		"\r\n" + `[sudo] password for you:\x1b[8m `
	if got != want {
		t.Errorf("askingText() =\n%q\nwant\n%q", got, want)
	}
	// Keys a relay reads (ssh -t): the far side's echo is out of sight, so the line is
	// read hidden, and the person is told so; the same keys of a program that is no relay
	// are shown as typed.
	w = &operator.Waiting{Kind: pty.InputKeys, Prompt: "[sudo] password for you:", Asker: &operator.Asker{
		Pid: 43, Exe: "/usr/bin/ssh", Args: []string{"ssh", "-t", "build", "sudo", "make", "install"}, Relay: true}}
	if got := askingText("s1-2", w, "bash"); !hidden(w) || !strings.Contains(got, "asks for keys for the far side of a relay (type a line; it will not be shown") {
		t.Errorf("askingText() of ssh reading keys = %q, hidden %v; want it said that the line will not be shown, and hidden", got, hidden(w))
	}
	w.Asker = &operator.Asker{Pid: 44, Exe: "/usr/bin/python3", Args: []string{"python3", "tui.py"}}
	if got := askingText("s1-2", w, "bash"); hidden(w) || !strings.Contains(got, "asks for keys (type a line):") {
		t.Errorf("askingText() of a program reading keys = %q, hidden %v; want keys, shown", got, hidden(w))
	}
	if w := (&operator.Waiting{Kind: pty.InputLine, Asker: &operator.Asker{Relay: true}}); hidden(w) {
		t.Errorf("hidden(a line a relay reads) = true, want false: the terminal's own echo is in sight")
	}
	if !hidden(&operator.Waiting{Kind: pty.InputPassword}) {
		t.Errorf("hidden(a password, no asker said) = false, want true")
	}
	// A server that does not say who asks: the session's command stands in.
	w = &operator.Waiting{Kind: pty.InputPassword, Prompt: "[sudo] password for you:\x1b[8m"}
	if got := askingText("s1-1", w, "exec bash\x1b[2K"); !strings.HasPrefix(got, `s1-1: exec bash\x1b[2K asks for a password`) {
		t.Errorf("askingText() without an asker = %q", got)
	}
}

// A session is taken only from the socket of the server its id names, and a number
// claimed by two live sockets is believed of neither.
func TestVetAnswers(t *testing.T) {
	ep := func(n, pid int) operator.Endpoint {
		return operator.Endpoint{Number: n, Pid: pid, Name: "op-" + strconv.Itoa(n) + "-" + strconv.Itoa(pid) + "-1.sock"}
	}
	sess := func(id, state, at string) operator.Session {
		return operator.Session{SessionID: id, State: pty.SessionState(state), LastActivityAt: at}
	}
	servers := []operator.ServerSessions{
		{Endpoint: ep(1, 100), Sessions: []operator.Session{sess("s1-1", "prompt", "2026-01-01T00:00:01.000Z")}},
		// Server 2 says it has server 1's session, the newest of all: not believed.
		{Endpoint: ep(2, 200), Sessions: []operator.Session{sess("s1-1", "input", "2030-01-01T00:00:00.000Z"), sess("s2-1", "input", "2026-01-01T00:00:00.000Z")}},
		{Endpoint: ep(3, 300), Sessions: []operator.Session{sess("s3-1", "input", "2026-01-01T00:00:02.000Z")}},
		{Endpoint: ep(3, 301), Sessions: []operator.Session{sess("s3-1", "input", "2030-01-01T00:00:00.000Z")}},
		{Endpoint: ep(4, 400), Err: operator.ErrGone},
	}
	got := vetAnswers(servers)
	if got[0].Err != nil || len(got[0].Sessions) != 1 {
		t.Errorf("server 1: %+v, want believed", got[0])
	}
	if got[1].Err == nil || got[1].Sessions != nil || !strings.Contains(got[1].Err.Error(), `not one of its own, "s1-1"`) {
		t.Errorf("server 2, which lists server 1's session: %+v, want not believed", got[1])
	}
	for _, i := range []int{2, 3} {
		if !errors.Is(got[i].Err, errClaimed) || got[i].Sessions != nil {
			t.Errorf("server 3, claimed by two sockets (%d): %+v, want neither believed", i, got[i])
		}
	}
	if !errors.Is(got[4].Err, operator.ErrGone) {
		t.Errorf("server 4: %+v, want gone as it was", got[4])
	}
	if servers[1].Sessions == nil {
		t.Errorf("vetAnswers changed its argument")
	}
	tg, err := findSession(got, "s1-1")
	if err != nil || tg.endpoint.Pid != 100 {
		t.Errorf("findSession(s1-1) = %+v, %v; want server 1's (pid 100)", tg, err)
	}
	if _, err := findSession(got, "s3-1"); err == nil || !strings.Contains(err.Error(), "claimed by two sockets") {
		t.Errorf("findSession(s3-1) = %v, want a refusal: two sockets claim server 3", err)
	}
	if _, err := findSession(got, "s2-1"); err == nil || !strings.Contains(err.Error(), "not one of its own") {
		t.Errorf("findSession(s2-1) = %v, want a refusal: server 2 is not believed", err)
	}
	if _, err := findSession(got, "s4-1"); err == nil || !strings.Contains(err.Error(), "which has gone") {
		t.Errorf("findSession(s4-1) = %v, want server 4 gone", err)
	}
}

func TestServerOfID(t *testing.T) {
	for id, want := range map[string]int{"s4-2": 4, "s12-gq3tmnbvgaytcmzrgqzdknrrgm": 12, "s4-": 0, "s04-1": 0, "s0-1": 0, "x4-1": 0, "s1": 0, "s-1-2": 0} {
		n, ok := serverOfID(id)
		if n != want || ok != (want != 0) {
			t.Errorf("serverOfID(%q) = %d, %v; want %d", id, n, ok, want)
		}
	}
}
