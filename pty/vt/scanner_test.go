package vt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scanAnswers scans p in pieces split at the given offsets and returns what the queries
// found: answers as text, cursor position queries as "CPR@offset".
func scanAnswers(p []byte, splits ...int) ([]string, *Scanner) {
	sc := NewScanner(80, 24)
	prev := 0
	for _, s := range append(splits, len(p)) {
		s = min(max(s, prev), len(p))
		sc.Scan(p[prev:s])
		prev = s
	}
	var out []string
	for _, q := range sc.Take() {
		if q.Reply == nil {
			out = append(out, fmt.Sprintf("CPR@%d ext=%v", q.At, q.Ext))
		} else {
			out = append(out, string(q.Reply))
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
	if sc.st.Title != "my;title" || !sc.st.Alt || sc.st.Top != 5 || sc.st.Bottom != 20 || !sc.st.ANSI[4] {
		t.Errorf("state %+v, want title my;title, alt, region 5-20, IRM", sc.st)
	}
	_, sc = scanAnswers([]byte("\x1b[?1049h\x1b[5;20r\x1bc"))
	if sc.st.Alt || sc.st.Top != 0 || len(sc.points) != 2 || sc.points[1].At != 15 {
		t.Errorf("after RIS: state %+v points %+v, want defaults and a point at the reset", sc.st, sc.points)
	}
	// clear(1) sends CSI H CSI 2 J: the skip point is at the home, not the clear.
	_, sc = scanAnswers([]byte("text\x1b[H\x1b[2Jmore"))
	if len(sc.points) != 1 || sc.points[0].At != 4 {
		t.Errorf("points %+v, want one at 4", sc.points)
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
		if !cmp.Equal(sc1.st, sc2.st, cmp.AllowUnexported(State{})) {
			t.Errorf("tracked modes differ when split: %+v vs %+v", sc1.st, sc2.st)
		}
		// The line model too.
		l1, l2 := NewLineScanner(0, 7, 3), NewLineScanner(0, 7, 3)
		l1.Scan(p)
		cut := int(a) % (len(p) + 1)
		l2.Scan(p[:cut])
		l2.Scan(p[cut:])
		if l1.col != l2.col || l1.mlen != l2.mlen || !slices.Equal(l1.marks, l2.marks) {
			t.Errorf("line model differs when split at %d: col %d/%d marks %v/%v", cut, l1.col, l2.col, l1.marks, l2.marks)
		}
	})
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
		sc := NewLineScanner(0, cols, rows)
		sc.Scan(p)
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
