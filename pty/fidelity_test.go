package pty

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The fidelity tests run one program in a session and in tmux (Debian's tmux is the
// reference emulator), send both the same keys at the same size, and compare the two
// screens row by row after each step. Each step waits until both screens show what it
// expects and have stopped changing: never for a fixed time.

// tmuxPane is a program running in a tmux server of its own, killed when the test ends.
type tmuxPane struct {
	t      *testing.T
	socket string
}

// startTmux starts a tmux server of the test's own, on a socket in its temporary
// directory (which goes with the test, as tmux leaves its socket behind).
func startTmux(t *testing.T, cols, rows int, command string) *tmuxPane {
	t.Helper()
	need(t, "tmux")
	p := &tmuxPane{t: t, socket: filepath.Join(t.TempDir(), "tmux")}
	// The server runs until kill-server, whatever the test did meanwhile.
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	p.run("-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), command,
		";", "set", "-g", "status", "off", ";", "set", "-g", "remain-on-exit", "on")
	return p
}

func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %q: %v: %s", args, err, out)
	}
	return string(out)
}

// lines is the screen as text, DEC line drawing as box characters (as the session's
// screen shows it): capture-pane prints such cells as their ASCII letters between SO and
// SI with -e, which also adds the styles, dropped here.
func (p *tmuxPane) lines() []string {
	p.t.Helper()
	out := strings.Split(strings.TrimSuffix(p.run("capture-pane", "-p", "-e"), "\n"), "\n")
	for i, l := range out {
		out[i] = plainLine(l)
	}
	return out
}

// decGraphics is the DEC special graphics set, as xterm shows it.
var decGraphics = map[byte]string{
	'`': "◆", 'a': "▒", 'b': "␉", 'c': "␌", 'd': "␍", 'e': "␊", 'f': "°", 'g': "±",
	'h': "␤", 'i': "␋", 'j': "┘", 'k': "┐", 'l': "┌", 'm': "└", 'n': "┼", 'o': "⎺",
	'p': "⎻", 'q': "─", 'r': "⎼", 's': "⎽", 't': "├", 'u': "┤", 'v': "┴", 'w': "┬",
	'x': "│", 'y': "≤", 'z': "≥", '{': "π", '|': "≠", '}': "£", '~': "·",
}

// plainLine removes the escape sequences of a line capture-pane -e printed and draws its
// shifted-in cells.
func plainLine(l string) string {
	var b strings.Builder
	shifted := false
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c == 0x0e:
			shifted = true
		case c == 0x0f:
			shifted = false
		case c == 0x1b && i+1 < len(l) && l[i+1] == '[':
			i += 2
			for i < len(l) && (l[i] < 0x40 || l[i] > 0x7e) {
				i++
			}
		case c == 0x1b && i+1 < len(l) && l[i+1] == ']':
			for i < len(l) && l[i] != 0x07 && !(l[i] == 0x1b && i+1 < len(l) && l[i+1] == '\\') {
				i++
			}
			if i < len(l) && l[i] == 0x1b {
				i++
			}
		case shifted && decGraphics[c] != "":
			b.WriteString(decGraphics[c])
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// cursor is the cursor position as "row,col", 0-based.
func (p *tmuxPane) cursor() string {
	p.t.Helper()
	return strings.TrimSpace(p.run("display-message", "-p", "#{cursor_y},#{cursor_x}"))
}

func (p *tmuxPane) keys(keys ...string) { p.run(append([]string{"send-keys"}, keys...)...) }

func (p *tmuxPane) resize(cols, rows int) {
	p.run("resize-window", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows))
}

// fidelity drives one program in both terminals.
type fidelity struct {
	t     *testing.T
	m     *Manager
	id    string
	tmux  *tmuxPane
	name  string
	same  int // rows identical, over all the steps
	total int

	sameCursors, cursors int // the same for the cursor position
}

// fidelityCommand is the program as both terminals run it, in the same environment.
func fidelityCommand(t *testing.T, program string) string {
	return fmt.Sprintf("env TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 HOME=%s LESS= LESSHISTFILE=- %s", t.TempDir(), program)
}

func newFidelity(t *testing.T, name string, cols, rows int, program string) *fidelity {
	t.Helper()
	need(t, "tmux")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	cmd := fidelityCommand(t, program)
	f := &fidelity{t: t, m: newManager(t, Config{}), name: name}
	res, err := f.m.Open(t.Context(), OpenOptions{Command: cmd, Cols: cols, Rows: rows, NoIntegration: true}, ReadOptions{})
	if err != nil {
		t.Fatalf("Open(%q) = %v", cmd, err)
	}
	f.id = res.SessionID
	f.tmux = startTmux(t, cols, rows, cmd)
	t.Cleanup(func() {
		t.Logf("fidelity %s: %d of %d rows identical to tmux, cursor at the same place %d of %d times",
			f.name, f.same, f.total, f.sameCursors, f.cursors)
	})
	return f
}

// keys sends the same keys to both.
func (f *fidelity) keys(keys ...string) {
	f.t.Helper()
	if _, err := f.m.IO(f.t.Context(), f.id, Input{Keys: keys}, ReadOptions{}); err != nil {
		f.t.Fatalf("IO(keys %q) = %v", keys, err)
	}
	f.tmux.keys(keys...)
}

// text types the same text into both.
func (f *fidelity) text(text string) {
	f.t.Helper()
	if _, err := f.m.IO(f.t.Context(), f.id, Input{Data: []byte(text)}, ReadOptions{}); err != nil {
		f.t.Fatalf("IO(%q) = %v", text, err)
	}
	f.tmux.run("send-keys", "-l", text)
}

// resize resizes both.
func (f *fidelity) resize(cols, rows int) {
	f.t.Helper()
	if err := f.m.Resize(f.id, cols, rows); err != nil {
		f.t.Fatalf("Resize(%d, %d) = %v", cols, rows, err)
	}
	f.tmux.resize(cols, rows)
}

// compare waits until both screens show want and have settled, then compares them row
// by row. Screens that differ are looked at again until the deadline, since one of the
// two may still be drawing; the rows that still differ then fail the test.
func (f *fidelity) compare(step, want string, gone ...string) {
	f.t.Helper()
	deadline := time.Now().Add(waitLong)
	var ours, theirs []string
	for round := 0; ; round++ {
		ours = f.settled(func() []string {
			res, err := f.m.IO(f.t.Context(), f.id, Input{}, ReadOptions{Screen: true, Timeout: 100 * time.Millisecond})
			if err != nil || res.Screen == nil {
				f.t.Fatalf("IO(screen) = %v, %v", res.Screen, err)
			}
			return append(res.Screen.Lines, fmt.Sprintf("%d,%d", res.Screen.CursorRow, res.Screen.CursorCol))
		}, want, gone, deadline)
		theirs = f.settled(func() []string { return append(f.tmux.lines(), f.tmux.cursor()) }, want, gone, deadline)
		// Settled and still different after a few more looks: they differ.
		if equalLines(ours, theirs) || round == 5 {
			break
		}
	}
	// The last line of each is the cursor, which shows a menu's choice when colours do.
	ourCursor, tmuxCursor := ours[len(ours)-1], theirs[len(theirs)-1]
	ours, theirs = ours[:len(ours)-1], theirs[:len(theirs)-1]
	f.cursors++
	if ourCursor == tmuxCursor {
		f.sameCursors++
	} else {
		f.t.Errorf("%s, %s: cursor at %s, tmux's at %s", f.name, step, ourCursor, tmuxCursor)
	}
	n := max(len(ours), len(theirs))
	same := 0
	var diff strings.Builder
	for i := range n {
		o, th := at(ours, i), at(theirs, i)
		if o == th {
			same++
			continue
		}
		fmt.Fprintf(&diff, "row %2d ours: %q\n       tmux: %q\n", i, o, th)
	}
	f.same += same
	f.total += n
	if same != n {
		f.t.Errorf("%s, %s: %d of %d rows identical to tmux:\n%s", f.name, step, same, n, diff.String())
	}
}

// settled polls a screen until it contains want and none of gone, and two looks a poll
// apart agree.
func (f *fidelity) settled(look func() []string, want string, gone []string, deadline time.Time) []string {
	f.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var prev []string
	for {
		cur := look()
		text := strings.Join(cur, "\n")
		ok := strings.Contains(text, want) && equalLines(cur, prev)
		for _, g := range gone {
			ok = ok && !strings.Contains(text, g)
		}
		if ok {
			return cur
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: timed out waiting for %q on a settled screen; last:\n%s", f.name, want, strings.Join(cur, "\n"))
		}
		prev = cur
		select {
		case <-tick.C:
		case <-f.t.Context().Done():
			f.t.Fatal("test ended while waiting for the screen")
		}
	}
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<no row>"
}

func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d of the file, some words to fill it\n", i)
	}
	return b.String()
}

func TestFidelity_vim(t *testing.T) {
	need(t, "vim")
	file := writeFile(t, "notes.txt", numberedLines(40))
	f := newFidelity(t, "vim", 80, 24, "vim -u NONE -i NONE -N -n "+file)
	f.compare("opened", "line 23 of")
	f.keys("G")
	f.compare("at the end", "line 40 of")
	f.text("ggddonew text")
	f.keys("Escape")
	f.compare("edited", "new text", "-- INSERT --")
	f.text(":set nu")
	f.keys("Enter")
	f.compare("numbers", "  1 line 2 of")
	f.keys("Down", "Down", "End", "x", "Up", "Home", "x")
	f.compare("arrows", "ine 3 of")
	f.resize(60, 12)
	f.compare("shrunk", "new text")
	f.resize(80, 24)
	f.compare("grown", "line 22 of")
}

func TestFidelity_less(t *testing.T) {
	need(t, "less")
	file := writeFile(t, "log.txt", numberedLines(100))
	f := newFidelity(t, "less", 80, 24, "less "+file)
	f.compare("opened", "line 23 of")
	f.keys("Space")
	f.compare("next page", "line 46 of")
	f.keys("Down", "Down")
	f.compare("two lines down", "line 48 of")
	f.keys("G")
	f.compare("at the end", "(END)")
	f.text("?line 50 ")
	f.keys("Enter")
	f.compare("search", "line 50 of")
	f.resize(80, 10)
	f.compare("shrunk", "line 50 of")
	f.resize(80, 24)
	f.compare("grown", "line 50 of")
}

func TestFidelity_cursesMenu(t *testing.T) {
	need(t, "dialog")
	f := newFidelity(t, "dialog", 80, 24, "dialog --menu 'Pick one' 14 50 4 a first b second c third d fourth")
	f.compare("opened", "fourth")
	f.keys("Down")
	f.compare("second", "second")
	f.keys("Down", "Down")
	f.compare("fourth", "fourth")
	f.keys("Up")
	f.compare("back to third", "third")
}

// A shell's screen through a shrink and a grow: the cursor row stays, the rows scrolled
// off come back, and a wide character at the last column wraps.
func TestFidelity_resize(t *testing.T) {
	need(t, "bash")
	f := newFidelity(t, "resize", 80, 24, "env PS1='P> ' HISTFILE=/dev/null bash --norc --noprofile -i")
	f.compare("prompt", "P>")
	f.text("seq 1 12; printf '%79s日x\\n' wide")
	f.keys("Enter")
	f.compare("output", "日x")
	f.resize(80, 8)
	f.compare("shrunk", "日x")
	f.resize(80, 24)
	f.compare("grown", "日x")
	f.text("echo after")
	f.keys("Enter")
	f.compare("after", "after")
}
