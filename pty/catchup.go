package pty

import (
	"bytes"
	"fmt"

	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// How the emulator catches up with the output it lags behind: fed in slices, skipping
// ahead to where the screen starts afresh when it is far behind, with the resizes and
// the cursor position answers at their places in the stream. The terminal goroutine (or
// a snapshot) holds term.mu throughout.

// advance feeds the emulator up to target (at most what was scanned), skipping ahead when
// it is far behind, and answers the cursor position queries it passes. budget, when not
// zero, bounds the bytes parsed. The caller holds mu.
func (t *term) advance(target, budget int64) {
	target = min(target, t.sc.Pos())
	for {
		t.applyResizes(t.fed)
		t.answerCPRs()
		if t.fed >= target {
			return
		}
		stop := target
		if at, ok := t.firstCPR(); ok {
			stop = min(stop, at) // exactly there, to answer it from the cursor of that moment
		}
		t.skip(stop)
		stop = min(stop, t.fed+feedSlice)
		if budget > 0 {
			stop = min(stop, t.fed+budget)
		}
		n := t.feed(stop)
		if budget > 0 {
			if budget -= n; budget <= 0 {
				t.answerCPRs()
				return
			}
		}
	}
}

// feed parses the output from fed towards stop, as far as the next resize, and returns
// how many bytes it parsed.
func (t *term) feed(stop int64) int64 {
	t.applyResizes(t.fed)
	t.evMu.Lock()
	if len(t.feedEv) > 0 {
		stop = min(stop, t.feedEv[0].at)
	}
	t.evMu.Unlock()
	if stop <= t.fed {
		return 0
	}
	t.s.mu.Lock()
	start := t.s.ring.Start()
	t.buf, _ = t.s.ring.AppendRange(t.buf[:0], t.fed, stop)
	t.s.mu.Unlock()
	if t.fed < start {
		// Fell out of the ring before it was parsed: go on where the output is whole.
		t.jump(start, nil, false)
		return 0
	}
	if t.emu != nil {
		t.emu.Write(t.buf)
		t.gen++
	}
	t.fed = stop
	t.applyResizes(t.fed)
	return int64(len(t.buf))
}

// feedTo parses everything up to stop.
func (t *term) feedTo(stop int64) {
	for t.fed < stop {
		t.feed(min(stop, t.fed+feedSlice))
	}
}

// skip moves the emulator ahead to the newest place before target where the screen starts
// afresh, when it is far enough behind for parsing everything to cost.
func (t *term) skip(target int64) {
	if target-t.fed < skipMin {
		return
	}
	p, ok := t.sc.Point(t.fed, target)
	if at, found := t.lineSkip(target); found && at > t.fed && (!ok || at > p.At) {
		t.jump(at, t.sc.State(), true)
		return
	}
	if !ok {
		return
	}
	if a := p.Alt; a != nil && t.fed < a.Enter {
		// A point on the alternate screen, or where it is left: the main screen must be
		// as it was when the alternate one was entered. Draw it from its last rows, or
		// from its last skip point.
		if at, found := t.rowStart(a.Rows); found && at > t.fed && at > a.Main.At {
			t.jump(at, &a.Rows.State, true)
		} else if a.Main.At > t.fed {
			t.jump(a.Main.At, &a.Main.State, false)
		}
		t.feedTo(a.Enter)
	}
	t.jump(p.At, &p.State, false)
}

// lineSkip returns where the last screenfuls of rows before target begin, when they were
// printed on the main screen after the last barrier: from there on they are all the
// screen shows. The modes there are the scanner's: no barrier came since.
func (t *term) lineSkip(target int64) (int64, bool) {
	if t.sc.State().Alt || t.sc.BarrierAt() > target {
		return 0, false
	}
	cols, rows := t.sc.Size()
	return t.rowStart(vt.RowSpan{From: t.sc.BarrierAt(), To: target, Cols: cols, Rows: rows})
}

// maxRowWindow bounds how much output rowStart reads back to find the last screenfuls.
const maxRowWindow = 1 << 20

// rowStart returns where the last 2*rows rows of the span begin, if it holds that many:
// the line model runs over its end, from a window of a few screenfuls of bytes, wider
// while that is not enough.
func (t *term) rowStart(span vt.RowSpan) (int64, bool) {
	w := int64(2*span.Rows*(span.Cols+1) + 4096)
	for {
		lo := max(span.From, span.To-w)
		t.s.mu.Lock()
		oldest := t.s.ring.Start()
		lo = max(lo, oldest)
		t.win, _ = t.s.ring.AppendRange(t.win[:0], lo, span.To)
		t.s.mu.Unlock()
		data, base := t.win, lo
		if lo > span.From {
			// Mid-output: start after a line feed, where text most likely is.
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				data = nil
			} else {
				data, base = data[i+1:], base+int64(i+1)
			}
		}
		ls := vt.NewLineScanner(base, span.Cols, span.Rows)
		ls.Scan(data)
		if at, ok := ls.RowStart(); ok {
			return at, true
		}
		if lo == span.From || w >= maxRowWindow || lo <= oldest {
			return 0, false
		}
		w *= 4
	}
}

// jump makes the emulator go on from offset at without parsing what lies before it: the
// resizes in between are applied, the modes in st (the scanner's at that place) are
// restored, and for a skip into scrolling text (line) the cursor starts a new row.
func (t *term) jump(at int64, st *vt.State, line bool) {
	t.applyResizes(at)
	t.fed = at
	if t.emu == nil {
		return
	}
	t.gen++
	t.emu.Forget()
	// CAN ends any sequence the emulator was in the middle of.
	pre := []byte{0x18}
	if st != nil {
		pre = vt.AppendState(pre, *st, t.emu)
	}
	if line {
		pre = append(pre, "\r\n"...)
	}
	t.emu.Write(pre)
}

// applyResizes applies the resizes recorded at or before offset at.
func (t *term) applyResizes(at int64) {
	t.evMu.Lock()
	defer t.evMu.Unlock()
	for len(t.feedEv) > 0 && t.feedEv[0].at <= at {
		ev := t.feedEv[0]
		t.feedEv = t.feedEv[1:]
		t.gen++
		switch fits := ev.cols*ev.rows <= MaxScreenCells; {
		case !fits:
			t.emu = nil // its memory goes back; the program redraws when it comes back
		case t.emu == nil:
			t.emu = vt.New(ev.cols, ev.rows)
		default:
			t.emu.Resize(ev.cols, ev.rows)
		}
	}
}

// answerCPRs answers the cursor position queries the emulator has got to.
func (t *term) answerCPRs() {
	for i := range t.pending {
		q := &t.pending[i]
		if q.Reply != nil || q.At > t.fed {
			continue
		}
		row, col := 0, 0
		if t.emu != nil {
			row, col = t.emu.Cursor()
		} else {
			// No emulator (a terminal too large to keep): the start of the last row,
			// the usual place after output, beats no answer at all.
			_, rows := t.sc.Size()
			row = rows - 1
		}
		if q.Ext {
			q.Reply = fmt.Appendf(nil, "\x1b[?%d;%d;1R", row+1, col+1)
		} else {
			q.Reply = fmt.Appendf(nil, "\x1b[%d;%dR", row+1, col+1)
		}
	}
}
