package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/internal/operator"
)

func TestKeyReader_feed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		write      bool
		in         string
		wantInput  string
		wantEvents []keyEvent
		wantWrite  bool
	}{
		{"read-only keys go nowhere", false, "ls\r", "", []keyEvent{keyReadOnly}, false},
		{"typing", true, "ls\r", "ls\r", nil, true},
		{"C-] w starts typing, the rest goes in", false, "\x1dwls\r", "ls\r", []keyEvent{keyToggleWrite}, true},
		{"C-] w stops typing", true, "a\x1dwb", "a", []keyEvent{keyToggleWrite, keyReadOnly}, false},
		{"C-] d detaches, what follows is dropped", true, "x\x1ddyz", "x", []keyEvent{keyDetach}, true},
		{"C-] C-] sends C-]", true, "\x1d\x1d", "\x1d", nil, true},
		{"C-] and another key", true, "\x1dq", "", []keyEvent{keyUnknown}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := keyReader{write: tc.write}
			input, events := k.feed([]byte(tc.in))
			if string(input) != tc.wantInput || !cmp.Equal(events, tc.wantEvents) || k.write != tc.wantWrite {
				t.Errorf("feed(%q) = %q, %v, write %v; want %q, %v, write %v", tc.in, input, events, k.write, tc.wantInput, tc.wantEvents, tc.wantWrite)
			}
		})
	}
	// The prefix carries across reads: C-] in one, w in the next.
	k := keyReader{}
	if _, ev := k.feed([]byte{escapeKey}); len(ev) != 0 {
		t.Errorf("C-] alone = %v, want no event yet", ev)
	}
	if _, ev := k.feed([]byte("w")); !cmp.Equal(ev, []keyEvent{keyToggleWrite}) || !k.write {
		t.Errorf("w after C-] in the next read = %v, write %v; want a toggle to typing", ev, k.write)
	}
}

func FuzzKeyReader(f *testing.F) {
	for _, s := range []string{"ls\r", "\x1dw", "\x1dd", "\x1d\x1d", "\x1d"} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, write bool) {
		k := keyReader{write: write}
		input, _ := k.feed(in)
		// Only typing sends, and it never sends more than was typed.
		if len(input) > len(in) || !write && !strings.Contains(string(in), "\x1dw") && len(input) > 0 {
			t.Errorf("feed(%q, write %v) sent %q", in, write, input)
		}
	})
}

func TestScreenPainter(t *testing.T) {
	p := newScreenPainter(10, 4) // three rows of view, one of status
	f := &operator.Frame{Cols: 10, Rows: 3, Lines: []string{"one", "\x1b[1mtwo\x1b[m", ""}, CursorRow: 1, CursorCol: 3, ScreenCols: 10, ScreenRows: 3}
	got := string(p.frame(f, "st"))
	for _, want := range []string{"\x1b[2J", "\x1b[1;1Hone\x1b[0m\x1b[K", "\x1b[2;1H\x1b[1mtwo\x1b[m\x1b[0m\x1b[K", "\x1b[4;1H\x1b[0;7mst        \x1b[0m", "\x1b[2;4H\x1b[?25h"} {
		if !strings.Contains(got, want) {
			t.Errorf("first frame %q: want %q in it", got, want)
		}
	}
	// Only what changed is painted again.
	f2 := &operator.Frame{Cols: 10, Rows: 3, Lines: []string{"one", "two!", ""}, CursorRow: 1, CursorCol: 4, CursorHidden: true}
	got = string(p.frame(f2, "st"))
	if strings.Contains(got, "one") || strings.Contains(got, "\x1b[2J") || !strings.Contains(got, "\x1b[2;1Htwo!") || strings.Contains(got, "0;7m") || strings.Contains(got, "?25h") {
		t.Errorf("second frame %q: want row 2 alone, no status, the cursor left hidden", got)
	}
	// A resize paints everything again; a long status is cut to the width.
	p.resize(5, 2)
	got = string(p.frame(f2, "a very long status"))
	if !strings.Contains(got, "\x1b[2J") || !strings.Contains(got, "\x1b[1;1Hone") || !strings.Contains(got, "0;7ma ver\x1b[0m") || strings.Contains(got, "two") {
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
