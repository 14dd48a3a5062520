package fit

import (
	"slices"
	"testing"
)

func TestBudget(t *testing.T) {
	for _, tt := range []struct{ n, want int }{
		{0, DefaultMaxResult},
		{1, MinMaxResult},
		{MinMaxResult, MinMaxResult},
		{1 << 20, 1 << 20},
	} {
		if got := Budget(tt.n); got != tt.want {
			t.Errorf("Budget(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func TestSize(t *testing.T) {
	if got := Size(map[string][]int{"a": {1, 2}}); got != len(`{"a":[1,2]}`) {
		t.Errorf("Size = %d, want %d", got, len(`{"a":[1,2]}`))
	}
}

func TestCut(t *testing.T) {
	list := []int{1, 2, 3}
	if got, omitted := Cut(list, 5); !slices.Equal(got, list) || omitted != 0 {
		t.Errorf("Cut(3 entries, 5) = %v, %d, want all, 0", got, omitted)
	}
	if got, omitted := Cut(list, 2); !slices.Equal(got, []int{1, 2}) || omitted != 1 {
		t.Errorf("Cut(3 entries, 2) = %v, %d, want [1 2], 1", got, omitted)
	}
	l := []string{"a", "b", "c"}
	if omitted := CutInto(&l, 0); len(l) != 0 || omitted != 3 {
		t.Errorf("CutInto(3 entries, 0) = %v, %d, want [], 3", l, omitted)
	}
}

// Lists finds the largest n whose size fits, for every room, against a linear search.
func TestLists(t *testing.T) {
	size := func(n int) int { return 100 + 7*n } // an item with lists of n entries
	for longest := 0; longest < 40; longest++ {
		for room := 0; room < 500; room += 3 {
			want := 0
			for n := 0; n <= longest; n++ {
				if size(n) <= room {
					want = n
				}
			}
			if got := Lists(longest, room, size); got != want {
				t.Fatalf("Lists(%d, %d) = %d, want %d", longest, room, got, want)
			}
		}
	}
}

func TestPos(t *testing.T) {
	for _, p := range []Pos{{0, 0}, {1, 17}, {2, 9999}} {
		got, ok := ParsePos(p.String())
		if !ok || got != p {
			t.Errorf("ParsePos(%q) = %v, %v, want %v", p.String(), got, ok, p)
		}
	}
	for _, c := range []string{"", "1", "3.0", "-1.2", "1.-2", "a.b", "1.2.3", "1 .2"} {
		if p, ok := ParsePos(c); ok {
			t.Errorf("ParsePos(%q) = %v, true, want false", c, p)
		}
	}
	if !(Pos{0, 9}).Before(Pos{1, 0}) || !(Pos{1, 2}).Before(Pos{1, 3}) || (Pos{1, 3}).Before(Pos{1, 3}) {
		t.Errorf("Before does not order by rank, then seq")
	}
}

// A cursor ParsePos accepts writes back as itself, and nothing panics.
func FuzzParsePos(f *testing.F) {
	for _, c := range []string{"0.0", "2.15", "3.0", "1.", ".1", "01.2", "x"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) {
		p, ok := ParsePos(c)
		if !ok {
			return
		}
		again, ok := ParsePos(p.String())
		if !ok || again != p {
			t.Errorf("ParsePos(%q) = %v, which writes as %q and reads back as %v, %v", c, p, p.String(), again, ok)
		}
	})
}

func TestWords(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Plural(1, "task"), "1 task"},
		{Plural(0, "task"), "0 tasks"},
		{Plural(3, "task"), "3 tasks"},
		{SizeText(32 << 10), "32 KiB"},
		{SizeText(1000), "1000 bytes"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
