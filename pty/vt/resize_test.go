package vt

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// screen is an emulator's screen and cursor, for comparing.
type screen struct {
	Lines    []string
	Row, Col int
}

func screenNow(e Emulator) screen {
	row, col := e.Cursor()
	return screen{e.Lines(nil), row, col}
}

// Shrinking drops the rows below the cursor, then scrolls the top off so the cursor row
// stays; growing brings the rows scrolled off back, as tmux does (the fidelity test in
// the pty package compares with tmux itself).
func TestEmulator_resizeKeepsCursorRow(t *testing.T) {
	steps := []struct {
		name string
		out  string
		rows int
		want screen
	}{
		{"start", "1\r\n2\r\n3\r\nP> ", 6, screen{[]string{"1", "2", "3", "P>", "", ""}, 3, 3}},
		{"shrink into the rows below", "", 4, screen{[]string{"1", "2", "3", "P>"}, 3, 3}},
		{"shrink past the cursor", "", 2, screen{[]string{"3", "P>"}, 1, 3}},
		{"grow brings them back", "", 6, screen{[]string{"1", "2", "3", "P>", "", ""}, 3, 3}},
		{"typing goes on", "x", 6, screen{[]string{"1", "2", "3", "P> x", "", ""}, 3, 4}},
	}
	e := New(10, 6)
	for _, st := range steps {
		e.Write([]byte(st.out))
		e.Resize(10, st.rows)
		if diff := cmp.Diff(st.want, screenNow(e)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, diff)
		}
	}
}

// Rows scrolled off by output after a shrink come back on a grow too, newest first; a
// grow with no history left adds blank rows, and ED 3 forgets the history.
func TestEmulator_resizeGrowsFromHistory(t *testing.T) {
	e := New(10, 4)
	steps := []struct {
		name string
		out  string
		rows int
		want screen
	}{
		{"start", "a\r\nb\r\nc\r\nd", 4, screen{[]string{"a", "b", "c", "d"}, 3, 1}},
		{"shrink", "", 2, screen{[]string{"c", "d"}, 1, 1}},
		{"output scrolls", "\r\ne", 2, screen{[]string{"d", "e"}, 1, 1}},
		{"grow", "", 4, screen{[]string{"b", "c", "d", "e"}, 3, 1}},
		{"grow to the oldest row", "", 5, screen{[]string{"a", "b", "c", "d", "e"}, 4, 1}},
		{"grow past the history", "", 6, screen{[]string{"a", "b", "c", "d", "e", ""}, 4, 1}},
		{"shrink again", "", 3, screen{[]string{"c", "d", "e"}, 2, 1}},
		{"ED 3 forgets", "\x1b[3J", 5, screen{[]string{"c", "d", "e", "", ""}, 2, 1}},
	}
	for _, st := range steps {
		e.Write([]byte(st.out))
		e.Resize(10, st.rows)
		if diff := cmp.Diff(st.want, screenNow(e)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, diff)
		}
	}
}

// The main screen hidden behind the alternate one scrolls its top off on a shrink, and
// the program that left the alternate screen finds its cursor on the row it was on.
func TestEmulator_resizeUnderAltScreen(t *testing.T) {
	e := New(10, 6)
	e.Write([]byte("1\r\n2\r\n3\r\n4\r\nP> \x1b[?1049hfull\x1b[2;3H"))
	e.Resize(10, 3)
	if diff := cmp.Diff(screen{[]string{"full", "", ""}, 1, 2}, screenNow(e)); diff != "" {
		t.Errorf("alternate screen after the shrink (-want +got):\n%s", diff)
	}
	e.Write([]byte("\x1b[?1049l"))
	if diff := cmp.Diff(screen{[]string{"3", "4", "P>"}, 2, 3}, screenNow(e)); diff != "" {
		t.Errorf("main screen after the shrink (-want +got):\n%s", diff)
	}
}

// A wide character that does not fit the last column starts the next row when autowrap
// is on, and is dropped when it is off, as in tmux.
func TestEmulator_wideAtLastColumn(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"wraps", "abcdefghi日x", []string{"abcdefghi", "日x", ""}},
		{"split across writes", "abcdefghi\xe6|\x97\xa5x", []string{"abcdefghi", "日x", ""}},
		{"fits exactly", "abcdefgh日x", []string{"abcdefgh日", "x", ""}},
		{"without autowrap", "\x1b[?7labcdefghi日y", []string{"abcdefghiy", "", ""}},
		{"emoji", "abcdefghi🙂", []string{"abcdefghi", "🙂", ""}},
		{"joined emoji stay one", "abcdefg👩\u200d💻", []string{"abcdefg👩\u200d💻", "", ""}},
		{"at the bottom it scrolls", "\x1b[3;1Habcdefghi日", []string{"", "abcdefghi", "日"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(10, 3)
			for _, part := range splitBar(tc.out) {
				e.Write([]byte(part))
			}
			if diff := cmp.Diff(tc.want, screenOf(e)); diff != "" {
				t.Errorf("after %q (-want +got):\n%s", tc.out, diff)
			}
		})
	}
}
