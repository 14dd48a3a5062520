package clean

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/mcp-harness/mcp-harness/pty/ring"
)

// matchPatterns are WaitFor patterns whose shortest match is short, with the anchors and
// boundaries a window could get wrong.
var matchPatterns = []string{
	`DONE`, `(?m)^R\d+\r?$`, `\$ $`, `^x`, `^$`, `(?m)^$`, `\bok\b`, `\Bk`, `(?m)^a.b$`,
	`(?i)error`, `x\ny`, `^(?:ab|x)`, `\Ay|z\z`, `(?m)^\s*$`, `[^a-z]zz`, `(?s)a.{0,5}b`,
	`(?:ab)+c`, `(ok|DONE)$`, `y{2}\n`, `(?i:Q)q+`,
}

func TestRequiredLiteral(t *testing.T) {
	for pattern, want := range map[string]string{
		`(?m)^BULK-DONE\r?$`: "BULK-DONE", `\$ $`: "$ ", `(?:ab)+c`: "ab", `(ok|DONE)$`: "",
		`(?i)error`: "", `x*DONE`: "DONE", `(?:abc){2}d`: "abc", `a?bc`: "bc",
	} {
		tree, err := syntax.Parse(pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := requiredLiteral(tree); got != want {
			t.Errorf("requiredLiteral(%s) = %q, want %q", pattern, got, want)
		}
	}
}

// A windowed matcher answers as matching the whole cleaned text does, chunk after chunk:
// no match is missed (they are all short) and none is made up at a window's edge.
func FuzzMatcherWindow(f *testing.F) {
	f.Add([]byte("line 1\r\nR12\r\n$ "), uint8(3), uint8(1), uint8(5))
	f.Add([]byte(strings.Repeat("xx ok\n", 50)+"DONE"), uint8(7), uint8(0), uint8(4))
	f.Add([]byte(strings.Repeat("ab\n", 40)+"\x1b[31mzz\x1b[0m\n\n"), uint8(9), uint8(14), uint8(2))
	f.Add([]byte(strings.Repeat("y\n", 30)+"k\r\nx\nyyy\r"+strings.Repeat("q\n", 30)), uint8(2), uint8(10), uint8(9))
	f.Add([]byte("a\n\nb"), uint8(2), uint8(15), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk, pat, span uint8) {
		re := regexp.MustCompile(matchPatterns[int(pat)%len(matchPatterns)])
		n := 1 + int(chunk)%16
		mt := NewMatcher(re, 64)
		// The window is at least 8 bytes, longer than the shortest match of every
		// pattern in matchPatterns: the matcher promises no more than that (a match
		// longer than its window may be missed, as documented for 64 KiB).
		mt.span = 8 + int(span)%32
		r := ring.New(1 << 20)
		for i := 0; i < len(data); i += n {
			r.Write(data[i:min(i+n, len(data))])
			want := re.Match(Bytes(data[:min(i+n, len(data))]))
			var got bool
			for more := true; more; {
				more = mt.Load(&r, 0, r.End(), nil)
				got = mt.Check(!more)
			}
			if got != want {
				t.Fatalf("%s over %q (chunks of %d, window %d): matched %v after %d bytes, the whole text says %v",
					re, data, n, mt.span, got, min(i+n, len(data)), want)
			}
			if got {
				return
			}
		}
	})
}

// A long wait keeps the window, not the whole text, and still finds a match far in.
func TestMatcher_BoundedText(t *testing.T) {
	re := regexp.MustCompile(`(?m)^DONE$`)
	mt := NewMatcher(re, defaultMaxBytes)
	r := ring.New(64 << 20)
	line := strings.Repeat("x", 79) + "\r\n"
	for i := range 200_000 { // 16 MB
		fmt.Fprint(&ringWriter{&r}, line)
		if i%1000 == 0 {
			for more := true; more; {
				more = mt.Load(&r, 0, r.End(), nil)
				if mt.Check(!more) {
					t.Fatalf("matched before DONE")
				}
			}
		}
	}
	fmt.Fprint(&ringWriter{&r}, "DONE\r\n")
	matched := false
	for more := true; more; {
		more = mt.Load(&r, 0, r.End(), nil)
		matched = mt.Check(!more)
	}
	if !matched {
		t.Fatal("DONE not matched")
	}
	if held := cap(mt.k.c.out); held > 4*matchWindow {
		t.Errorf("the matcher holds %d bytes of text for a 16 MB output; want at most %d", held, 4*matchWindow)
	}
}

// defaultMaxBytes is pty.DefaultMaxBytes, the cap a read without MaxBytes returns.
const defaultMaxBytes = 16384

// ringWriter writes into a ring, for fmt.Fprint.
type ringWriter struct{ r *ring.Buffer }

func (w *ringWriter) Write(p []byte) (int, error) { w.r.Write(p); return len(p), nil }
