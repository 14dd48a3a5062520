package tasks

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// This file turns what a person types for a graph or a task into its id, for the operator
// CLI: a graph id is 18 characters of which the first ten or so are the same for every
// graph of the day, so a person types a unique prefix, or @latest. The MCP tools take full
// ids only: a model copies ids whole, and a prefix that later becomes ambiguous must not
// silently mean another graph in a script.

// Latest names the newest graph of a workspace wherever a graph id is taken.
const Latest = "@latest"

// maxMatches is how many candidates an ambiguous prefix error names.
const maxMatches = 5

// AmbiguousError reports an id prefix that matches more than one graph, or task.
type AmbiguousError struct {
	What    string   // "graph" or "task"
	Prefix  string   // as typed
	Matches []string // the first few matches, in id order
	More    bool     // there are more matches than Matches holds
}

func (e *AmbiguousError) Error() string {
	more := ""
	if e.More {
		more = ", ..."
	}
	return fmt.Sprintf("%s id prefix %s is ambiguous: it matches %s%s; type more of the id", e.What, quote.Short(e.Prefix), strings.Join(e.Matches, ", "), more)
}

// ResolveGraph returns the id of the graph ref names: its id, a prefix of exactly one id
// (the letters of an id in either case), or Latest for the newest graph. A ref that names
// no graph is ErrNotFound; a prefix of several is an *AmbiguousError.
func (r *Reader) ResolveGraph(ctx context.Context, ref string) (string, error) {
	if strings.EqualFold(ref, Latest) {
		rows, err := r.db.ListGraphs(ctx, "", 1)
		if err != nil {
			return "", err
		}
		if len(rows) == 0 {
			return "", fmt.Errorf("%s: the workspace has no graphs yet: %w", Latest, ErrNotFound)
		}
		return rows[0].ID, nil
	}
	// Ids are "g-" and upper-case Crockford base32: a person may type them in lower case.
	prefix := ref
	if len(prefix) >= 2 && strings.EqualFold(prefix[:2], "g-") {
		prefix = "g-" + strings.ToUpper(prefix[2:])
	}
	if prefix == "" {
		return "", fmt.Errorf("graph %s: %w", quote.Short(ref), ErrNotFound)
	}
	ids, err := r.db.GraphIDsWithPrefix(ctx, prefix, maxMatches+1)
	if err != nil {
		return "", err
	}
	switch {
	case len(ids) == 0:
		return "", fmt.Errorf("graph %s: %w", quote.Short(ref), ErrNotFound)
	case len(ids) == 1 || ids[0] == prefix: // a whole id is never a prefix of another: all are one length
		return ids[0], nil
	}
	return "", &AmbiguousError{What: "graph", Prefix: ref, Matches: ids[:min(len(ids), maxMatches)], More: len(ids) > maxMatches}
}

// ResolveTask returns the id of the task of snap that ref names: its id or, failing that,
// a prefix of exactly one of its ids. An id that is itself a prefix of others (build,
// build-arm) always means itself.
func ResolveTask(snap Snapshot, ref string) (string, error) {
	if _, ok := snap.Task(ref); ok {
		return ref, nil
	}
	var matches []string
	for _, t := range snap.Tasks {
		if ref != "" && strings.HasPrefix(t.ID, ref) {
			matches = append(matches, t.ID)
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("graph %s has no task %s: %w", snap.Graph.ID, quote.Short(ref), ErrNotFound)
	case 1:
		return matches[0], nil
	}
	return "", &AmbiguousError{What: "task", Prefix: ref, Matches: matches[:min(len(matches), maxMatches)], More: len(matches) > maxMatches}
}
