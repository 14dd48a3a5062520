package tools

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bashArgs opens a bash with no rc files and a fixed prompt, so output is predictable.
func bashArgs(extra map[string]any) map[string]any {
	a := map[string]any{
		"command":   "exec bash --norc --noprofile -i",
		"env":       map[string]any{"PS1": "PROMPT> "},
		"waitFor":   "PROMPT> $",
		"timeoutMs": 20000,
	}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

func TestShell_RoundTrip(t *testing.T) {
	s := newTestServer(t)
	open := callTool(t, s, "shell_open", bashArgs(map[string]any{"name": "main"}))
	if open.IsError {
		t.Fatalf("shell_open: %s", text(open))
	}
	res := structured(t, open)
	if diff := cmp.Diff(requiredFields(t, s, "shell_open"), keys(res)); diff != "" {
		t.Errorf("shell_open structuredContent fields (-schema +got):\n%s", diff)
	}
	id := res["sessionId"].(string)
	if res["reason"] != "matched" || res["exited"] != false || res["exitCode"] != nil {
		t.Errorf("shell_open result = %v", res)
	}

	io := callTool(t, s, "shell_io", map[string]any{
		"sessionId": id, "input": "echo OUT_$((40+2))", "keys": []string{"Enter"},
		"waitFor": "(?m)^OUT_42", "timeoutMs": 20000,
	})
	if io.IsError {
		t.Fatalf("shell_io: %s", text(io))
	}
	r := structured(t, io)
	if r["reason"] != "matched" || !strings.Contains(r["output"].(string), "OUT_42") {
		t.Errorf("shell_io = %v", r)
	}
	if r["written"] != float64(len("echo OUT_$((40+2))")+1) {
		t.Errorf("written = %v, want %d", r["written"], len("echo OUT_$((40+2))")+1)
	}
	header := strings.SplitN(text(io), "\n", 2)[0]
	if !strings.Contains(header, id) || !strings.Contains(header, "matched") || !strings.Contains(header, "running") {
		t.Errorf("text header = %q, want session, reason and status", header)
	}
	if strings.Contains(text(io), "\x1b") {
		t.Errorf("cleaned text contains an escape byte: %q", text(io))
	}

	list := structured(t, callTool(t, s, "shell_list", map[string]any{}))
	sessions := list["sessions"].([]any)
	if len(sessions) != 1 {
		t.Fatalf("shell_list = %v, want one session", list)
	}
	first := sessions[0].(map[string]any)
	if first["sessionId"] != id || first["name"] != "main" || first["exitCode"] != nil {
		t.Errorf("shell_list session = %v", first)
	}

	closed := callTool(t, s, "shell_close", map[string]any{"sessionId": id})
	if closed.IsError {
		t.Fatalf("shell_close: %s", text(closed))
	}
	if c := structured(t, closed); c["sessionId"] != id || (c["exitCode"] == nil && c["signal"] == nil) {
		t.Errorf("shell_close = %v, want an exit status", c)
	}
	if again := callTool(t, s, "shell_io", map[string]any{"sessionId": id}); !strings.HasPrefix(text(again), "NOT_FOUND: ") {
		t.Errorf("shell_io after close = %q, want NOT_FOUND", text(again))
	}
}

func TestShell_ExitedSession(t *testing.T) {
	s := newTestServer(t)
	open := callTool(t, s, "shell_open", map[string]any{"command": "echo bye; exit 3", "timeoutMs": 20000})
	r := structured(t, open)
	if r["exited"] != true || r["exitCode"] != float64(3) || r["reason"] != "exited" || !strings.Contains(r["output"].(string), "bye") {
		t.Fatalf("shell_open of a program that exits = %v", r)
	}
	id := r["sessionId"].(string)
	res := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "input": "hello\n"})
	if !res.IsError || !strings.HasPrefix(text(res), "SESSION_EXITED: ") {
		t.Errorf("input to an exited session = %q, want SESSION_EXITED", text(res))
	}
}

func TestShell_TimeoutClampedToMaxWait(t *testing.T) {
	s := newTestServer(t, func(c *testConfig) { c.MaxWait = 200 * 1e6 }) // 200ms
	open := callTool(t, s, "shell_open", map[string]any{"command": "sleep 100", "timeoutMs": 600000})
	r := structured(t, open)
	if r["reason"] != "timeout" || open.IsError {
		t.Fatalf("shell_open = %v", r)
	}
	if !strings.Contains(text(open), "--max-wait") {
		t.Errorf("a clamped wait does not say how to go on: %q", strings.SplitN(text(open), "\n", 2)[0])
	}
}

// Bad input is refused with a stable code, and nothing is created: no session, no row, no
// file, no process.
func TestShell_BadInput(t *testing.T) {
	s := newTestServer(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(s.ws.Root, "escape")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(outside, "created")
	touch := "touch " + marker
	tests := []struct {
		tool string
		args map[string]any
		code string
		says string
	}{
		{"shell_open", map[string]any{"command": touch, "cwd": ".."}, "CWD_OUTSIDE_WORKSPACE", "outside the workspace"},
		{"shell_open", map[string]any{"command": touch, "cwd": "escape"}, "CWD_OUTSIDE_WORKSPACE", "resolves to"},
		{"shell_open", map[string]any{"command": touch, "cwd": "no/such/dir"}, "INVALID_ARGUMENT", "does not exist"},
		{"shell_open", map[string]any{"command": touch, "waitFor": "("}, "INVALID_ARGUMENT", "waitFor"},
		{"shell_open", map[string]any{"command": touch, "cols": 80}, "INVALID_ARGUMENT", "cols and rows together"},
		{"shell_open", map[string]any{"command": touch, "cols": 0, "rows": 10}, "INVALID_ARGUMENT", "1..1000"},
		{"shell_open", map[string]any{"command": touch, "rows": 10}, "INVALID_ARGUMENT", "give cols and rows together, each 1..1000, got 0x10"},
		{"shell_open", map[string]any{"command": touch, "timeoutMs": -1}, "INVALID_ARGUMENT", "timeoutMs must be 0 or more (milliseconds), got -1"},
		{"shell_open", map[string]any{"command": touch, "timeoutMs": 1.5}, "INVALID_ARGUMENT", "timeoutMs must be an integer, not the number 1.5"},
		{"shell_open", map[string]any{"command": touch, "timeoutMs": "5"}, "INVALID_ARGUMENT", `timeoutMs must be an integer, not the string "5"`},
		{"shell_open", map[string]any{"command": touch, "maxBytes": 0}, "INVALID_ARGUMENT", "maxBytes must be 1 or more (bytes), got 0"},
		{"shell_open", map[string]any{"command": touch, "maxBytes": -1}, "INVALID_ARGUMENT", "maxBytes must be 1 or more (bytes), got -1"},
		{"shell_open", map[string]any{"command": touch, "env": map[string]any{"A=B": "x"}}, "INVALID_ARGUMENT", "env name"},
		{"shell_open", map[string]any{"command": touch, "env": map[string]any{"A": "x\x00"}}, "INVALID_ARGUMENT", `env "A" contains a NUL byte`},
		{"shell_open", map[string]any{"command": touch + "\x00"}, "INVALID_ARGUMENT", "command contains a NUL byte"},
		{"shell_open", map[string]any{"command": touch, "name": strings.Repeat("n", 201)}, "INVALID_ARGUMENT", "name is 201 bytes long; give one of at most 200"},
		{"shell_open", map[string]any{"command": touch, "timeout": 5}, "INVALID_ARGUMENT",
			`shell_open has no argument "timeout" (did you mean timeoutMs?); its arguments are: cols, command, cwd, env, idleMs, integration, maxBytes, name, network, raw, rows, sandbox, screen, timeoutMs, waitFor`},
		{"shell_open", map[string]any{"command": 42}, "INVALID_ARGUMENT", "command must be a string"},
		{"shell_io", map[string]any{}, "INVALID_ARGUMENT", "sessionId is required"},
		{"shell_io", map[string]any{"sessionId": "s99"}, "NOT_FOUND", "shell_list"},
		{"shell_io", map[string]any{"sessionId": "s99", "keys": []string{"Enterr"}}, "INVALID_ARGUMENT", "valid keys"},
		{"shell_io", map[string]any{"sessionId": "s99", "since": -5}, "INVALID_ARGUMENT", "since must be 0 or more, got -5"},
		{"shell_io", map[string]any{"sessionId": "s99", "cols": 80}, "INVALID_ARGUMENT", "give cols and rows together"},
		{"shell_io", map[string]any{"sessionId": "s99", "timeoutMs": -1}, "INVALID_ARGUMENT", "timeoutMs must be 0 or more"},
		{"shell_io", map[string]any{"sessionId": "s99", "idleMs": -1}, "INVALID_ARGUMENT", "idleMs must be 0 or more"},
		{"shell_close", map[string]any{}, "INVALID_ARGUMENT", "sessionId is required"},
		{"shell_close", map[string]any{"sessionId": "s99"}, "NOT_FOUND", "s99"},
		{"shell_close", map[string]any{"sessionId": "s1", "signal": "SIGFOO"}, "INVALID_ARGUMENT", "SIGHUP"},
		{"shell_close", map[string]any{"sessionId": "s1", "graceMs": -1}, "INVALID_ARGUMENT", "graceMs must be 0 or more (milliseconds), got -1"},
		{"shell_list", map[string]any{"all": true}, "INVALID_ARGUMENT", `shell_list has no argument "all"; its arguments are: sessionId`},
	}
	for _, tt := range tests {
		res := callTool(t, s, tt.tool, tt.args)
		got := text(res)
		if !res.IsError || !strings.HasPrefix(got, tt.code+": ") || !strings.Contains(got, tt.says) {
			t.Errorf("%s(%v) = %q (isError %v), want %s mentioning %q", tt.tool, tt.args, got, res.IsError, tt.code, tt.says)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("a refused shell_open ran its command")
	}
	if n := len(s.shells.List()); n != 0 {
		t.Errorf("sessions after refused calls = %d, want 0", n)
	}
	rows, err := s.db.OpenSessions(t.Context(), s.runner.ID)
	if err != nil || len(rows) != 0 {
		t.Errorf("session rows after refused calls = %v, %v; want none", rows, err)
	}
}

func TestShell_LimitExceeded(t *testing.T) {
	s := newTestServer(t, func(c *testConfig) { c.MaxSessions = 2 })
	for i := 0; i < 2; i++ {
		if r := callTool(t, s, "shell_open", map[string]any{"command": "sleep 100", "timeoutMs": 0}); r.IsError {
			t.Fatalf("open %d: %s", i, text(r))
		}
	}
	res := callTool(t, s, "shell_open", map[string]any{"command": "sleep 100", "timeoutMs": 0})
	if got := text(res); !res.IsError || !strings.HasPrefix(got, "LIMIT_EXCEEDED: ") || !strings.Contains(got, "s1") {
		t.Errorf("third open = %q, want LIMIT_EXCEEDED naming s1", got)
	}
	if n := len(s.shells.List()); n != 2 {
		t.Errorf("sessions = %d, want 2", n)
	}
}

// The store keeps a row per session (pid, pgid, start time) for a later runner to clean up
// after a crash; closing the session closes the row.
func TestShell_SessionRows(t *testing.T) {
	s := newTestServer(t)
	r := structured(t, callTool(t, s, "shell_open", map[string]any{"command": "sleep 100", "timeoutMs": 0}))
	if r["reason"] != "timeout" || r["exited"] != false {
		t.Errorf("shell_open(timeoutMs 0) = %v, want what is there now: reason timeout, running", r)
	}
	rows, err := s.db.OpenSessions(t.Context(), s.runner.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != r["sessionId"] || float64(rows[0].Pid) != r["pid"] || rows[0].Pgid != rows[0].Pid || !rows[0].Alive() {
		t.Fatalf("session rows = %+v, want one live row for %v", rows, r)
	}
	callTool(t, s, "shell_close", map[string]any{"sessionId": r["sessionId"], "graceMs": 0})
	if rows, _ := s.db.OpenSessions(t.Context(), s.runner.ID); len(rows) != 0 {
		t.Errorf("rows after close = %+v, want none open", rows)
	}
}

// shell_close takes a signal however pty.ParseSignal reads it, and reports how the program
// ended.
func TestShell_CloseSignal(t *testing.T) {
	s := newTestServer(t)
	r := structured(t, callTool(t, s, "shell_open", map[string]any{"command": "sleep 100", "timeoutMs": 0}))
	closed := callTool(t, s, "shell_close", map[string]any{"sessionId": r["sessionId"], "signal": "term"})
	if c := structured(t, closed); closed.IsError || c["signal"] != "SIGTERM" || c["exitCode"] != nil {
		t.Errorf("shell_close(signal term) = %v, want killed by SIGTERM", c)
	}
	if header := strings.SplitN(text(closed), "\n", 2)[0]; !strings.Contains(header, "killed by SIGTERM") {
		t.Errorf("shell_close header = %q, want it to say killed by SIGTERM", header)
	}
}

// TestShell_Screen asks shell_open and shell_io for the screen: in the structured result
// and after the output in the text, which is what a model reads.
func TestShell_Screen(t *testing.T) {
	s := newTestServer(t)
	open := callTool(t, s, "shell_open", map[string]any{
		"command": `printf '\033]2;menu\007\033[?1049h\033[2;3HPick one:\r\n  > first'; exec cat`,
		"cols":    30, "rows": 5, "waitFor": "first", "screen": true, "timeoutMs": 20000,
	})
	if open.IsError {
		t.Fatalf("shell_open: %s", text(open))
	}
	res := structured(t, open)
	want := map[string]any{"cols": 30.0, "rows": 5.0, "lines": []any{"", "  Pick one:", "  > first", "", ""},
		"cursor": map[string]any{"row": 2.0, "col": 9.0}, "altScreen": true, "title": "menu", "styles": nil}
	if diff := cmp.Diff(want, res["screen"]); diff != "" {
		t.Errorf("shell_open screen (-want +got):\n%s", diff)
	}
	if !strings.Contains(text(open), "--- screen 30x5, cursor row 2 col 9, alternate screen, title \"menu\" ---\n\n  Pick one:\n  > first\n") {
		t.Errorf("shell_open text has no screen block:\n%s", text(open))
	}
	id := res["sessionId"].(string)

	// Without screen, it is null.
	io := structured(t, callTool(t, s, "shell_io", map[string]any{"sessionId": id, "timeoutMs": 0}))
	if v, ok := io["screen"]; !ok || v != nil {
		t.Errorf("shell_io without screen: screen = %v (present %v), want null", v, ok)
	}

	// A terminal too large to keep a screen for is refused before anything is typed.
	big := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "input": "x", "cols": 1000, "rows": 1000, "screen": true})
	if !strings.HasPrefix(text(big), "INVALID_ARGUMENT: screen is kept for terminals of at most") {
		t.Errorf("shell_io screen at 1000x1000 = %q, want INVALID_ARGUMENT", text(big))
	}
	io = structured(t, callTool(t, s, "shell_io", map[string]any{"sessionId": id, "screen": true, "timeoutMs": 0}))
	sc := io["screen"].(map[string]any)
	if sc["cols"] != 30.0 || io["output"] != "" {
		t.Errorf("after the refusal: screen %v, output %q; want 30 columns and nothing typed", sc, io["output"])
	}
}

// run, the command it reports, shell_list's history and a re-read of one command's
// range, the refusals (BUSY, NO_INTEGRATION): every result checked against the strict
// output schema by callTool.
func TestShell_RunAndHistory(t *testing.T) {
	s := newTestServer(t)
	open := structured(t, callTool(t, s, "shell_open", map[string]any{"command": "bash", "env": map[string]any{"HOME": t.TempDir()}, "timeoutMs": 20000}))
	if open["reason"] != "prompt" || open["integration"] != true {
		t.Fatalf("shell_open(bash) = %v, want reason prompt, integration true", open)
	}
	id := open["sessionId"].(string)
	r := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "run": "echo OUT_$((40+2)); false", "timeoutMs": 20000})
	got := structured(t, r)
	cmd, _ := got["command"].(map[string]any)
	if got["reason"] != "prompt" || got["output"] != "OUT_42\n" || cmd["exitCode"] != float64(1) || cmd["done"] != true || cmd["id"] != float64(1) {
		t.Errorf("run = %v, want prompt, OUT_42 alone, command 1 done exit 1", got)
	}
	if header := strings.SplitN(text(r), "\n", 2)[0]; !strings.Contains(header, `command 1 "echo OUT_$((40+2)); false" exited 1`) {
		t.Errorf("header %q, want the command and its exit code", header)
	}
	if got["integration"] != true {
		t.Errorf("run = %v, want integration true", got)
	}

	long := structured(t, callTool(t, s, "shell_io", map[string]any{"sessionId": id, "run": "sleep 30", "timeoutMs": 100}))
	if c, _ := long["command"].(map[string]any); long["reason"] != "timeout" || c["done"] != false {
		t.Errorf("run sleep 30 (100ms) = %v, want timeout, not done", long)
	}
	busy := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "run": "echo x"})
	if !busy.IsError || !strings.HasPrefix(text(busy), `BUSY: session "s1" is still running command 2 "sleep 30"`) {
		t.Errorf("run while a command runs = %q, want BUSY naming the command", text(busy))
	}
	callTool(t, s, "shell_io", map[string]any{"sessionId": id, "keys": []string{"C-c"}, "timeoutMs": 20000})

	list := structured(t, callTool(t, s, "shell_list", map[string]any{"sessionId": id}))
	sess := list["sessions"].([]any)[0].(map[string]any)
	cmds := sess["commands"].([]any)
	if len(cmds) != 2 {
		t.Fatalf("shell_list commands = %v, want 2", cmds)
	}
	first := cmds[0].(map[string]any)
	again := structured(t, callTool(t, s, "shell_io", map[string]any{"sessionId": id, "since": first["since"], "end": first["cursor"]}))
	if again["output"] != "OUT_42\n" {
		t.Errorf("re-read of command 1's range = %q, want OUT_42", again["output"])
	}
	if all := structured(t, callTool(t, s, "shell_list", map[string]any{})); all["sessions"].([]any)[0].(map[string]any)["commands"] != nil {
		t.Errorf("shell_list without sessionId lists commands: %v", all)
	}
	if nf := callTool(t, s, "shell_list", map[string]any{"sessionId": "s9"}); !nf.IsError || !strings.HasPrefix(text(nf), "NOT_FOUND: ") {
		t.Errorf("shell_list of an unknown session = %q, want NOT_FOUND", text(nf))
	}

	if sess["integration"] != true {
		t.Errorf("shell_list entry = %v, want integration true", sess)
	}

	plain := structured(t, callTool(t, s, "shell_open", bashArgs(map[string]any{"integration": false})))
	if plain["integration"] != false {
		t.Errorf("shell_open(integration false) = %v", plain)
	}
	no := callTool(t, s, "shell_io", map[string]any{"sessionId": plain["sessionId"], "run": "echo x"})
	if !no.IsError || !strings.HasPrefix(text(no), "NO_INTEGRATION: ") {
		t.Errorf("run without integration = %q, want NO_INTEGRATION", text(no))
	}
}

// shell_open of a dev server returns once the server listens, as shell_io does.
func TestShell_OpenWaitPort(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed; the test starts a real HTTP server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := newTestServer(t)
	open := callTool(t, s, "shell_open", map[string]any{
		"command": fmt.Sprintf("%s -m http.server --bind 127.0.0.1 %d", py, port), "waitPort": port, "timeoutMs": 20000,
	})
	if open.IsError {
		t.Fatalf("shell_open: %s", text(open))
	}
	r := structured(t, open)
	if r["reason"] != "port" || r["exited"] != false {
		t.Fatalf("shell_open with waitPort = reason %v exited %v, want port, false; output %q", r["reason"], r["exited"], r["output"])
	}
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("the server does not answer once shell_open returned: %v", err)
	}
	conn.Close()

	bad := callTool(t, s, "shell_open", map[string]any{"command": "true", "waitPort": 70000})
	if !bad.IsError || !strings.HasPrefix(text(bad), "INVALID_ARGUMENT: ") {
		t.Errorf("shell_open waitPort 70000 = %q, want INVALID_ARGUMENT", text(bad))
	}
}

// A program that waits without having printed anything has no prompt (null), and the
// text says so; one that asks has its question.
func TestShell_waitingPrompt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("input-wanted needs the kernel's view of the terminal")
	}
	s := newTestServer(t)
	for _, tt := range []struct {
		command string
		prompt  any
	}{
		{"cat", nil},
		{`printf 'Name? '; exec cat`, "Name?"},
	} {
		open := callTool(t, s, "shell_open", map[string]any{"command": tt.command, "timeoutMs": 20000})
		r := structured(t, open)
		w, _ := r["waitingForInput"].(map[string]any)
		if r["reason"] != "input" || w == nil || w["prompt"] != tt.prompt {
			t.Errorf("shell_open %q = reason %v, waitingForInput %v; want input with prompt %v", tt.command, r["reason"], r["waitingForInput"], tt.prompt)
		}
		if tt.prompt == nil && !strings.Contains(text(open), "with no prompt") {
			t.Errorf("shell_open %q text = %q, want it to say there is no prompt", tt.command, strings.SplitN(text(open), "\n", 2)[0])
		}
	}
}

// A shell that shows a prompt without its marks (here it exec'd another shell) says so
// within that prompt: shell_io's result and shell_list's entry carry integration false,
// and a run is refused with NO_INTEGRATION and the reason, never BUSY.
func TestShell_integrationLost(t *testing.T) {
	s := newTestServer(t)
	open := structured(t, callTool(t, s, "shell_open", map[string]any{"command": "bash", "env": map[string]any{"HOME": t.TempDir()}, "timeoutMs": 20000}))
	if open["integration"] != true {
		t.Fatalf("shell_open(bash) = %v, want integration true", open)
	}
	id := open["sessionId"].(string)
	r := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "run": "exec bash --norc --noprofile", "timeoutMs": 20000})
	if got := structured(t, r); got["integration"] != false || got["reason"] != "input" || !strings.Contains(text(r), "integration lost") {
		t.Errorf("run exec bash = %v, text %q; want integration false, reason input, the text saying so", got, text(r))
	}
	list := structured(t, callTool(t, s, "shell_list", map[string]any{}))
	if sess := list["sessions"].([]any)[0].(map[string]any); sess["integration"] != false {
		t.Errorf("shell_list entry = %v, want integration false", sess)
	}
	no := callTool(t, s, "shell_io", map[string]any{"sessionId": id, "run": "echo x", "timeoutMs": 20000})
	if !no.IsError || !strings.HasPrefix(text(no), "NO_INTEGRATION: ") || !strings.Contains(text(no), "replaced") {
		t.Errorf("run after exec = %q, want NO_INTEGRATION saying the shell was replaced", text(no))
	}
}
