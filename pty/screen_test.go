package pty

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// readScreen reads a session with its screen.
func readScreen(t *testing.T, m *Manager, id, input string, r ReadOptions) ReadResult {
	t.Helper()
	r.Screen = true
	res := mustIO(t, m, id, input, r)
	if res.Screen == nil {
		t.Fatalf("IO(%s, %q) with Screen: no screen", id, input)
	}
	return res
}

// waitScreen reads the session's screen until ok accepts it, up to waitLong: a program
// draws when it likes, so the screen is waited for like output is.
func waitScreen(t *testing.T, m *Manager, id, what string, ok func(*Screen) bool) *Screen {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		res := readScreen(t, m, id, "", ReadOptions{Timeout: 200 * time.Millisecond})
		if ok(res.Screen) {
			return res.Screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; screen:\n%s", waitLong, what, dump(res.Screen))
		}
	}
}

func dump(s *Screen) string {
	if s == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%dx%d cursor %d,%d alt %v title %q\n", s.Cols, s.Rows, s.CursorRow, s.CursorCol, s.AltScreen, s.Title)
	for i, l := range s.Lines {
		fmt.Fprintf(&b, "%2d|%s\n", i, l)
	}
	return b.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func need(t *testing.T, program string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		t.Skipf("%s is not installed", program)
	}
	return p
}

func TestManager_IO_screenText(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	// Trailing spaces go, wide characters take two columns, a title with ';' is kept.
	cmd := `printf '\033]2;build; step 2\007abc   \r\n\346\227\245\346\234\254\350\252\236x\r\nend'; exec cat`
	res := mustOpen(t, m, OpenOptions{Command: cmd, Cols: 20, Rows: 5}, ReadOptions{WaitFor: regexp.MustCompile(`end`), Screen: true})
	want := &Screen{Cols: 20, Rows: 5, Lines: []string{"abc", "日本語x", "end", "", ""}, CursorRow: 2, CursorCol: 3, Title: "build; step 2"}
	if diff := cmp.Diff(want, res.Screen); diff != "" {
		t.Errorf("Open() screen mismatch (-want +got):\n%s", diff)
	}
	// Without Screen there is none.
	got := mustIO(t, m, res.SessionID, "", ReadOptions{Timeout: 1})
	if got.Screen != nil {
		t.Errorf("IO() without Screen: screen %v, want nil", got.Screen)
	}
}

// TestManager_IO_screenBulk prints 20 MB of scrolling text: the emulator, far behind,
// skips to its last screenfuls and shows the end as a full replay would.
func TestManager_IO_screenBulk(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "seq 1 2800000; printf 'END\\n'; exec cat", Cols: 80, Rows: 24},
		ReadOptions{WaitFor: regexp.MustCompile(`(?m)^END$`), MaxBytes: 100})
	scr := readScreen(t, m, res.SessionID, "", ReadOptions{Timeout: 1}).Screen
	var want []string
	for i := 2800000 - 21; i <= 2800000; i++ {
		want = append(want, fmt.Sprint(i))
	}
	want = append(want, "END", "")
	if diff := cmp.Diff(want, scr.Lines); diff != "" || scr.CursorRow != 23 || scr.CursorCol != 0 {
		t.Errorf("screen after 20 MB (cursor %d,%d, want 23,0); lines (-want +got):\n%s", scr.CursorRow, scr.CursorCol, diff)
	}
}

func TestManager_IO_screenVim(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	vim := need(t, "vim")
	m := newManager(t, Config{})
	file := writeFile(t, "notes.txt", "hello world\nsecond line\n")
	o := OpenOptions{Command: vim + " -u NONE -N -i NONE " + file, Env: map[string]string{"HOME": t.TempDir()}, Cols: 60, Rows: 10}
	res := mustOpen(t, m, o, ReadOptions{})
	id := res.SessionID
	scr := waitScreen(t, m, id, "vim to show the file", func(s *Screen) bool {
		return s.Lines[0] == "hello world" && strings.Contains(s.Lines[9], "notes.txt")
	})
	want := []string{"hello world", "second line", "~", "~", "~", "~", "~", "~", "~"}
	if diff := cmp.Diff(want, scr.Lines[:9]); diff != "" || !scr.AltScreen || scr.CursorRow != 0 || scr.CursorCol != 0 {
		t.Errorf("vim's first screen (alt %v cursor %d,%d, want true 0,0) (-want +got):\n%s", scr.AltScreen, scr.CursorRow, scr.CursorCol, diff)
	}

	// Insert in the middle of a line, then wide characters at its end.
	mustIO(t, m, id, "0wiXYZ\x1b", ReadOptions{})
	waitScreen(t, m, id, "the insert", func(s *Screen) bool { return s.Lines[0] == "hello XYZworld" && s.CursorCol == 8 })
	mustIO(t, m, id, "A 日本\x1b", ReadOptions{})
	scr = waitScreen(t, m, id, "the append", func(s *Screen) bool {
		return s.Lines[0] == "hello XYZworld 日本" && !strings.Contains(s.Lines[9], "INSERT")
	})
	if scr.CursorCol != 17 { // on the last character, which starts at column 17
		t.Errorf("cursor after appending wide characters: col %d, want 17\n%s", scr.CursorCol, dump(scr))
	}
	// Delete a line, as vim draws it (delete-line or a redraw).
	mustIO(t, m, id, "ggdd", ReadOptions{})
	waitScreen(t, m, id, "the delete", func(s *Screen) bool { return s.Lines[0] == "second line" && s.Lines[1] == "~" })

	mustIO(t, m, id, ":q!\r", ReadOptions{WaitFor: never})
	res = readToExit(t, m, id, ReadOptions{})
	scr = readScreen(t, m, id, "", ReadOptions{Timeout: 1}).Screen
	if scr.AltScreen {
		t.Errorf("after vim quit: alternate screen still shown\n%s", dump(scr))
	}
}

func TestManager_IO_screenLess(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	less := need(t, "less")
	m := newManager(t, Config{})
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	file := writeFile(t, "lines.txt", b.String())
	o := OpenOptions{Command: less + " " + file, Env: map[string]string{"LESS": "", "LESSHISTFILE": "-"}, Cols: 40, Rows: 12}
	res := mustOpen(t, m, o, ReadOptions{})
	id := res.SessionID
	scr := waitScreen(t, m, id, "less's first page", func(s *Screen) bool {
		return s.Lines[0] == "line 1" && s.Lines[10] == "line 11" && strings.Contains(s.Lines[11], "lines.txt")
	})
	if !scr.AltScreen || scr.CursorRow != 11 {
		t.Errorf("less: alt %v cursor row %d, want true, 11\n%s", scr.AltScreen, scr.CursorRow, dump(scr))
	}
	mustIO(t, m, id, " ", ReadOptions{})
	waitScreen(t, m, id, "the next page", func(s *Screen) bool {
		return s.Lines[0] == "line 12" && s.Lines[10] == "line 22" && s.Lines[11] == ":"
	})
	// A line down scrolls the screen by one.
	mustIO(t, m, id, "j", ReadOptions{})
	waitScreen(t, m, id, "one line down", func(s *Screen) bool { return s.Lines[0] == "line 13" && s.Lines[10] == "line 23" })
	mustIO(t, m, id, "q", ReadOptions{WaitFor: never})
	readToExit(t, m, id, ReadOptions{})
}

func TestManager_IO_screenTop(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	top := need(t, "top")
	m := newManager(t, Config{})
	o := OpenOptions{Command: top + " -d 1", Env: map[string]string{"HOME": t.TempDir()}, Cols: 100, Rows: 30}
	res := mustOpen(t, m, o, ReadOptions{})
	id := res.SessionID
	header := regexp.MustCompile(`^\s*PID\s+USER\s+`)
	scr := waitScreen(t, m, id, "top's table", func(s *Screen) bool {
		if !strings.HasPrefix(s.Lines[0], "top - ") {
			return false
		}
		for _, l := range s.Lines {
			if header.MatchString(l) {
				return true
			}
		}
		return false
	})
	// top (procps) draws on the main screen, and redraws it in place every second: the
	// screen still has one header and one table.
	scr = waitScreen(t, m, id, "a redraw", func(s *Screen) bool {
		return s.Lines[0] != scr.Lines[0] && strings.HasPrefix(s.Lines[0], "top - ")
	})
	headers := 0
	for _, l := range scr.Lines {
		if header.MatchString(l) {
			headers++
		}
	}
	if headers != 1 || !strings.HasPrefix(scr.Lines[1], "Tasks:") {
		t.Errorf("top after a redraw: %d table headers, want 1, and Tasks: on row 1\n%s", headers, dump(scr))
	}
	mustIO(t, m, id, "q", ReadOptions{WaitFor: never})
	readToExit(t, m, id, ReadOptions{})
}

// menuScript is a curses menu like installers show: arrows move, Enter picks.
const menuScript = `
import curses
items = ["Apple", "Banana", "Cherry"]
def main(scr):
    curses.curs_set(0)
    sel = 0
    while True:
        scr.erase()
        scr.addstr(0, 0, "Pick a fruit:")
        for i, it in enumerate(items):
            scr.addstr(2 + i, 2, ("> " if i == sel else "  ") + it, curses.A_REVERSE if i == sel else 0)
        scr.addstr(6, 0, "Up/Down, Enter")
        scr.refresh()
        k = scr.getch()
        if k in (curses.KEY_DOWN, ord("j")):
            sel = min(sel + 1, len(items) - 1)
        elif k in (curses.KEY_UP, ord("k")):
            sel = max(sel - 1, 0)
        elif k in (10, 13, curses.KEY_ENTER):
            return items[sel]
print("PICKED", curses.wrapper(main))
`

func TestManager_IO_screenCursesMenu(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	py := needPython(t)
	m := newManager(t, Config{})
	script := writeFile(t, "menu.py", menuScript)
	res := mustOpen(t, m, OpenOptions{Command: py + " " + script, Cols: 40, Rows: 10}, ReadOptions{})
	id := res.SessionID
	scr := waitScreen(t, m, id, "the menu", func(s *Screen) bool { return s.Lines[2] == "  > Apple" })
	want := []string{"Pick a fruit:", "", "  > Apple", "    Banana", "    Cherry", "", "Up/Down, Enter", "", "", ""}
	if diff := cmp.Diff(want, scr.Lines); diff != "" || !scr.AltScreen {
		t.Errorf("menu (alt %v, want true) (-want +got):\n%s", scr.AltScreen, diff)
	}
	// The arrow as an xterm sends it in the application cursor mode curses turned on.
	mustIO(t, m, id, "\x1bOB", ReadOptions{})
	waitScreen(t, m, id, "the second item picked", func(s *Screen) bool {
		return s.Lines[2] == "    Apple" && s.Lines[3] == "  > Banana"
	})
	got := mustIO(t, m, id, "\r", ReadOptions{WaitFor: regexp.MustCompile(`PICKED \w+`)})
	if !strings.Contains(got.Output, "PICKED Banana") {
		t.Errorf("menu picked: output %q, want PICKED Banana", got.Output)
	}
	readToExit(t, m, id, ReadOptions{})
	scr = readScreen(t, m, id, "", ReadOptions{Timeout: 1}).Screen
	if scr.AltScreen || !strings.Contains(strings.Join(scr.Lines, "\n"), "PICKED Banana") {
		t.Errorf("after the menu: the main screen with its answer, got\n%s", dump(scr))
	}
}

// TestManager_IO_screenResize keeps the emulator at the terminal's size: a line longer
// than the new width wraps there.
func TestManager_IO_screenResize(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, bash(t), ReadOptions{WaitFor: prompt})
	id := res.SessionID
	in := Input{Data: []byte("clear; printf '%050d\\n' 0\n"), Cols: 30, Rows: 8}
	got, err := m.IO(t.Context(), id, in, ReadOptions{WaitFor: regexp.MustCompile(`(?m)^0{20}`), Timeout: waitLong, Screen: true})
	if err != nil {
		t.Fatal(err)
	}
	scr := waitScreen(t, m, id, "the wrapped line", func(s *Screen) bool {
		return len(s.Lines) == 8 && s.Lines[0] == strings.Repeat("0", 30) && s.Lines[1] == strings.Repeat("0", 20)
	})
	if scr.Cols != 30 || scr.Rows != 8 {
		t.Errorf("screen %dx%d after a resize to 30x8", scr.Cols, scr.Rows)
	}
	_ = got
}

// TestManager_IO_screenErrors refuses a screen it cannot give before doing anything.
func TestManager_IO_screenErrors(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	res := mustOpen(t, m, OpenOptions{Command: "exec cat"}, ReadOptions{Timeout: 1})
	_, err := m.IO(t.Context(), res.SessionID, Input{Data: []byte("x\n"), Cols: 1000, Rows: 1000}, ReadOptions{Screen: true})
	if err == nil || !strings.Contains(err.Error(), "at most 50000 cells") {
		t.Fatalf("IO(1000x1000, Screen) = %v, want a refusal naming the limit", err)
	}
	if info := m.List()[0]; info.Cols != 120 || info.UnreadBytes != 0 {
		t.Errorf("after the refusal: %dx%d with %d unread bytes, want 120x40 and nothing typed", info.Cols, info.Rows, info.UnreadBytes)
	}
	if _, err := m.Open(t.Context(), OpenOptions{Command: "true", Cols: 1000, Rows: 200}, ReadOptions{Screen: true}); err == nil {
		t.Errorf("Open(1000x200, Screen) = nil error, want a refusal")
	}

	off := newManager(t, Config{NoEmulator: true})
	r2, err := off.Open(t.Context(), OpenOptions{Command: "exec cat"}, ReadOptions{Timeout: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := off.IO(t.Context(), r2.SessionID, Input{}, ReadOptions{Screen: true}); err == nil || !strings.Contains(err.Error(), "without terminal emulation") {
		t.Errorf("IO(Screen) without an emulator = %v, want a refusal", err)
	}
}

// TestManager_IO_screenInsertMode draws in insert mode (IRM), which vt ignores and
// charmVT lays over it; tput smir is how terminfo programs turn it on.
func TestManager_IO_screenInsertMode(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	tput := need(t, "tput")
	m := newManager(t, Config{})
	cmd := fmt.Sprintf(`printf 'abc\r'; %[1]s smir; printf 'XY'; %[1]s rmir; printf 'Z\r\nend'; exec cat`, tput)
	res := mustOpen(t, m, OpenOptions{Command: cmd, Cols: 20, Rows: 3}, ReadOptions{WaitFor: regexp.MustCompile(`end`), Screen: true})
	if got := res.Screen.Lines[0]; got != "XYZbc" {
		t.Errorf("row 0 after abc, CR, insert XY, overwrite Z: %q, want XYZbc", got)
	}
}
