package clean

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"time"

	"github.com/mcp-harness/mcp-harness/pty/ring"
)

// matchWindow bounds how far back a WaitFor pass looks: each pass runs the pattern over
// the lines that changed since the last pass together with the lines before them that
// hold at least matchWindow bytes of text. Any match of at most matchWindow bytes of
// cleaned text is found, at the first pass after it appears, exactly as matching the
// whole text would find it; a longer one may be missed. While the text is shorter than
// the window, every pass sees all of it.
const matchWindow = 64 << 10

// maxUnmatched bounds the cleaned text waiting for a pass: beyond it a pass runs even
// when the rate limit would space it out, so the text that must be kept for it stays
// bounded.
const maxUnmatched = 256 << 10

// Matcher runs WaitFor over the cleaned text from the read's start to the end of the
// output, which is what the call would return. The cleaner is incremental, so each chunk
// is cleaned once, and so is the matching: a pass covers only the window above, not the
// whole text again. The window always starts at the start of a line (or of the text),
// where ^ in multi-line mode and \b read the text as they would in the whole; only \A
// (^ without (?m)) would differ, and it is matched against a copy of the pattern in which
// it cannot match (mid). Passes are spaced out in proportion to how long the last one
// took (keeping them under a fifth of the time), and the check before any other answer
// is never skipped.
//
// The cleaner keeps only the head and tail the read will return (Capped) and the
// window, so a match that is returned needs no second cleaning and a long wait holds
// little text.
//
// When output overflows the ring during the wait, the returned text starts later than
// the matcher's: the matcher goes on (its window is at the end), no longer taking its
// start for the start of the text (\A), and the read cleans what it returns afresh. Only
// if output it has not cleaned yet was overwritten does it start over at the oldest
// byte held.
type Matcher struct {
	re, mid   *regexp.Regexp // mid is nil when re has no \A; then windows use re
	window    bool           // false: every pass covers the whole text (mid could not be made)
	lit       []byte         // text every match contains (requiredLiteral); empty if none found
	slid      bool           // output before the text's end overflowed the ring (see load)
	span      int            // matchWindow; tests make it smaller
	maxBytes  int
	k         *Capped
	from      int64  // raw offset the cleaner started at; -1 before the first load
	next      int64  // raw offset of the next byte to clean
	seen      int64  // the end of the output at the last load
	pending   []byte // raw bytes loaded but not yet cleaned
	pendingAt int64  // the raw offset pending starts at
	widths    []Width
	checked   int64 // next at the last pass; -1 for none since a reset
	passedAt  int64 // how much finished text (lines) the cleaner had made at the last pass
	nextCheck time.Time
}

// NewMatcher returns a Matcher for re over text capped at maxBytes, as the read that
// waits for it will return it.
func NewMatcher(re *regexp.Regexp, maxBytes int) *Matcher {
	mt := &Matcher{re: re, maxBytes: maxBytes, span: matchWindow, from: -1, checked: -1}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return mt // no windows: every pass covers the whole text, as re does
	}
	mt.lit = []byte(requiredLiteral(tree))
	if !dropBeginText(tree) {
		mt.window = true
		return mt
	}
	if mid, err := regexp.Compile(tree.String()); err == nil {
		mt.mid, mt.window = mid, true
	}
	return mt
}

// requiredLiteral returns the longest literal text every match of re contains, "" when
// it finds none (case-folded literals are not looked at). A window without it cannot
// hold a match, and looking for it is many times faster than running re: a pattern such
// as (?m)^DONE$ gives Go's regexp no prefix to look for.
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// dropBeginText replaces every \A in re by an empty class, and reports whether it found
// one.
func dropBeginText(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText {
		*re = syntax.Regexp{Op: syntax.OpNoMatch}
		return true
	}
	found := false
	for _, sub := range re.Sub {
		found = dropBeginText(sub) || found
	}
	return found
}

// loadChunk is how much output Load copies out of the ring at a time, as a read does: the
// lock is held while it is copied, and cleaning waits until it is released.
const loadChunk = 64 << 10

// Load takes up to loadChunk bytes of new output from the ring, up to offset upTo, and
// reports whether more is waiting before upTo; the caller holds the session lock. ws is
// the terminal's width over the output, as for Capped.WriteAt: the text wraps as the
// read's would. The
// caller passes the end of the output as it was when its pass began: a program that
// writes faster than the matcher cleans would otherwise keep the pass from ever ending,
// and the wait from ever looking at its deadline.
func (mt *Matcher) Load(r *ring.Buffer, start, upTo int64, ws []Width) bool {
	mt.widths = ws
	mt.seen = r.End()
	oldest := max(start, r.Start())
	if mt.from < 0 || mt.next < oldest {
		// The first load, or output the matcher never cleaned is gone: start over at
		// the oldest byte held, as the call's text will.
		if mt.k == nil {
			mt.k = NewCapped(mt.maxBytes, 0)
		} else {
			mt.k.Reset()
		}
		mt.k.c.keepAlt = true // a pattern sees what a full-screen program draws, too
		mt.k.c.hold = 0
		mt.slid = false
		mt.from, mt.next, mt.checked, mt.passedAt = oldest, oldest, -1, 0
	}
	if mt.from < oldest {
		mt.slid = true // the text's start is no longer the call's: \A cannot match there
	}
	upTo = min(upTo, r.End())
	mt.pending, _ = r.AppendRange(mt.pending[:0], mt.next, min(upTo, mt.next+loadChunk))
	mt.pendingAt = mt.next
	mt.next += int64(len(mt.pending))
	return mt.next < upTo
}

// Check cleans what Load took and, if due (or if much text waits), runs the pattern
// over the window.
func (mt *Matcher) Check(due bool) bool {
	t0 := time.Now()
	mt.k.WriteAt(mt.pending, mt.pendingAt, mt.widths)
	mt.pending = mt.pending[:0]
	c := &mt.k.c
	finished := int64(len(c.out)) + c.dropped
	if !due && finished-mt.passedAt <= maxUnmatched || mt.checked == mt.next {
		return false
	}
	text := c.bytes()
	w := c.hold
	re := mt.re
	if (w > 0 || mt.slid) && mt.mid != nil {
		re = mt.mid
	}
	ok := (len(mt.lit) == 0 || bytes.Contains(text[w:], mt.lit)) && re.Match(text[w:])
	mt.checked, mt.passedAt = mt.next, finished
	// The next pass starts at the line holding the byte matchWindow before the end of
	// the finished lines: a match it finds that this one did not must reach past them.
	if i := len(c.out) - mt.span; mt.window && i > w {
		if j := bytes.LastIndexByte(c.out[w:i], '\n'); j >= 0 {
			c.hold = w + j + 1
		}
	}
	t1 := time.Now()
	mt.nextCheck = t1.Add(4 * t1.Sub(t0))
	return ok
}

// Unchecked reports whether output arrived that no pass has looked at yet.
func (mt *Matcher) Unchecked() bool { return mt.checked != mt.seen }

// NextCheck is when the next pass is due: passes are spaced out in proportion to how long
// the last one took. A pass asked for with due set runs whatever the time.
func (mt *Matcher) NextCheck() time.Time { return mt.nextCheck }

// Covers reports whether the matcher cleaned exactly the output [from, to): then Text is
// what a read of that range returns, and a read that ends at a match needs no second
// cleaning.
func (mt *Matcher) Covers(from, to int64) bool {
	return mt.k != nil && mt.from == from && mt.next == to
}

// Text returns the capped text the matcher cleaned, as Capped.Text with the re-read hint,
// from being the offset it starts at (see Covers).
func (mt *Matcher) Text(from int64) (text string, omitted int64) { return mt.k.Text(from, true) }
