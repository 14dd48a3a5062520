package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
)

// This file streams a whole task log to a writer, for a person at a terminal (`mcp-harness
// tasks logs`): from the live file or from the archive of a graph that expired; watch.go
// follows logs as tasks write them. The tools read bounded slices instead (Reader.Status).

// ErrOwnerGone reports a graph whose runner is gone and that no live runner has taken
// over yet: its unfinished tasks do not move until a server next starts on the workspace.
var ErrOwnerGone = errors.New("the server process that ran this graph is gone")

// CopyLog writes a task's log to w, all of it or, for tailLines >= 0, its last tailLines
// lines: from the live log, or from the graph's archive once the graph expired. A task
// that never wrote a log writes nothing.
func (r *Reader) CopyLog(ctx context.Context, snap Snapshot, taskID string, tailLines int, w io.Writer) error {
	if _, ok := snap.Task(taskID); !ok {
		return fmt.Errorf("graph %s has no task %s: %w", snap.Graph.ID, quote.Short(taskID), ErrNotFound)
	}
	if snap.Graph.ExpiredAt != nil {
		return r.copyArchivedLog(ctx, snap.Graph.ID, taskID, tailLines, w)
	}
	path := r.LogPath(snap.Graph.ID, taskID)
	offset, err := tailOffset(path, tailLines)
	if err != nil {
		return err
	}
	_, err = drainLog(path, offset, w)
	return err
}

// owner reads the runner that owns a graph now.
func (r *Reader) owner(ctx context.Context, graphID string) (RunnerInfo, error) {
	head, err := r.db.GetGraphHead(ctx, graphID)
	if err != nil {
		return RunnerInfo{}, err
	}
	return r.Runner(ctx, head.RunnerID, time.Now())
}

// anyLive reports whether some runner still serves the workspace: a live runner takes
// over the graphs of one that is gone, so their tasks will still end.
func (r *Reader) anyLive(ctx context.Context) bool {
	rs, err := r.db.ListRunners(ctx)
	if err != nil {
		return false
	}
	now := time.Now()
	for _, rn := range rs {
		if rn.Live(now) {
			return true
		}
	}
	return false
}

// drainLog writes the log at path from offset to its current end, a bounded slice at a
// time, and returns how many bytes it wrote. A log that does not exist yet is empty.
func drainLog(path string, offset int64, w io.Writer) (int64, error) {
	var n int64
	for {
		s, err := ReadLog(path, offset+n, MaxLogSlice)
		if err != nil {
			return n, err
		}
		if _, err := io.WriteString(w, s.Text); err != nil {
			return n, err
		}
		n += s.NextOffset - (offset + n)
		if s.EOF || s.Text == "" {
			return n, nil
		}
	}
}

// copyArchivedLog writes a task's log from its graph's archive, the last tailLines lines
// only when tailLines >= 0 (counted as tailStart counts them). The archive is compressed,
// so this reads it from the start whatever is written, twice for a tail.
func (r *Reader) copyArchivedLog(ctx context.Context, graphID, taskID string, tailLines int, w io.Writer) error {
	a, err := r.db.GetArtifact(ctx, graphID)
	if err != nil {
		return fmt.Errorf("graph %s has expired but its archive is not recorded: %w", graphID, err)
	}
	ix, remote, err := parseIndex(a.LogIndex)
	if err != nil {
		return err
	}
	read := func(use func(io.Reader) error) error {
		var rc io.ReadCloser
		var err error
		if remote {
			rc, _, err = openRemoteLog(ctx, ix, taskID)
		} else {
			rc, _, err = OpenArtifactLog(a.Path, taskID)
		}
		if err != nil {
			return err
		}
		defer rc.Close()
		return use(rc)
	}
	// The archive is a stream: for a tail, one pass counts the lines and a second skips to
	// the last tailLines of them, so memory stays bounded however long the lines are.
	var c lineCounter
	if tailLines >= 0 {
		err = read(func(rd io.Reader) error { _, err := io.Copy(&c, rd); return err })
	}
	if err == nil {
		err = read(func(rd io.Reader) error { return afterNewlines(rd, c.skipNewlines(tailLines), w) })
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the task never wrote a log
	}
	return err
}
