package clean

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var cleanTests = []struct {
	name, in, want string
}{
	{"plain", "hello\nworld", "hello\nworld"},
	{"CRLF", "a\r\nb\r\n", "a\nb\n"},
	{"SGR colours", "\x1b[1;31mred\x1b[0m \x1b[38;5;208mo\x1b[m", "red o"},
	{"private modes", "\x1b[?2004h$ ls\r\n\x1b[?2004l\r", "$ ls\n"},
	{"OSC with BEL", "\x1b]0;title\x07text", "text"},
	{"OSC with ST", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
	{"charset select", "\x1b(Bok\x1b)0", "ok"},
	{"two-byte escapes", "\x1b=\x1b>\x1b7a\x1b8b\x1bMc", "abc"},
	{"DCS", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
	{"APC", "a\x1b_Gf=100;AAAA\x1b\\b", "ab"},
	{"SS3", "a\x1bOPb", "ab"},
	{"progress bar", "10%\r50%\r100%\n", "100%\n"},
	{"shorter overwrite keeps the tail", "abcdef\rXY\n", "XYcdef\n"},
	{"overwrite with erase", "downloading 10%\r\x1b[Kdone\n", "done\n"},
	{"erase whole line", "abc\x1b[2K\rxy", "xy"},
	{"backspace", "abc\bd\n", "abd\n"},
	{"erase with backspace", "abc\b \b\b \bz", "az"},
	{"rubbed out at the end", "$ ab\b \b", "$ a"},
	{"backspace at start", "\b\bx", "x"},
	{"readline insert", "ac\bbc\b", "abc"},
	{"cursor left and delete", "abcd\x1b[2D\x1b[P", "abd"},
	{"insert blanks", "abd\x1b[D\x1b[@c", "abcd"},
	{"erase characters", "abcd\r\x1b[2X", "  cd"},
	{"cursor forward pads", "a\x1b[3Cb", "a   b"},
	{"column absolute", "abcdef\x1b[3GX", "abXdef"},
	{"trailing blanks dropped", "ab\x1b[5C\n", "ab\n"},
	{"trailing spaces dropped", "$ \nok  \r\nend  \r", "$\nok\nend"},
	{"spaces up to the cursor kept", "ok  \r\n$ ", "ok\n$ "},
	{"vertical move starts a line", "top\x1b[2Abottom", "top\nbottom"},
	{"cursor position", "\x1b[H\x1b[2Jrow1\x1b[2;1Hrow2", "row1\nrow2"},
	{"controls dropped", "a\x07b\x00c\x7fd\x0ee", "abcde"},
	{"tab kept", "a\tb", "a\tb"},
	{"utf-8", "héllo 世界\r\n", "héllo 世界\n"},
	{"utf-8 overwrite", "日本\rx", "x 本"},
	{"wide character overwritten in its second cell", "日本\r\x1b[Cx", " x本"},
	{"tab at the end of a line", "a\tb\t\n", "a\tb\n"},
	{"tab over text only moves", "abcdefghij\r\tX", "abcdefghXj"},
	{"alternate screen left out", "before\r\n\x1b[?1049h\x1b[H\x1b[2Jfull\r\nscreen\x1b[?1049lafter\n", "before\nafter\n"},
	{"main line kept across the alternate screen", "$ vim\x1b[?1049h\x1b[1;1Hx\x1b[?1l\x1b[?1049l\r\n$ ", "$ vim\n$ "},
	{"1047 and other modes in one sequence", "a\x1b[?25;1047hhidden\x1b[?1047;25lb", "ab"},
	{"mode 47 is not the alternate screen here", "a\x1b[?47hb", "ab"},
	{"DEC line drawing in G0", "\x1b(0lqqk\x1b(B ok", "┌──┐ ok"},
	{"DEC line drawing shifted in", "\x1b)0a\x0extmqj\x0fb", "a│├└─┘b"},
	{"C1 controls dropped", "a\u009bb\u0085c", "abc"},
	{"invalid utf-8", "a\xffb\xe6\x97c", "a\ufffdb\ufffdc"},
	{"truncated utf-8 at end", "a\xe6\x97", "a\ufffd"},
	{"ESC at end", "abc\x1b", "abc"},
	{"unterminated CSI", "abc\x1b[31", "abc"},
	{"CAN aborts", "a\x1b[3\x18b", "ab"},
	{"ESC restarts", "a\x1b[3\x1b[0mb", "ab"},
	{"control inside CSI", "a\x1b[3\nm", "a\n"},
	{"ESC inside OSC starts a new sequence", "\x1b]0;t\x1b[31mx", "x"},
	{"huge parameter bounded", "a\x1b[99999999Cb", "a" + strings.Repeat(" ", maxCol-1) + "b"},
}

func TestClean(t *testing.T) {
	for _, tt := range cleanTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text([]byte(tt.in)); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// widthTests are cleaned for a terminal 10 columns wide: lines wrap where it wraps them, and
// the text joins the wrapped rows back into one line, as a copy from the terminal does.
var widthTests = []struct {
	name, in, want string
}{
	{"short lines do not wrap", "abc\r\ndef", "abc\ndef"},
	{"a long line wraps", "0123456789abcdefghijKLM\n", "0123456789abcdefghijKLM\n"},
	{"a full line and a line feed make one line", "0123456789\r\nx", "0123456789\nx"},
	{"carriage return goes back on the wrapped row only", "0123456789ab\rX", "0123456789Xb"},
	{"erasing the wrapped row leaves the rows before it", "0123456789ab\r\x1b[KX\n", "0123456789X\n"},
	{"a vertical move ends a wrapped line whose last row was erased", "0123456789ab\r\x1b[K\x1b[Bxyz", "0123456789\nxyz"},
	{"spaces at the margin are inside the line", "012345678 abc\n", "012345678 abc\n"},
	{"spaces padded across the margin are trimmed at the line's end", "abc          \n", "abc\n"},
	{"spaces padded across the margin and a return start a line", "abc           \rdef\n", "abc\ndef\n"},
	{"a wide character that does not fit wraps whole", "012345678日x", "012345678日x"},
	{"cursor moves stop at the margin", "ab\x1b[20Cc", "ab       c"},
	{"zsh PROMPT_SP after a partial line", "foo\x1b[1m\x1b[7m%\x1b[27m\x1b[1m\x1b[0m         \r \r", "foo%\n"},
	{"zsh PROMPT_SP after a full line", "foo\r\n\x1b[7m%\x1b[27m         \r \r", "foo\n"},
	{"DEC line drawing wraps too", "\x1b(0lqqqqqqqqqqqqk\x1b(B", "┌────────────┐"},
}

func TestTextWidth(t *testing.T) {
	for _, tt := range widthTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TextWidth([]byte(tt.in), 10); got != tt.want {
				t.Errorf("TextWidth(%q, 10) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestCleaner_chunks checks that cleaning in pieces gives what cleaning at once gives,
// whatever the cut: sequences and characters span the chunks output arrives in.
func TestCleaner_chunks(t *testing.T) {
	for _, tt := range cleanTests {
		for cut := 0; cut <= len(tt.in); cut++ {
			var c cleaner
			c.init()
			c.write([]byte(tt.in[:cut]))
			_ = c.bytes() // rendering must not disturb the state
			c.write([]byte(tt.in[cut:]))
			if got := string(c.bytes()); got != tt.want {
				t.Errorf("%s: cleaned in two pieces cut at %d = %q, want %q", tt.name, cut, got, tt.want)
			}
		}
	}
	for _, tt := range widthTests {
		for cut := 0; cut <= len(tt.in); cut++ {
			var c cleaner
			c.init()
			c.setWidth(10)
			c.write([]byte(tt.in[:cut]))
			_ = c.bytes()
			c.write([]byte(tt.in[cut:]))
			if got := string(c.bytes()); got != tt.want {
				t.Errorf("%s: cleaned at width 10 in two pieces cut at %d = %q, want %q", tt.name, cut, got, tt.want)
			}
		}
	}
}

func TestLineStart(t *testing.T) {
	raw := []byte("one\r\n\x1b[31mtwo\x1b[0m\r\nthree")
	clean := Text(raw) // "one\ntwo\nthree"
	for _, tt := range []struct {
		h    int
		want int64
	}{
		{0, 0}, {2, 0}, {4, 5}, {6, 5}, {8, 19}, {12, 19},
	} {
		if got := lineStart(raw, tt.h); got != tt.want {
			t.Errorf("lineStart(raw, %d) (cleaned %q) = %d, want %d", tt.h, clean[tt.h:], got, tt.want)
		}
	}
}

func TestCapText(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		b.WriteString(strings.Repeat("x", i%50) + "\n")
	}
	text := b.String()
	for _, max := range []int{1, 10, 100, 1000, 5000} {
		got, omitted := Cap([]byte(text), max, func(h int) int64 { return int64(h) })
		head, rest, ok := strings.Cut(got, "[... ")
		if !ok {
			t.Fatalf("Cap(%d): no marker in %q", max, got)
		}
		_, tail, _ := strings.Cut(rest, " ...]\n")
		if len(head)+len(tail) > max+1 { // +1: the newline that starts the marker
			t.Errorf("Cap(%d) kept %d bytes", max, len(head)+len(tail))
		}
		if int64(len(strings.TrimSuffix(head, "\n"))+len(tail))+omitted < int64(len(text))-1 {
			t.Errorf("Cap(%d): %d kept + %d omitted < %d", max, len(head)+len(tail), omitted, len(text))
		}
		if !strings.HasPrefix(text, strings.TrimSuffix(head, "\n")) || !strings.HasSuffix(text, tail) {
			t.Errorf("Cap(%d) head/tail are not the text's", max)
		}
	}
	if got, omitted := Cap([]byte("short"), 100, nil); got != "short" || omitted != 0 {
		t.Errorf("Cap(short) = %q, %d", got, omitted)
	}
	// Never split a character.
	got, _ := Cap([]byte(strings.Repeat("é", 100)), 11, nil)
	if !utf8.ValidString(got) {
		t.Errorf("Cap split a character: %q", got)
	}
}

func FuzzClean(f *testing.F) {
	for _, tt := range cleanTests {
		f.Add([]byte(tt.in), uint16(len(tt.in)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		got := Text(in)
		if strings.IndexByte(got, 0x1b) >= 0 {
			t.Fatalf("Text(%q) = %q contains ESC", in, got)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Text(%q) = %q is not valid UTF-8", in, got)
		}
		for _, r := range got {
			if r < 0x20 && r != '\n' && r != '\t' {
				t.Fatalf("Text(%q) = %q contains control %U", in, got, r)
			}
		}
		k := int(cut) % (len(in) + 1)
		var c cleaner
		c.init()
		c.write(in[:k])
		c.write(in[k:])
		if chunked := c.bytes(); !bytes.Equal(chunked, []byte(got)) {
			t.Fatalf("Text(%q) = %q, but in two pieces cut at %d: %q", in, got, k, chunked)
		}
		// A byte at a time, no line is ever whole in one write: the fast paths are not
		// taken, and the cell-by-cell path must agree with them.
		var one cleaner
		one.init()
		for i := range in {
			one.write(in[i : i+1])
		}
		if slow := one.bytes(); !bytes.Equal(slow, []byte(got)) {
			t.Fatalf("Text(%q) = %q, but a byte at a time %q", in, got, slow)
		}
	})
}

// lineStart is the reference for Capped's hint: the offset in raw of the start of
// the line holding byte h of Text(raw), found by cleaning raw again.
func lineStart(raw []byte, h int) int64 {
	var c cleaner
	c.init()
	c.watch = h
	c.write(raw)
	return c.lineStart()
}

// cleanCapped returns what capping the whole cleaned text returns, and says the same
// about what it left out and where to re-read it from, whatever the output, the cap and
// the chunks it comes in.
func FuzzCleanCapped(f *testing.F) {
	f.Add([]byte("hello\r\nworld\r\n"), 64)
	f.Add([]byte(strings.Repeat("line \x1b[31mred\x1b[0m ünï\r\n", 400)), 100)
	f.Add([]byte(strings.Repeat("progress 10%\rprogress 99%\r\n€€€\n", 300)), 37)
	f.Add([]byte(strings.Repeat("x", 5000)+"\n"+strings.Repeat("y\n", 3000)), 16)
	f.Add([]byte(strings.Repeat("\n", 3000)+"ab\x1b[Acd\n"), 200)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 4 || max > 1<<16 {
			return
		}
		const base = 1000
		want, wantOmitted := Cap(Bytes(data), max, func(h int) int64 { return base + lineStart(data, h) })
		got, gotOmitted := cleanCapped(data, max, base, true)
		if got != want || gotOmitted != wantOmitted {
			t.Fatalf("cleanCapped(%d bytes, %d) = %q, %d; want %q, %d", len(data), max, got, gotOmitted, want, wantOmitted)
		}
		// In chunks, as a read takes them from the ring.
		chunk := 1 + len(data)*7/(max+3)%97
		k := NewCapped(max, 0)
		for p := data; len(p) > 0; p = p[min(chunk, len(p)):] {
			k.Write(p[:min(chunk, len(p))])
		}
		if got, gotOmitted := k.Text(base, true); got != want || gotOmitted != wantOmitted {
			t.Fatalf("Capped in chunks of %d (%d bytes, %d) = %q, %d; want %q, %d", chunk, len(data), max, got, gotOmitted, want, wantOmitted)
		}
	})
}

func TestPromptSPStart(t *testing.T) {
	pad := func(n int) string { return strings.Repeat(" ", n) }
	for _, tt := range []struct {
		name, in string
		cols     int
		want     int // -1: not PROMPT_SP
	}{
		{"default mark", "foo\x1b[1m\x1b[7m#\x1b[27m\x1b[1m\x1b[0m" + pad(79) + "\r \r", 80, 3},
		{"after a full line", "foo\r\n\x1b[1m\x1b[7m%\x1b[27m\x1b[1m\x1b[0m" + pad(79) + "\r \r", 80, 5},
		{"custom mark", "foo<eol>" + pad(75) + "\r     \r", 80, 3},
		{"empty mark", "foo  " + pad(80) + "\r\r", 80, 5},
		{"wide mark", "foo⏎⏎" + pad(78) + "\r  \r", 80, 3},
		{"terminal without late wrap", "foo%" + pad(78) + "\r \r", 80, 3},
		{"padding for another width", "foo%" + pad(60) + "\r \r", 80, -1},
		{"no padding", "foo\r \r", 80, -1},
		{"a progress line", "50%\r   \r", 80, -1},
		{"no carriage return", "foo%" + pad(79), 80, -1},
	} {
		if got := PromptSPStart([]byte(tt.in), tt.cols); got != tt.want {
			t.Errorf("%s: PromptSPStart(%q, %d) = %d, want %d", tt.name, tt.in, tt.cols, got, tt.want)
		}
	}
}

func TestAltTracker(t *testing.T) {
	in := "a\x1b[?1049h\x1b]0;t\x07b\x1b[?25;1049lc\x1b[?1047h\x1b[?1h\x1b[1049h\x1b[?1047\x18h\x1b[?1047l"
	want := []AltSwitch{{9, true}, {27, false}, {36, true}, {65, false}}
	for cut := 0; cut <= len(in); cut++ {
		var a AltTracker
		got := a.Write([]byte(in[:cut]), 100, nil)
		got = a.Write([]byte(in[cut:]), 100+int64(cut), got)
		for i := range got {
			got[i].At -= 100
		}
		if !slices.Equal(got, want) || a.On() {
			t.Fatalf("cut at %d: switches %v (on %v), want %v (off)", cut, got, a.On(), want)
		}
	}
}

func TestCapped_AppendScreen(t *testing.T) {
	k := NewCapped(1000, 0)
	k.SetAlt(false)
	k.WriteAt([]byte("$ vim f\r\n\x1b[?1049h\x1b[Hdrawn   \x1b[2;1H~   "), 0, nil)
	if !k.Alt() {
		t.Fatal("Alt() = false after entering the alternate screen")
	}
	k.AppendScreen([]string{"line 1", "~", "", "\"f\" 1L", "", ""})
	if got, _ := k.Text(0, false); got != "$ vim f\nline 1\n~\n\n\"f\" 1L" {
		t.Errorf("text with the screen: %q", got)
	}
}

// A line many rows long is one line of the text, and a capped cleaning of it keeps the
// head and the tail of that line as cleaning it whole would, without holding it whole.
func TestCapped_longWrappedLine(t *testing.T) {
	data := []byte(strings.Repeat("0123456789", 5000) + "\r\nnext " + strings.Repeat("é", 300) + "\n")
	want, wantOmitted := Cap([]byte(TextWidth(data, 80)), 1000, nil)
	if !strings.Contains(TextWidth(data, 80), strings.Repeat("0123456789", 5000)+"\n") {
		t.Fatal("TextWidth broke the long line")
	}
	k := NewCapped(1000, 0)
	for off := 0; off < len(data); off += 777 {
		k.WriteAt(data[off:min(off+777, len(data))], int64(off), []Width{{0, 80}})
	}
	if got, omitted := k.Text(0, false); got != want || omitted != wantOmitted {
		t.Errorf("capped: %q, %d; want %q, %d", got, omitted, want, wantOmitted)
	}
	if n := cap(k.c.out); n > 8<<10 {
		t.Errorf("the capped cleaner's text grew to %d bytes for a 1000-byte cap", n)
	}
}

// From the alternate screen's last switch on, KeepAltFrom makes what is drawn there text:
// a command's output that ends on it.
func TestCapped_KeepAltFrom(t *testing.T) {
	data := []byte("MAIN0\r\n\x1b[?1049hALT1\x1b[?1049lMAIN1\r\npart\x1b[?1049h\x1b[HALT2 screen\r\nmore")
	on := int64(strings.LastIndex(string(data), "\x1b[?1049h") + len("\x1b[?1049h"))
	for cut := range len(data) {
		k := NewCapped(1000, 0)
		k.KeepAltFrom(on)
		k.WriteAt(data[:cut], 0, nil)
		k.WriteAt(data[cut:], int64(cut), nil)
		if got, _ := k.Text(0, false); got != "MAIN0\nMAIN1\npart\nALT2 screen\nmore" {
			t.Fatalf("cut at %d: %q", cut, got)
		}
	}
}

func TestBlank(t *testing.T) {
	for in, want := range map[string]bool{
		"":                              true,
		"  \x1b[K\r":                    true,
		"\x1b[?1049h":                   true,
		"\x1b[?1049h\x1b[HALT2 screen":  false,
		"x":                             false,
		"\x1b[?1049h \x1b[?1049l\x1b[m": true,
	} {
		if got := Blank([]byte(in)); got != want {
			t.Errorf("Blank(%q) = %v, want %v", in, got, want)
		}
	}
}

// A main-screen line that wrapped before a full-screen program started ends where the
// alternate screen's text begins, whichever stands for it, also when its last row was
// erased.
func TestCapped_wrappedLineBeforeTheAltScreen(t *testing.T) {
	data := []byte("0123456789ab\r\x1b[K\x1b[?1049hdrawn")
	k := NewCapped(1000, 0)
	k.WriteAt(data, 0, []Width{{0, 10}})
	k.AppendScreen([]string{"screen"})
	if got, _ := k.Text(0, false); got != "0123456789\nscreen" {
		t.Errorf("with the screen: %q", got)
	}
	k = NewCapped(1000, 0)
	k.KeepAltFrom(int64(len(data) - len("drawn")))
	k.WriteAt(data, 0, []Width{{0, 10}})
	if got, _ := k.Text(0, false); got != "0123456789\ndrawn" {
		t.Errorf("keeping the alternate screen's text: %q", got)
	}
}
