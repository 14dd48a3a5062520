package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/internal/operator"
)

func TestKeyReader_feed(t *testing.T) {
	in := func(s string) keyAction { return keyAction{event: keyInput, input: []byte(s)} }
	on := keyAction{event: keyToggleWrite, write: true}
	off := keyAction{event: keyToggleWrite, write: false}
	for _, tc := range []struct {
		name      string
		write     bool
		in        string
		want      []keyAction
		wantWrite bool
	}{
		{"read-only keys go nowhere", false, "ls\r", []keyAction{{event: keyReadOnly}}, false},
		{"typing", true, "ls\r", []keyAction{in("ls\r")}, true},
		// One read: typing turns on first, then the keys after it go in.
		{"C-] w starts typing, the rest goes in after it", false, "\x1dwls\r", []keyAction{on, in("ls\r")}, true},
		{"C-] w stops typing", true, "a\x1dwb", []keyAction{in("a"), off, {event: keyReadOnly}}, false},
		{"typing on, off and on in one read", false, "x\x1dwa\x1dwb\x1dwc", []keyAction{on, in("a"), off, on, in("c"), {event: keyReadOnly}}, true},
		{"C-] d detaches, what follows is dropped", true, "x\x1ddyz", []keyAction{in("x"), {event: keyDetach}}, true},
		{"C-] C-] sends C-]", true, "\x1d\x1d", []keyAction{in("\x1d")}, true},
		{"C-] and another key", true, "\x1dq", []keyAction{{event: keyUnknown}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := keyReader{write: tc.write}
			got := k.feed([]byte(tc.in))
			if !cmp.Equal(got, tc.want, cmp.AllowUnexported(keyAction{})) || k.write != tc.wantWrite {
				t.Errorf("feed(%q) = %+v, write %v; want %+v, write %v", tc.in, got, k.write, tc.want, tc.wantWrite)
			}
		})
	}
	// The prefix carries across reads: C-] in one, w in the next.
	k := keyReader{}
	if got := k.feed([]byte{escapeKey}); len(got) != 0 {
		t.Errorf("C-] alone = %v, want nothing yet", got)
	}
	if got := k.feed([]byte("w")); !cmp.Equal(got, []keyAction{on}, cmp.AllowUnexported(keyAction{})) || !k.write {
		t.Errorf("w after C-] in the next read = %v, write %v; want a toggle to typing", got, k.write)
	}
}

func FuzzKeyReader(f *testing.F) {
	for _, s := range []string{"ls\r", "\x1dw", "\x1dd", "\x1d\x1d", "\x1d", "\x1dwls\r"} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, write bool) {
		k := keyReader{write: write}
		sent, mode := 0, write
		for _, a := range k.feed(in) {
			switch a.event {
			case keyInput:
				// Input goes only while the view types, as the toggles before it say.
				if !mode {
					t.Errorf("feed(%q, write %v) sends %q while read-only", in, write, a.input)
				}
				sent += len(a.input)
			case keyToggleWrite:
				if a.write == mode {
					t.Errorf("feed(%q, write %v): a toggle that leaves write %v", in, write, a.write)
				}
				mode = a.write
			}
		}
		// It never sends more than was typed.
		if sent > len(in) || mode != k.write {
			t.Errorf("feed(%q, write %v) sent %d bytes, ends write %v (reader %v)", in, write, sent, mode, k.write)
		}
	})
}

func TestScreenPainter(t *testing.T) {
	p := newScreenPainter(10, 4) // three rows of view, one of status
	f := &operator.Frame{Cols: 10, Rows: 3, Lines: []string{"one", "\x1b[1mtwo\x1b[m", ""}, CursorRow: 1, CursorCol: 3, ScreenCols: 10, ScreenRows: 3}
	got := string(p.frame(f, "st"))
	for _, want := range []string{"\x1b[2J", "\x1b[1;1H\x1b[0m\x1b[2Kone\x1b[0m", "\x1b[2;1H\x1b[0m\x1b[2K\x1b[1mtwo\x1b[m\x1b[0m", "\x1b[4;1H\x1b[0;7mst        \x1b[0m", "\x1b[2;4H\x1b[?25h"} {
		if !strings.Contains(got, want) {
			t.Errorf("first frame %q: want %q in it", got, want)
		}
	}
	// Only what changed is painted again.
	f2 := &operator.Frame{Cols: 10, Rows: 3, Lines: []string{"one", "two!", ""}, CursorRow: 1, CursorCol: 4, CursorHidden: true}
	got = string(p.frame(f2, "st"))
	if strings.Contains(got, "one") || strings.Contains(got, "\x1b[2J") || !strings.Contains(got, "\x1b[2;1H\x1b[0m\x1b[2Ktwo!") || strings.Contains(got, "0;7m") || strings.Contains(got, "?25h") {
		t.Errorf("second frame %q: want row 2 alone, no status, the cursor left hidden", got)
	}
	// A resize paints everything again; a long status is cut to the width.
	p.resize(5, 2)
	got = string(p.frame(f2, "a very long status"))
	if !strings.Contains(got, "\x1b[2J") || !strings.Contains(got, "\x1b[1;1H\x1b[0m\x1b[2Kone") || !strings.Contains(got, "0;7ma ver\x1b[0m") || strings.Contains(got, "two") {
		t.Errorf("frame after resize to 5x2 %q: want a full paint of one row and a cut status", got)
	}
}

func TestStatusText(t *testing.T) {
	f := &operator.Frame{Cols: 80, Rows: 23, ScreenCols: 120, ScreenRows: 40, Viewers: 2}
	got := statusText("s1-2", false, f, "")
	for _, want := range []string{"s1-2", "read-only", "C-] w", "C-] d", "2 watching", "its screen 120x40, shown 80x23"} {
		if !strings.Contains(got, want) {
			t.Errorf("statusText() = %q, want %q in it", got, want)
		}
	}
	if got := statusText("s1-2", true, nil, ""); !strings.Contains(got, "TYPING") {
		t.Errorf("statusText(write) = %q, want TYPING", got)
	}
}
