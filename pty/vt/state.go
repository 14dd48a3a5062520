package vt

import (
	"fmt"
	"maps"
	"slices"
)

// AppendState appends to b the sequences that put emu in the modes of st: what a skip
// ahead restores, since the emulator did not parse the output that set them.
func AppendState(b []byte, st State, emu Emulator) []byte {
	if emu.AltScreen() != st.Alt {
		if st.Alt {
			b = append(b, "\x1b[?1049h"...)
		} else {
			b = append(b, "\x1b[?1049l"...)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(st.Dec)) {
		if m == 1047 || m == 1048 || m == 1049 {
			continue // the screen is switched above; 1048 would move the cursor
		}
		b = fmt.Appendf(b, "\x1b[?%d%c", m, hl(st.Dec[m]))
	}
	for _, m := range slices.Sorted(maps.Keys(st.ANSI)) {
		b = fmt.Appendf(b, "\x1b[%d%c", m, hl(st.ANSI[m]))
	}
	if st.Top == 0 && st.Bottom == 0 {
		b = append(b, "\x1b[r"...)
	} else {
		b = fmt.Appendf(b, "\x1b[%d;%dr", st.Top, st.Bottom)
	}
	if st.Title != emu.Title() {
		b = fmt.Appendf(b, "\x1b]2;%s\x07", st.Title)
	}
	return b
}

// hl is the final byte that sets a mode (h) or resets it (l).
func hl(set bool) byte {
	if set {
		return 'h'
	}
	return 'l'
}
