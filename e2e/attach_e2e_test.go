package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	creackpty "github.com/creack/pty"

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

// exitStatusOf types `echo rc<n>=$?` at the person's shell and returns the status it
// shows. Each asks under a name of its own: an earlier one's line still on the screen,
// read before the shell has echoed this one, is not taken for its answer. The line may
// follow a prompt: typed while the command before still ran, the terminal echoed it
// ahead of the prompt.
func (p *personTerm) exitStatusOf() string {
	p.t.Helper()
	tag := fmt.Sprintf("rc%d", statusAsked.Add(1))
	p.typeLine("echo " + tag + "=$?")
	status := regexp.MustCompile(`(?m)\b` + tag + `=(\d+)$`)
	lines := p.waitScreen("the exit status", func(lines []string) bool {
		return status.MatchString(strings.Join(lines, "\n")) && backAtShell(lines)
	})
	return status.FindStringSubmatch(strings.Join(lines, "\n"))[1]
}

// statusAsked numbers the exit statuses asked for (exitStatusOf).
var statusAsked atomic.Int64

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

// A person attaches: the screen is there and follows the agent's commands; their keys
// reach nothing until C-] w; then they do (those typed in the same read as C-] w too),
// and the agent's next result says a person typed; C-] d detaches and gives the terminal
// back as it was. How soon the screen shows is the benchmark's (attach_bench_test.go).
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
	term.typeLine(attachCmd(ws))
	lines := term.waitScreen("the session's screen", screenHas("hello_42", id+" │ read-only"))
	t.Logf("attach, read-only (capture-pane):\n%s", strings.Join(lines, "\n"))
	if m := term.modes(); !strings.Contains(m, "alternate_on=1") {
		t.Errorf("attached: %s, want the alternate screen", m)
	}

	// Follows the agent's commands.
	agentIO(t, s, id, "echo follow_$((1+1))\n", `(?m)^follow_2`)
	term.waitScreen("the agent's new output", screenHas("follow_2"))
	// A row as wide as the view (the terminal's 100 columns) shows to its last column.
	edge := strings.Repeat("w", 96) + "EDGE"
	agentIO(t, s, id, "echo $(printf 'w%.0s' {1..96})EDGE\n", `(?m)^w+EDGE`)
	term.waitScreen("a row as wide as the view, whole", screenHas("\n"+edge+"\n"))

	// Read-only: the person's keys reach nothing.
	term.typeLine("echo ro_typed")
	term.waitScreen("the read-only note", screenHas("keys not sent: read-only"))
	r := agentIO(t, s, id, "echo after_ro\n", `(?m)^after_ro`)
	if strings.Contains(r["output"].(string), "ro_typed") || r["personTyped"] != false || r["viewers"] != 1.0 {
		t.Errorf("after read-only keys the agent reads %q, personTyped %v, viewers %v; want none of them, false, 1", r["output"], r["personTyped"], r["viewers"])
	}

	// C-] w and a command in one write to the terminal, so in one read of it: typing
	// turns on first, then the command goes in.
	term.keys("C-]", "w", "echo rw_$((3*3))", "Enter")
	lines = term.waitScreen("the person's command's output", screenHas("\nrw_9", id+" │ TYPING"))
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

// C-] d leaves a view at once even when its server does not answer (stopped here, as a
// hung one would be): the person is not kept waiting for an End that does not come.
func TestAttach_E2E_detachHungServer(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)
	term := startPersonTerm(t, 100, 30)
	before := term.sttyState()
	term.typeLine(attachCmd(ws, id))
	term.waitScreen("the session's screen", screenHas(id+" │ read-only"))
	s.signal(syscall.SIGSTOP)
	t.Cleanup(func() { s.signal(syscall.SIGCONT) })
	waitFor(t, "the server to stop", func() bool { return stopped(s.cmd.Process.Pid) })
	term.keys("C-]", "d")
	lines := term.waitScreen("the person's shell again", func(lines []string) bool {
		return backAtShell(lines) && screenHas("detached from "+id+"; the server (server 1", "did not confirm it")(lines)
	})
	t.Logf("detached from a stopped server (capture-pane):\n%s", strings.Join(lines, "\n"))
	if rc := term.exitStatusOf(); rc != "0" {
		t.Errorf("attach exited %s after a detach the server did not confirm, want 0", rc)
	}
	term.checkRestored(before)
	s.signal(syscall.SIGCONT)
}

// A terminal that hangs up ends the view though no SIGHUP reaches attach (it goes to
// the session's leader only, and this one ignores it): the key reader's end is enough.
func TestAttach_E2E_terminalHangsUp(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)
	rcFile := filepath.Join(t.TempDir(), "rc")
	// The leader of the terminal's session ignores SIGHUP and outlives the hang-up;
	// attach is its child, not the leader.
	cmd := exec.Command("sh", "-c", `trap "" HUP; "$0" attach "$1" --workspace "$2" 2>"$3.err"; echo $? > "$3"`, binPath, id, ws, rcFile)
	cmd.Env = append(os.Environ(), runEnv...)
	master, err := creackpty.StartWithSize(cmd, &creackpty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// attach has taken the terminal once it enters the alternate screen. The terminal is
	// read here until then, and not after: a read under way would keep its master open
	// past Close. What attach paints later (a screen of a prompt) fits in its buffer.
	if err := master.SetReadDeadline(time.Now().Add(e2eWait)); err != nil {
		t.Fatal(err)
	}
	var shown []byte
	for !bytes.Contains(shown, []byte("\x1b[?1049h")) {
		b := make([]byte, 4096)
		n, err := master.Read(b)
		shown = append(shown, b[:n]...)
		if err != nil {
			t.Fatalf("waiting for attach to take the terminal: %v; it shows %q", err, shown)
		}
	}
	master.Close() // the terminal hangs up
	var rc []byte
	waitFor(t, "attach to end after the hang-up", func() bool {
		rc, _ = os.ReadFile(rcFile)
		return len(rc) > 0
	})
	stderr, _ := os.ReadFile(rcFile + ".err")
	if strings.TrimSpace(string(rc)) != "1" || !strings.Contains(string(stderr), "detached from "+id+": the terminal has gone") {
		t.Errorf("attach after its terminal hung up: exit %s, stderr %q; want 1 and that the terminal has gone", rc, stderr)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the terminal's shell: %v", err)
	}
}

// A session's name and command are the agent's: sessions and attach show the escape
// sequences in them as text, so they cannot rewrite what the person's terminal shows.
func TestSessions_E2E_escapes(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	res := s.toolCall("shell_open", map[string]any{"command": "exec bash --norc --noprofile -i # \x1b]0;PWNED\x07\x1b[1A\x1b[2K\u009b2J",
		"name": "n\x1b[31mred", "env": map[string]any{"PS1": "PROMPT> "}, "waitFor": "PROMPT> $", "timeoutMs": 20000})
	if res["isError"] == true {
		t.Fatalf("shell_open: %s", resultText(res))
	}
	id := structuredOf(t, res)["sessionId"].(string)
	out := runBinary(t, nil, "sessions", "--workspace", ws)
	if out.code != 0 || strings.ContainsAny(out.stdout+out.stderr, "\x1b\x07\u009b") {
		t.Errorf("sessions printed control characters: exit %d\n%q\n%q", out.code, out.stdout, out.stderr)
	}
	if want := `n\x1b[31mred: exec bash --norc --noprofile -i # \x1b]0;PWNED\x07\x1b[1A\x1b[2K`; !strings.Contains(out.stdout, want) {
		t.Errorf("sessions printed\n%s\nwant %s in it", out.stdout, want)
	}
	out = runBinary(t, nil, "attach", "s9-9", "--workspace", ws)
	if out.code != 1 || strings.ContainsAny(out.stderr, "\x1b\x07\u009b") || !strings.Contains(out.stderr, "live sessions: "+id) {
		t.Errorf("attach to no such session: exit %d, stderr %q; want 1, the live session named, no control characters", out.code, out.stderr)
	}
}

// stopped reports whether every thread of process pid is stopped (a SIGSTOP takes each
// thread when it next runs).
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, tk := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, tk.Name()))
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' && b[i+2] != 't' {
			return false
		}
	}
	return true
}

// A server that takes none of what the person types (stopped here, as a hung one would
// be) does not keep the view waiting in a write: once its socket is full, attach gives
// up within a bound, says so, exits 1 and gives the terminal back, where it would
// otherwise hang with the terminal raw, deaf to C-] d and SIGTERM alike.
func TestAttach_E2E_keysToHungServer(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	id := openBash(t, s)
	out := filepath.Join(t.TempDir(), "out")
	// The shell notes the terminal's modes before and after attach, and its status; then
	// cat reads what is still typed, so that the typist is never left blocked on a
	// terminal nobody reads.
	cmd := exec.Command("sh", "-c", `stty -g > "$3.before"; "$0" attach "$1" --write --workspace "$2" 2>"$3.err"; echo $? > "$3.rc"; stty -g > "$3.after"; exec cat > /dev/null`,
		binPath, id, ws, out)
	cmd.Env = append(os.Environ(), runEnv...)
	master, err := creackpty.StartWithSize(cmd, &creackpty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	taken := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		// The terminal's output is read throughout, so that attach never waits on it.
		defer close(readerDone)
		var shown []byte
		waiting := true
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			if waiting {
				shown = append(shown, b[:n]...)
				if bytes.Contains(shown, []byte("\x1b[?1049h")) {
					close(taken)
					waiting = false
				}
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-taken:
	case <-time.After(e2eWait):
		t.Fatal("attach did not take the terminal")
	}
	s.signal(syscall.SIGSTOP)
	t.Cleanup(func() { s.signal(syscall.SIGCONT) })
	waitFor(t, "the server to stop", func() bool { return stopped(s.cmd.Process.Pid) })
	// The person types on (a paste, say) until attach ends.
	writerDone, stopTyping := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(writerDone)
		keys := bytes.Repeat([]byte("kkkkkkk\n"), 512) // lines: cat's canonical read takes them
		for {
			select {
			case <-stopTyping:
				return
			default:
			}
			if _, err := master.Write(keys); err != nil {
				return
			}
		}
	}()
	var rc []byte
	waitFor(t, "attach to give up on the stopped server", func() bool {
		rc, _ = os.ReadFile(out + ".rc")
		return len(rc) > 0
	})
	var after []byte
	waitFor(t, "the terminal's modes after attach", func() bool {
		after, _ = os.ReadFile(out + ".after")
		return bytes.HasSuffix(after, []byte("\n"))
	})
	close(stopTyping)
	<-writerDone
	// cat ends with its process group, and then the reader sees the terminal gone. Closing
	// the master would not do it: a read under way keeps the master open past Close (the
	// master is in blocking mode, as creack/pty leaves it), and with nothing more to read
	// the reader, and this test, would wait for ever.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-readerDone
	master.Close()
	stderr, _ := os.ReadFile(out + ".err")
	if want := "detached from " + id + ": the server (server 1, pid " + strconv.Itoa(s.cmd.Process.Pid) + ") did not take what you sent within 2s (is it hung?)"; strings.TrimSpace(string(rc)) != "1" || !strings.Contains(string(stderr), want) {
		t.Errorf("attach to a stopped server after typing on: exit %s, stderr %q; want 1 and %q", rc, stderr, want)
	}
	if before, _ := os.ReadFile(out + ".before"); string(before) != string(after) {
		t.Errorf("the terminal's modes after attach = %q, want %q as before", after, before)
	}
}
