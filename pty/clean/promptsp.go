package clean

import "unicode/utf8"

// PromptSPStart returns where in b, the end of a command's output, zsh's PROMPT_SP begins,
// or -1 if b does not end with it. Before its prompt zsh prints the PROMPT_EOL_MARK (a
// reverse-video % or #; the user's own, or nothing), pads it with spaces to the width of a
// cols-wide terminal, returns, and blanks the mark with as many spaces as it is wide: on a
// line the command left unfinished the padding wraps, so the prompt starts on a line of
// its own, and the mark shows where the output ended. That is the shell's, not the
// command's. The padding is cols-w spaces on a terminal that wraps late (xterm's, ours)
// and cols-w-1 on one that does not, w being the mark's width; a sequence this exact does
// not end a command's own output.
func PromptSPStart(b []byte, cols int) int {
	if cols <= 0 || len(b) == 0 || b[len(b)-1] != '\r' {
		return -1
	}
	i := len(b) - 1
	w := 0
	for i > 0 && b[i-1] == ' ' {
		i--
		w++
	}
	if i == 0 || b[i-1] != '\r' || w >= cols {
		return -1
	}
	i--
	pad := 0
	for i > 0 && b[i-1] == ' ' && pad < cols-w {
		i--
		pad++
	}
	if pad != cols-w && pad != cols-w-1 {
		return -1
	}
	// The mark: w columns of text, with the escape sequences that colour it.
	for seen := 0; ; {
		if j := csiBefore(b[:i]); j >= 0 {
			i = j
			continue
		}
		if seen >= w || i == 0 {
			if seen < w {
				return -1
			}
			return i
		}
		r, n := utf8.DecodeLastRune(b[:i])
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		seen += runeWidth(r)
		i -= n
	}
}

// csiBefore returns where the CSI sequence (or a two-byte charset selection such as ESC ( B)
// that ends b starts, or -1 if b does not end with one.
func csiBefore(b []byte) int {
	n := len(b)
	if n >= 3 && b[n-3] == 0x1b && b[n-2] >= 0x20 && b[n-2] <= 0x2f && b[n-1] >= 0x30 && b[n-1] <= 0x7e {
		return n - 3
	}
	if n < 3 || b[n-1] < 0x40 || b[n-1] > 0x7e {
		return -1
	}
	i := n - 1
	for i > 0 && b[i-1] >= 0x20 && b[i-1] <= 0x3f {
		i--
	}
	if i >= 2 && b[i-1] == '[' && b[i-2] == 0x1b {
		return i - 2
	}
	return -1
}
