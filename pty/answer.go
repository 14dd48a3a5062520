package pty

import (
	"bytes"
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// scanner reads a session's output the way a terminal parses it, but only for what must
// not wait for the emulator, which is a thousand times slower: it answers the questions
// programs ask the terminal, keeps the modes they set (for mode queries, and to restore
// them when the emulator skips ahead), and finds the places the emulator may skip to.
// It runs over every byte the program prints, in order, on the session's terminal
// goroutine (see term), never in the read loop.
//
// Answers (DESIGN.md, "The terminal answers and has a screen"):
//
//	CSI 5 n          status        CSI 0 n
//	CSI 6 n          cursor        CSI row ; col R (1-based), from the emulator once it has got to the query
//	CSI ? 6 n        cursor        CSI ? row ; col ; 1 R, the same way
//	CSI c, CSI 0 c   DA1           CSI ? 62 ; 22 c (VT220 with ANSI colour)
//	CSI > c          DA2           CSI > 1 ; 10 ; 0 c
//	CSI ? Ps $ p     DECRQM (DEC)  CSI ? Ps ; Pm $ y (1 set, 2 reset, 0 unknown mode)
//	CSI Ps $ p       DECRQM (ANSI) CSI Ps ; Pm $ y
//	CSI 18 t         text area     CSI 8 ; rows ; cols t
//	CSI 19 t         screen size   CSI 9 ; rows ; cols t
//	OSC 10/11/12 ; ? colours       OSC 10/11/12 ; rgb:rrrr/gggg/bbbb, ended like the query (BEL or ST)
//
// Colours are those a program set with OSC 10/11/12, else white text and cursor on
// black, the emulator's defaults.
type scanner struct {
	state  scanState
	pos    int64 // offset in the stream of the next byte to scan
	seqAt  int64 // offset of the ESC that began the sequence being read
	priv   byte  // CSI private marker ('?', '>', '=', '<'), 0 if none
	inter  byte  // last intermediate byte of an ESC or CSI sequence, 0 if none
	params [maxParams]int
	np     int // parameters started; 0 when the sequence has none
	osc    []byte
	oscBig bool // the OSC payload outgrew maxOSC and is ignored

	// prevCSI* describe the CSI sequence that ended last, so a clear (CSI 2 J) right after
	// a cursor home (CSI H) can be skipped to from the home: clear(1) sends both.
	prevCSIAt, prevCSIEnd int64
	prevCSIHome           bool

	cols, rows int
	st         vtState
	lastMain   anchor // the newest skip point on the main screen

	// barrierAt is where the last barrier began: a sequence that moves the cursor
	// elsewhere, switches screens or changes how text flows, a resize, a gap. The rows
	// printed after it tell what the screen shows, and a skip may go to the start of
	// its last screenfuls (term.rowStart).
	barrierAt int64

	// The line model, run by term.rowStart over the output after the last barrier (lines
	// set), never over all of it: col is where the cursor would be if the output were
	// plain text, and marks holds the offsets where the last 2*rows rows began (after a
	// line feed or where a long line wrapped).
	lines bool
	col   int
	marks []int64
	mhead int // index of the oldest mark
	mlen  int

	// points are where the emulator may restart from, oldest first: full-screen clears,
	// screen switches and resets, with the modes in force there.
	points []skipPoint
	// While the alternate screen is shown, session is where it was entered and what the
	// main screen, hidden meanwhile, needs to be redrawn from.
	session altSession
	// out holds the queries found and not yet taken by the terminal, in order.
	out []query
}

type scanState uint8

const (
	sGround    scanState = iota
	sEsc                 // after ESC
	sEscInter            // ESC and intermediates: a charset designation or the like
	sCSI                 // control sequence
	sCSIIgnore           // malformed control sequence: skipped to its final byte
	sOSC                 // operating system command, to BEL or ST
	sOSCEsc              // ESC inside an OSC: ST if '\' follows
	sStr                 // DCS, SOS, PM or APC: skipped to ST
	sStrEsc              // ESC inside one of those
)

const (
	maxParams = 16
	maxOSC    = 4096
	maxPoints = 8 // skip points kept; only the newest ones before a target are ever used
)

// query is a question found in the output. reply is the answer to send, or nil for a
// cursor position report, which the terminal makes from the emulator's cursor once the
// emulator has got to at.
type query struct {
	at    int64 // offset just after the query
	reply []byte
	ext   bool // a CPR of the DEC form (CSI ? 6 n)
}

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

// Modes a DECRQM is answered for, with their defaults: those the emulator implements.
// Any other mode is reported as not recognized (0).
var (
	decModes = map[int]bool{
		1: false, 6: false, 7: true, 9: false, 25: true, 66: false, 69: false,
		1000: false, 1001: false, 1002: false, 1003: false, 1004: false, 1006: false,
		1047: false, 1048: false, 1049: false, 2004: false,
	}
	ansiModes = map[int]bool{4: false, 20: false}
	// barrierDEC and barrierANSI change where text goes: after one, the rows printed no
	// longer tell what the screen shows (see scanner.barrierAt).
	barrierDEC  = map[int]bool{6: true, 7: true, 69: true, 1047: true, 1049: true}
	barrierANSI = map[int]bool{4: true, 20: true}
)

var defaultColors = [3]string{"rgb:ffff/ffff/ffff", "rgb:0000/0000/0000", "rgb:ffff/ffff/ffff"}

func newScanner(cols, rows int) *scanner {
	return &scanner{cols: cols, rows: rows, lastMain: anchor{at: -1}}
}

// newLineScanner returns a scanner that runs the line model from offset at.
func newLineScanner(at int64, cols, rows int) *scanner {
	return &scanner{pos: at, cols: cols, rows: rows, lines: true, marks: make([]int64, 2*rows), lastMain: anchor{at: -1}}
}

// resize sets the size answers report; it is a barrier.
func (sc *scanner) resize(cols, rows int) {
	sc.cols, sc.rows = cols, rows
	sc.barrierAt = sc.pos
}

// gap restarts parsing at off after output that was never scanned (it fell out of the
// ring): whatever sequence was open is lost.
func (sc *scanner) gap(off int64) {
	sc.state = sGround
	sc.pos = off
	sc.barrierAt = off
}

// take returns the queries found so far and forgets them.
func (sc *scanner) take() []query {
	q := sc.out
	sc.out = nil
	return q
}

// barrier records that the sequence being read is one (see barrierAt).
func (sc *scanner) barrier() {
	sc.barrierAt = sc.seqAt
	sc.mlen, sc.mhead = 0, 0
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

// scan parses p, the output from sc.pos on.
func (sc *scanner) scan(p []byte) {
	base := sc.pos
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch sc.state {
		case sGround:
			if !sc.lines {
				// The hot path: only escape sequences matter.
				k := bytes.IndexByte(p[i:], 0x1b)
				if k < 0 {
					i = len(p)
					break
				}
				i += k
				sc.seqAt = base + int64(i)
				sc.state = sEsc
				break
			}
			// The line model: a run of printable text, counted in columns for the line model
			// (a UTF-8 continuation byte adds none; a wide character is counted as one
			// column, which errs towards fewer rows, the safe side). A character that
			// would go past the last column starts the next row.
			j, col, cols := i, sc.col, sc.cols
			for j < len(p) {
				c := p[j]
				if c >= 0x20 && c < 0x7f {
					k := j + 1
					for k < len(p) && p[k] >= 0x20 && p[k] < 0x7f {
						k++
					}
					if n := k - j; col+n <= cols {
						col += n
					} else {
						first := j + cols - col // the first character on a new row
						for w := first; w < k; w += cols {
							sc.mark(base + int64(w))
						}
						col = (k-first-1)%cols + 1
					}
					j = k
					continue
				}
				if c < 0x20 || c == 0x7f {
					break
				}
				if c >= 0xc0 {
					if col++; col > cols {
						sc.mark(base + int64(j))
						col = 1
					}
				}
				j++
			}
			sc.col = col
			if i = j; i == len(p) {
				break
			}
			b = p[i]
			if b == 0x1b {
				sc.seqAt = base + int64(i)
				sc.state = sEsc
			} else {
				sc.control(b, base+int64(i))
			}
		case sEsc:
			sc.escape(b, base+int64(i))
		case sEscInter:
			switch {
			case b >= 0x20 && b <= 0x2f:
			case b >= 0x30 && b <= 0x7e:
				sc.state = sGround
			default:
				sc.inSequence(b, base+int64(i))
			}
		case sCSI:
			switch {
			case b >= '0' && b <= '9':
				if sc.np == 0 {
					sc.np = 1
				}
				if v := &sc.params[sc.np-1]; *v < 65535 {
					*v = *v*10 + int(b-'0')
				}
			case b == ';' || b == ':':
				if sc.np == 0 {
					sc.np = 1
				}
				if sc.np < maxParams {
					sc.params[sc.np] = 0
					sc.np++
				} else {
					sc.state = sCSIIgnore
				}
			case b >= 0x3c && b <= 0x3f:
				if sc.np == 0 && sc.priv == 0 && sc.inter == 0 {
					sc.priv = b
				} else {
					sc.state = sCSIIgnore
				}
			case b >= 0x20 && b <= 0x2f:
				sc.inter = b
			case b >= 0x40 && b <= 0x7e:
				sc.state = sGround
				sc.csi(b, base+int64(i)+1)
			default:
				sc.inSequence(b, base+int64(i))
			}
		case sCSIIgnore:
			if b >= 0x40 && b <= 0x7e {
				sc.state = sGround
				sc.barrier() // unknown effect on the screen
			} else if b < 0x20 || b == 0x7f {
				sc.inSequence(b, base+int64(i))
			}
		case sOSC:
			switch b {
			case 0x07:
				sc.state = sGround
				sc.oscEnd(base+int64(i)+1, "\x07")
			case 0x1b:
				sc.state = sOSCEsc
			case 0x18, 0x1a:
				sc.state = sGround
			default:
				if b < 0x20 {
					break // ignored inside an OSC, as xterm does
				}
				if len(sc.osc) < maxOSC {
					sc.osc = append(sc.osc, b)
				} else {
					sc.oscBig = true
				}
			}
		case sOSCEsc:
			if b == '\\' {
				sc.state = sGround
				sc.oscEnd(base+int64(i)+1, "\x1b\\")
				break
			}
			// Another sequence begins: the OSC is abandoned, as xterm does.
			sc.seqAt = base + int64(i) - 1
			sc.state = sEsc
			sc.escape(b, base+int64(i))
		case sStr:
			switch b {
			case 0x1b:
				sc.state = sStrEsc
			case 0x18, 0x1a:
				sc.state = sGround
			}
		case sStrEsc:
			if b == '\\' {
				sc.state = sGround
				break
			}
			sc.seqAt = base + int64(i) - 1
			sc.state = sEsc
			sc.escape(b, base+int64(i))
		}
	}
	sc.pos = base + int64(len(p))
}

// inSequence handles a control byte met inside an ESC or CSI sequence: CAN and SUB
// cancel it, ESC starts another, the rest act as they do in text.
func (sc *scanner) inSequence(b byte, at int64) {
	switch {
	case b == 0x18 || b == 0x1a:
		sc.state = sGround
	case b == 0x1b:
		sc.seqAt = at
		sc.state = sEsc
	case b < 0x20:
		sc.control(b, at)
	default:
		sc.state = sCSIIgnore // a byte no sequence contains
	}
}

// control acts on a C0 control character for the line model.
func (sc *scanner) control(b byte, at int64) {
	if !sc.lines {
		return
	}
	switch b {
	case '\n', '\v', '\f':
		sc.mark(at + 1)
		sc.col = 0
	case '\r':
		sc.col = 0
	case '\b':
		sc.col = max(sc.col-1, 0)
	case '\t':
		sc.col = min((sc.col/8+1)*8, max(sc.cols-1, sc.col))
	}
}

func (sc *scanner) escape(b byte, at int64) {
	sc.state = sGround
	switch {
	case b == '[':
		sc.state, sc.priv, sc.inter, sc.np = sCSI, 0, 0, 0
		sc.params[0] = 0
	case b == ']':
		sc.state, sc.osc, sc.oscBig = sOSC, sc.osc[:0], false
	case b == 'P' || b == 'X' || b == '^' || b == '_':
		sc.state = sStr
	case b >= 0x20 && b <= 0x2f:
		sc.state = sEscInter
	case b == 'c': // RIS: full reset, to the main screen, cleared
		sc.st = vtState{}
		sc.barrier()
		sc.addPoint(sc.seqAt, false)
	case b == '7' || b == '8' || b == 'M' || b == 'D' || b == 'E':
		sc.barrier() // cursor restored or moved by a line
	case b < 0x20 || b == 0x7f:
		sc.state = sEsc
		sc.inSequence(b, at)
	}
}

// param returns parameter i, or def when it is missing or zero.
func (sc *scanner) param(i, def int) int {
	if i >= sc.np || sc.params[i] == 0 {
		return def
	}
	return sc.params[i]
}

// csi acts on a complete control sequence with final byte f; end is the offset after it.
func (sc *scanner) csi(f byte, end int64) {
	home := false
	defer func() {
		sc.prevCSIAt, sc.prevCSIEnd, sc.prevCSIHome = sc.seqAt, end, home
	}()
	if sc.inter == '$' && f == 'p' { // DECRQM
		if mode := sc.param(0, 0); mode != 0 {
			sc.answer(end, sc.reportMode(mode))
		}
		return
	}
	if sc.inter != 0 {
		if !(sc.inter == ' ' && f == 'q') { // DECSCUSR only sets the cursor's shape
			sc.barrier()
		}
		return
	}
	switch sc.priv {
	case '?':
		switch f {
		case 'h', 'l':
			sc.setModes(f == 'h', true)
		case 'n':
			if sc.param(0, 0) == 6 {
				sc.out = append(sc.out, query{at: end, ext: true})
			}
		case 'u', 'c', 'S', 'm':
			// kitty keyboard query, DA replies, sixel/XTSMGRAPHICS, modifier queries: no effect
		default:
			sc.barrier()
		}
		return
	case '>':
		if f == 'c' && sc.param(0, 0) == 0 {
			sc.answer(end, []byte("\x1b[>1;10;0c"))
		}
		return
	case 0:
	default:
		return
	}
	switch f {
	case 'm', 'K', 'X', '@', 'P', 'q':
		// styles and edits within the line: the rows are unchanged
	case 'C', 'a':
		sc.col = min(sc.col+sc.param(0, 1), sc.cols)
	case 'D':
		sc.col = max(sc.col-sc.param(0, 1), 0)
	case 'G', '`':
		sc.col = min(sc.param(0, 1)-1, sc.cols)
	case 'n':
		switch sc.param(0, 0) {
		case 5:
			sc.answer(end, []byte("\x1b[0n"))
		case 6:
			sc.out = append(sc.out, query{at: end})
		}
	case 'c':
		if sc.param(0, 0) == 0 {
			sc.answer(end, []byte("\x1b[?62;22c"))
		}
	case 't':
		switch sc.param(0, 0) {
		case 18:
			sc.answer(end, fmt.Appendf(nil, "\x1b[8;%d;%dt", sc.rows, sc.cols))
		case 19:
			sc.answer(end, fmt.Appendf(nil, "\x1b[9;%d;%dt", sc.rows, sc.cols))
		}
	case 'h', 'l':
		sc.setModes(f == 'h', false)
	case 'r':
		sc.barrier()
		sc.st.top, sc.st.bottom = 0, 0
		if sc.np > 0 {
			sc.st.top, sc.st.bottom = sc.param(0, 1), sc.param(1, sc.rows)
		}
	case 'J':
		sc.barrier()
		if sc.param(0, 0) == 2 {
			at := sc.seqAt
			if sc.prevCSIHome && sc.prevCSIEnd == at {
				at = sc.prevCSIAt
			}
			sc.addPoint(at, sc.st.alt)
		}
	case 'H', 'f':
		sc.barrier()
		home = sc.param(0, 1) == 1 && sc.param(1, 1) == 1
	default:
		sc.barrier()
	}
}

// setModes records the modes of an SM or RM sequence.
func (sc *scanner) setModes(set, dec bool) {
	for i := range max(sc.np, 1) {
		mode := sc.param(i, 0)
		if mode == 0 {
			continue
		}
		if dec {
			if mode == 1047 || mode == 1049 {
				// A skip point at the switch itself: from here on the screen shown is the
				// alternate one, cleared, or the main one as it was.
				if sc.st.alt != set {
					if set {
						sc.enterAlt(sc.seqAt)
					}
					sc.addPoint(sc.seqAt, true)
				}
				sc.st.alt = set
			}
			if barrierDEC[mode] {
				sc.barrier()
			}
			if sc.st.dec == nil {
				sc.st.dec = map[int]bool{}
			}
			sc.st.dec[mode] = set
			continue
		}
		if barrierANSI[mode] {
			sc.barrier()
		}
		if sc.st.ansi == nil {
			sc.st.ansi = map[int]bool{}
		}
		sc.st.ansi[mode] = set
	}
}

// reportMode answers DECRQM for mode.
func (sc *scanner) reportMode(mode int) []byte {
	known, set := ansiModes, sc.st.ansi
	format := "\x1b[%d;%d$y"
	if sc.priv == '?' {
		known, set = decModes, sc.st.dec
		format = "\x1b[?%d;%d$y"
	}
	v := 0 // not recognized
	if def, ok := known[mode]; ok {
		on, ok := set[mode]
		if !ok {
			on = def
		}
		v = 2
		if on {
			v = 1
		}
	}
	return fmt.Appendf(nil, format, mode, v)
}

func (sc *scanner) answer(at int64, reply []byte) {
	sc.out = append(sc.out, query{at: at, reply: reply})
}

// oscEnd acts on a complete OSC; st is the terminator it came with, which a reply uses
// too.
func (sc *scanner) oscEnd(end int64, st string) {
	if sc.oscBig {
		return
	}
	num, rest, _ := strings.Cut(string(sc.osc), ";")
	cmd, err := strconv.Atoi(num)
	if err != nil {
		return
	}
	switch {
	case cmd == 0 || cmd == 2:
		sc.st.title = rest
	case cmd >= 10 && cmd <= 12:
		// OSC 10;a;b sets or queries 10 with a and 11 with b: xterm chains them.
		for i, item := range strings.Split(rest, ";") {
			k := cmd - 10 + i
			if k > 2 {
				break
			}
			if item == "?" {
				c := sc.st.colors[k]
				if c == "" {
					c = defaultColors[k]
				}
				sc.answer(end, fmt.Appendf(nil, "\x1b]%d;%s%s", 10+k, c, st))
			} else if c, ok := parseColor(item); ok {
				sc.st.colors[k] = c
			}
		}
	case cmd >= 110 && cmd <= 112:
		sc.st.colors[cmd-110] = ""
	}
}

// parseColor reads the colour forms programs set with OSC 10/11/12 (#rgb, #rrggbb,
// #rrrrggggbbbb, rgb:r/g/b with 1 to 4 hex digits each) into the rgb:rrrr/gggg/bbbb form
// xterm reports. Colour names are not known here.
func parseColor(s string) (string, bool) {
	var parts []string
	if h, ok := strings.CutPrefix(s, "#"); ok {
		if len(h) == 0 || len(h)%3 != 0 || len(h) > 12 {
			return "", false
		}
		n := len(h) / 3
		parts = []string{h[:n], h[n : 2*n], h[2*n:]}
	} else if rgb, ok := strings.CutPrefix(s, "rgb:"); ok {
		parts = strings.Split(rgb, "/")
		if len(parts) != 3 {
			return "", false
		}
	} else {
		return "", false
	}
	var v [3]uint64
	for i, p := range parts {
		if len(p) < 1 || len(p) > 4 {
			return "", false
		}
		x, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return "", false
		}
		v[i] = x * 0xffff / (1<<(4*len(p)) - 1) // scale to 16 bits: f -> ffff, 80 -> 8080
	}
	return fmt.Sprintf("rgb:%04x/%04x/%04x", v[0], v[1], v[2]), true
}
