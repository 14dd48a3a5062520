package pty

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/mcp-harness/mcp-harness/pty/clean"
	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// Screen is what a session's terminal shows, as a person would see it.
type Screen struct {
	Cols, Rows int
	// Lines holds one string per row, top to bottom, trailing spaces removed; a wide
	// character takes one string position and two columns.
	Lines []string
	// CursorRow and CursorCol are 0-based.
	CursorRow, CursorCol int
	// AltScreen reports that the alternate screen (full-screen programs) is shown.
	AltScreen bool
	// Title is the window title the program last set, "" if none.
	Title string
	// Styles holds, when ReadOptions.Styled asked for them, each row's runs of styled
	// cells (colours and attributes), beside Lines; nil otherwise.
	Styles [][]vt.Run
}

// MaxScreenCells is the largest terminal (cols x rows) a session keeps an emulator for.
// Its memory grows with the cells, about 275 bytes each (14 MB at the limit); a larger
// terminal has no screen, and cursor position queries get the start of the last row.
const MaxScreenCells = 50_000

// How the terminal goroutine shares the machine with the program's output. The emulator
// parses about a megabyte a second, sixty times slower than the read path, so it must
// be allowed to fall behind and catch up without holding anything up.
const (
	// feedSlice is how much output the emulator parses between looks at new output, and
	// between chances for a snapshot or a query to take the lock: a few milliseconds.
	feedSlice = 16 << 10
	// skipMin: when the emulator is behind by more than this, it skips to the newest
	// place the scanner found where the screen starts afresh (a clear, a screen switch,
	// or the start of the last screenfuls of scrolling text).
	skipMin = 64 << 10
	// burst: output arriving this fast (more than this between two looks) is bulk
	// output: the emulator waits for a pause in it, then skips ahead. It also waits while
	// output flows and it is more than a feedSlice behind.
	burst = 64 << 10
	// quietGap is the pause in output that counts as one.
	quietGap = 50 * time.Millisecond
	// bulkPoll is how often the terminal goroutine looks at output arriving in bulk; a
	// query in it waits this long at most.
	bulkPoll = 5 * time.Millisecond
	// answerTimeout bounds the write of an answer to a program that does not read its
	// input; it would not be reading the answer either.
	answerTimeout = time.Second
)

// term is the terminal side of a session: a scanner that answers queries, and an
// emulator that keeps the screen. Both read the session's output from its ring buffer on
// their own goroutine (run), never in the read loop, which only signals new output. The
// emulator may lag: a snapshot or a cursor position query brings it up to date first.
type term struct {
	s      *session
	notify chan struct{} // readLoop signals new output here, never blocking

	evMu   sync.Mutex // guards the event queues; taken under s.mu, so never the other way
	scanEv []resizeEvent
	feedEv []resizeEvent
	evCols int // size after the newest event
	evRows int
	// The alternate screen's switches over the output, so that a read knows whether it
	// starts on it (altAt); altBase is the state before the first, altScanned how far
	// they are known. altTr finds them as the output is scanned, under mu.
	alts       []clean.AltSwitch
	altBase    bool
	altScanned int64
	altTr      clean.AltTracker

	// mu guards what follows; it is taken before s.mu and amu, never after them.
	mu            sync.Mutex
	sc            *vt.Scanner
	emu           vt.Emulator // nil while the terminal is larger than MaxScreenCells
	fed           int64       // offset of the next byte for the emulator
	pending       []vt.Query  // answers not sent yet, in the order of their queries
	buf           []byte
	win           []byte    // rowStart's window
	lastNew       time.Time // when the scanner last found new output
	lastBurst     time.Time // when it last found more than burst bytes
	throttleUntil time.Time
	// gen counts the emulator's changes (output parsed, a skip, a resize), and lastView
	// is the last view rendered (viewer.go): viewers of one size share it until gen moves.
	gen      uint64
	lastView renderedView

	amu sync.Mutex // held while answers are written, so they go out in order
}

// resizeEvent is a terminal resize at a place in the output: what came before it was
// drawn at the old size.
type resizeEvent struct {
	at         int64
	cols, rows int
}

func newTerm(s *session, cols, rows int) *term {
	t := &term{s: s, notify: make(chan struct{}, 1), sc: vt.NewScanner(cols, rows), evCols: cols, evRows: rows}
	if cols*rows <= MaxScreenCells {
		t.emu = vt.New(cols, rows)
	}
	return t
}

// wake tells the terminal goroutine that output arrived. It never blocks: one pending
// signal covers any amount of output.
func (t *term) wake() {
	if t == nil {
		return
	}
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// resized records a resize at offset at (the end of the output when it happened); the
// caller holds s.mu.
func (t *term) resized(at int64, cols, rows int) {
	if t == nil {
		return
	}
	t.evMu.Lock()
	defer t.evMu.Unlock()
	if cols == t.evCols && rows == t.evRows {
		return
	}
	ev := resizeEvent{at: at, cols: cols, rows: rows}
	t.scanEv = append(t.scanEv, ev)
	t.feedEv = append(t.feedEv, ev)
	t.evCols, t.evRows = cols, rows
	t.wake()
}

// run is the terminal goroutine: it answers queries as soon as their output is read and
// keeps the emulator as close behind as the machine allows. It ends with the read loop;
// snapshots of an exited session are made by their caller.
func (t *term) run(readerDone <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	poll := false
	for {
		if poll {
			// Bulk output: looking every bulkPoll instead of at every read spares the
			// read loop a goroutine wake-up per read, which costs more than the scan.
			select {
			case <-timer.C:
			case <-readerDone:
				return
			}
		} else {
			select {
			case <-t.notify:
			case <-timer.C:
			case <-readerDone:
				return
			}
		}
		var again time.Duration
		again, poll = t.step()
		if poll {
			again = bulkPoll
		}
		if again > 0 {
			timer.Reset(again)
		}
	}
}

// step scans new output, answers what can be answered and feeds the emulator a slice. It
// returns when to come back without a signal (0 for "at the next signal"), and whether
// output is arriving in bulk.
func (t *term) step() (again time.Duration, bulk bool) {
	t.mu.Lock()
	now := time.Now()
	before := t.sc.Pos()
	found, full := t.scanAll()
	if found {
		t.lastNew = now
		if t.sc.Pos()-before > burst {
			t.lastBurst = now
			bulk = true
		}
	}
	if full {
		// Scanning stopped at the answers' bound: on once these are out.
		defer func() { again = time.Microsecond }()
	}
	if at, ok := t.firstCPR(); ok {
		// A program waits for its cursor position: catch up to its query now.
		t.advance(at, 0)
		again = time.Microsecond // the rest as usual, after the answer is out
	} else if backlog := t.sc.Pos() - t.fed; backlog > 0 {
		quiet := now.Sub(t.lastNew) >= quietGap
		switch {
		case !quiet && (now.Sub(t.lastBurst) < quietGap || backlog > feedSlice):
			// Bulk output: the emulator waits for a pause, then skips ahead.
			again = quietGap - now.Sub(t.lastNew)
		case !quiet && now.Before(t.throttleUntil):
			again = t.throttleUntil.Sub(now)
		default:
			t.advance(t.sc.Pos(), feedSlice)
			end := time.Now()
			if !quiet {
				// While output flows, the emulator takes at most a third of a CPU.
				t.throttleUntil = end.Add(2 * end.Sub(now))
			}
			if t.fed < t.sc.Pos() {
				again = max(t.throttleUntil.Sub(end), time.Microsecond)
			}
		}
	}
	t.flush()
	return again, bulk
}

// flush sends the answers that are ready, in order, after releasing mu (held by the
// caller) so a program slow to read them holds up nothing but the answers after them.
func (t *term) flush() {
	n := 0
	for n < len(t.pending) && t.pending[n].Reply != nil {
		n++
	}
	if n == 0 {
		t.mu.Unlock()
		return
	}
	out := slices.Clone(t.pending[:n])
	t.pending = slices.Delete(t.pending, 0, n)
	t.amu.Lock()
	t.mu.Unlock()
	defer t.amu.Unlock()
	deadline := time.Now().Add(answerTimeout)
	for _, q := range out {
		if _, err := t.s.write(context.Background(), q.Reply, deadline); err != nil {
			return // gone, or not reading its input: the rest would fare no better
		}
	}
}

// maxPending bounds the answers waiting to go out: a program that floods its output
// with queries (a few bytes each) would otherwise have one queued for each, up to a ring
// of output in one scan. Scanning pauses at the bound (it may be passed by one chunk's
// worth) until they are sent; the output waits in the ring meanwhile.
const maxPending = 4096

// scanAll scans the output up to the end of the ring, or until maxPending answers wait
// (full), and reports whether there was any. The caller holds mu.
func (t *term) scanAll() (found, full bool) {
	return t.scanTo(math.MaxInt64, false)
}

// scanTo scans the output up to stop (or the end of the ring, if sooner). At maxPending
// answers waiting it stops there (full) or, with drop, goes on and drops the answers past
// the bound: a snapshot must get to its target without waiting for a program that floods
// its output with queries and reads none of their answers, and that program could not
// take them all in anyway. The caller holds mu.
func (t *term) scanTo(stop int64, drop bool) (found, full bool) {
	for {
		if len(t.pending) >= maxPending && !drop {
			return found, true
		}
		t.s.mu.Lock()
		end, start := t.s.ring.End(), t.s.ring.Start()
		t.evMu.Lock()
		end = min(end, stop)
		limit := end
		if len(t.scanEv) > 0 {
			limit = min(limit, t.scanEv[0].at)
		}
		t.evMu.Unlock()
		if t.sc.Pos() < start {
			t.sc.Gap(start) // what was not scanned in time is gone: its queries too
			t.altTr.Lost()
		}
		pos := t.sc.Pos()
		limit = min(limit, t.sc.Pos()+64<<10)
		t.buf, _ = t.s.ring.AppendRange(t.buf[:0], t.sc.Pos(), limit)
		t.s.mu.Unlock()
		var switches []clean.AltSwitch
		if len(t.buf) > 0 {
			found = true
			switches = t.altTr.Write(t.buf, pos, nil)
			t.sc.Scan(t.buf)
			t.pending = append(t.pending, t.sc.Take()...)
			if drop && len(t.pending) > maxPending {
				clear(t.pending[maxPending:]) // let their replies go
				t.pending = t.pending[:maxPending]
			}
		}
		t.evMu.Lock()
		t.altScannedLocked(switches, t.sc.Pos(), start)
		for len(t.scanEv) > 0 && t.scanEv[0].at <= t.sc.Pos() {
			t.sc.Resize(t.scanEv[0].cols, t.scanEv[0].rows)
			t.scanEv = t.scanEv[1:]
		}
		t.evMu.Unlock()
		if t.sc.Pos() >= end {
			return found, false
		}
	}
}

// firstCPR returns where the oldest unanswered cursor position query ends.
func (t *term) firstCPR() (int64, bool) {
	for _, q := range t.pending {
		if q.Reply == nil {
			return q.At, true
		}
	}
	return 0, false
}

// snapshot returns the screen once the output up to target is drawn. The terminal
// goroutine may have drawn more meanwhile (output that arrived after target): the
// emulator only goes forward.
func (t *term) snapshot(target int64) (*Screen, bool) {
	return t.snapshotStyled(target, false)
}

// snapshotStyled is snapshot, with the rows' style runs when styled.
func (t *term) snapshotStyled(target int64, styled bool) (*Screen, bool) {
	t.mu.Lock()
	// Scan to target only, dropping answers past the bound rather than sending them a
	// batch at a time: each batch may wait answerTimeout for a program that does not read
	// its input, and one that keeps flooding would never let the scan end. So a snapshot
	// waits one answerTimeout at most (in its single flush) however many queries wait.
	t.scanTo(target, true)
	t.advance(target, 0)
	if t.emu == nil {
		t.flush()
		return nil, false
	}
	cols, rows := t.emu.Size()
	row, col := t.emu.Cursor()
	scr := &Screen{
		Cols: cols, Rows: rows, Lines: t.emu.Lines(make([]string, 0, rows)),
		CursorRow: row, CursorCol: col, AltScreen: t.emu.AltScreen(), Title: t.emu.Title(),
	}
	if styled {
		scr.Styles = t.emu.Styles(make([][]vt.Run, 0, rows))
	}
	t.flush()
	return scr, true
}

// startTerm gives a new session its terminal side and starts its goroutine; start calls
// it before the read loop runs.
func (m *Manager) startTerm(s *session) {
	if m.cfg.NoEmulator {
		return
	}
	s.term = newTerm(s, s.cols, s.rows)
	m.wg.Add(1)
	go func() { defer m.wg.Done(); s.term.run(s.readerDone) }()
}

// checkScreen refuses a screen before anything is done when there can be none: on a server
// without emulation, or for a terminal larger than MaxScreenCells.
func (m *Manager) checkScreen(op string, want bool, cols, rows int) error {
	switch {
	case !want:
		return nil
	case m.cfg.NoEmulator:
		return invalidf(op, "screen is not available: this server runs sessions without terminal emulation")
	case cols*rows > MaxScreenCells:
		return invalidf(op, "screen is kept for terminals of at most %d cells (cols x rows), this one would be %dx%d; give smaller cols and rows",
			MaxScreenCells, cols, rows)
	}
	return nil
}

// checkScreen is Manager.checkScreen for an IO that may resize (cols, rows) first; zero
// means the current size.
func (s *session) checkScreen(op string, want bool, cols, rows int) error {
	if !want {
		return nil
	}
	if s.term == nil {
		return invalidf(op, "screen is not available: this server runs sessions without terminal emulation")
	}
	if cols == 0 && rows == 0 {
		s.mu.Lock()
		cols, rows = s.cols, s.rows
		s.mu.Unlock()
	}
	if cols*rows > MaxScreenCells {
		return invalidf(op, "screen is kept for terminals of at most %d cells (cols x rows), this one is %dx%d; resize it with smaller cols and rows in the same call",
			MaxScreenCells, cols, rows)
	}
	return nil
}

// addScreen sets res.Screen when r asks for it: the screen once the output up to
// res.Cursor is drawn. A re-read (End) gets the screen as it is now, drawn up to the end
// of the output: the emulator never goes back, so no older screen could be given, and a
// re-read is what a watcher (an MCP App's view) refreshes with, since it moves no
// cursor. It stays nil if a concurrent resize made the terminal too large meanwhile.
func (s *session) addScreen(res *ReadResult, r ReadOptions) {
	if !r.Screen || s.term == nil {
		return
	}
	target := res.Cursor
	if r.End != nil {
		s.mu.Lock()
		target = s.ring.End()
		s.mu.Unlock()
	}
	res.Screen, _ = s.term.snapshotStyled(target, r.Styled)
}

// maxWidths bounds the width changes a session remembers: a client resizing on every call
// would otherwise grow the list without end. Output older than the oldest kept change is
// cleaned at that change's width.
const maxWidths = 256

// widthChangedLocked records that the terminal is cols wide from the end of the output
// on, so that the cleaner models each part of the output at the width it was drawn at.
// The caller holds s.mu, before s.cols takes the new width.
func (s *session) widthChangedLocked(cols int) {
	if cols == s.cols {
		return
	}
	if len(s.widths) == 0 {
		s.widths = append(s.widths, clean.Width{At: 0, Cols: s.cols})
	}
	at := s.ring.End()
	if last := &s.widths[len(s.widths)-1]; last.At == at {
		last.Cols = cols // nothing was drawn at the size in between
	} else {
		s.widths = append(s.widths, clean.Width{At: at, Cols: cols})
	}
	// What is no longer in the ring needs no width.
	start := s.ring.Start()
	drop := 0
	for drop+1 < len(s.widths) && s.widths[drop+1].At <= start {
		drop++
	}
	drop = max(drop, len(s.widths)-maxWidths)
	s.widths = slices.Delete(s.widths, 0, drop)
}

// widthsLocked returns the terminal's width over the output, for clean.Capped.WriteAt: a
// copy, which the caller may use once the lock is released.
func (s *session) widthsLocked() []clean.Width {
	if len(s.widths) == 0 {
		return []clean.Width{{At: 0, Cols: s.cols}}
	}
	return slices.Clone(s.widths)
}

// maxAltSwitches bounds the switches a session remembers; a program that flips screens
// thousands of times leaves the older reads not knowing where they start (altAt).
const maxAltSwitches = 4096

// altScannedLocked records the switches found in the output scanned up to end, and drops
// those before start, the oldest output still held. The caller holds evMu.
func (t *term) altScannedLocked(switches []clean.AltSwitch, end, start int64) {
	t.alts = append(t.alts, switches...)
	t.altScanned = end
	drop := 0
	for drop < len(t.alts) && (t.alts[drop].At <= start || len(t.alts)-drop > maxAltSwitches) {
		t.altBase = t.alts[drop].On
		drop++
	}
	t.alts = slices.Delete(t.alts, 0, drop)
}

// altAt reports whether the alternate screen is on at offset at of the output, and
// whether that is known yet (the output up to there has been scanned). Taken under s.mu.
func (t *term) altAt(at int64) (on, known bool) {
	t.evMu.Lock()
	defer t.evMu.Unlock()
	if at > t.altScanned {
		return false, false
	}
	on = t.altBase
	for i := len(t.alts) - 1; i >= 0; i-- {
		if t.alts[i].At <= at {
			on = t.alts[i].On
			break
		}
	}
	return on, true
}

// altOnSince returns where the alternate screen, on at offset to, was last switched on:
// the offset of that switch, or from when it came before from (or before the oldest
// switch kept). Taken under s.mu, once altAt knows to.
func (t *term) altOnSince(from, to int64) int64 {
	t.evMu.Lock()
	defer t.evMu.Unlock()
	for i := len(t.alts) - 1; i >= 0; i-- {
		if t.alts[i].At <= to {
			return max(from, t.alts[i].At)
		}
	}
	return from
}

// scanUpTo brings the scan up to offset to, so that altAt knows it. The caller holds
// neither mu nor s.mu.
func (t *term) scanUpTo(to int64) {
	t.mu.Lock()
	t.scanTo(to, true)
	t.flush()
}

// screenTerm returns the session's terminal when it keeps a screen, else nil: reads then
// show the alternate screen as its rows. The caller holds s.mu.
func (s *session) screenTerm() *term {
	if s.term == nil || s.cols*s.rows > MaxScreenCells {
		return nil
	}
	return s.term
}

// plainText reports whether the matcher's text of the output from offset from is what
// a read of it returns: not when the range starts on the alternate screen, or switches
// screens, which a read shows differently (see outputText). The caller holds s.mu.
func (s *session) plainText(from int64, mt *clean.Matcher) bool {
	t := s.screenTerm()
	if t == nil {
		return true
	}
	on, known := t.altAt(from)
	return known && !on && !mt.SawAlt()
}
