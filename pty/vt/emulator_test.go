package vt

import (
	"reflect"
	"testing"
	"unsafe"

	charmvt "github.com/charmbracelet/x/vt"
	"github.com/google/go-cmp/cmp"
)

func screenOf(e Emulator) []string { return e.Lines(nil) }

func TestEmulator_insertMode(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string
	}{
		{"IRM pushes the line right", "abc\r\x1b[4hX\x1b[4l", "Xabc"},
		{"IRM with a wide character", "abc\r\x1b[4h日\x1b[4l", "日abc"},
		{"IRM off again overwrites", "abc\r\x1b[4hX\x1b[4lY", "XYbc"},
		{"IRM set among other modes", "abc\r\x1b[20;4hX\x1b[4;20l", "Xabc"},
		{"IRM in pieces across writes", "abc\r\x1b[4|h\xe6\x97|\xa5\x1b[4l", "日abc"},
		{"DEC private mode 4 is not IRM", "abc\r\x1b[?4hX", "Xbc"},
		{"a charset designation is not text", "abc\r\x1b[4h\x1b(BX\x1b[4l", "Xabc"},
		{"an OSC is not text", "abc\r\x1b[4h\x1b]2;t\x07X\x1b[4l", "Xabc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(10, 2)
			for _, part := range splitBar(tc.in) {
				e.Write([]byte(part))
			}
			if got := screenOf(e)[0]; got != tc.want {
				t.Errorf("row 0 after %q = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func splitBar(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '|' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// TestEmulator_queriesDoNotBlock feeds the emulator every query it would answer into its
// pipe: with nobody reading that pipe, vt blocks (charmbracelet/x#939) unless it is
// closed.
func TestEmulator_queriesDoNotBlock(t *testing.T) {
	e := New(20, 5)
	e.Write([]byte("\x1b[c\x1b[>c\x1b[5n\x1b[6n\x1b[?6n\x1b[?2004$p\x1b[4$p\x1b]10;?\x07\x1b]11;?\x1b\\\x1b[?2048hok"))
	if got := screenOf(e)[0]; got != "ok" {
		t.Errorf("row 0 = %q, want ok", got)
	}
}

func TestEmulator_fixes(t *testing.T) {
	e := New(20, 3)
	e.Write([]byte("\x1b]0;a;b;c\x07keep\x1b[3J"))
	if got := screenOf(e)[0]; got != "keep" {
		t.Errorf("after ED 3: row 0 = %q, want keep (ED 3 erases saved lines only)", got)
	}
	if got := e.Title(); got != "a;b;c" {
		t.Errorf("title = %q, want a;b;c", got)
	}
	e.Write([]byte("\x1b]1;icon\x07"))
	if got := e.Title(); got != "a;b;c" {
		t.Errorf("title after OSC 1 = %q, want it unchanged", got)
	}
}

// TestEmulatorTamed checks that tame reached into vt: without it every emulator keeps
// two 10,000-line scrollbacks and a 4 MiB parser buffer. A vt whose fields changed makes
// this fail rather than waste memory unnoticed.
func TestEmulatorTamed(t *testing.T) {
	e := charmvt.NewEmulator(80, 24)
	if !tame(e) {
		t.Fatal("tame: vt's layout changed; see charmVT")
	}
	scrs := reflect.ValueOf(e).Elem().FieldByName("scrs")
	for i := range scrs.Len() {
		scr := (*charmvt.Screen)(unsafe.Pointer(scrs.Index(i).UnsafeAddr()))
		if scr.Scrollback() != nil {
			t.Errorf("screen %d still has a scrollback", i)
		}
	}
	// Scrolling on both screens keeps nothing.
	var ee Emulator = &charmVT{e: e}
	for i := 0; i < 200; i++ {
		ee.Write([]byte("line\r\n"))
	}
	ee.Write([]byte("\x1b[?1049h"))
	for i := 0; i < 200; i++ {
		ee.Write([]byte("line\r\n"))
	}
	if n := e.ScrollbackLen(); n != 0 {
		t.Errorf("scrollback holds %d lines, want 0", n)
	}
	if reach(e) == nil {
		t.Error("reach: vt's layout changed; resizing, wide characters and history fall back to vt's")
	}
	// After a shrink the main screen keeps a few rows of history, no more.
	ne := New(80, 24).(*charmVT)
	ne.Resize(80, 12)
	for i := 0; i < 200; i++ {
		ne.Write([]byte("line\r\n"))
	}
	if n, want := ne.e.ScrollbackLen(), historyRows(80); n != want {
		t.Errorf("history holds %d lines, want %d", n, want)
	}
}

func TestEmulator_lines(t *testing.T) {
	e := New(8, 3)
	e.Write([]byte("a\x1b[41m   \x1b[m\r\n日本語ab"))
	want := []string{"a", "日本語ab", ""}
	if diff := cmp.Diff(want, screenOf(e)); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if row, col := e.Cursor(); row != 1 || col != 7 {
		t.Errorf("cursor %d,%d, want 1,7 (pending wrap at the last column)", row, col)
	}
}

func TestEmulator_Render(t *testing.T) {
	e := New(10, 3)
	e.Write([]byte("ab\x1b[1mcd\x1b[0m\r\n日本x\r\nlast"))
	for _, tc := range []struct {
		name                  string
		top, left, cols, rows int
		want                  []string
	}{
		{"whole", 0, 0, 10, 3, []string{"ab\x1b[1mcd\x1b[m", "日本x", "last"}},
		{"cropped right", 0, 0, 3, 3, []string{"ab\x1b[1mc\x1b[m", "日", "las"}},
		{"cropped left, a wide character cut in half", 0, 1, 4, 2, []string{"b\x1b[1mcd\x1b[m", " 本x"}},
		{"padded below", 1, 0, 10, 4, []string{"日本x", "last", "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := e.Render(nil, tc.top, tc.left, tc.cols, tc.rows)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Render(%d, %d, %d, %d) (-want +got):\n%s", tc.top, tc.left, tc.cols, tc.rows, diff)
			}
		})
	}
	if e.CursorHidden() {
		t.Errorf("CursorHidden() = true before DECTCEM off")
	}
	e.Write([]byte("\x1b[?25l"))
	if !e.CursorHidden() {
		t.Errorf("CursorHidden() = false after DECTCEM off")
	}
}

// BenchmarkEmulator_Render renders a full 120x40 screen of shell-like text, a few rows of
// it styled: what each frame of a viewer costs.
func BenchmarkEmulator_Render(b *testing.B) {
	e := New(120, 40)
	for i := range 40 {
		if i%5 == 0 {
			e.Write([]byte("\x1b[1;32mPROMPT>\x1b[0m ls -la /usr/share/doc | head\r\n"))
			continue
		}
		e.Write([]byte("drwxr-xr-x  2 root root  4096 Jan  1 00:00 some-package-name-here\r\n"))
	}
	var dst []string
	for b.Loop() {
		dst = e.Render(dst[:0], 0, 0, 120, 40)
	}
}

// Render shows the alternate screen while it is on, and hyperlinks as OSC 8.
func TestEmulator_RenderAltAndLinks(t *testing.T) {
	e := New(20, 2)
	e.Write([]byte("main\x1b[?1049h\x1b[Halt \x1b]8;;http://x\x07link\x1b]8;;\x07"))
	got := e.Render(nil, 0, 0, 20, 1)
	if want := "alt \x1b]8;;http://x\x07link\x1b]8;;\x07"; got[0] != want {
		t.Errorf("Render(alternate screen) = %q, want %q", got[0], want)
	}
	e.Write([]byte("\x1b[?1049l"))
	if got := e.Render(nil, 0, 0, 20, 1); got[0] != "main" {
		t.Errorf("Render(main screen again) = %q, want main", got[0])
	}
}
