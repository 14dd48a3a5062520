package clean

import "bytes"

// SetAlt says whether the alternate screen is on where the output written next begins;
// call it before the first Write. While it is on, what is drawn is left out of the text
// (see AppendScreen for what stands for it).
func (k *Capped) SetAlt(on bool) { k.c.setAlt(on); k.c.sawAlt = false }

// KeepAltFrom says that from raw offset at on (the alternate screen's last switch on
// before the end of the output, with WriteAt), what is drawn on the alternate screen is
// text: a finished command's output that ends with the screen still on carries what the
// command printed there. A negative at keeps nothing.
func (k *Capped) KeepAltFrom(at int64) { k.keepAltAt = at }

// keepAltNow makes what is drawn on the alternate screen text from here on. The main
// screen's unfinished line, kept aside while the alternate screen is on, is a line of
// its own before it.
func (c *cleaner) keepAltNow() {
	if c.keepAlt {
		return
	}
	c.keepAlt = true
	if c.alt && (len(c.main) > 0 || c.softAt >= 0) {
		c.out = appendLine(c.out, c.main)
		c.endLine(c.pos)
		c.main = c.main[:0]
	}
}

// Blank reports whether output b shows nothing as text: no visible character, what is
// drawn on the alternate screen included.
func Blank(b []byte) bool {
	var c cleaner
	c.init()
	c.keepAlt = true
	c.write(b)
	return len(bytes.TrimSpace(c.bytes())) == 0
}

// Alt reports whether the alternate screen is on at the end of what was written.
func (k *Capped) Alt() bool { return k.c.alt }

// AppendScreen ends the text with rows, the screen shown at the end of the output (the
// alternate screen, whose drawing the text left out): each row trimmed of trailing
// spaces, the empty rows at the bottom dropped. The rows count as drawn at the end of the
// output for the re-read hint.
func (k *Capped) AppendScreen(rows []string) {
	c := &k.c
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	c.setAlt(false)
	if len(c.line) > 0 || c.softAt >= 0 { // a line the rows of which wrapped is one too
		c.out = appendLine(c.out, c.line)
		c.endLine(c.pos)
	}
	for i, row := range rows {
		c.line = c.line[:0]
		for _, r := range row {
			c.line = append(c.line, r)
		}
		c.col = len(c.line)
		if i < len(rows)-1 {
			c.out = appendLine(c.out, c.line)
			c.endLine(c.pos)
		}
	}
	c.col, c.wrapNext = 0, false // trailing spaces of the last row go too
}

// SawAlt reports whether the output written switched the alternate screen on or off.
func (mt *Matcher) SawAlt() bool { return mt.k != nil && mt.k.c.sawAlt }

// AltSwitch is where the output switches to the alternate screen (On) or back.
type AltSwitch struct {
	At int64
	On bool
}

// AltTracker finds the alternate screen's switches in output fed to it in chunks of any
// size, reading the sequences as the cleaner does (DECSET and DECRST of modes 1047 and
// 1049), for a session that must know whether a read starts on the alternate screen.
type AltTracker struct {
	st     uint8 // 0 ground, 1 after ESC, 2 in a CSI
	params []byte
	inter  bool
	on     bool
}

// Write scans p, the output from raw offset at on, and appends the switches it finds
// to dst.
func (a *AltTracker) Write(p []byte, at int64, dst []AltSwitch) []AltSwitch {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch a.st {
		case 0:
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				return dst
			}
			i += j
			a.st = 1
		case 1:
			switch b {
			case '[':
				a.st, a.params, a.inter = 2, a.params[:0], false
			case 0x1b:
			default:
				a.st = 0
			}
		case 2:
			switch {
			case b >= 0x30 && b <= 0x3f:
				if len(a.params) < 32 {
					a.params = append(a.params, b)
				}
			case b >= 0x20 && b <= 0x2f:
				a.inter = true
			case b >= 0x40 && b <= 0x7e:
				a.st = 0
				if (b == 'h' || b == 'l') && !a.inter && len(a.params) > 0 && a.params[0] == '?' {
					var c cleaner
					c.alt, c.keepAlt, c.params = a.on, true, a.params
					c.decModes(b == 'h')
					if c.alt != a.on {
						a.on = c.alt
						dst = append(dst, AltSwitch{At: at + int64(i) + 1, On: a.on})
					}
				}
			case b == 0x1b:
				a.st = 1
			case b == 0x18 || b == 0x1a || b >= 0x80:
				a.st = 0
			}
		}
	}
	return dst
}

// On reports whether the alternate screen is on after what was written.
func (a *AltTracker) On() bool { return a.on }

// Lost says output was skipped: a sequence cut there is not one.
func (a *AltTracker) Lost() { a.st = 0 }
