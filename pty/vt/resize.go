package vt

import (
	"reflect"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	charmvt "github.com/charmbracelet/x/vt"
)

// Resizing as xterm and tmux do it, which vt v0.1.0 does not: it cuts the bottom of the
// screen off when it shrinks, the cursor row with it, and grows with blank rows.
//
//   - Shrinking drops the rows below the cursor first, then scrolls the top rows off
//     (into the main screen's history), so the cursor row stays the last one shown.
//     The main screen hidden behind the alternate one does the same with its own
//     cursor (tmux does when it gets back to it).
//   - Growing brings the main screen's newest history rows back at the top, the cursor
//     moving down with its row, and adds blank rows after them.
//   - The width is cut or padded: no rewrapping (xterm does none; tmux rewraps the main
//     screen's long lines).
//
// The history is the rows scrolled off the top of the main screen since a shrink (by the
// shrink, output or ED 2), at most historyRows of them. It is kept from a shrink on only,
// and dropped once a grow has taken it all back, by ED 3, and when the emulator skips
// output: vt copies every row that scrolls off into it, and the garbage slows its parsing
// down by a third. So a grow with no shrink before it adds blank rows, as tmux does when
// it has no history.

// historyCells bounds the history's cells, each about 112 bytes: 100 rows of 80 columns.
const historyCells = 8192

// historyRows is how many rows of history a screen cols wide keeps.
func historyRows(cols int) int { return max(1, historyCells/max(cols, 1)) }

// internals are the parts of a vt emulator that resizing, wrapping and skipping need
// and vt does not export, reached by reflection like tame's. A vt whose layout differs
// gets nil, and with it vt's own behaviour (TestEmulatorTamed says which).
type internals struct {
	scrs      [2]*charmvt.Screen // main, alternate
	bufs      [2]*uv.RenderBuffer
	cur       [2]*charmvt.Cursor
	saved     [2]*charmvt.Cursor
	atPhantom *bool // the cursor waits at the last column for the next character to wrap
	modes     *ansi.Modes
}

func reach(e *charmvt.Emulator) *internals {
	v := reflect.ValueOf(e).Elem()
	scrs, phantom, modes := v.FieldByName("scrs"), v.FieldByName("atPhantom"), v.FieldByName("modes")
	if !scrs.IsValid() || scrs.Kind() != reflect.Array || scrs.Len() != 2 || scrs.Type().Elem() != reflect.TypeFor[charmvt.Screen]() ||
		!phantom.IsValid() || phantom.Type() != reflect.TypeFor[bool]() ||
		!modes.IsValid() || modes.Type() != reflect.TypeFor[ansi.Modes]() {
		return nil
	}
	in := &internals{
		atPhantom: (*bool)(unsafe.Pointer(phantom.UnsafeAddr())),
		modes:     (*ansi.Modes)(unsafe.Pointer(modes.UnsafeAddr())),
	}
	for i := range 2 {
		s := scrs.Index(i)
		buf, cur, saved := s.FieldByName("buf"), s.FieldByName("cur"), s.FieldByName("saved")
		if !buf.IsValid() || buf.Type() != reflect.TypeFor[*uv.RenderBuffer]() || buf.IsNil() ||
			!cur.IsValid() || cur.Type() != reflect.TypeFor[charmvt.Cursor]() ||
			!saved.IsValid() || saved.Type() != reflect.TypeFor[charmvt.Cursor]() {
			return nil
		}
		in.scrs[i] = (*charmvt.Screen)(unsafe.Pointer(s.UnsafeAddr()))
		in.bufs[i] = *(**uv.RenderBuffer)(unsafe.Pointer(buf.UnsafeAddr()))
		in.cur[i] = (*charmvt.Cursor)(unsafe.Pointer(cur.UnsafeAddr()))
		in.saved[i] = (*charmvt.Cursor)(unsafe.Pointer(saved.UnsafeAddr()))
	}
	return in
}

// resize changes e's size as xterm and tmux do (see above).
func (in *internals) resize(e *charmvt.Emulator, cols, rows int) {
	oldRows := e.Height()
	alt := e.IsAltScreen()
	shown := 0
	if alt {
		shown = 1
	}
	if n := oldRows - rows; n > 0 {
		if in.scrs[0].Scrollback() == nil {
			in.scrs[0].SetScrollback(charmvt.NewScrollback(historyRows(cols)))
		}
		in.shrink(shown, n)
		if alt {
			in.shrink(0, n)
		}
	}
	e.Resize(cols, rows) // clamps the shown screen's cursor to the last row
	if !alt {
		// vt sets the shown screen's cursor only; the hidden one must fit as well.
		in.clamp(1, cols, rows)
	} else {
		in.clamp(0, cols, rows)
	}
	if n := rows - oldRows; n > 0 {
		in.pull(n)
	}
	if sb := in.scrs[0].Scrollback(); sb != nil {
		sb.SetMaxLines(historyRows(cols))
	}
}

// shrink takes n rows off screen i, which is still at its old height: the rows below the
// cursor first, then the top ones, into the history for the main screen. The rows it
// frees at the bottom are cut off by the resize after it.
func (in *internals) shrink(i, n int) {
	lines := in.bufs[i].Lines
	n -= min(n, max(len(lines)-1-in.cur[i].Y, 0))
	n = min(n, len(lines))
	if n <= 0 {
		return
	}
	if i == 0 {
		in.scrs[0].Scrollback().PushN(in.bufs[0], 0, n)
	}
	copy(lines, lines[n:])
	for k := len(lines) - n; k < len(lines); k++ {
		lines[k] = blankLine(len(lines[0]))
	}
	in.cur[i].Y = max(in.cur[i].Y-n, 0)
	in.saved[i].Y = max(in.saved[i].Y-n, 0)
}

// pull brings up to n rows of history back at the top of the main screen, which has just
// grown by n blank rows at the bottom.
func (in *internals) pull(n int) {
	sb := in.scrs[0].Scrollback()
	if sb == nil {
		return
	}
	hist := sb.Lines()
	n = min(n, len(hist))
	if n == 0 {
		return
	}
	lines := in.bufs[0].Lines
	cols := len(lines[0])
	copy(lines[n:], lines[:len(lines)-n])
	for k := range n {
		l := blankLine(cols)
		copy(l, hist[len(hist)-n+k])
		lines[k] = l
	}
	in.bufs[0].Touched = nil
	in.cur[0].Y += n
	in.saved[0].Y += n
	if n == len(hist) {
		in.forget() // all back: no history until the next shrink
		return
	}
	// Take the rows out of the history: vt has no way to, so it is refilled with the rest.
	rest := make([]uv.Line, len(hist)-n)
	copy(rest, hist)
	sb.Clear()
	for _, l := range rest {
		sb.Push(l)
	}
}

// clamp keeps screen i's cursors inside cols x rows.
func (in *internals) clamp(i, cols, rows int) {
	for _, c := range []*charmvt.Cursor{in.cur[i], in.saved[i]} {
		c.X, c.Y = min(c.X, cols-1), min(c.Y, rows-1)
	}
}

// forget drops the history: the output it came from was skipped.
func (in *internals) forget() { in.scrs[0].SetScrollback(nil) }

func blankLine(cols int) uv.Line {
	l := make(uv.Line, cols)
	for i := range l {
		l[i] = uv.EmptyCell
	}
	return l
}

// wrapWide moves the cursor to the start of the next row when a wide character is about
// to be printed in the last column with autowrap on, as xterm and tmux do; vt would
// drop the character. With autowrap off it is dropped, as in tmux.
func (in *internals) wrapWide(e *charmvt.Emulator) {
	if e.CursorPosition().X != e.Width()-1 || *in.atPhantom || !(*in.modes)[ansi.ModeAutoWrap].IsSet() {
		return // it fits, or vt wraps before it anyway, or it is not to wrap
	}
	_, _ = e.Write([]byte("\r\n"))
}

// endWide is called once a wide character is printed: when it took the last two columns,
// the next character must wrap (the pending wrap xterm and tmux keep there), but vt puts
// the cursor on the last column as if it were free, and the next character overwrites
// the wide one's right half.
func (in *internals) endWide(e *charmvt.Emulator) {
	p := e.CursorPosition()
	cols := e.Width()
	if p.X != cols-1 || *in.atPhantom || !(*in.modes)[ansi.ModeAutoWrap].IsSet() {
		return
	}
	if c := e.CellAt(cols-2, p.Y); c != nil && c.Width == 2 {
		*in.atPhantom = true
	}
}

// joins reports whether r continues the character cluster that prev is the last
// character of: a combining mark, a variation selector or ZWJ (all of width 0), a skin
// tone, the character after a ZWJ, the second half of a flag.
func joins(prev, r rune) bool {
	isRI := func(c rune) bool { return c >= 0x1f1e6 && c <= 0x1f1ff }
	return prev == 0x200d || isRI(prev) && isRI(r) || r >= 0x1f3fb && r <= 0x1f3ff ||
		ansi.StringWidth(string(r)) == 0
}
