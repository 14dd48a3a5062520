package tasks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/jsonsize"
	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// This file bounds what the read side answers a model with. A tool result is read whole by
// the model (Claude reads the text, Codex the structuredContent), and clients drop the
// connection on very large messages, so Status, List, ExplainPage and FitCancel fit their
// reports into a byte budget, measured as the JSON the server sends (encoding/json,
// compact). What does not fit is left out in an order that keeps what a model looks for:
//
//   - the tasks of one graph are ordered failed first, then running, then the rest in
//     submitted order, and paged in that order; a cursor names the last one shown;
//   - log tails shrink (all to the same cap, the shortest kept whole) before any task is
//     left out; once tasks are left out, the page carries no log text at all, and the
//     report's Notes say how to read the logs;
//   - one item's dependency lists are cut only when that item alone would take more than
//     a quarter of the budget (a fan-in task with thousands of dependencies); its
//     omittedDeps counts what was cut.
//
// Each report says what it left out in its own fields (omittedTasks, omittedNodes,
// nextCursor, omittedDeps) and in Notes, sentences an adapter shows as they are.

// Result budgets.
const (
	// DefaultMaxResult is the budget of one result when the caller gives none: 32 KiB of
	// JSON is about 8k tokens, a large but affordable read for a model.
	DefaultMaxResult = 32 << 10
	// MinMaxResult is the smallest budget a report can be fitted into: a graph's head and
	// one task with its fixed fields.
	MinMaxResult = 4 << 10
)

// budget is the byte budget of a result: n, or the default when n is 0, never below
// MinMaxResult.
func budget(n int) int {
	if n == 0 {
		return DefaultMaxResult
	}
	return max(n, MinMaxResult)
}

// jsonSize is the size of v as the server sends it.
func jsonSize(v any) int { return jsonsize.Of(v) }

// rank orders the tasks of one graph in bounded results: failed ones first (what a model
// looks for), then running ones, then the rest.
func rank(s State) int {
	switch s {
	case Failed:
		return 0
	case Running:
		return 1
	}
	return 2
}

// pagePos is a place in the order of a paged graph: a task's rank and its submitted place.
// A cursor is the pagePos of the last item a page showed.
type pagePos struct{ rank, seq int }

func (p pagePos) String() string { return strconv.Itoa(p.rank) + "." + strconv.Itoa(p.seq) }

func (p pagePos) before(q pagePos) bool {
	return p.rank < q.rank || p.rank == q.rank && p.seq < q.seq
}

// parsePagePos reads a cursor a page handed out ("" for the first page: nil).
func parsePagePos(tool, c string) (*pagePos, error) {
	if c == "" {
		return nil, nil
	}
	r, s, ok := strings.Cut(c, ".")
	rk, err1 := strconv.Atoi(r)
	seq, err2 := strconv.Atoi(s)
	if !ok || err1 != nil || err2 != nil || rk < 0 || rk > 2 || seq < 0 {
		return nil, invalid("cursor %s is not one %s returned; pass the nextCursor of the previous page, or none for the first page", quote.Short(c), tool)
	}
	return &pagePos{rk, seq}, nil
}

// ordered is the tasks of snap selected by ids (every task when ids is empty), failed
// first, then running, then the rest, each group in submitted order, from after the
// cursor on.
func ordered(tasks []Task, ids []string, after *pagePos) []Task {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	out := make([]Task, 0, len(tasks))
	for _, t := range tasks {
		if len(ids) > 0 && !want[t.ID] {
			continue
		}
		if after != nil && !after.before(pagePos{rank(t.Status), t.Seq}) {
			continue
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b Task) int {
		if d := rank(a.Status) - rank(b.Status); d != 0 {
			return d
		}
		return a.Seq - b.Seq
	})
	return out
}

// cutList keeps the first n entries of list (all when it is shorter) and says how many
// it left out.
func cutList[T any](list []T, n int) ([]T, int) {
	if len(list) <= n {
		return list, 0
	}
	return list[:n], len(list) - n
}

// fitLists finds the largest n such that size(n), an item's size with each of its lists
// cut to n entries, is at most room, by bisection (size grows with n); longest is the
// longest list. It returns longest when everything fits, and 0 when nothing does.
func fitLists(longest, room int, size func(n int) int) int {
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

// invalidError is a usage error of the read side: its message is the sentence a caller
// reads, and errors.Is(err, ErrInvalid) holds.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}

// notFoundError is an unknown graph or task: its message says which, and errors.Is(err,
// ErrNotFound) holds.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string        { return e.msg }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

func notFound(format string, args ...any) error {
	return &notFoundError{fmt.Sprintf(format, args...)}
}

// plural writes n and a noun, with an s when n is not 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// FitCancel keeps the outcomes of r that fit maxBytes (0: DefaultMaxResult), in order,
// and counts the rest in OmittedTasks.
func FitCancel(r CancelReport, maxBytes int) CancelReport {
	limit := budget(maxBytes)
	if r.Tasks == nil {
		r.Tasks = []CancelOutcome{}
	}
	r.OmittedTasks = len(r.Tasks)
	used := jsonSize(CancelReport{GraphID: r.GraphID, Tasks: []CancelOutcome{}, OmittedTasks: r.OmittedTasks})
	k := 0
	for _, t := range r.Tasks {
		s := jsonSize(t) + 1
		if used+s > limit {
			break
		}
		used += s
		k++
	}
	r.Tasks, r.OmittedTasks = r.Tasks[:k], len(r.Tasks)-k
	return r
}
