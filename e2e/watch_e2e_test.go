package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `mcp-harness tasks watch` driven as a person drives it: tmux is the person's terminal
// (send-keys types, capture-pane reads the screen), the built binary runs in a shell in
// it, and a live server runs the graph it watches. Every wait is for what the screen
// shows, with a deadline; the test opens the gate that lets its task end.

// personTerm is a terminal with a shell at its prompt: a tmux server of the test's own,
// on a socket in the test's temporary directory, killed when the test ends.
type personTerm struct {
	t      *testing.T
	socket string
}

// termPrompt is the shell's prompt: the screen is back at the shell when its last line
// is this.
const termPrompt = "watch-test$"

func startPersonTerm(t *testing.T, cols, rows int) *personTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	p := &personTerm{t: t, socket: filepath.Join(t.TempDir(), "tmux")}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	p.tmux("-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows),
		"env", "PS1="+termPrompt+" ", "sh", ";", "set", "-g", "status", "off")
	p.waitScreen("the shell's prompt", func(lines []string) bool { return lastLine(lines) == termPrompt })
	return p
}

func (p *personTerm) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
	return string(out)
}

// screen is the pane's text, a line a row, trailing spaces trimmed.
func (p *personTerm) screen() []string {
	p.t.Helper()
	lines := strings.Split(strings.TrimSuffix(p.tmux("capture-pane", "-p"), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// typeLine types a command and Enter.
func (p *personTerm) typeLine(line string) {
	p.tmux("send-keys", "-l", line)
	p.tmux("send-keys", "Enter")
}

// keys presses keys (tmux key names).
func (p *personTerm) keys(keys ...string) { p.tmux(append([]string{"send-keys"}, keys...)...) }

// modes is what tmux says of the terminal's state: whether the alternate screen is on,
// and whether the cursor is shown.
func (p *personTerm) modes() string {
	return strings.TrimSpace(p.tmux("display-message", "-p", "alternate_on=#{alternate_on} cursor_flag=#{cursor_flag}"))
}

// waitScreen waits until ok holds for the screen, and fails with the screen if it does
// not within e2eWait.
func (p *personTerm) waitScreen(what string, ok func(lines []string) bool) []string {
	p.t.Helper()
	deadline := time.Now().Add(e2eWait)
	for {
		lines := p.screen()
		if ok(lines) {
			return lines
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s on the screen within %v; it shows:\n%s\n(%s)", what, e2eWait, strings.Join(lines, "\n"), p.modes())
		}
		time.Sleep(50 * time.Millisecond) // polling the screen with a deadline
	}
}

// foreground is the pid of the command the pane's shell runs.
func (p *personTerm) foreground() int {
	p.t.Helper()
	shell := strings.TrimSpace(p.tmux("display-message", "-p", "#{pane_pid}"))
	var pid int
	waitFor(p.t, "a command under the shell", func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%s/task/%s/children", shell, shell))
		f := strings.Fields(string(b))
		if len(f) != 1 {
			return false
		}
		pid, _ = strconv.Atoi(f[0])
		return pid > 0
	})
	return pid
}

func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i] != "" {
			return lines[i]
		}
	}
	return ""
}

// watchRow is a task's row on the watch screen: whether it is selected, its state, and
// the note after its duration.
type watchRow struct {
	selected bool
	state    string
	line     string
}

// rowOf finds task id's row: "› ● build   running   1.2s  note", its tree drawn before
// the id.
func rowOf(lines []string, id string) (watchRow, bool) {
	for _, l := range lines {
		r := []rune(l)
		if len(r) < 5 || (r[0] != '›' && r[0] != ' ') || r[1] != ' ' || r[3] != ' ' {
			continue
		}
		f := strings.Fields(strings.TrimLeft(string(r[4:]), "│├└─ "))
		if len(f) >= 2 && f[0] == id {
			return watchRow{selected: r[0] == '›', state: f[1], line: l}, true
		}
	}
	return watchRow{}, false
}

// selectedRow is the id of the selected row, or "".
func selectedRow(lines []string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, "› ") {
			if f := strings.Fields(strings.TrimLeft(string([]rune(l)[4:]), "│├└─ ")); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// selectRow moves the selection down to task id a row at a time, as a person does: a
// key, then a look at where the selection went.
func (p *personTerm) selectRow(id string) {
	p.t.Helper()
	for range 100 {
		was := selectedRow(p.screen())
		if was == id {
			return
		}
		p.keys("j")
		p.waitScreen("the selection moved from "+was, func(lines []string) bool { return selectedRow(lines) != was })
	}
	p.t.Fatalf("%s not selected after 100 rows", id)
}

// states reads the state of each task id on the screen ("" when its row is not there).
func states(lines []string, ids ...string) map[string]string {
	out := map[string]string{}
	for _, id := range ids {
		r, _ := rowOf(lines, id)
		out[id] = r.state
	}
	return out
}

func TestWatch_E2E(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g := submit(t, s, map[string]any{"name": "watched", "maxParallel": 4, "tasks": []any{
		map[string]any{"id": "build", "command": "echo compiling; while [ ! -e gate ]; do sleep 0.02; done; echo built"},
		map[string]any{"id": "test", "command": "echo tested", "dependsOn": []string{"build"}},
		map[string]any{"id": "serve", "command": "echo serving on 8080; exec sleep 1000"},
		map[string]any{"id": "smoke", "command": "true", "dependsOn": []string{"serve"}},
	}})
	term := startPersonTerm(t, 120, 40)
	term.typeLine(binPath + " tasks watch --workspace " + ws)

	// The running graph: its header, each task's state, why test waits, build's log.
	lines := term.waitScreen("the running graph", func(lines []string) bool {
		st := states(lines, "build", "test", "serve", "smoke")
		return st["build"] == "running" && st["serve"] == "running" && st["test"] == "pending" && st["smoke"] == "pending" &&
			strings.Contains(strings.Join(lines, "\n"), "compiling")
	})
	if !strings.HasPrefix(lines[0], g+` "watched"  running`) {
		t.Errorf("header = %q, want the graph, its name and running", lines[0])
	}
	if r, _ := rowOf(lines, "test"); !strings.Contains(r.line, "waiting on build (running)") {
		t.Errorf("test's row = %q, want why it waits", r.line)
	}
	if r, _ := rowOf(lines, "build"); !r.selected {
		t.Errorf("build's row = %q, want it selected (the first row)", r.line)
	}
	if m := term.modes(); m != "alternate_on=1 cursor_flag=0" {
		t.Errorf("while watching, the terminal is %s, want the alternate screen and no cursor", m)
	}
	t.Logf("the running graph:\n%s", strings.Join(lines, "\n"))

	// build ends when the gate opens: it and test show their final states.
	if err := os.WriteFile(filepath.Join(ws, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	term.waitScreen("build and test succeeded", func(lines []string) bool {
		st := states(lines, "build", "test")
		return st["build"] == "succeeded" && st["test"] == "succeeded"
	})

	// Select serve as a person does, a row at a time, then cancel it.
	term.selectRow("serve")
	term.keys("c")
	term.waitScreen("the question", func(lines []string) bool {
		return slicesContain(lines, "cancel task serve (running)? y/n")
	})
	term.keys("y")
	// The store shows the cancel before the cancel call returns to the view, so the status
	// line saying how it went may be painted a frame later: wait for all of it together.
	lines = term.waitScreen("serve cancelled, smoke skipped, and the status line saying so", func(lines []string) bool {
		st := states(lines, "serve", "smoke")
		return st["serve"] == "cancelled" && st["smoke"] == "skipped" && strings.HasPrefix(lines[0], g+` "watched"  cancelled`) &&
			slicesContain(lines, "cancelled task serve: serve cancelled, smoke skipped")
	})
	if !strings.Contains(lines[1], "4/4 done") {
		t.Errorf("progress = %q, want 4/4 done", lines[1])
	}
	t.Logf("after the cancel:\n%s", strings.Join(lines, "\n"))
	st := tasksOf(structuredOf(t, s.toolCall("tasks_status", map[string]any{"graphId": g})))
	for id, want := range map[string]string{"build": "succeeded", "test": "succeeded", "serve": "cancelled", "smoke": "skipped"} {
		if got := st[id]["status"]; got != want {
			t.Errorf("tasks_status says %s is %v, want %s", id, got, want)
		}
	}

	// q gives the terminal back as it was: the shell's screen, the cursor, cooked mode.
	term.keys("q")
	checkTermBack(t, term, "q")

	// SIGTERM does too.
	term.typeLine(binPath + " tasks watch --workspace " + ws + " " + g)
	term.waitScreen("the ended graph", func(lines []string) bool { return states(lines, "serve")["serve"] == "cancelled" })
	if err := syscall.Kill(term.foreground(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	checkTermBack(t, term, "SIGTERM")
}

// checkTermBack checks that watch has given the terminal back after how: the shell's
// prompt, the main screen, the cursor shown, and the terminal out of raw mode (a typed
// line is echoed, and Enter runs it: in raw mode neither happens), and watch exited 0.
func checkTermBack(t *testing.T, term *personTerm, how string) {
	t.Helper()
	term.waitScreen("the prompt after "+how, func(lines []string) bool { return lastLine(lines) == termPrompt })
	if m := term.modes(); m != "alternate_on=0 cursor_flag=1" {
		t.Errorf("after %s the terminal is %s, want the main screen and the cursor shown", how, m)
	}
	term.typeLine(`echo "OUT_$?_$((40+2))"; stty -a | tr ' ' '\n' | grep -x -- '-*icanon'`)
	lines := term.waitScreen("the shell's answer after "+how, func(lines []string) bool {
		return slicesContain(lines, "OUT_0_42") && lastLine(lines) == termPrompt
	})
	if !slicesContain(lines, "icanon") {
		t.Errorf("after %s stty does not say icanon (canonical mode):\n%s", how, strings.Join(lines, "\n"))
	}
	term.typeLine("clear")
	term.waitScreen("a clear screen", func(lines []string) bool { return len(lines) > 0 && lines[0] == termPrompt })
}

func slicesContain(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// Not on a terminal, and with --no-tui, watch prints what `tasks logs -f GRAPH` prints.
func TestWatch_E2ELineOutput(t *testing.T) {
	ws := t.TempDir()
	s := startServer(t, ws)
	s.initialize()
	g := submit(t, s, map[string]any{"name": "lines", "tasks": []any{
		map[string]any{"id": "build", "command": "echo compiling; echo built"},
		map[string]any{"id": "unit", "command": "echo ran 3; exit 5", "dependsOn": []string{"build"}},
	}})
	s.waitGraph(g)
	want := "build | compiling\nbuild | built\nunit  | ran 3\n"
	for _, args := range [][]string{{"watch"}, {"watch", "--no-tui", g}, {"watch", "@latest"}} {
		out := runBinary(t, nil, append(append([]string{"tasks"}, args...), "--workspace", ws)...)
		if out.code != 0 || out.stdout != want {
			t.Errorf("tasks %v = %+v, want exit 0 and\n%s", args, out, want)
		}
		for _, end := range []string{"mcp-harness: task unit failed (exit 5)\n", "mcp-harness: graph " + g + " failed: 1 succeeded, 1 failed, 0 cancelled, 0 skipped\n"} {
			if !strings.Contains(out.stderr, end) {
				t.Errorf("tasks %v stderr =\n%s\nwant %q", args, out.stderr, end)
			}
		}
	}
	if out := runBinary(t, nil, "tasks", "watch", "g-NOPE", "--workspace", ws); out.code != 1 || !strings.Contains(out.stderr, `no graph "g-NOPE"`) {
		t.Errorf("watch of an unknown graph = %+v, want exit 1 saying so", out)
	}
	if out := runBinary(t, nil, "tasks", "watch", "a", "b", "--workspace", ws); out.code != 2 {
		t.Errorf("watch with two graphs = %+v, want exit 2", out)
	}
}
