package tasks

import (
	"fmt"
	"slices"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/tasks/fit"
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

// Result budgets (see fit.DefaultMaxResult).
const (
	DefaultMaxResult = fit.DefaultMaxResult
	MinMaxResult     = fit.MinMaxResult
)

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

// parsePagePos reads a cursor a page handed out ("" for the first page: nil).
func parsePagePos(tool, c string) (*fit.Pos, error) {
	if c == "" {
		return nil, nil
	}
	p, ok := fit.ParsePos(c)
	if !ok {
		return nil, invalid("cursor %s is not one %s returned; pass the nextCursor of the previous page, or none for the first page", quote.Short(c), tool)
	}
	return &p, nil
}

// ordered is the tasks of snap selected by ids (every task when ids is empty), failed
// first, then running, then the rest, each group in submitted order, from after the
// cursor on.
func ordered(tasks []Task, ids []string, after *fit.Pos) []Task {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	out := make([]Task, 0, len(tasks))
	for _, t := range tasks {
		if len(ids) > 0 && !want[t.ID] {
			continue
		}
		if after != nil && !after.Before(fit.Pos{Rank: rank(t.Status), Seq: t.Seq}) {
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

// FitCancel keeps the outcomes of r that fit maxBytes (0: DefaultMaxResult), in order,
// and counts the rest in OmittedTasks.
func FitCancel(r CancelReport, maxBytes int) CancelReport {
	limit := fit.Budget(maxBytes)
	if r.Tasks == nil {
		r.Tasks = []CancelOutcome{}
	}
	r.OmittedTasks = len(r.Tasks)
	used := fit.Size(CancelReport{GraphID: r.GraphID, Tasks: []CancelOutcome{}, OmittedTasks: r.OmittedTasks})
	k := 0
	for _, t := range r.Tasks {
		s := fit.Size(t) + 1
		if used+s > limit {
			break
		}
		used += s
		k++
	}
	r.Tasks, r.OmittedTasks = r.Tasks[:k], len(r.Tasks)-k
	return r
}
