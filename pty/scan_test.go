package pty

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcp-harness/mcp-harness/pty/ring"
	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// scanAnswers scans p in pieces split at the given offsets and returns what the queries
// found: answers as text, cursor position queries as "CPR@offset".
func scanAnswers(p []byte, splits ...int) ([]string, *scanner) {
	sc := newScanner(80, 24)
	prev := 0
	for _, s := range append(splits, len(p)) {
		s = min(max(s, prev), len(p))
		sc.scan(p[prev:s])
		prev = s
	}
	var out []string
	for _, q := range sc.take() {
		if q.reply == nil {
			out = append(out, fmt.Sprintf("CPR@%d ext=%v", q.at, q.ext))
		} else {
			out = append(out, string(q.reply))
		}
	}
	return out, sc
}

func TestScanner_answers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"\x1b[c", []string{"\x1b[?62;22c"}},
		{"\x1b[>0c", []string{"\x1b[>1;10;0c"}},
		{"\x1b[=c", nil}, // DA3: not answered
		{"\x1b[5n\x1b[6n", []string{"\x1b[0n", "CPR@8 ext=false"}},
		{"\x1b[?6n", []string{"CPR@5 ext=true"}},
		{"\x1b[18t\x1b[19t\x1b[14t", []string{"\x1b[8;24;80t", "\x1b[9;24;80t"}},
		{"\x1b[?1h\x1b[?1$p\x1b[?1l\x1b[?1$p", []string{"\x1b[?1;1$y", "\x1b[?1;2$y"}},
		{"\x1b[?7$p\x1b[20$p\x1b[?0$p", []string{"\x1b[?7;1$y", "\x1b[20;2$y"}},
		{"\x1b]10;?;?\x07", []string{"\x1b]10;rgb:ffff/ffff/ffff\x07", "\x1b]11;rgb:0000/0000/0000\x07"}},
		{"\x1b]11;rgb:1/22/333\x1b\\\x1b]11;?\x1b\\", []string{"\x1b]11;rgb:1111/2222/3333\x1b\\"}},
		{"\x1b]11;#abc\x07\x1b]111\x07\x1b]11;?\x07", []string{"\x1b]11;rgb:0000/0000/0000\x07"}},
		{"\x1b]11;black\x07\x1b]11;?\x07", []string{"\x1b]11;rgb:0000/0000/0000\x07"}},
		// An ESC that is not ST abandons an OSC or DCS and starts a sequence, as in xterm.
		{"\x1b]2;\x1b[c\x07", []string{"\x1b[?62;22c"}},
		{"\x1bP\x1b[c\x1b\\", []string{"\x1b[?62;22c"}},
		// Not queries: inside an OSC or DCS, cancelled, or malformed.
		{"\x1b]2;\x9b[c\x07", nil},
		{"\x1bPq#0;2;0;0;0#1~~\x1b\\\x1b[5n", []string{"\x1b[0n"}},
		{"\x1b[6\x18n\x1b[5n", []string{"\x1b[0n"}},
		{"\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17c", nil},
		{"\x1b[?6;6n", []string{"CPR@7 ext=true"}},
		{"x\x1b[c\x1b[c", []string{"\x1b[?62;22c", "\x1b[?62;22c"}},
	} {
		got, _ := scanAnswers([]byte(tc.in))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("answers to %q (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestScanner_state(t *testing.T) {
	_, sc := scanAnswers([]byte("\x1b]2;my;title\x07\x1b[?1049h\x1b[5;20r\x1b[4h"))
	if sc.st.title != "my;title" || !sc.st.alt || sc.st.top != 5 || sc.st.bottom != 20 || !sc.st.ansi[4] {
		t.Errorf("state %+v, want title my;title, alt, region 5-20, IRM", sc.st)
	}
	_, sc = scanAnswers([]byte("\x1b[?1049h\x1b[5;20r\x1bc"))
	if sc.st.alt || sc.st.top != 0 || len(sc.points) != 2 || sc.points[1].at != 15 {
		t.Errorf("after RIS: state %+v points %+v, want defaults and a point at the reset", sc.st, sc.points)
	}
	// clear(1) sends CSI H CSI 2 J: the skip point is at the home, not the clear.
	_, sc = scanAnswers([]byte("text\x1b[H\x1b[2Jmore"))
	if len(sc.points) != 1 || sc.points[0].at != 4 {
		t.Errorf("points %+v, want one at 4", sc.points)
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

// FuzzScanner checks that the scanner never panics and finds the same answers and state
// however the output is split into reads.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		"\x1b[c", "\x1b[>c\x1b[6n", "\x1b]11;?\x1b\\", "\x1b[?2004$p", "abc\r\n\x1b[2J\x1b[H", "\x1b[?1049h\x1b[18t",
		"\x1bP+q544e\x1b\\", "\x1b]10;#fff;?\x07", "日本\x1b[5n", "\x1b[1;2;3;4;5;6;7;8;9;0;1;2;3;4;5;6;7;8H",
	} {
		f.Add([]byte(s), uint16(1), uint16(3))
	}
	f.Fuzz(func(t *testing.T, p []byte, a, b uint16) {
		whole, sc1 := scanAnswers(p)
		split, sc2 := scanAnswers(p, int(a)%(len(p)+1), int(b)%(len(p)+1))
		if diff := cmp.Diff(whole, split); diff != "" {
			t.Errorf("answers differ when split at %d, %d (-whole +split):\n%s", a, b, diff)
		}
		if sc1.pos != int64(len(p)) || sc1.state != sc2.state || sc1.barrierAt != sc2.barrierAt {
			t.Errorf("state differs when split: pos %d, state %d/%d barrier %d/%d", sc1.pos, sc1.state, sc2.state, sc1.barrierAt, sc2.barrierAt)
		}
		if !cmp.Equal(sc1.st, sc2.st, cmp.AllowUnexported(vtState{})) {
			t.Errorf("tracked modes differ when split: %+v vs %+v", sc1.st, sc2.st)
		}
		// The line model too.
		l1, l2 := newLineScanner(0, 7, 3), newLineScanner(0, 7, 3)
		l1.scan(p)
		cut := int(a) % (len(p) + 1)
		l2.scan(p[:cut])
		l2.scan(p[cut:])
		if l1.col != l2.col || l1.mlen != l2.mlen || !slices.Equal(l1.marks, l2.marks) {
			t.Errorf("line model differs when split at %d: col %d/%d marks %v/%v", cut, l1.col, l2.col, l1.marks, l2.marks)
		}
	})
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

// TestScanner_rowsMatchReference checks the line model's fast path against the plain
// rule it implements: every character takes a column, one past the last starts a row.
func TestScanner_rowsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bcd", "日本", "é", "\r\n", "\r", "\t", strings.Repeat("x", 37), "\b"}
	for range 500 {
		cols, rows := 1+r.IntN(50), 1+r.IntN(10)
		var p []byte
		for range r.IntN(200) {
			p = append(p, pieces[r.IntN(len(pieces))]...)
		}
		// The reference, one byte at a time.
		var want []int64
		col := 0
		for i, c := range p {
			switch {
			case c == '\n':
				want = append(want, int64(i+1))
				col = 0
			case c == '\r':
				col = 0
			case c == '\b':
				col = max(col-1, 0)
			case c == '\t':
				col = min((col/8+1)*8, max(cols-1, col))
			case c >= 0x20 && (c < 0x80 || c >= 0xc0):
				if col++; col > cols {
					want = append(want, int64(i))
					col = 1
				}
			}
		}
		sc := newLineScanner(0, cols, rows)
		sc.scan(p)
		var got []int64
		for i := range sc.mlen {
			got = append(got, sc.marks[(sc.mhead+i)%len(sc.marks)])
		}
		if len(want) > len(sc.marks) {
			want = want[len(want)-len(sc.marks):]
		}
		if !slices.Equal(got, want) || sc.col != col {
			t.Fatalf("cols %d, %q: rows start at %v col %d, want %v col %d", cols, p, got, sc.col, want, col)
		}
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
	if tm.sc.pos >= s.ring.End() {
		t.Errorf("scanned all %d bytes past the bound", s.ring.End())
	}
	tm.pending = nil // as if sent
	if _, full := tm.scanAll(); !full {
		t.Errorf("the scan did not go on (and stop again) once the answers were out")
	}
}
