package clean

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Capped cleans output fed to it in chunks of any size and keeps only what Cap
// would return of the whole cleaned text: the head and the tail, counting the bytes left
// out between them, and the raw offsets of the lines the head holds, for the "re-read
// from here" hint. Its memory is bounded by max, whatever the output's length.
type Capped struct {
	c         cleaner
	max       int
	keepAltAt int64 // see KeepAltFrom
}

// NewCapped returns a Capped that keeps at most max bytes of text; sizeHint, the length of
// the output about to be written when it is known (else 0), sizes its first buffer.
func NewCapped(max, sizeHint int) *Capped {
	k := &Capped{max: max, keepAltAt: -1}
	// Cap's head is max/4 bytes (it looks at the byte after it to cut at a character
	// boundary), its tail less than max.
	k.c.keepHead, k.c.keepTail = max/4+utf8.UTFMax, max
	k.c.init()
	k.c.out = make([]byte, 0, min(sizeHint+sizeHint/8, k.c.keepHead+2*k.c.keepTail+4096))
	return k
}

// Write cleans p, the output that follows what was written before.
func (k *Capped) Write(p []byte) { k.c.write(p) }

// Width is the terminal's width in columns from raw offset At of the output on.
type Width struct {
	At   int64
	Cols int
}

// WriteAt is Write for p starting at raw offset at, lines wrapping at the width ws gives
// for each byte (ws ordered by At; the first entry's width holds before it too). Empty
// ws means no wrapping.
func (k *Capped) WriteAt(p []byte, at int64, ws []Width) {
	for len(p) > 0 {
		cols, next := 0, int64(-1)
		for i, w := range ws {
			if i == 0 || w.At <= at {
				cols = w.Cols
				continue
			}
			next = w.At
			break
		}
		k.c.setWidth(cols)
		n := len(p)
		if next >= 0 && next-at < int64(n) {
			n = int(next - at)
		}
		if k.keepAltAt >= 0 {
			if at >= k.keepAltAt {
				k.c.keepAltNow()
			} else if k.keepAltAt-at < int64(n) {
				n = int(k.keepAltAt - at)
			}
		}
		k.c.write(p[:n])
		p, at = p[n:], at+int64(n)
	}
}

// Reset starts over, for output that begins elsewhere.
func (k *Capped) Reset() {
	k.c = cleaner{out: k.c.out[:0], line: k.c.line[:0], heads: k.c.heads, keepHead: k.c.keepHead, keepTail: k.c.keepTail}
	k.c.init()
}

// Text returns the capped text and how many bytes were left out. The marker gives the
// offset to re-read the omitted part from when hint is set, base being the raw offset of
// the first byte written.
func (k *Capped) Text(base int64, hint bool) (string, int64) {
	var sinceOf func(h int) int64
	if hint {
		sinceOf = func(h int) int64 { return base + k.c.headLineStart(h) }
	}
	return CapGap(k.c.bytes(), k.c.dropped, k.max, sinceOf)
}

// cleanCapped is Cap(Bytes(data), max, sinceOf) without holding the whole
// cleaned text, sinceOf giving the raw offset in data of the line holding a byte of the
// head (as lineStart does) plus base; hint false leaves it out of the marker.
func cleanCapped(data []byte, max int, base int64, hint bool) (string, int64) {
	k := NewCapped(max, len(data))
	k.Write(data)
	return k.Text(base, hint)
}

// headLine is where a line of the head begins, in the cleaned text and in the raw output.
type headLine struct {
	clean int
	raw   int64
}

// headLineStart returns the raw offset of the start of the line holding byte h of the
// text, for h within the head a capped cleaner keeps: what lineStart finds by cleaning
// the output again.
func (c *cleaner) headLineStart(h int) int64 {
	i := len(c.heads) - 1
	for i > 0 && c.heads[i].clean > h {
		i--
	}
	if i < 0 {
		return 0
	}
	return c.heads[i].raw
}

// Cap keeps text within max bytes: the head (a quarter, since the end of a terminal's
// output, with the prompt and the last result, matters most) and the tail, cut at line
// breaks when one is near and never inside a UTF-8 character, with one short marker
// between them. sinceOf, when not nil, gives the raw offset to re-read the omitted part
// from. It returns the text and how many bytes were left out.
func Cap(text []byte, max int, sinceOf func(h int) int64) (string, int64) {
	return CapGap(text, 0, max, sinceOf)
}

// CapGap is Cap for a text of which gap bytes after its first at were left out
// already (cleanCapped): more than max/4 bytes come before the gap and at least max after
// it, so the cuts fall where Cap's would, and the omitted count includes the gap.
func CapGap(text []byte, gap int64, max int, sinceOf func(h int) int64) (string, int64) {
	if gap == 0 && len(text) <= max {
		return string(text), 0
	}
	headMax := max / 4
	tailMax := max - headMax
	h := headMax
	if i := bytes.LastIndexByte(text[:h], '\n'); i >= 0 && i+1 >= h/2 {
		h = i + 1
	} else {
		for h > 0 && !utf8.RuneStart(text[h]) {
			h--
		}
	}
	t := len(text) - tailMax
	if i := bytes.IndexByte(text[t:], '\n'); i >= 0 && i < tailMax/2 {
		t += i + 1
	} else {
		for t < len(text) && !utf8.RuneStart(text[t]) {
			t++
		}
	}
	omitted := int64(t-h) + gap
	var marker string
	if sinceOf != nil {
		marker = fmt.Sprintf("[... %d bytes omitted; re-read them with since=%d ...]\n", omitted, sinceOf(h))
	} else {
		marker = fmt.Sprintf("[... %d bytes omitted ...]\n", omitted)
	}
	if h > 0 && text[h-1] != '\n' {
		marker = "\n" + marker
	}
	return string(text[:h]) + marker + string(text[t:]), omitted
}
