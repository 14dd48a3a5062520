package pty

import (
	"unicode/utf8"

	"github.com/mcp-harness/mcp-harness/pty/clean"
)

// readChunk is how much output a read copies out of the ring at a time to clean it. A
// read returns at most MaxReadBytes of up to a whole ring of output; copying the range
// whole, then cleaning the copy, held two more rings' worth of memory per read, which was
// most of the server's peak under bulk output.
const readChunk = 64 << 10

// outputText returns the output [from, to) as a read returns it: cleaned (unless raw),
// at the terminal's width as it was when each part was drawn (wrapped rows joined), what
// a full-screen program drew on the alternate screen left out and, if the range ends on
// it, the screen's rows instead, or the note altNotKept when that screen is gone; but
// when cmdEnd says the range is a finished command's output, what the command printed
// there since the last switch on (see pty/doc.go). The text is capped at maxBytes, head
// and tail kept (clean.Cap); hint puts the offset to re-read an omitted part from in the
// marker. It returns the text, how many bytes were left out, and the offset the text
// starts at: from, or later when the program overwrote the start while it was being
// cleaned (the ring is full and output flows faster than a read cleans), in which case
// the read starts over at the oldest byte still held, as if it had begun later.
//
// The caller holds s.mu; outputText releases it. The ring is read in place for raw
// output and in bounded chunks for cleaned output, so a read never copies the whole
// range, and the lock is held only while a chunk is copied, never while it is cleaned:
// the reader goroutine is not held up.
func (s *session) outputText(from, to int64, maxBytes int, raw, hint, cmdEnd bool) (string, int64, int64) {
	from = min(to, max(from, s.ring.Start()))
	if raw {
		return s.rawText(from, to, maxBytes, hint)
	}
	t := s.screenTerm()
	live := to >= s.ring.End() // the screen at to is the one shown now
	if t != nil {
		if _, known := t.altAt(to); !known {
			s.mu.Unlock()
			t.scanUpTo(to)
			s.mu.Lock()
			from = min(to, max(from, s.ring.Start()))
		}
	}
	k := clean.NewCapped(maxBytes, int(to-from))
	if t == nil {
		cmdEnd = false // no screen: the alternate screen's drawing is never shown
	} else if on, _ := t.altAt(to); on && cmdEnd {
		// A finished command's output that ends on the alternate screen (the program died
		// without leaving it, or the command runs after one did): its screen then is gone
		// (the prompt is drawn over it), and its rows would hold what others drew. What
		// the command printed there since the switch is its output, as the stream
		// shows it.
		k.KeepAltFrom(t.altOnSince(from, to))
	} else {
		cmdEnd = false
	}
	startAlt := func() {
		if t != nil {
			on, _ := t.altAt(from)
			k.SetAlt(on)
		}
	}
	startAlt()
	buf := make([]byte, 0, min(to-from, readChunk))
	widths := s.widthsLocked()
	for pos := from; ; {
		buf, _ = s.ring.AppendRange(buf[:0], pos, min(to, pos+readChunk))
		s.mu.Unlock()
		k.WriteAt(buf, pos, widths)
		pos += int64(len(buf))
		if pos >= to {
			break
		}
		s.mu.Lock()
		if oldest := s.ring.Start(); pos < oldest {
			// Overwritten before it was read: what is gone would leave a hole.
			from, pos = min(to, oldest), min(to, oldest)
			k.Reset()
			startAlt()
		}
	}
	if t != nil && k.Alt() && to > from && !cmdEnd {
		// The read ends on the alternate screen: its text is the screen, not the stream
		// that painted it. An empty range printed nothing, and shows nothing.
		if !live {
			k.AppendScreen([]string{altNotKept})
		} else if scr, ok := t.snapshot(to); ok && scr.AltScreen {
			k.AppendScreen(scr.Lines)
		}
	}
	text, omitted := k.Text(from, hint)
	return text, omitted, from
}

// altNotKept stands for the alternate screen at the end of a re-read that ends before the
// newest output: the screen of that moment is gone.
const altNotKept = "[a full-screen program's screen: not kept for a re-read; re-read with raw: true, or read on for the screen now]"

// rawText is outputText for raw output: only the head and tail clean.Cap keeps are copied.
func (s *session) rawText(from, to int64, maxBytes int, hint bool) (string, int64, int64) {
	var sinceOf func(h int) int64
	if hint {
		sinceOf = func(h int) int64 { return from + int64(h) }
	}
	keepHead, keepTail := int64(maxBytes/4+utf8.UTFMax), int64(maxBytes)
	if to-from <= keepHead+keepTail {
		data, _ := s.ring.AppendRange(nil, from, to)
		s.mu.Unlock()
		text, omitted := clean.Cap(data, maxBytes, sinceOf)
		return text, omitted, from
	}
	data, _ := s.ring.AppendRange(make([]byte, 0, keepHead+keepTail), from, from+keepHead)
	data, _ = s.ring.AppendRange(data, to-keepTail, to)
	s.mu.Unlock()
	text, omitted := clean.CapGap(data, to-from-keepHead-keepTail, maxBytes, sinceOf)
	return text, omitted, from
}
