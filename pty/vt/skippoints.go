package vt

import "maps"

// Where the emulator may skip to: the places the scanner finds where the screen starts
// afresh, with the modes in force there, and the line model that finds where the last
// screenfuls of scrolling text begin.

// SkipPoint is a place in the output where what the screen shows no longer depends on
// what came before, except for the modes in State: a full-screen clear, a screen switch,
// a reset. A point on the alternate screen (or where it is left) also needs the main
// screen as it was when the alternate one was entered: Alt tells how to get that.
type SkipPoint struct {
	At    int64
	State State
	Alt   *AltSession
}

// AltSession is a stay on the alternate screen: where it began, and the newest places
// before that from which the main screen can be drawn: a skip point on it (Main.At < 0
// for none), and the rows printed after its last barrier.
type AltSession struct {
	Enter int64
	Main  Anchor
	Rows  RowSpan
}

// RowSpan is output without barriers on the main screen, at one size.
type RowSpan struct {
	From, To   int64
	Cols, Rows int
	State      State
}

// Anchor is a skip point on the main screen.
type Anchor struct {
	At    int64
	State State
}

// State is what the scanner tracks of the terminal's modes: what mode queries answer,
// and what a skip must restore in the emulator (AppendState).
type State struct {
	Dec, ANSI   map[int]bool // modes set (true) or reset (false) by the program
	Alt         bool         // the alternate screen is shown
	Top, Bottom int          // scroll region as set by DECSTBM; 0, 0: the whole screen
	Title       string
	Colors      [3]string // set by OSC 10, 11, 12, as rgb:rrrr/gggg/bbbb; "" for the default
}

// clone returns a copy of s that shares no maps with it.
func (s State) clone() State {
	s.Dec, s.ANSI = maps.Clone(s.Dec), maps.Clone(s.ANSI)
	return s
}

// mark records a row starting at offset at, for the line model.
func (sc *Scanner) mark(at int64) {
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

// RowStart returns where the last 2*rows rows began, once the line model has seen that
// many.
func (sc *Scanner) RowStart() (int64, bool) {
	if sc.mlen < len(sc.marks) || sc.mlen == 0 {
		return 0, false
	}
	return sc.marks[sc.mhead], true
}

// Point returns the newest skip point at or before target and after from.
func (sc *Scanner) Point(from, target int64) (SkipPoint, bool) {
	for i := len(sc.points) - 1; i >= 0; i-- {
		if p := sc.points[i]; p.At <= target {
			return p, p.At > from
		}
	}
	return SkipPoint{}, false
}

// addPoint records a skip point at offset at; alt says whether it is on the alternate
// screen or leaves it (it needs the main screen as it was).
func (sc *Scanner) addPoint(at int64, alt bool) {
	if len(sc.points) == maxPoints {
		copy(sc.points, sc.points[1:])
		sc.points = sc.points[:maxPoints-1]
	}
	p := SkipPoint{At: at, State: sc.st.clone()}
	if alt {
		session := sc.session
		p.Alt = &session
	} else {
		sc.lastMain = Anchor{At: at, State: p.State}
	}
	sc.points = append(sc.points, p)
}

// enterAlt records the alternate screen being entered at offset at: the main screen can
// later be drawn from the newer of its last skip point and its last screenfuls (the
// rows after the last barrier, looked at only if needed).
func (sc *Scanner) enterAlt(at int64) {
	sc.session = AltSession{Enter: at, Main: sc.lastMain,
		Rows: RowSpan{From: sc.barrierAt, To: at, Cols: sc.cols, Rows: sc.rows, State: sc.st.clone()}}
}
