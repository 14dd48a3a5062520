package pty

import "maps"

// Where the emulator may skip to: the places the scanner finds where the screen starts
// afresh, with the modes in force there, and the line model that finds where the last
// screenfuls of scrolling text begin.

// skipPoint is a place in the output where what the screen shows no longer depends on
// what came before, except for the modes in st: a full-screen clear, a screen switch, a
// reset. A point on the alternate screen (or where it is left) also needs the main
// screen as it was when the alternate one was entered: alt tells how to get that.
type skipPoint struct {
	at  int64
	st  vtState
	alt *altSession
}

// altSession is a stay on the alternate screen: where it began, and the newest places
// before that from which the main screen can be drawn: a skip point on it (main.at < 0
// for none), and the rows printed after its last barrier.
type altSession struct {
	enter int64
	main  anchor
	rows  rowSpan
}

// rowSpan is output without barriers on the main screen, at one size.
type rowSpan struct {
	from, to   int64
	cols, rows int
	st         vtState
}

// anchor is a skip point on the main screen.
type anchor struct {
	at int64
	st vtState
}

// vtState is what the scanner tracks of the terminal's modes: what mode queries answer,
// and what a skip must restore in the emulator.
type vtState struct {
	dec, ansi   map[int]bool // modes set (true) or reset (false) by the program
	alt         bool         // the alternate screen is shown
	top, bottom int          // scroll region as set by DECSTBM; 0, 0: the whole screen
	title       string
	colors      [3]string // set by OSC 10, 11, 12, as rgb:rrrr/gggg/bbbb; "" for the default
}

func (s vtState) clone() vtState {
	s.dec, s.ansi = maps.Clone(s.dec), maps.Clone(s.ansi)
	return s
}

func (sc *scanner) mark(at int64) {
	n := len(sc.marks)
	if n == 0 {
		return
	}
	if sc.mlen < n {
		sc.marks[(sc.mhead+sc.mlen)%n] = at
		sc.mlen++
		return
	}
	sc.marks[sc.mhead] = at
	sc.mhead = (sc.mhead + 1) % n
}

// rowStart returns where the last 2*rows rows began, once the line model has seen that
// many.
func (sc *scanner) rowStart() (int64, bool) {
	if sc.mlen < len(sc.marks) || sc.mlen == 0 {
		return 0, false
	}
	return sc.marks[sc.mhead], true
}

// point returns the newest skip point at or before target and after from.
func (sc *scanner) point(from, target int64) (skipPoint, bool) {
	for i := len(sc.points) - 1; i >= 0; i-- {
		if p := sc.points[i]; p.at <= target {
			return p, p.at > from
		}
	}
	return skipPoint{}, false
}

// addPoint records a skip point at offset at; alt says whether it is on the alternate
// screen or leaves it (it needs the main screen as it was).
func (sc *scanner) addPoint(at int64, alt bool) {
	if len(sc.points) == maxPoints {
		copy(sc.points, sc.points[1:])
		sc.points = sc.points[:maxPoints-1]
	}
	p := skipPoint{at: at, st: sc.st.clone()}
	if alt {
		session := sc.session
		p.alt = &session
	} else {
		sc.lastMain = anchor{at: at, st: p.st}
	}
	sc.points = append(sc.points, p)
}

// enterAlt records the alternate screen being entered at offset at: the main screen can
// later be drawn from the newer of its last skip point and its last screenfuls (the
// rows after the last barrier, looked at only if needed).
func (sc *scanner) enterAlt(at int64) {
	sc.session = altSession{enter: at, main: sc.lastMain,
		rows: rowSpan{from: sc.barrierAt, to: at, cols: sc.cols, rows: sc.rows, st: sc.st.clone()}}
}
