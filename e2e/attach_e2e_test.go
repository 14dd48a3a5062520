package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/workspace"
)

// `mcp-harness sessions`, `attach` and `answer` driven as a person drives them: tmux is
// the person's terminal (send-keys types, capture-pane reads what it shows), the built
// binary runs in a shell in it, and a live server (or two) holds the sessions, driven by
// the test as the agent would drive it. Every wait is for what the screen or a result
// shows, with a deadline.

// openBash opens an integrated bash in the server's session and returns its id.
func openBash(t *testing.T, s *server) string {
	t.Helper()
	res := s.toolCall("shell_open", bashOpen)
	if res["isError"] == true {
		t.Fatalf("shell_open: %s", resultText(res))
	}
	return structuredOf(t, res)["sessionId"].(string)
}

// agentIO types input as the agent and waits for pattern in the output.
func agentIO(t *testing.T, s *server, id, input, pattern string) map[string]any {
	t.Helper()
	args := map[string]any{"sessionId": id, "waitFor": pattern, "timeoutMs": 20000}
	if input != "" {
		args["input"] = input
	}
	res := s.toolCall("shell_io", args)
	if res["isError"] == true {
		t.Fatalf("shell_io %q: %s", input, resultText(res))
	}
	sc := structuredOf(t, res)
	if sc["reason"] != "matched" {
		t.Fatalf("shell_io %q: reason %v, want matched /%s/; output %q", input, sc["reason"], pattern, sc["output"])
	}
	return sc
}

// screenHas is a waitScreen condition: every string is on the screen.
func screenHas(want ...string) func([]string) bool {
	return func(lines []string) bool {
		all := strings.Join(lines, "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				return false
			}
		}
		return true
	}
}

// backAtShell is a waitScreen condition: the person's shell shows its prompt again.
func backAtShell(lines []string) bool { return lastLine(lines) == termPrompt }

// exitStatusOf types `echo rc=$?` at the person's shell and returns the status it shows.
func (p *personTerm) exitStatusOf() string {
	p.t.Helper()
	p.typeLine("echo rc=$?")
	lines := p.waitScreen("the exit status", func(lines []string) bool {
		return regexp.MustCompile(`(?m)^rc=\d+$`).MatchString(strings.Join(lines, "\n")) && backAtShell(lines)
	})
	m := regexp.MustCompile(`(?m)^rc=(\d+)$`).FindAllStringSubmatch(strings.Join(lines, "\n"), -1)
	return m[len(m)-1][1]
}

// sttyState is the person's terminal's modes as stty -g prints them.
func (p *personTerm) sttyState() string {
	p.t.Helper()
	out := filepath.Join(p.t.TempDir(), "stty")
	p.typeLine("stty -g > " + out)
	var b []byte
	waitFor(p.t, "stty -g", func() bool {
		b, _ = os.ReadFile(out)
		return strings.HasSuffix(string(b), "\n")
	})
	return strings.TrimSpace(string(b))
}

// checkRestored fails unless the person's terminal is back as it was: the main screen,
// the cursor shown, the same modes as before.
func (p *personTerm) checkRestored(modesBefore string) {
	p.t.Helper()
	if m := p.modes(); m != "alternate_on=0 cursor_flag=1" {
		p.t.Errorf("terminal after attach: %s, want alternate_on=0 cursor_flag=1", m)
	}
	if got := p.sttyState(); got != modesBefore {
		p.t.Errorf("stty -g after attach = %s, want %s as before", got, modesBefore)
	}
}

func attachCmd(ws string, args ...string) string {
	return binPath + " attach --workspace " + ws + " " + strings.Join(args, " ")
}

// A person attaches: the screen is there within a second and follows the agent's
// commands; their keys reach nothing until C-] w; then they do, and the agent's next
// result says a person typed; C-] d detaches and gives the terminal back as it was.
func TestAttach_E2E(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)
	if id != "s1-1" {
		t.Errorf("the first session of the first server is %q, want s1-1", id)
	}
	agentIO(t, s, id, "echo hello_$((6*7))\n", `(?m)^hello_42`)

	term := startPersonTerm(t, 100, 30)
	before := term.sttyState()
	start := time.Now()
	term.typeLine(attachCmd(ws))
	lines := term.waitScreen("the session's screen", screenHas("hello_42", id+" │ read-only"))
	if took := time.Since(start); took > time.Second {
		t.Errorf("the screen showed %v after the command was typed, want within a second", took)
	}
	t.Logf("attach, read-only (capture-pane):\n%s", strings.Join(lines, "\n"))
	if m := term.modes(); !strings.Contains(m, "alternate_on=1") {
		t.Errorf("attached: %s, want the alternate screen", m)
	}

	// Follows the agent's commands.
	agentIO(t, s, id, "echo follow_$((1+1))\n", `(?m)^follow_2`)
	term.waitScreen("the agent's new output", screenHas("follow_2"))

	// Read-only: the person's keys reach nothing.
	term.typeLine("echo ro_typed")
	term.waitScreen("the read-only note", screenHas("keys not sent: read-only"))
	r := agentIO(t, s, id, "echo after_ro\n", `(?m)^after_ro`)
	if strings.Contains(r["output"].(string), "ro_typed") || r["personTyped"] != false || r["viewers"] != 1.0 {
		t.Errorf("after read-only keys the agent reads %q, personTyped %v, viewers %v; want none of them, false, 1", r["output"], r["personTyped"], r["viewers"])
	}

	// C-] w: typing.
	term.keys("C-]", "w")
	term.waitScreen("typing on", screenHas(id+" │ TYPING"))
	term.typeLine("echo rw_$((3*3))")
	lines = term.waitScreen("the person's command's output", screenHas("\nrw_9"))
	t.Logf("attach, typing (capture-pane):\n%s", strings.Join(lines, "\n"))
	res := s.toolCall("shell_io", map[string]any{"sessionId": id, "timeoutMs": 2000})
	r = structuredOf(t, res)
	if !strings.Contains(r["output"].(string), "rw_9") || r["personTyped"] != true {
		t.Errorf("the agent's next result: output %q personTyped %v; want rw_9, true", r["output"], r["personTyped"])
	}
	if !strings.Contains(resultText(res), "a person typed into it since your last call") {
		t.Errorf("the agent's next result's text does not say a person typed: %q", strings.SplitN(resultText(res), "\n", 2)[0])
	}

	// C-] d: detached, the terminal as it was.
	term.keys("C-]", "d")
	lines = term.waitScreen("the person's shell again", func(lines []string) bool {
		return backAtShell(lines) && screenHas("detached from "+id)(lines)
	})
	t.Logf("after detach (capture-pane):\n%s", strings.Join(lines, "\n"))
	if rc := term.exitStatusOf(); rc != "0" {
		t.Errorf("attach exited %s after a detach, want 0", rc)
	}
	term.checkRestored(before)
	if r := structuredOf(t, s.toolCall("shell_list", map[string]any{})); r["sessions"].([]any)[0].(map[string]any)["viewers"] != 0.0 {
		t.Errorf("shell_list after the detach: %v, want 0 viewers", r["sessions"])
	}
}

// Two servers on one workspace: their session ids differ, sessions lists both, and
// attach reaches a session of either.
func TestAttach_E2E_twoServers(t *testing.T) {
	ws := t.TempDir()
	a := startServer(t, ws)
	a.initialize()
	ida := openBash(t, a)
	b := startServer(t, ws)
	b.initialize()
	idb := openBash(t, b)
	if ida != "s1-1" || idb != "s2-1" {
		t.Fatalf("sessions of two servers = %q, %q, want s1-1, s2-1", ida, idb)
	}
	agentIO(t, b, idb, "echo on_server_$((1+1))\n", `(?m)^on_server_2`)

	out := runBinary(t, nil, "sessions", "--workspace", ws)
	if out.code != 0 || !strings.Contains(out.stdout, "s1-1") || !strings.Contains(out.stdout, "s2-1") {
		t.Fatalf("sessions: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	t.Logf("mcp-harness sessions:\n%s", out.stdout)
	out = runBinary(t, nil, "sessions", "--workspace", ws, "--json")
	var list struct {
		Servers []struct {
			Number int  `json:"number"`
			Live   bool `json:"live"`
		} `json:"servers"`
		Sessions []struct {
			SessionID string `json:"sessionId"`
			State     string `json:"state"`
			Server    struct {
				Number int `json:"number"`
				Pid    int `json:"pid"`
			} `json:"server"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || len(list.Servers) != 2 || len(list.Sessions) != 2 {
		t.Fatalf("sessions --json = %v:\n%s", err, out.stdout)
	}
	for _, s := range list.Sessions {
		if s.State != "prompt" || s.Server.Pid == 0 || "s"+strconv.Itoa(s.Server.Number)+"-1" != s.SessionID {
			t.Errorf("sessions --json: %+v, want at its prompt, on the server its id names", s)
		}
	}

	term := startPersonTerm(t, 100, 30)
	term.typeLine(attachCmd(ws, idb))
	term.waitScreen("the second server's session", screenHas("on_server_2", idb+" │ read-only"))
	term.keys("C-]", "d")
	term.waitScreen("the person's shell again", backAtShell)
}

// The server killed while a person watches: the view says the server has gone, exits 1
// and gives the terminal back; attaching again to its session says the server has gone;
// an unknown session names the live ones.
func TestAttach_E2E_serverKilled(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)
	other := startServer(t, ws)
	other.initialize()
	live := openBash(t, other)
	term := startPersonTerm(t, 100, 30)
	before := term.sttyState()
	term.typeLine(attachCmd(ws, id))
	term.waitScreen("the session's screen", screenHas(id+" │ read-only"))
	pid := s.cmd.Process.Pid
	s.signal(syscall.SIGKILL)
	s.waitExit()
	want := fmt.Sprintf("the server (server 1, pid %d) has gone", pid)
	lines := term.waitScreen("the server gone", func(lines []string) bool { return backAtShell(lines) && screenHas(want)(lines) })
	t.Logf("server killed while attached (capture-pane):\n%s", strings.Join(lines, "\n"))
	if rc := term.exitStatusOf(); rc != "1" {
		t.Errorf("attach exited %s when the server died, want 1", rc)
	}
	term.checkRestored(before)

	out := runBinary(t, nil, "attach", id, "--workspace", ws)
	if wantErr := fmt.Sprintf("session %s was on server 1 (pid %d), which has gone; live sessions: %s (prompt)", id, pid, live); out.code != 1 || !strings.Contains(out.stderr, wantErr) {
		t.Errorf("attach to a dead server's session: exit %d, stderr %q; want 1 and %q", out.code, out.stderr, wantErr)
	}
	out = runBinary(t, nil, "attach", "s9-9", "--workspace", ws)
	if wantErr := `no live session "s9-9" on this workspace; live sessions: ` + live + " (prompt)"; out.code != 1 || !strings.Contains(out.stderr, wantErr) {
		t.Errorf("attach s9-9: exit %d, stderr %q; want 1 and %q", out.code, out.stderr, wantErr)
	}
	// The next server to start removes the dead one's socket.
	third := startServer(t, ws)
	third.initialize()
	openBash(t, third)
	entries, _ := os.ReadDir(filepath.Join(ws, workspace.StateDirName))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("op-1-%d-", pid)) {
			t.Errorf("the dead server's socket %s is still there after another server started", e.Name())
		}
	}
}

// SIGTERM (and the server's shutdown) end a view with the terminal given back.
func TestAttach_E2E_signalAndShutdown(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)
	term := startPersonTerm(t, 100, 30)
	before := term.sttyState()
	term.typeLine(attachCmd(ws, "--write"))
	term.waitScreen("the session's screen", screenHas(id+" │ TYPING"))
	// --write: the keys go in from the start.
	term.typeLine("echo w_$((4+4))")
	term.waitScreen("the typed command's output", screenHas("\nw_8"))
	if r := structuredOf(t, s.toolCall("shell_io", map[string]any{"sessionId": id, "timeoutMs": 1000})); r["personTyped"] != true {
		t.Errorf("the agent's result after --write keys: personTyped %v, want true", r["personTyped"])
	}
	if err := syscall.Kill(term.foreground(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	term.waitScreen("the view ended by SIGTERM", func(lines []string) bool {
		return backAtShell(lines) && screenHas("detached from "+id+": terminated")(lines)
	})
	if rc := term.exitStatusOf(); rc != "1" {
		t.Errorf("attach exited %s on SIGTERM, want 1", rc)
	}
	term.checkRestored(before)

	// The client closes the server's input: the server shuts down, the view says so.
	term.typeLine(attachCmd(ws))
	term.waitScreen("the session's screen", screenHas(id+" │ read-only"))
	s.stdin.Close()
	s.waitExit()
	term.waitScreen("the view ended by the shutdown", func(lines []string) bool {
		return backAtShell(lines) && screenHas("has gone: it is shutting down")(lines)
	})
	term.checkRestored(before)
}

// Five people watch one session at once: each sees the agent's output, the agent's
// results count them.
func TestAttach_E2E_fiveViewers(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)
	var terms []*personTerm
	for range 5 {
		term := startPersonTerm(t, 80, 24)
		term.typeLine(attachCmd(ws, id))
		terms = append(terms, term)
	}
	for _, term := range terms {
		term.waitScreen("the session's screen", screenHas(id+" │ read-only"))
	}
	r := agentIO(t, s, id, "echo five_$((2+3))\n", `(?m)^five_5`)
	if r["viewers"] != 5.0 {
		t.Errorf("shell_io with five people watching: viewers %v, want 5", r["viewers"])
	}
	for _, term := range terms {
		term.waitScreen("the output on every viewer", screenHas("\nfive_5", "5 watching"))
	}
	for _, term := range terms {
		term.keys("C-]", "d")
		term.waitScreen("the person's shell again", backAtShell)
	}
}

// A task under the sandbox tries the operator socket: the server refuses it (the task
// has no_new_privs), so a confined command cannot type into a session.
func TestOperator_E2E_confinedRefused(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)
	g := submit(t, s, map[string]any{"tasks": []any{
		map[string]any{"id": "probe", "command": binPath + " sessions --workspace " + ws + "; echo rc=$?; " +
			binPath + " answer " + id + " --workspace " + ws + "; echo rc=$?"},
	}})
	s.waitGraphTask(g, "probe")
	st := structuredOf(t, s.toolCall("tasks_status", map[string]any{"graphId": g, "taskIds": []string{"probe"}}))
	text := taskLog(st, "probe")
	if strings.Count(text, "runs with no_new_privs") != 2 || strings.Count(text, "rc=1") != 2 {
		t.Errorf("a confined task's sessions and answer: log %q, want two refusals for no_new_privs and exit 1 twice", text)
	}
	if !strings.Contains(s.stderr.String(), "operator: refused a connection") {
		t.Errorf("the server's log does not say it refused a connection:\n%s", s.stderr)
	}
}

// taskLog is the log tail of task id in a tasks_status result.
func taskLog(st map[string]any, id string) string {
	for _, tk := range st["tasks"].([]any) {
		m := tk.(map[string]any)
		if m["id"] == id {
			if l, ok := m["log"].(map[string]any); ok {
				s, _ := l["text"].(string)
				return s
			}
		}
	}
	return ""
}
