package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcp-harness/mcp-harness/internal/operator"
)

// What `attach` sends the person's terminal: it takes the whole terminal (the alternate
// screen, autowrap off so a row that arrives wider than the terminal after a resize
// cannot spill onto the next), paints each frame's rows where they differ from what is
// on the screen, keeps the last row for a status line, and puts the cursor where the
// session's is. Nothing of the program's own output reaches the terminal, only the
// frames the server renders, so the program's terminal modes (mouse reporting,
// bracketed paste, application keys) never become the person's.

// Sequences the attach terminal is entered and left with.
const (
	enterScreen = "\x1b[?1049h\x1b[?7l\x1b[0m\x1b[H\x1b[2J"
	// leaveScreen resets the styles, turns autowrap on and shows the cursor again, then
	// leaves the alternate screen: the person's shell is as it was.
	leaveScreen = "\x1b[0m\x1b[?7h\x1b[?25h\x1b[?1049l"
)

// screenPainter turns frames into the bytes that bring the person's terminal up to date.
type screenPainter struct {
	cols, rows int      // the person's terminal
	painted    []string // the view's rows as last painted; nil: everything is painted again
	status     string   // the status line as last painted
}

func newScreenPainter(cols, rows int) *screenPainter {
	return &screenPainter{cols: max(cols, 1), rows: max(rows, 1)}
}

// viewRows is how many rows frames have: the terminal's, less the status line (a
// terminal of one row has none).
func (p *screenPainter) viewRows() int {
	if p.rows < 2 {
		return p.rows
	}
	return p.rows - 1
}

// resize takes the terminal's new size: the next frame is painted whole.
func (p *screenPainter) resize(cols, rows int) {
	p.cols, p.rows = max(cols, 1), max(rows, 1)
	p.painted, p.status = nil, ""
}

// frame returns what paints f with the status line st: the rows that changed, the status
// line if it changed, and the cursor.
func (p *screenPainter) frame(f *operator.Frame, st string) []byte {
	var b strings.Builder
	b.WriteString("\x1b[?25l")
	n := p.viewRows()
	if p.painted == nil || len(p.painted) != n {
		b.WriteString("\x1b[0m\x1b[H\x1b[2J")
		p.painted = make([]string, n)
		for i := range p.painted {
			p.painted[i] = "\x00" // nothing a row can be: every row is painted
		}
		p.status = "\x00"
	}
	lines := f.Lines
	if f.NoScreen {
		lines = []string{fmt.Sprintf("(the session's terminal is %dx%d, too large for the server to keep its screen)", f.ScreenCols, f.ScreenRows)}
	}
	for i := range n {
		line := ""
		if i < len(lines) {
			line = lines[i]
		}
		if p.painted[i] == line {
			continue
		}
		// The row is erased before it is written, not after: a row as wide as the
		// terminal leaves the cursor on its last column (autowrap is off), and an erase
		// to the end of the line from there would take that column's character with it.
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[0m\x1b[2K%s\x1b[0m", i+1, line)
		p.painted[i] = line
	}
	b.WriteString(p.statusLine(st))
	if !f.CursorHidden && f.CursorRow >= 0 && f.CursorCol >= 0 && f.CursorRow < n {
		fmt.Fprintf(&b, "\x1b[%d;%dH\x1b[?25h", f.CursorRow+1, min(f.CursorCol, p.cols-1)+1)
	}
	return []byte(b.String())
}

// statusLine returns what paints st on the last row in reverse video, cut or padded to
// the width, or nothing when it has not changed (or there is no status line).
func (p *screenPainter) statusLine(st string) string {
	if p.rows < 2 || st == p.status {
		return ""
	}
	p.status = st
	text := st
	if w := utf8.RuneCountInString(text); w > p.cols {
		text = string([]rune(text)[:p.cols])
	} else {
		text += strings.Repeat(" ", p.cols-w)
	}
	// The cursor is saved and restored around it: a status change alone (a key in a
	// read-only view) must leave the cursor where the session's is.
	return fmt.Sprintf("\x1b7\x1b[%d;1H\x1b[0;7m%s\x1b[0m\x1b8", p.rows, text)
}

// statusText is the status line of a view of session id: the mode and its keys, who
// else watches, and how the view fits the session's screen.
func statusText(id string, write bool, f *operator.Frame, note string) string {
	parts := []string{" " + id}
	if write {
		parts = append(parts, "TYPING · C-] w: read-only · C-] d: detach")
	} else {
		parts = append(parts, "read-only · C-] w: type · C-] d: detach")
	}
	if note != "" {
		parts = append(parts, note)
	}
	if f != nil {
		if f.Viewers > 1 {
			parts = append(parts, fmt.Sprintf("%d watching", f.Viewers))
		}
		if f.ScreenCols != f.Cols || f.ScreenRows != f.Rows {
			parts = append(parts, fmt.Sprintf("its screen %dx%d, shown %dx%d", f.ScreenCols, f.ScreenRows, f.Cols, f.Rows))
		}
	}
	return strings.Join(parts, " │ ")
}

// keyEvent is what a key the person pressed asks of the view.
type keyEvent int

const (
	keyInput       keyEvent = iota + 1 // bytes for the session (keyAction.input)
	keyToggleWrite                     // C-] w (keyAction.write: the mode it leaves)
	keyDetach                          // C-] d
	keyReadOnly                        // a key pressed while the view is read-only
	keyUnknown                         // C-] and a key that means nothing after it
)

// keyAction is one thing a read of the person's keys asks for: the actions of a read are
// carried out in order, so that keys typed after C-] w in the same read go in once
// typing is on, and none typed before it do.
type keyAction struct {
	event keyEvent
	input []byte // keyInput: what goes to the session
	write bool   // keyToggleWrite: whether the view types from here on
}

// escapeKey is C-], the prefix of the view's own keys (as telnet's escape).
const escapeKey = 0x1d

// keyReader splits what the person types into the session's input and the view's own
// keys: C-] w toggles typing, C-] d detaches, C-] C-] types a C-] itself.
type keyReader struct {
	prefix bool // C-] was the last key
	write  bool // keys go to the session
}

// feed takes a read of the person's keys and returns what it asks for, in order: the
// bytes for the session (none while read-only) between the view's own keys. A key
// pressed while read-only is one keyReadOnly at the end.
func (k *keyReader) feed(p []byte) []keyAction {
	var out []keyAction
	readOnly := false
	typed := func(c byte) {
		if !k.write {
			readOnly = true
			return
		}
		if n := len(out); n > 0 && out[n-1].event == keyInput {
			out[n-1].input = append(out[n-1].input, c)
			return
		}
		out = append(out, keyAction{event: keyInput, input: []byte{c}})
	}
	for _, c := range p {
		switch {
		case k.prefix:
			k.prefix = false
			switch c {
			case 'w', 'W':
				k.write = !k.write
				out = append(out, keyAction{event: keyToggleWrite, write: k.write})
			case 'd', 'D':
				return append(out, keyAction{event: keyDetach}) // what follows was typed after leaving
			case escapeKey:
				typed(c)
			default:
				out = append(out, keyAction{event: keyUnknown})
			}
		case c == escapeKey:
			k.prefix = true
		default:
			typed(c)
		}
	}
	if readOnly {
		out = append(out, keyAction{event: keyReadOnly})
	}
	return out
}

// printable is s as it may be shown on the person's terminal. What a server says comes in
// part from the agent (a session's command, name, prompt and state, an asking program's
// command line, a refusal that quotes them), so its control characters (C0, DEL, C1),
// bytes that are not UTF-8 and the Unicode controls that reorder text are written as
// escapes (\x1b, \u009b), never sent to the terminal, where they could rewrite the line
// that asks for a password, set the title or the clipboard, or erase lines. Spaces stay.
func printable(s string) string {
	if !strings.ContainsFunc(s, needsEscape) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && needsEscape(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// printableLines is printable for a message of several lines: its line breaks stay.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}

// needsEscape reports a rune printable escapes: C0, DEL, C1, and the bidirectional
// controls, which make text show in another order than it is.
func needsEscape(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
