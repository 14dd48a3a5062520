// Package clean turns terminal output into the text a person would have read on the
// screen, caps that text for a reply, and matches WaitFor patterns against it as it
// streams. It is the text side of a session's output: pure code over bytes, which the
// pty package feeds from its ring buffer under its own lock.
package clean

import (
	"bytes"
	"unicode/utf8"
)

// Text turns terminal output into the text a person would have read on the screen, for a
// model that cannot run a terminal emulator in its head:
//
//   - escape sequences are removed: CSI (colours, cursor moves, private modes such as
//     ESC[?2004h), OSC (titles, hyperlinks; ended by BEL or ESC \), DCS, SOS, PM and APC
//     strings, charset selections (ESC ( B) and two-byte escapes (ESC =, ESC 7, ...);
//   - DEC line drawing (ESC ( 0 or ESC ) 0 with SO, until ESC ( B or SI) is shown as the
//     box characters a terminal draws for it (lqqk reads as ┌──┐);
//   - CRLF becomes LF;
//   - each line is kept in its final visible state: a carriage return moves back to the
//     start of the line and what follows overwrites it cell by cell, as on a real
//     terminal, so "10%\r50%\r100%\n" gives "100%\n" and a shorter overwrite keeps the tail
//     of the longer text ("abcdef\rXY" gives "XYcdef"; progress bars that want a clean line
//     send ESC[K, which is honoured). Backspace, cursor left/right/column moves, erase in
//     line (ESC[K), delete/insert/erase characters (ESC[P, ESC[@, ESC[X) are applied the
//     same way, so a readline edit shows as the final command line;
//   - vertical cursor movement and absolute positioning start a new line (the cleaner
//     models one line, not a screen: a full-screen program's redraws come out as a
//     sequence of lines; use raw output or the screen for those);
//   - other control characters are dropped, except \n and \t; invalid UTF-8 becomes U+FFFD.
//
// The result never contains ESC and is always valid UTF-8. Each line ends at its last
// visible character: cells left blank and spaces at the end of a line are dropped, as a
// screen shows no difference between them; only the last line, where the cursor is,
// keeps the spaces written before the cursor, since a prompt such as "$ " ends in one.
// Text models no width (TextWidth does).
func Text(b []byte) string {
	return string(Bytes(b))
}

// TextWidth is Text for a terminal cols wide. A line longer than the width wraps onto the
// next row where the terminal wraps it, and a carriage return goes back to the start of
// that row only, as on the screen; but the text joins the rows back into one line, as a
// copy from the terminal (or tmux capture-pane -J) does: only line feeds end lines. The
// one exception is spaces padded across the margin and then a carriage return, which is
// how zsh's PROMPT_SP moves to a fresh row without a line feed: that ends the line.
// cols <= 0 means no wrapping.
func TextWidth(b []byte, cols int) string {
	var c cleaner
	c.init()
	c.setWidth(cols)
	c.out = make([]byte, 0, len(b)+len(b)/8)
	c.write(b)
	return string(c.bytes())
}

// Bytes is Text without the copy into a string: a read cleans up to a whole ring
// buffer of output only to keep a few kilobytes of it (Cap), and every copy of that
// text counts in the server's peak memory.
func Bytes(b []byte) []byte {
	var c cleaner
	c.init()
	c.out = make([]byte, 0, len(b)+len(b)/8) // most output cleans to about its own size
	c.write(b)
	return c.bytes()
}

// maxCol bounds how far cursor movement may pad a line with blanks, so a few bytes of
// hostile escape sequences cannot expand into megabytes of spaces. It matches the largest
// terminal width the package accepts.
const maxCol = 1000

// blank marks a cell that was never written or was erased. It renders as a space inside a
// line and is dropped at its end, which is how a screen looks.
const blank rune = 0

// wideTail is the second cell of a wide character, tabFill a cell a tab moved over at the
// end of the line: neither renders by itself (the character, or the tab, stands for it).
const (
	wideTail rune = -1
	tabFill  rune = -2
)

type cleanState uint8

const (
	stGround   cleanState = iota
	stEsc                 // after ESC
	stEscInter            // ESC followed by intermediates (0x20-0x2f), e.g. ESC ( B
	stSS                  // ESC N / ESC O: one more character belongs to the sequence
	stCSI                 // ESC [
	stOSC                 // ESC ]: until BEL or ST
	stOSCEsc              // ESC inside an OSC string
	stStr                 // DCS, SOS, PM, APC: until ST
	stStrEsc              // ESC inside one of those
)

// cleaner is the streaming form of Text: bytes can be fed in chunks of any size (a
// sequence or a UTF-8 character may span chunks) and bytes() renders the text so far
// without disturbing the state. Waiting for a pattern uses it to clean only the new
// output of each chunk instead of the whole text again.
type cleaner struct {
	out  []byte // finished lines, each ending in \n
	line []rune // the current line's cells
	col  int    // the cursor's cell in line (may be past its end)
	st   cleanState

	// width is the terminal's, 0 for no wrapping; wrapNext says a character was written
	// in the last column, so the next one starts a new row (the terminal's pending wrap).
	// A row the line wraps off is final (the cursor cannot go back to it in this model)
	// and goes into out with no line break: the text joins soft-wrapped rows into one
	// line, as a copy from a terminal does. softAt is where in out the current line's
	// first row begins once one has wrapped, else -1.
	width    int
	wrapNext bool
	softAt   int
	// DEC line drawing: g0 and g1 say which of the two charsets is the DEC special
	// graphics set, shifted whether SO selected G1; inter is the escape's intermediate.
	g0, g1, shifted bool
	inter           byte

	// The alternate screen (DEC modes 1047 and 1049, full-screen programs): while alt is
	// on, what is drawn is not text (unless keepAlt) and the main screen's line waits in
	// main; sawAlt says a switch was seen at all. csiInter: the CSI has intermediates.
	alt, keepAlt, sawAlt bool
	main                 []rune
	mainCol              int
	mainWrap             bool
	csiInter             bool

	params  []byte // CSI parameter bytes (bounded)
	private bool   // CSI has a private marker (<=>?) or intermediates: not interpreted
	utf     [utf8.UTFMax]byte
	nutf    int

	// Raw offsets, for the omission marker's "re-read from" hint: pos is the index of the
	// byte being processed, lineRaw where the current line began. When watch >= 0 the
	// cleaner records in found the raw offset of the line holding cleaned byte watch.
	pos     int64
	lineRaw int64
	watch   int
	found   int64

	// With keepTail > 0 the cleaner keeps only the first keepHead bytes of its text and
	// at least the last keepTail, and counts in dropped the bytes it left out between
	// them (see cleanCapped).
	keepHead, keepTail int
	dropped            int64
	// hold, when >= 0, is where in out the text a caller still needs begins: it is kept
	// as well, and moves with it when the middle is dropped (the WaitFor window).
	hold int
	// heads holds where each line starting within the first keepHead bytes of the text
	// begins, cleaned and raw (see headLineStart); kept only with keepTail > 0.
	heads []headLine
}

func (c *cleaner) init() {
	c.softAt = -1
	c.watch = -1
	c.found = -1
	c.hold = -1
	if c.keepTail > 0 {
		c.heads = append(c.heads[:0], headLine{0, 0})
	}
}

func (c *cleaner) write(p []byte) {
	for i := 0; i < len(p); {
		b := p[i]
		if c.st == stGround && c.nutf == 0 && b >= 0x20 && b < 0x7f && c.col == len(c.line) && !c.wrapNext && !c.lineDrawing() {
			// Fast paths: printable ASCII appended at the end of the line, the bulk of
			// output. A whole line of it, ended here by a line feed, goes straight
			// into the text: it is already what the screen shows. Only what fits
			// before the right margin is taken here; put wraps the rest.
			// Look no further than the right margin: scanning on to the end of p
			// for every row of a long line made a read of one quadratic in its length.
			limit := len(p)
			if c.width > 0 {
				limit = min(limit, i+c.width-c.col)
			}
			j := i + 1
			for j < limit && p[j] >= 0x20 && p[j] < 0x7f {
				j++
			}
			if len(c.line) == 0 && !c.alt {
				k := j
				if k+1 < len(p) && p[k] == '\r' {
					k++
				}
				// The last row of a wrapped line goes straight in too, unless it shows
				// nothing: then the spaces ending the rows before it go (trimSoft).
				if row := bytes.TrimRight(p[i:j], " "); k < len(p) && p[k] == '\n' && (len(row) > 0 || c.softAt < 0) {
					c.out = append(c.out, row...)
					c.pos += int64(k - i)
					c.endLine(c.pos + 1)
					c.pos++
					i = k + 1
					continue
				}
			}
			for _, b := range p[i:j] {
				c.line = append(c.line, rune(b))
			}
			c.col += j - i
			c.pos += int64(j - i)
			i = j
			if c.width > 0 && c.col >= c.width {
				c.col, c.wrapNext = c.width-1, true
			}
			continue
		}
		if c.step(b) {
			i++
			c.pos++
		}
	}
}

// step processes one byte and reports whether it was consumed; false means the byte ended
// a sequence without belonging to it and must be processed again in the new state.
func (c *cleaner) step(b byte) bool {
	switch c.st {
	case stGround:
		return c.ground(b)
	case stEsc:
		switch {
		case b == '[':
			c.st = stCSI
			c.params = c.params[:0]
			c.private, c.csiInter = false, false
		case b == ']':
			c.st = stOSC
		case b == 'P' || b == 'X' || b == '^' || b == '_':
			c.st = stStr
		case b == 'N' || b == 'O':
			c.st = stSS
		case b == 'E': // NEL: next line
			c.newline()
			c.st = stGround
		case b >= 0x20 && b <= 0x2f:
			c.st = stEscInter
			c.inter = b
		case b >= 0x30 && b <= 0x7e:
			c.st = stGround // a two-byte escape: ESC 7, ESC =, ESC M, ...
		default:
			return c.inSequence(b)
		}
	case stEscInter:
		switch {
		case b >= 0x20 && b <= 0x2f:
		case b >= 0x30 && b <= 0x7e:
			c.st = stGround
			// ESC ( F designates G0, ESC ) F G1: F 0 is DEC line drawing, any
			// other final a text charset.
			switch c.inter {
			case '(':
				c.g0 = b == '0'
			case ')':
				c.g1 = b == '0'
			}
		default:
			return c.inSequence(b)
		}
	case stSS:
		switch {
		case b >= 0x20 && b < 0x7f:
			c.st = stGround
		case b == 0x1b:
			c.st = stEsc
		default:
			c.st = stGround
			return false
		}
	case stCSI:
		switch {
		case b >= 0x30 && b <= 0x3f:
			if b >= '<' {
				c.private = true
			}
			if len(c.params) < 32 {
				c.params = append(c.params, b)
			}
		case b >= 0x20 && b <= 0x2f:
			c.private, c.csiInter = true, true
		case b >= 0x40 && b <= 0x7e:
			c.st = stGround
			switch {
			case !c.private:
				c.csi(b)
			case (b == 'h' || b == 'l') && !c.csiInter && len(c.params) > 0 && c.params[0] == '?':
				c.decModes(b == 'h')
			}
		default:
			return c.inSequence(b)
		}
	case stOSC:
		switch b {
		case 0x07:
			c.st = stGround
		case 0x1b:
			c.st = stOSCEsc
		case 0x18, 0x1a:
			c.st = stGround
		}
	case stStr:
		switch b {
		case 0x1b:
			c.st = stStrEsc
		case 0x18, 0x1a:
			c.st = stGround
		}
	case stOSCEsc, stStrEsc:
		if b == '\\' {
			c.st = stGround
			return true
		}
		// Any ESC ends the string; this one starts a new sequence.
		c.st = stEsc
		return false
	}
	return true
}

// inSequence handles a byte that an escape or CSI sequence has no use of, the same in each:
// ESC starts the sequence over, CAN and SUB abort it, C0 controls act even inside a
// sequence (as on a VT), DEL is ignored, and anything else ends the sequence without
// belonging to it (false: the byte is processed again in the ground state).
func (c *cleaner) inSequence(b byte) bool {
	switch {
	case b == 0x1b:
		c.st = stEsc
	case b == 0x18 || b == 0x1a:
		c.st = stGround
	case b < 0x20:
		c.control(b)
	case b == 0x7f:
	default:
		c.st = stGround
		return false
	}
	return true
}

func (c *cleaner) ground(b byte) bool {
	if c.nutf > 0 && (b < 0x80 || b >= 0xc0) {
		// A multi-byte character cut short: show that something was there.
		c.put(utf8.RuneError)
		c.nutf = 0
	}
	if b >= 0x80 {
		c.utf[c.nutf] = b
		c.nutf++
		if utf8.FullRune(c.utf[:c.nutf]) {
			r, size := utf8.DecodeRune(c.utf[:c.nutf])
			c.put(r)
			for range c.nutf - size { // stray continuation bytes
				c.put(utf8.RuneError)
			}
			c.nutf = 0
		}
		return true
	}
	if b == 0x1b {
		c.st = stEsc
		return true
	}
	if b < 0x20 || b == 0x7f {
		c.control(b)
		return true
	}
	if c.lineDrawing() {
		c.put(decGraphic(b))
		return true
	}
	c.put(rune(b))
	return true
}

// control executes a C0 control character; the ones a screen does not show are dropped.
func (c *cleaner) control(b byte) {
	switch b {
	case '\n', '\v', '\f':
		c.newline()
	case '\r':
		c.col, c.wrapNext = 0, false
		c.paddedAcross()
	case '\b':
		if c.col > 0 {
			c.col--
		}
		c.wrapNext = false
	case '\t':
		c.tab()
	case 0x0e: // SO: G1
		c.shifted = true
	case 0x0f: // SI: G0
		c.shifted = false
	}
}
