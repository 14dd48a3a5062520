package vt

import (
	"fmt"
	"strconv"
	"strings"
)

// The answers to terminal queries and the modes they report, which the scanner gives as
// soon as it reads a query (see Scanner).

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
	// longer tell what the screen shows (see Scanner.barrierAt).
	barrierDEC  = map[int]bool{6: true, 7: true, 69: true, 1047: true, 1049: true}
	barrierANSI = map[int]bool{4: true, 20: true}
)

var defaultColors = [3]string{"rgb:ffff/ffff/ffff", "rgb:0000/0000/0000", "rgb:ffff/ffff/ffff"}

// csi acts on a complete control sequence with final byte f; end is the offset after it.
func (sc *Scanner) csi(f byte, end int64) {
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
	if sc.inter == '!' && f == 'p' && sc.priv == 0 {
		// DECSTR, the soft reset: of the modes kept here, it puts the keys back to normal
		// (cursor keys and keypad), what a key sent after it must follow.
		sc.setDec(1, false)
		sc.setDec(66, false)
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
				sc.out = append(sc.out, Query{At: end, Ext: true})
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
			sc.out = append(sc.out, Query{At: end})
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
		sc.st.Top, sc.st.Bottom = 0, 0
		if sc.np > 0 {
			sc.st.Top, sc.st.Bottom = sc.param(0, 1), sc.param(1, sc.rows)
		}
	case 'J':
		sc.barrier()
		if sc.param(0, 0) == 2 {
			at := sc.seqAt
			if sc.prevCSIHome && sc.prevCSIEnd == at {
				at = sc.prevCSIAt
			}
			sc.addPoint(at, sc.st.Alt)
		}
	case 'H', 'f':
		sc.barrier()
		home = sc.param(0, 1) == 1 && sc.param(1, 1) == 1
	default:
		sc.barrier()
	}
}

// setModes records the modes of an SM or RM sequence.
func (sc *Scanner) setModes(set, dec bool) {
	for i := range max(sc.np, 1) {
		mode := sc.param(i, 0)
		if mode == 0 {
			continue
		}
		if dec {
			if mode == 1047 || mode == 1049 {
				// A skip point at the switch itself: from here on the screen shown is the
				// alternate one, cleared, or the main one as it was.
				if sc.st.Alt != set {
					if set {
						sc.enterAlt(sc.seqAt)
					}
					sc.addPoint(sc.seqAt, true)
				}
				sc.st.Alt = set
			}
			if barrierDEC[mode] {
				sc.barrier()
			}
			sc.setDec(mode, set)
			continue
		}
		if barrierANSI[mode] {
			sc.barrier()
		}
		if sc.st.ANSI == nil {
			sc.st.ANSI = map[int]bool{}
		}
		sc.st.ANSI[mode] = set
	}
}

// setDec records DEC private mode mode as set or reset.
func (sc *Scanner) setDec(mode int, set bool) {
	if sc.st.Dec == nil {
		sc.st.Dec = map[int]bool{}
	}
	sc.st.Dec[mode] = set
}

// reportMode answers DECRQM for mode.
func (sc *Scanner) reportMode(mode int) []byte {
	known, set := ansiModes, sc.st.ANSI
	format := "\x1b[%d;%d$y"
	if sc.priv == '?' {
		known, set = decModes, sc.st.Dec
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

func (sc *Scanner) answer(at int64, reply []byte) {
	sc.out = append(sc.out, Query{At: at, Reply: reply})
}

// oscEnd acts on a complete OSC; st is the terminator it came with, which a reply uses
// too.
func (sc *Scanner) oscEnd(end int64, st string) {
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
		sc.st.Title = rest
	case cmd >= 10 && cmd <= 12:
		// OSC 10;a;b sets or queries 10 with a and 11 with b: xterm chains them.
		for i, item := range strings.Split(rest, ";") {
			k := cmd - 10 + i
			if k > 2 {
				break
			}
			if item == "?" {
				c := sc.st.Colors[k]
				if c == "" {
					c = defaultColors[k]
				}
				sc.answer(end, fmt.Appendf(nil, "\x1b]%d;%s%s", 10+k, c, st))
			} else if c, ok := parseColor(item); ok {
				sc.st.Colors[k] = c
			}
		}
	case cmd >= 110 && cmd <= 112:
		sc.st.Colors[cmd-110] = ""
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
