package pty

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// sendKeys types key names into a session, as shell_io's keys do, and reads what follows
// until waitFor.
func sendKeys(t *testing.T, m *Manager, id string, keys []string, waitFor *regexp.Regexp) ReadResult {
	t.Helper()
	res, err := m.IO(t.Context(), id, Input{Keys: keys}, ReadOptions{WaitFor: waitFor, Timeout: waitLong})
	if err != nil {
		t.Fatalf("IO(%s, keys %q) = %v", id, keys, err)
	}
	return res
}

// A dialog menu is navigated with the arrow keys: dialog turns on application cursor
// mode, and a Down sent as ESC [ B would read as Escape (Cancel, exit 255).
func TestManager_IO_keysDialogMenu(t *testing.T) {
	need(t, "dialog")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	choice := writeFile(t, "choice", "")
	cmd := `dialog --menu Pick 12 40 3 a first b second c third 2>` + choice +
		`; printf 'RC=%s CHOICE=%s\n' $? "$(cat ` + choice + `)"`
	res := mustOpen(t, m, OpenOptions{Command: cmd, Cols: 80, Rows: 24}, ReadOptions{})
	waitScreen(t, m, res.SessionID, "the menu", func(s *Screen) bool { return strings.Contains(strings.Join(s.Lines, "\n"), "third") })
	sendKeys(t, m, res.SessionID, []string{"Down", "Enter"}, never)
	out := readToExit(t, m, res.SessionID, ReadOptions{})
	if !strings.Contains(out.Output, "RC=0 CHOICE=b") {
		t.Errorf("dialog after Down, Enter: output ends %q, want RC=0 CHOICE=b (the second item)", tail(out.Output))
	}
}

// A curses program in keypad mode reads the cursor keys, Home, End and the keypad as
// curses keys, in the modes it turned on; also on a terminal too large to keep a screen
// for, where only the scanner follows the modes.
func TestManager_IO_keysCursesKeypad(t *testing.T) {
	need(t, "python3")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	prog := writeFile(t, "keys.py", `import curses
def main(w):
    w.keypad(True)
    w.addstr(0, 0, "ready")
    w.refresh()
    return [curses.keyname(w.getch()).decode() for _ in range(8)]
print("KEYS=" + " ".join(curses.wrapper(main)))
`)
	for _, size := range [][2]int{{80, 24}, {300, 200}} {
		if size[0]*size[1] > MaxScreenCells != (size[0] == 300) {
			t.Fatalf("%dx%d: MaxScreenCells is %d, the sizes need changing", size[0], size[1], MaxScreenCells)
		}
		res := mustOpen(t, m, OpenOptions{Command: "python3 " + prog, Cols: size[0], Rows: size[1]}, ReadOptions{WaitFor: regexp.MustCompile(`ready`)})
		sendKeys(t, m, res.SessionID, []string{"Down", "Up", "Right", "Left", "Home", "End", "KP5", "KPEnter"}, never)
		out := readToExit(t, m, res.SessionID, ReadOptions{})
		want := "KEYS=KEY_DOWN KEY_UP KEY_RIGHT KEY_LEFT KEY_HOME KEY_END KEY_B2 KEY_ENTER"
		if !strings.Contains(out.Output, want) {
			t.Errorf("%dx%d: curses read %q, want %q", size[0], size[1], tail(out.Output), want)
		}
	}
}

// tail is the end of a program's output, for messages.
func tail(s string) string {
	if len(s) > 300 {
		return s[len(s)-300:]
	}
	return s
}

// A key sent right after the program switched modes follows the new mode, even when the
// switch comes at the end of bulk output the terminal side has not caught up with: the
// mode is the one at the moment the key is written. Each round switches the other way.
func TestManager_IO_keysFollowLatestMode(t *testing.T) {
	need(t, "python3")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	prog := writeFile(t, "modes.py", `import os, sys, tty
tty.setraw(0)
for i in range(10):
    os.write(1, b"x" * 200000 + (b"\x1b[?1h" if i % 2 == 0 else b"\x1b[?1l") + b"READY%d\r\n" % i)
    got = b""
    while len(got) < 3:
        got += os.read(0, 3 - len(got))
    os.write(1, b"GOT%d=%s\r\n" % (i, got[1:].decode().encode()))
`)
	res := mustOpen(t, m, OpenOptions{Command: "python3 " + prog, Cols: 80, Rows: 24}, ReadOptions{WaitFor: regexp.MustCompile(`READY0`), MaxBytes: 1 << 10})
	for i := range 10 {
		want := "[B"
		if i%2 == 0 {
			want = "OB"
		}
		var next *regexp.Regexp
		if i < 9 {
			next = regexp.MustCompile(`READY` + strconv.Itoa(i+1))
		} else {
			next = regexp.MustCompile(`GOT9`)
		}
		out := sendKeys(t, m, res.SessionID, []string{"Down"}, next)
		if got := regexp.MustCompile(`GOT\d=(\S*)`).FindStringSubmatch(out.Output); got == nil || got[1] != want {
			t.Fatalf("round %d: the program read Down as %q, want ESC %s; output ends %q", i, got, want, tail(out.Output))
		}
	}
}
