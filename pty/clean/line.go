package clean

import "unicode/utf8"

func (c *cleaner) put(r rune) {
	if r >= 0x80 && r < 0xa0 { // C1 controls: invisible
		return
	}
	if c.col < len(c.line) {
		if r == ' ' {
			// A space over a cell erases it ("\b \b" is how many programs rub out a
			// character), so it can be dropped at the end of the line like any blank;
			// a space written at the end of the line is real, as in a "$ " prompt.
			r = blank
		}
		c.line[c.col] = r
	} else {
		for len(c.line) < c.col {
			c.line = append(c.line, blank)
		}
		c.line = append(c.line, r)
	}
	c.col++
}

// newline finishes the current line.
func (c *cleaner) newline() {
	c.out = appendLine(c.out, c.line)
	c.endLine()
}

// endLine finishes the current line once its cells are in out; pos is the offset of the
// byte that ends it.
func (c *cleaner) endLine() {
	c.out = append(c.out, '\n')
	if c.watch >= 0 && c.found < 0 && len(c.out) > c.watch {
		c.found = c.lineRaw
	}
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
		}
	}
	c.line = c.line[:0]
	c.col = 0
	c.lineRaw = c.pos + 1
	if c.keepTail > 0 && len(c.out) <= c.keepHead {
		c.heads = append(c.heads, headLine{len(c.out), c.lineRaw})
	}
}

// appendLine renders cells, with interior blanks as spaces and trailing ones dropped.
func appendLine(dst []byte, line []rune) []byte {
	n := len(line)
	for n > 0 && line[n-1] == blank {
		n--
	}
	for _, r := range line[:n] {
		if r == blank {
			r = ' '
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// bytes returns the text so far, the current line unterminated. The slice is only valid
// until the next write.
func (c *cleaner) bytes() []byte {
	n := len(c.out)
	b := appendLine(c.out, c.line)
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
	c.col = max(col, 0)
}

// csi applies the CSI sequences that change what a line shows; colours and modes are
// simply dropped.
func (c *cleaner) csi(final byte) {
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
		if len(c.line) > 0 {
			c.newline()
		}
		if final == 'E' || final == 'F' {
			c.col = 0
		}
	case 'H', 'f': // absolute position
		if len(c.line) > 0 {
			c.newline()
		}
		c.setCol(c.csiParam(1, 1) - 1)
	}
}
