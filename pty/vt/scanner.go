package vt

import "bytes"

// Scanner reads a session's output the way a terminal parses it, but only for what must
// not wait for the emulator, which is a thousand times slower: it answers the questions
// programs ask the terminal, keeps the modes they set (for mode queries, for what keys
// send (State.KeyModes), and to restore them when the emulator skips ahead), and finds the places the emulator may skip to.
// It runs over every byte the program prints, in order, on the session's terminal
// goroutine (the pty package's term), never in the read loop.
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
type Scanner struct {
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
	st         State
	lastMain   Anchor // the newest skip point on the main screen

	// barrierAt is where the last barrier began: a sequence that moves the cursor
	// elsewhere, switches screens or changes how text flows, a resize, a gap. The rows
	// printed after it tell what the screen shows, and a skip may go to the start of
	// its last screenfuls (the pty package's term.rowStart).
	barrierAt int64

	// The line model, run by the pty package's term.rowStart over the output after the
	// last barrier (lines set), never over all of it: col is where the cursor would be
	// if the output were plain text, and marks holds the offsets where the last 2*rows
	// rows began (after a line feed or where a long line wrapped).
	lines bool
	col   int
	marks []int64
	mhead int // index of the oldest mark
	mlen  int

	// points are where the emulator may restart from, oldest first: full-screen clears,
	// screen switches and resets, with the modes in force there.
	points []SkipPoint
	// While the alternate screen is shown, session is where it was entered and what the
	// main screen, hidden meanwhile, needs to be redrawn from.
	session AltSession
	// out holds the queries found and not yet taken by the terminal, in order.
	out []Query
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

// Query is a question found in the output. Reply is the answer to send, or nil for a
// cursor position report, which the terminal makes from the emulator's cursor once the
// emulator has got to At.
type Query struct {
	At    int64 // offset just after the query
	Reply []byte
	Ext   bool // a CPR of the DEC form (CSI ? 6 n)
}

// NewScanner returns a scanner for a terminal of cols x rows, at the start of the output.
func NewScanner(cols, rows int) *Scanner {
	return &Scanner{cols: cols, rows: rows, lastMain: Anchor{At: -1}}
}

// NewLineScanner returns a scanner that runs the line model from offset at.
func NewLineScanner(at int64, cols, rows int) *Scanner {
	return &Scanner{pos: at, cols: cols, rows: rows, lines: true, marks: make([]int64, 2*rows), lastMain: Anchor{At: -1}}
}

// Resize sets the size answers report; it is a barrier.
func (sc *Scanner) Resize(cols, rows int) {
	sc.cols, sc.rows = cols, rows
	sc.barrierAt = sc.pos
}

// Gap restarts parsing at off after output that was never scanned (it fell out of the
// ring): whatever sequence was open is lost.
func (sc *Scanner) Gap(off int64) {
	sc.state = sGround
	sc.pos = off
	sc.barrierAt = off
}

// Take returns the queries found so far and forgets them.
func (sc *Scanner) Take() []Query {
	q := sc.out
	sc.out = nil
	return q
}

// Pos is the offset in the stream of the next byte to scan.
func (sc *Scanner) Pos() int64 { return sc.pos }

// Size is the terminal size the answers report.
func (sc *Scanner) Size() (cols, rows int) { return sc.cols, sc.rows }

// BarrierAt is where the last barrier began (see barrierAt).
func (sc *Scanner) BarrierAt() int64 { return sc.barrierAt }

// State is the terminal's modes as the scanner has read them so far; a skip to Pos
// restores them. The caller must not keep it past the next Scan.
func (sc *Scanner) State() *State { return &sc.st }

// barrier records that the sequence being read is one (see barrierAt).
func (sc *Scanner) barrier() {
	sc.barrierAt = sc.seqAt
	sc.mlen, sc.mhead = 0, 0
}

// Scan parses p, the output from Pos on.
func (sc *Scanner) Scan(p []byte) {
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
func (sc *Scanner) inSequence(b byte, at int64) {
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
func (sc *Scanner) control(b byte, at int64) {
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

func (sc *Scanner) escape(b byte, at int64) {
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
		sc.st = State{}
		sc.barrier()
		sc.addPoint(sc.seqAt, false)
	case b == '=' || b == '>': // DECKPAM, DECKPNM: the keypad mode, which DECNKM (66) reports
		sc.setDec(66, b == '=')
	case b == '7' || b == '8' || b == 'M' || b == 'D' || b == 'E':
		sc.barrier() // cursor restored or moved by a line
	case b < 0x20 || b == 0x7f:
		sc.state = sEsc
		sc.inSequence(b, at)
	}
}

// param returns parameter i, or def when it is missing or zero.
func (sc *Scanner) param(i, def int) int {
	if i >= sc.np || sc.params[i] == 0 {
		return def
	}
	return sc.params[i]
}
