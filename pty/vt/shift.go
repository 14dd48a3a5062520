package vt

import "bytes"

// shiftFilter makes the shifts between the G0 and G1 charsets work: vt designates both
// (ESC ( F, ESC ) F) but registers its SO and SI handlers among the C1 controls, where
// 0x0e and 0x0f never arrive, so text shifted into DEC line drawing with SO prints as
// letters (lqqk). The filter keeps what G0 and G1 hold and rewrites the shifts into
// designations of G0, the set vt does show: SO designates G1's charset into G0, SI puts
// G0's back, and while shifted a designation of G1 goes to G0 and one of G0 is only
// recorded.
type shiftFilter struct {
	g0, g1  byte // the final bytes of the designations; 0 is ASCII (B)
	shifted bool
	esc     uint8 // 0; escAfter: after ESC; escG0, escG1: after ESC ( or ESC )
	out     []byte
}

const (
	escAfter uint8 = iota + 1
	escG0
	escG1
)

// filter returns p with the shifts rewritten; the result is valid until the next call.
// An ESC at the end of p is held until the next call tells what it starts.
func (f *shiftFilter) filter(p []byte) []byte {
	if f.esc == 0 && bytes.IndexByte(p, 0x1b) < 0 && bytes.IndexByte(p, 0x0e) < 0 && bytes.IndexByte(p, 0x0f) < 0 {
		return p
	}
	f.out = f.out[:0]
	for _, b := range p {
		switch f.esc {
		case escAfter:
			switch b {
			case '(':
				f.esc = escG0
			case ')':
				f.esc = escG1
			case 0x1b:
				f.out = append(f.out, 0x1b)
			default:
				if b == 'c' { // RIS: both sets back to ASCII
					f.g0, f.g1, f.shifted = 0, 0, false
				}
				f.out = append(f.out, 0x1b, b)
				f.esc = 0
			}
			continue
		case escG0, escG1:
			g := f.esc
			f.esc = 0
			if b < 0x30 || b > 0x7e { // not a one-byte final: leave the sequence alone
				f.out = append(f.out, 0x1b, map[uint8]byte{escG0: '(', escG1: ')'}[g], b)
				continue
			}
			if g == escG0 {
				f.g0 = b
				if !f.shifted {
					f.out = append(f.out, 0x1b, '(', b)
				}
			} else {
				f.g1 = b
				if f.shifted {
					f.out = append(f.out, 0x1b, '(', b)
				}
			}
			continue
		}
		switch b {
		case 0x1b:
			f.esc = escAfter
		case 0x0e:
			f.shifted = true
			f.out = append(f.out, 0x1b, '(', final(f.g1))
		case 0x0f:
			f.shifted = false
			f.out = append(f.out, 0x1b, '(', final(f.g0))
		default:
			f.out = append(f.out, b)
		}
	}
	return f.out
}

func final(g byte) byte {
	if g == 0 {
		return 'B'
	}
	return g
}
