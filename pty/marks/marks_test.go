package marks

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recorder is a Sink that writes down what it is given, marks as text in place.
type recorder struct {
	out   bytes.Buffer
	marks []string
	paste []bool
}

func (r *recorder) Output(p []byte) { r.out.Write(p) }
func (r *recorder) Mark(m Mark) {
	s := string(m.Kind)
	switch {
	case m.Code != nil:
		s += ";" + strconv.Itoa(*m.Code)
	case m.Cwd != "":
		s += ";" + m.Cwd
	case m.Cmdline != "":
		s += ";" + m.Cmdline
	}
	r.marks = append(r.marks, s)
	r.out.WriteString("<" + s + ">")
}
func (r *recorder) PasteMode(on bool) { r.paste = append(r.paste, on) }

// nonce is the session nonce the tests' marks carry.
const nonce = "n0nce"

// feedAll feeds chunks to a filter and flushes it.
func feedAll(consume bool, chunks ...string) *recorder {
	f := Filter{Consume: consume, Nonce: nonce}
	r := &recorder{}
	for _, c := range chunks {
		f.Feed([]byte(c), r)
	}
	f.Flush(r)
	return r
}

func TestMarkFilter(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"bash prompt", "\x1b]133;D;mh=n0nce;0\x07\x1b]7;mh=n0nce;file://vm/tmp\x07\x1b]133;A;mh=n0nce\x07$ \x1b]133;B;mh=n0nce\x07", "<D;0><7;/tmp><A>$ <B>"},
		{"ST terminator", "a\x1b]133;C;mh=n0nce\x1b\\b", "a<C>b"},
		{"other OSC kept", "\x1b]0;title\x07x\x1b]1337;y\x07", "\x1b]0;title\x07x\x1b]1337;y\x07"},
		{"CSI kept", "\x1b[31mred\x1b[0m", "\x1b[31mred\x1b[0m"},
		{"percent-encoded cwd", "\x1b]7;mh=n0nce;file://h/a%20b%25c#d\x07", "<7;/a b%c#d>"},
		{"raw cwd that does not decode", "\x1b]7;mh=n0nce;file:///x%zz\x07", "<7;/x%zz>"},
		{"raw cwd from sh is not decoded", "\x1b]7;mh=n0nce;raw;file://h/a%41b\x07", "<7;/a%41b>"},
		{"cmdline with ;", "\x1b]133;C;mh=n0nce;cmdline_url=echo%20a;b\x07", "<C;echo a;b>"},
		{"D without status", "\x1b]133;D;mh=n0nce\x07", "<D>"},
		{"unknown 133 kind of ours dropped", "\x1b]133;Z;mh=n0nce\x07x", "x"},
		{"ESC at the very end", "abc\x1b", "abc\x1b"},
		{"unterminated mark at the end is output", "a\x1b]133;A;mh=n0nce", "a\x1b]133;A;mh=n0nce"},
		// Marks a program prints are its output: without the nonce, or with another.
		{"mark without nonce is output", "\x1b]133;D;0\x07real", "\x1b]133;D;0\x07real"},
		{"mark with another nonce is output", "\x1b]133;A;mh=other\x07\x1b]133;D;mh=n0nce0;1\x07", "\x1b]133;A;mh=other\x07\x1b]133;D;mh=n0nce0;1\x07"},
		{"nonce not first is output", "\x1b]133;D;0;mh=n0nce\x07", "\x1b]133;D;0;mh=n0nce\x07"},
		{"OSC 7 without nonce is output", "\x1b]7;file://h/tmp\x07", "\x1b]7;file://h/tmp\x07"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := feedAll(true, tt.in).out.String(); got != tt.want {
				t.Errorf("filter(%q) = %q, want %q", tt.in, got, tt.want)
			}
			// Every way of cutting the stream in two gives the same result.
			for i := 1; i < len(tt.in); i++ {
				if got := feedAll(true, tt.in[:i], tt.in[i:]).out.String(); got != tt.want {
					t.Fatalf("filter(%q | %q) = %q, want %q", tt.in[:i], tt.in[i:], got, tt.want)
				}
			}
		})
	}
}

func TestMarkFilter_notIntegrated(t *testing.T) {
	in := "\x1b]133;A;mh=n0nce\x07$ \x1b]7;mh=n0nce;file:///x\x07"
	if r := feedAll(false, in); r.out.String() != in || len(r.marks) != 0 {
		t.Errorf("filter without integration = %q %v, want the stream untouched and no marks", r.out.String(), r.marks)
	}
}

func TestMarkFilter_pasteMode(t *testing.T) {
	in := "a\x1b[?2004hb\x1b[?2004lc"
	for i := 1; i < len(in); i++ {
		r := feedAll(false, in[:i], in[i:])
		if r.out.String() != in || !cmp.Equal(r.paste, []bool{true, false}) {
			t.Fatalf("filter(%q | %q) = %q, paste %v, want the stream untouched, on then off", in[:i], in[i:], r.out.String(), r.paste)
		}
	}
}

// A sequence that starts like a mark but runs on past maxMark is not ours: it is output,
// and memory held back stays bounded.
func TestMarkFilter_tooLong(t *testing.T) {
	in := "\x1b]7;mh=n0nce;file://" + strings.Repeat("x", maxMark) + "\x07after"
	f := Filter{Consume: true, Nonce: nonce}
	r := &recorder{}
	for i := 0; i < len(in); i += 1000 {
		f.Feed([]byte(in[i:min(i+1000, len(in))]), r)
		if len(f.held) > maxMark+1000 {
			t.Fatalf("held %d bytes, want at most about %d", len(f.held), maxMark)
		}
	}
	f.Flush(r)
	if r.out.String() != in || len(r.marks) != 0 {
		t.Errorf("too long a sequence: %d bytes out, marks %v, want it all as output", r.out.Len(), r.marks)
	}
}

// FuzzMarkFilter: however the stream is cut, the filter gives the same output and marks,
// and a consumed stream never holds one of our marks complete.
func FuzzMarkFilter(f *testing.F) {
	f.Add("\x1b]133;D;mh=n0nce;0\x07\x1b]7;mh=n0nce;file://vm/tmp\x07\x1b]133;A;mh=n0nce\x07$ \x1b]133;B\x07", 5)
	f.Add("a\x1b]133;C;mh=n0nce\x1b\\b\x1b[?2004h", 3)
	f.Add("\x1b\x1b]\x1b]13\x1b]133;", 2)
	f.Fuzz(func(t *testing.T, in string, cut int) {
		whole := feedAll(true, in)
		if cut < 0 {
			cut = -cut
		}
		cut = cut % (len(in) + 1)
		split := feedAll(true, in[:cut], in[cut:])
		if whole.out.String() != split.out.String() || !cmp.Equal(whole.marks, split.marks) {
			t.Fatalf("filter(%q) = %q %v, cut at %d: %q %v", in, whole.out.String(), whole.marks, cut, split.out.String(), split.marks)
		}
		raw := feedAll(false, in)
		if raw.out.String() != in {
			t.Fatalf("filter without integration changed %q into %q", in, raw.out.String())
		}
	})
}
