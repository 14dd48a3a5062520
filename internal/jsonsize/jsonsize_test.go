package jsonsize

import (
	"encoding/json"
	"strings"
	"testing"
)

var seeds = []string{
	"", "plain", "line\n", "tab\tquote\"back\\slash", "<b>&amp;</b>", "\x1b[31mred\x1b[0m\r\n",
	"\b\f\x00\x7f", "héllo wörld", "日本語", "\u2028\u2029", "bad \xff\xfe bytes", "\xe6\x97", "emoji 🎉",
}

// String must agree with encoding/json byte for byte, whatever the text: the server's
// budget is only as good as this count.
func FuzzString(f *testing.F) {
	for _, s := range seeds {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, room int) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := String(s); got != len(b) {
			t.Fatalf("String(%q) = %d, json.Marshal gives %d (%s)", s, got, len(b), b)
		}
		room = max(room%(len(b)+8), 0)

		tail, cut := Tail(s, room)
		if tail != s[cut:] {
			t.Fatalf("Tail(%q, %d) = %q, %d: not the end of s", s, room, tail, cut)
		}
		if String(tail)-2 > room {
			t.Fatalf("Tail(%q, %d) = %q takes %d bytes", s, room, tail, String(tail)-2)
		}
		if cut > 0 { // the longest: the unit before it would not fit
			prev := 0
			for j := 0; j < cut; {
				prev = j
				_, w := unit(s, j)
				j += w
			}
			if String(s[prev:])-2 <= room {
				t.Fatalf("Tail(%q, %d) = %q, but %q fits too", s, room, tail, s[prev:])
			}
		}

		head := Head(s, room)
		if !strings.HasPrefix(s, head) || String(head)-2 > room {
			t.Fatalf("Head(%q, %d) = %q: not a start of s that fits", s, room, head)
		}
		if rest := s[len(head):]; rest != "" {
			c, _ := unit(rest, 0)
			if String(head)-2+c <= room {
				t.Fatalf("Head(%q, %d) = %q, but the next unit fits too", s, room, head)
			}
		}
	})
}

func TestLevel(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		room  int
		want  int
	}{
		{nil, 100, 0},
		{[]int{10, 20, 30}, 100, 30},   // everything fits: the largest
		{[]int{10, 20, 30}, 60, 30},    // exactly
		{[]int{10, 20, 30}, 50, 20},    // 10 + 20 + 20
		{[]int{10, 100, 100}, 70, 30},  // the small one whole, the rest share
		{[]int{100, 100, 100}, 30, 10}, // an even share
		{[]int{100, 100, 100}, -5, 0},  // no room at all
		{[]int{5, 1000, 1000}, 1005, 500},
	} {
		got := Level(tc.sizes, tc.room)
		if got != tc.want {
			t.Errorf("Level(%v, %d) = %d, want %d", tc.sizes, tc.room, got, tc.want)
		}
		sum := 0
		for _, s := range tc.sizes {
			sum += min(s, got)
		}
		if tc.room >= 0 && sum > tc.room {
			t.Errorf("Level(%v, %d) = %d: the cut sizes sum to %d, over the room", tc.sizes, tc.room, got, sum)
		}
	}
}
