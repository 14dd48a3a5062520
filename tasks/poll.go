package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/store"
)

// This file holds the cheap reads of a reader that polls one graph several times a second
// for a person (`mcp-harness tasks watch`): whether the graph changed at all, so that the
// whole Snapshot is read again only when it did, and the end of one task's log, whose
// cost is bounded by what is shown however long the log or its lines are.

// Version reads a graph's change counter. It moves whenever the graph's tasks change (a
// state, an attempt, a cancel request recorded) or another runner takes the graph over,
// so a poller reads the graph again only when it moved. It is one indexed row: cheap
// enough to ask a few times a second for as long as a person watches.
func (r *Reader) Version(ctx context.Context, graphID string) (int64, error) {
	v, err := r.db.GraphVersion(ctx, graphID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, notFound("no graph %s in this workspace", quote.Short(graphID))
	}
	if err != nil {
		return 0, fmt.Errorf("read the version of graph %s: %w", graphID, err)
	}
	return v, nil
}

// LogTail reads the end of a task's log for a view that shows it: its last lines lines
// within its last maxBytes bytes (a tail starts at a line, tail.go), from the live log or,
// once the graph expired, from its archive (read from the start, as an archive is a
// stream; a graph that expired has finished, so a caller reads that once). The graph's
// head is read afresh to tell which, since a graph expiring does not move its Version. A
// task that has written nothing reads as "".
func (r *Reader) LogTail(ctx context.Context, graphID, taskID string, lines int, maxBytes int64) (string, error) {
	g, err := r.graph(ctx, graphID)
	if err != nil {
		return "", err
	}
	if g.ExpiredAt == nil {
		s, err := TailLines(r.LogPath(graphID, taskID), lines, maxBytes)
		return s.Text, err
	}
	w := &lastBytes{max: int(maxBytes)}
	if err := r.copyArchivedLog(ctx, graphID, taskID, lines, w); err != nil {
		return "", err
	}
	return string(w.b), nil
}

// lastBytes keeps the last max bytes written to it, from a line start when one is in
// them, as a live tail would.
type lastBytes struct {
	b   []byte
	max int
	cut bool // bytes were dropped from the front
}

func (w *lastBytes) Write(p []byte) (int, error) {
	n := len(p)
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
		w.cut = true
	}
	if w.cut {
		if i := bytes.IndexByte(w.b, '\n'); i >= 0 && i < len(w.b)-1 {
			w.b = append(w.b[:0], w.b[i+1:]...)
			w.cut = false
		}
	}
	return n, nil
}
