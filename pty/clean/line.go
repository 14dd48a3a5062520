package clean

import (
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

func (c *cleaner) put(r rune) {
	if r >= 0x80 && r < 0xa0 { // C1 controls: invisible
		return
	}
	w := 1
	if r >= 0x300 && runeWidth(r) == 2 {
		w = 2
	}
	if c.width > 0 && (c.wrapNext || c.col+w > c.width) {
		// The terminal wraps here (a wide character that does not fit the last column
		// goes to the next line whole): what follows is a new line of the screen.
		c.wrap()
	}
	for len(c.line) < c.col+w {
		c.line = append(c.line, blank)
	}
	c.unpair(c.col)
	if w == 2 {
		c.unpair(c.col + 1)
		c.line[c.col+1] = wideTail
	}
	c.line[c.col] = r
	c.col += w
	if c.width > 0 && c.col >= c.width {
		c.col, c.wrapNext = c.width-1, true
	}
}

// unpair blanks the other half of a wide character whose one half is about to be
// overwritten at cell i, as a terminal does.
func (c *cleaner) unpair(i int) {
	switch {
	case i >= len(c.line):
	case c.line[i] == wideTail && i > 0:
		c.line[i-1] = blank
	case c.line[i] != wideTail && i+1 < len(c.line) && c.line[i+1] == wideTail:
		c.line[i+1] = blank
	}
}

// tab moves to the next tab stop (every 8 columns, at most the last column). At the end of
// the line it keeps the tab itself, as the program wrote it, the cells it moved over
// standing for it; over text it only moves, as on a terminal.
func (c *cleaner) tab() {
	stop := (c.col/8 + 1) * 8
	if c.width > 0 {
		stop = min(stop, c.width-1)
	}
	stop = min(stop, max(maxCol, c.col))
	if c.col >= len(c.line) && stop > c.col {
		for len(c.line) < c.col {
			c.line = append(c.line, blank)
		}
		c.line = append(c.line, '\t')
		for len(c.line) < stop {
			c.line = append(c.line, tabFill)
		}
	}
	c.col = max(c.col, stop)
}

// wrap ends the current row where the terminal wraps it: the line goes on, on the next
// row, starting with the byte being processed. The row is final and its text is the
// start of the line's (spaces at its end are inside the line now), so it goes into out.
func (c *cleaner) wrap() {
	if c.alt && !c.keepAlt {
		c.line, c.col, c.wrapNext = c.line[:0], 0, false
		return
	}
	if c.softAt < 0 {
		c.softAt = len(c.out)
	}
	c.out = appendLineTo(c.out, c.line, len(c.line))
	c.line = c.line[:0]
	c.col, c.wrapNext = 0, false
	c.dropMiddle()
}

// paddedAcross ends the line at a carriage return that follows spaces padded across the
// margin (the wrapped rows end in a space and the row the cursor is on holds only
// spaces): a program used the wrap to reach a fresh row, as zsh's PROMPT_SP does, and
// what follows is not the same line. Without it the prompt would join the output.
func (c *cleaner) paddedAcross() {
	if c.softAt < 0 || len(c.out) == 0 || c.out[len(c.out)-1] != ' ' || c.alt && !c.keepAlt {
		return
	}
	if shows(c.line) {
		return
	}
	c.trimSoft()
	n := len(c.line)
	c.endLine(c.pos + 1)
	c.line = c.line[:n] // the row's spaces stay, to be overwritten: endLine only emptied it
}

// shows reports whether cells show anything: not only blanks, spaces and tabs.
func shows(line []rune) bool {
	for _, r := range line {
		if r != ' ' && r != blank && r != '\t' && r != tabFill {
			return true
		}
	}
	return false
}

// trimSoft drops the spaces at the end of the rows the current line wrapped off, for a line
// that ends with nothing visible on its last row.
func (c *cleaner) trimSoft() {
	if c.softAt < 0 {
		return
	}
	n := len(c.out)
	for n > c.softAt && c.out[n-1] == ' ' {
		n--
	}
	c.out = c.out[:n]
}

// lineDrawing reports whether printed bytes are DEC special graphics now.
func (c *cleaner) lineDrawing() bool {
	if c.shifted {
		return c.g1
	}
	return c.g0
}

// decGraphics are the characters the DEC special graphics set shows for 0x5f-0x7e, as
// xterm draws them: lqqk is the top of a box, ┌──┐.
var decGraphics = []rune("\u00a0◆▒␉␌␍␊°±␤␋┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£·")

func decGraphic(b byte) rune {
	if b >= 0x5f && b <= 0x7e {
		return decGraphics[b-0x5f]
	}
	return rune(b)
}

// runeWidth is how many columns a terminal gives r: 2 for wide (East Asian) characters.
func runeWidth(r rune) int {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	return ansi.StringWidth(string(buf[:n]))
}

// newline finishes the current line.
func (c *cleaner) newline() {
	if c.alt && !c.keepAlt {
		c.line, c.col, c.wrapNext = c.line[:0], 0, false
		return
	}
	if c.softAt >= 0 && !shows(c.line) {
		c.trimSoft()
	}
	c.out = appendLine(c.out, c.line)
	c.endLine(c.pos + 1)
}

// decModes applies the DEC private modes of a DECSET (set) or DECRST: of them only the
// alternate screen changes what the text shows.
func (c *cleaner) decModes(set bool) {
	n, seen := 0, false
	for _, b := range append(c.params[1:], ';') {
		switch {
		case b >= '0' && b <= '9':
			n, seen = min(n*10+int(b-'0'), 99999), true
		case b == ';':
			if seen && (n == 1047 || n == 1049) {
				c.setAlt(set)
			}
			n, seen = 0, false
		}
	}
}

// setAlt switches to the alternate screen or back. What a full-screen program draws
// there is not text a person reads back as output: the main screen's current line is
// kept aside meanwhile and is where the text goes on once the program leaves it, as on a
// terminal, which shows the main screen again as it was.
func (c *cleaner) setAlt(on bool) {
	c.sawAlt = true
	if on == c.alt {
		return
	}
	c.alt = on
	if c.keepAlt {
		return
	}
	if on {
		c.main = append(c.main[:0], c.line...)
		c.mainCol, c.mainWrap = c.col, c.wrapNext
		c.line, c.col, c.wrapNext = c.line[:0], 0, false
		return
	}
	c.line = append(c.line[:0], c.main...)
	c.col, c.wrapNext = c.mainCol, c.mainWrap
}

// endLine finishes the current line once its cells are in out; next is the raw offset
// the next line starts at.
func (c *cleaner) endLine(next int64) {
	c.out = append(c.out, '\n')
	if c.watch >= 0 && c.found < 0 && len(c.out) > c.watch {
		c.found = c.lineRaw
	}
	c.softAt = -1
	c.dropMiddle()
	c.line = c.line[:0]
	c.col, c.wrapNext = 0, false
	c.lineRaw = next
	if c.keepTail > 0 && len(c.out) <= c.keepHead {
		c.heads = append(c.heads, headLine{len(c.out), c.lineRaw})
	}
}

// dropMiddle drops the middle of out once it holds more than the head and the tail that
// will be returned (cleanCapped), so cleaning a whole buffer never holds a copy of it;
// with keepTail 0 it does nothing.
func (c *cleaner) dropMiddle() {
	if c.keepTail > 0 && len(c.out) > c.keepHead+2*c.keepTail {
		// Only the head and the tail will be returned (cleanCapped): drop the middle, so
		// cleaning a whole buffer never holds a copy of it. What is dropped is at least
		// what is moved, so the copying stays linear in the text.
		cut := len(c.out) - c.keepTail
		if c.hold >= 0 {
			cut = min(cut, c.hold)
		}
		if drop := cut - c.keepHead; drop >= max(c.keepTail, len(c.out)-cut) {
			n := copy(c.out[c.keepHead:], c.out[cut:])
			c.dropped += int64(drop)
			c.out = c.out[:c.keepHead+n]
			if c.hold >= 0 {
				c.hold -= drop
			}
			switch {
			case c.softAt >= cut:
				c.softAt -= drop
			case c.softAt > c.keepHead:
				c.softAt = c.keepHead
			}
		}
	}
}

// appendLine renders cells: interior blanks as spaces, the cells a wide character or a
// tab stands for as nothing, and nothing after the last visible character.
func appendLine(dst []byte, line []rune) []byte { return appendLineTo(dst, line, 0) }

// appendLineTo is appendLine keeping the spaces written before cell keep: the line the
// cursor is on shows where typing would go, as "$ " or "Password: " do.
func appendLineTo(dst []byte, line []rune, keep int) []byte {
	n := len(line)
	for n > 0 && (line[n-1] == blank || line[n-1] == ' ' && n > keep || line[n-1] == '\t' || line[n-1] == tabFill) {
		n--
	}
	inTab := false
	for _, r := range line[:n] {
		switch r {
		case wideTail:
			continue
		case tabFill:
			if inTab {
				continue
			}
			r = ' '
		case blank:
			r = ' '
		}
		inTab = r == '\t' || inTab && r == tabFill
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// bytes returns the text so far, the current line unterminated (and keeping the spaces
// up to the cursor). The slice is only valid
// until the next write.
func (c *cleaner) bytes() []byte {
	n := len(c.out)
	line, col := c.line, c.col
	if c.alt && !c.keepAlt {
		line, col = c.main, c.mainCol
	}
	b := appendLineTo(c.out, line, col)
	if c.nutf > 0 {
		b = utf8.AppendRune(b, utf8.RuneError)
	}
	c.out = b[:n] // keep any capacity appendLine grew
	return b
}

// lineStart reports the raw offset of the line holding cleaned byte watch, once write has
// seen the whole input.
func (c *cleaner) lineStart() int64 {
	if c.found >= 0 {
		return c.found
	}
	return c.lineRaw
}

// csiParam returns the i-th numeric parameter of the current CSI sequence, def when it is
// absent or zero, clamped to maxCol: no sequence the cleaner acts on needs more.
func (c *cleaner) csiParam(i, def int) int {
	n, field := 0, 0
	seen := false
	for _, b := range c.params {
		if b == ';' || b == ':' {
			if field == i {
				break
			}
			field++
			continue
		}
		if field == i && b >= '0' && b <= '9' {
			n = min(n*10+int(b-'0'), maxCol)
			seen = true
		}
	}
	if field < i || !seen || n == 0 {
		return def
	}
	return n
}

func (c *cleaner) setCol(col int) {
	if col > len(c.line) && col > maxCol {
		col = max(len(c.line), maxCol)
	}
	if c.width > 0 {
		col = min(col, c.width-1)
	}
	c.col = max(col, 0)
}

// setWidth sets the terminal's width from the next byte on; 0 turns wrapping off.
func (c *cleaner) setWidth(cols int) {
	c.width = min(max(cols, 0), maxCol)
	if c.width > 0 && c.col >= c.width {
		c.col = c.width - 1
	}
}

// csi applies the CSI sequences that change what a line shows; colours and modes are
// simply dropped.
func (c *cleaner) csi(final byte) {
	c.wrapNext = false
	switch final {
	case 'C', 'a': // cursor forward
		c.setCol(c.col + c.csiParam(0, 1))
	case 'D': // cursor back
		c.setCol(c.col - c.csiParam(0, 1))
	case 'G', '`': // cursor to column
		c.setCol(c.csiParam(0, 1) - 1)
	case 'K': // erase in line
		switch c.csiParam(0, 0) {
		case 0:
			if c.col < len(c.line) {
				c.line = c.line[:c.col]
			}
		case 1:
			for i := 0; i <= c.col && i < len(c.line); i++ {
				c.line[i] = blank
			}
		case 2:
			c.line = c.line[:0]
		}
	case 'P': // delete characters
		if c.col < len(c.line) {
			n := min(c.csiParam(0, 1), len(c.line)-c.col)
			c.line = append(c.line[:c.col], c.line[c.col+n:]...)
		}
	case '@': // insert blank characters
		if c.col < len(c.line) {
			n, limit := c.csiParam(0, 1), max(len(c.line), maxCol)
			if c.width > 0 {
				limit = c.width
			}
			c.line = append(c.line[:c.col], append(make([]rune, n), c.line[c.col:]...)...)
			// Cells pushed past the margin are lost, as on a screen; this also keeps
			// repeated inserts from growing a line without bound.
			c.line = c.line[:min(len(c.line), limit)]
		}
	case 'X': // erase characters
		for i := c.col; i < c.col+c.csiParam(0, 1) && i < len(c.line); i++ {
			c.line[i] = blank
		}
	case 'A', 'B', 'E', 'F', 'd': // vertical moves: a different screen line
		if len(c.line) > 0 || c.softAt >= 0 { // a line whose rows wrapped ends too
			c.newline()
		}
		if final == 'E' || final == 'F' {
			c.col = 0
		}
	case 'H', 'f': // absolute position
		if len(c.line) > 0 || c.softAt >= 0 { // a line whose rows wrapped ends too
			c.newline()
		}
		c.setCol(c.csiParam(1, 1) - 1)
	}
}
