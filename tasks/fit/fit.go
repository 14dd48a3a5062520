// Package fit holds the arithmetic of bounded results: a byte budget measured as the JSON
// the server sends, lists cut to a length, the bisection that finds how much of an item
// fits, the cursor that names a place in a paged order, and the words a note uses to say
// what was left out.
//
// What is kept and in which order is the engine's policy (package tasks, fit.go there);
// this package only measures and cuts, with no state, so it is tested on its own.
package fit

import (
	"strconv"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
)

// Result budgets.
const (
	// DefaultMaxResult is the budget of one result when the caller gives none: 32 KiB of
	// JSON is about 8k tokens, a large but affordable read for a model.
	DefaultMaxResult = 32 << 10
	// MinMaxResult is the smallest budget a report can be fitted into: a graph's head and
	// one task with its fixed fields.
	MinMaxResult = 4 << 10
)

// Budget is the byte budget of a result: n, or the default when n is 0, never below
// MinMaxResult.
func Budget(n int) int {
	if n == 0 {
		return DefaultMaxResult
	}
	return max(n, MinMaxResult)
}

// Size is the size of v as the server sends it (encoding/json, compact).
func Size(v any) int { return jsonsize.Of(v) }

// Pos is a place in the order of a paged graph: a task's rank (the group it is shown in,
// 0 to 2) and its submitted place. A cursor is the Pos of the last item a page showed.
type Pos struct{ Rank, Seq int }

// String is p as a cursor: "rank.seq".
func (p Pos) String() string { return strconv.Itoa(p.Rank) + "." + strconv.Itoa(p.Seq) }

// Before reports whether p comes before q in the paged order.
func (p Pos) Before(q Pos) bool {
	return p.Rank < q.Rank || p.Rank == q.Rank && p.Seq < q.Seq
}

// ParsePos reads a cursor that String wrote; ok is false for anything else.
func ParsePos(c string) (p Pos, ok bool) {
	r, s, found := strings.Cut(c, ".")
	rk, err1 := strconv.Atoi(r)
	seq, err2 := strconv.Atoi(s)
	if !found || err1 != nil || err2 != nil || rk < 0 || rk > 2 || seq < 0 {
		return Pos{}, false
	}
	return Pos{rk, seq}, true
}

// Cut keeps the first n entries of list (all when it is shorter) and says how many it
// left out.
func Cut[T any](list []T, n int) ([]T, int) {
	if len(list) <= n {
		return list, 0
	}
	return list[:n], len(list) - n
}

// CutInto cuts *list to at most n entries and returns how many it left out.
func CutInto[T any](list *[]T, n int) int {
	var omitted int
	*list, omitted = Cut(*list, n)
	return omitted
}

// Lists finds the largest n such that size(n), an item's size with each of its lists
// cut to n entries, is at most room, by bisection (size grows with n); longest is the
// longest list. It returns longest when everything fits, and 0 when nothing does.
func Lists(longest, room int, size func(n int) int) int {
	if size(longest) <= room {
		return longest
	}
	lo, hi := 0, longest // size(lo) is the floor; size(hi) > room
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if size(mid) <= room {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Plural writes n and a noun, with an s when n is not 1.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// SizeText writes a byte budget for a sentence: "32 KiB".
func SizeText(n int) string {
	if n%1024 == 0 {
		return strconv.Itoa(n/1024) + " KiB"
	}
	return Plural(n, "byte")
}
