package tasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// tailOffset returns where the last n lines of the file at path start: 0 for n < 0 (the
// whole file), its size for n == 0. A final newline ends the last line rather than
// starting another, as tail(1) counts. It reads backwards from the end a block at a time,
// so a long log costs what the tail does.
func tailOffset(path string, n int) (int64, error) {
	if n < 0 {
		return 0, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if n == 0 {
		return size, nil
	}
	buf := make([]byte, 64<<10)
	lines := 0
	for pos := size; pos > 0; {
		k := min(int64(len(buf)), pos)
		pos -= k
		if _, err := f.ReadAt(buf[:k], pos); err != nil && err != io.EOF {
			return 0, err
		}
		for i := k - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == size-1 {
				continue
			}
			if lines++; lines == n {
				return pos + i + 1, nil
			}
		}
	}
	return 0, nil
}

// copyArchivedLog writes a task's log from its graph's archive, the last tailLines lines
// only when tailLines >= 0. The archive is compressed, so this reads it from the start
// whatever is written.
func (r *Reader) copyArchivedLog(ctx context.Context, graphID, taskID string, tailLines int, w io.Writer) error {
	a, err := r.db.GetArtifact(ctx, graphID)
	if err != nil {
		return fmt.Errorf("graph %s has expired but its archive is not recorded: %w", graphID, err)
	}
	rc, _, err := OpenArtifactLog(a.Path, taskID)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the task never wrote a log
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	if tailLines < 0 {
		_, err = io.Copy(w, rc)
		return err
	}
	// Keep the last tailLines lines as they stream past.
	lines := make([]string, 0, tailLines+1)
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > tailLines {
			lines = lines[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}
