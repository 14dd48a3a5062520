package pty

import (
	"fmt"
	"regexp"
	"testing"

	"go.uber.org/goleak"
)

// A program that redraws as soon as SIGWINCH arrives has its redraw drawn at the new
// size: the resize takes its place in the output before anything the program printed
// after it. Each round puts a line on the last row, which a redraw parsed at the old size
// would put elsewhere.
func TestManager_Resize_redrawAtNewSize(t *testing.T) {
	need(t, "python3")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	prog := writeFile(t, "winch.py", `import os, signal, sys, tty
tty.setraw(0)
def draw(*_):
    cols, rows = os.get_terminal_size(0)
    os.write(1, b"\x1b[2J\x1b[Htop\x1b[%d;1Hbottom %dx%d" % (rows, cols, rows))
signal.signal(signal.SIGWINCH, draw)
draw()
while True:
    signal.pause()
`)
	res := mustOpen(t, m, OpenOptions{Command: "exec python3 " + prog, Cols: 80, Rows: 24}, ReadOptions{WaitFor: regexp.MustCompile(`bottom 80x24`)})
	for i := range 20 {
		cols, rows := 80, 24
		if i%2 == 0 {
			cols, rows = 60, 12
		}
		if err := m.Resize(res.SessionID, cols, rows); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("bottom %dx%d", cols, rows)
		waitScreen(t, m, res.SessionID, want+" on the last row", func(s *Screen) bool {
			return s.Rows == rows && s.Lines[0] == "top" && s.Lines[rows-1] == want
		})
	}
}
