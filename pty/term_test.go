package pty

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-harness/mcp-harness/pty/ring"
	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// TestTerm_memory bounds what a session's terminal side costs at the default size; the
// figure is in BENCHMARKS.md (BenchmarkTermMemory).
func TestTerm_memory(t *testing.T) {
	const n = 8
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	terms := make([]*term, n)
	for i := range terms {
		terms[i] = newTerm(&session{}, DefaultCols, DefaultRows)
		terms[i].emu.Write([]byte("\x1b[?1049hx\x1b[?1049l"))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(terms)
	per := (after.HeapAlloc - before.HeapAlloc) / n
	t.Logf("terminal side at %dx%d: %d bytes per session", DefaultCols, DefaultRows, per)
	if per > 2<<20 {
		t.Errorf("terminal side at %dx%d: %d bytes per session, want under 2 MiB", DefaultCols, DefaultRows, per)
	}
}

// lineSkipOf scans p as a session's output and returns where the emulator could skip to
// at its end.
func lineSkipOf(p []byte, cols, rows int) (int64, bool) {
	s := &session{ring: ring.New(DefaultBufferSize), cols: cols, rows: rows}
	tm := newTerm(s, cols, rows)
	s.ring.Write(p)
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.scanAll()
	return tm.lineSkip(s.ring.End())
}

func TestTerm_lineSkip(t *testing.T) {
	var b bytes.Buffer
	for i := range 100 {
		fmt.Fprintf(&b, "line %d\r\n", i)
	}
	at, ok := lineSkipOf(b.Bytes(), 80, 24)
	// 48 row starts (2 x 24) up to the end, the row the cursor is on counted.
	if want := int64(bytes.Index(b.Bytes(), []byte("line 53\r"))); !ok || at != want {
		t.Errorf("lineSkip = %d, %v, want %d, true", at, ok, want)
	}
	// A line longer than the screen counts the rows it wraps into.
	if at, ok := lineSkipOf([]byte(strings.Repeat("x", 80*60)), 80, 24); !ok || at != 80*(60-48) {
		t.Errorf("lineSkip in wrapped text = %d, %v, want %d", at, ok, 80*12)
	}
	// A cursor movement in the last screenfuls, or the alternate screen, rules it out.
	for _, tail := range []string{"\x1b[3A", "\x1b[?1049h", "\x1b[2;10r", "\x1b7"} {
		if _, ok := lineSkipOf(append(b.Bytes()[:b.Len():b.Len()], tail+"x\r\n"...), 80, 24); ok {
			t.Errorf("lineSkip after %q: want none", tail)
		}
	}
	// Carriage returns redraw one row: a progress bar is not scrolling text.
	if _, ok := lineSkipOf([]byte("start\r\n"+strings.Repeat("\rprogress 50%", 10000)), 80, 24); ok {
		t.Errorf("lineSkip in a progress bar: want none")
	}
	// Megabytes of rows: found in a window at the end.
	big := bytes.Repeat([]byte("0123456789\n"), 300000)
	if at, ok := lineSkipOf(big, 80, 24); !ok || at != int64(len(big)-47*11) {
		t.Errorf("lineSkip in 3 MB of rows = %d, %v, want %d", at, ok, len(big)-47*11)
	}
}

// TestTerm_skipMatchesReplay draws generated output (scrolling text of every length,
// progress bars, colours, clears, full-screen programs on the alternate screen) with the
// terminal, which skips ahead, and with an emulator that parses every byte: the screens
// must be the same.
func TestTerm_skipMatchesReplay(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 42))
			cols, rows := 40+r.IntN(60), 10+r.IntN(20)
			var out bytes.Buffer
			for out.Len() < 400<<10 {
				switch r.IntN(12) {
				case 0:
					out.WriteString("\x1b[H\x1b[2J")
				case 1: // a full-screen program: enter, draw, maybe leave
					out.WriteString("\x1b[?1049h\x1b[H\x1b[2J")
					for i := range 5 {
						fmt.Fprintf(&out, "\x1b[%d;%dHitem %d", 1+r.IntN(rows), 1+r.IntN(cols), i)
					}
					if r.IntN(2) == 0 {
						// Home first: vt keeps a pending wrap across the switch (xterm
						// does not), which a skip cannot know of.
						out.WriteString("\x1b[H\x1b[?1049l")
					}
				case 2:
					for i := range 20 {
						fmt.Fprintf(&out, "\rprogress %d%%", i*5)
					}
					out.WriteString("\r\n")
				case 3:
					fmt.Fprintf(&out, "\x1b[3%dmcolour\x1b[m \x1b]2;title %d\x07\r\n", r.IntN(8), r.IntN(100))
				case 4:
					out.WriteString(strings.Repeat("w", r.IntN(3*cols)) + "\r\n")
				case 5:
					out.WriteString("\x1b[?25l\x1b[?2004h日本語 wide\r\n\x1b[?25h")
				default:
					for range 1 + r.IntN(50) {
						fmt.Fprintf(&out, "line %d %s\r\n", r.IntN(1e6), strings.Repeat("x", r.IntN(cols)))
					}
				}
			}
			out.WriteString("last line, no newline")

			// Snapshots at a few places, anywhere (inside a sequence too), so that skips
			// start from an emulator in any state.
			s := &session{ring: ring.New(DefaultBufferSize), cols: cols, rows: rows}
			tm := newTerm(s, cols, rows)
			full := vt.New(cols, rows)
			data := out.Bytes()
			cuts := []int{r.IntN(len(data)), r.IntN(len(data)), r.IntN(len(data)), len(data)}
			slices.Sort(cuts)
			prev := 0
			for i, cut := range cuts {
				s.ring.Write(data[prev:cut])
				full.Write(data[prev:cut])
				prev = cut
				if i == 1 { // a resize between reads: what follows is drawn at the new size
					cols, rows = 40+r.IntN(60), 10+r.IntN(20)
					tm.resized(s.ring.End(), cols, rows)
					full.Resize(cols, rows)
				}
				got, ok := tm.snapshot(s.ring.End())
				if !ok {
					t.Fatal("no screen")
				}
				if tm.fed != s.ring.End() {
					t.Fatalf("fed %d, want the end %d", tm.fed, s.ring.End())
				}
				row, col := full.Cursor()
				want := &Screen{Cols: cols, Rows: rows, Lines: full.Lines(nil), CursorRow: row, CursorCol: col, AltScreen: full.AltScreen(), Title: full.Title()}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("screen at %d after skipping differs from a full replay (-replay +skip):\n%s", cut, diff)
				}
			}
		})
	}
}

// A flood of queries queues a bounded number of answers: scanning waits for them to go
// out, the rest of the output waits in the ring.
func TestTerm_PendingBounded(t *testing.T) {
	s := &session{ring: ring.New(DefaultBufferSize), cols: 80, rows: 24}
	tm := newTerm(s, 80, 24)
	s.ring.Write(bytes.Repeat([]byte("\x1b[c"), 1<<20))
	tm.mu.Lock()
	defer tm.mu.Unlock()
	found, full := tm.scanAll()
	if !found || !full {
		t.Fatalf("scanAll() = found %v, full %v; want both", found, full)
	}
	if n, bound := len(tm.pending), maxPending+(64<<10)/3+1; n > bound {
		t.Errorf("%d answers queued, want at most %d", n, bound)
	}
	if tm.sc.Pos() >= s.ring.End() {
		t.Errorf("scanned all %d bytes past the bound", s.ring.End())
	}
	tm.pending = nil // as if sent
	if _, full := tm.scanAll(); !full {
		t.Errorf("the scan did not go on (and stop again) once the answers were out")
	}
}
