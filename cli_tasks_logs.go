package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/mcp-harness/mcp-harness/store"
	"github.com/mcp-harness/mcp-harness/tasks"
)

// cliFollowPoll is how often `logs -f` looks at the log file and the task's state: a CLI
// can afford a fifth of a second, and the server's own cancel poll runs at the same pace.
const cliFollowPoll = 200 * time.Millisecond

// cliLogFollower prints one task's log from an offset, once or until the task ends.
type cliLogFollower struct {
	db     *store.DB
	graph  store.GraphRow
	taskID string
	path   string
	w      io.Writer
	poll   time.Duration
	offset int64 // where the next read starts
}

// start sets where printing starts: the beginning of the log, or, for tailLines >= 0, the
// start of its last tailLines lines.
func (lf *cliLogFollower) start(tailLines int) error {
	if tailLines < 0 {
		return nil
	}
	off, err := cliTailOffset(lf.path, tailLines)
	lf.offset = off
	return err
}

// drain prints the log from the offset to its current end, a bounded slice at a time.
func (lf *cliLogFollower) drain() (int64, error) {
	var n int64
	for {
		s, err := tasks.ReadLog(lf.path, lf.offset, tasks.MaxLogSlice)
		if err != nil {
			return n, err
		}
		if _, err := io.WriteString(lf.w, s.Text); err != nil {
			return n, err
		}
		n += s.NextOffset - lf.offset
		lf.offset = s.NextOffset
		if s.EOF || s.Text == "" {
			return n, nil
		}
	}
}

// follow prints the log as it grows until the task is terminal, and returns the task as
// it ended. The state is read before each drain, so once it reads terminal, the drain
// that follows has everything the task wrote. If the server that runs the graph is gone
// and no other server is live to take it over, the task will not move on, so it stops with
// an error instead of waiting for ever.
func (lf *cliLogFollower) follow(ctx context.Context) (store.TaskRow, error) {
	tick := time.NewTicker(lf.poll)
	defer tick.Stop()
	for {
		status, err := lf.status(ctx)
		if err != nil {
			return store.TaskRow{}, err
		}
		if _, err := lf.drain(); err != nil {
			return store.TaskRow{}, err
		}
		if tasks.State(status).Terminal() {
			return lf.task(ctx)
		}
		if owner, live, err := lf.ownerLive(ctx); err != nil {
			return store.TaskRow{}, err
		} else if !live && !lf.anyLive(ctx) {
			// It may have ended just before its server did: look once more.
			if status, err = lf.status(ctx); err == nil && tasks.State(status).Terminal() {
				if _, err := lf.drain(); err != nil {
					return store.TaskRow{}, err
				}
				return lf.task(ctx)
			}
			return store.TaskRow{}, fmt.Errorf("stopped following: task %s is %s but the server process that runs graph %s (pid %d) is gone and no other server runs on this workspace; the next server to start here records what became of it",
				lf.taskID, status, lf.graph.ID, owner.Pid)
		}
		select {
		case <-ctx.Done():
			return store.TaskRow{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// status reads the task's state, cheaply.
func (lf *cliLogFollower) status(ctx context.Context) (string, error) {
	briefs, err := lf.db.TaskBriefs(ctx, lf.graph.ID)
	if err != nil {
		return "", err
	}
	for _, b := range briefs {
		if b.ID == lf.taskID {
			return b.Status, nil
		}
	}
	return "", fmt.Errorf("graph %s has no task %q", lf.graph.ID, lf.taskID)
}

// task reads the task's whole row.
func (lf *cliLogFollower) task(ctx context.Context) (store.TaskRow, error) {
	snap, err := tasks.LoadSnapshot(ctx, lf.db, lf.graph.ID)
	if err != nil {
		return store.TaskRow{}, err
	}
	return cliFindTask(snap, lf.taskID)
}

// ownerLive reads the graph's current owner and whether it still serves the workspace.
func (lf *cliLogFollower) ownerLive(ctx context.Context) (store.Runner, bool, error) {
	head, err := lf.db.GetGraphHead(ctx, lf.graph.ID)
	if err != nil {
		return store.Runner{}, false, err
	}
	r, err := lf.db.GetRunner(ctx, head.RunnerID)
	if err != nil {
		return store.Runner{}, false, err
	}
	return r, r.Live(time.Now()), nil
}

// anyLive reports whether some server still serves the workspace: a live server takes
// over the graphs of one that is gone (it records their running tasks as failed and runs
// their pending ones), so the task will still end and the follow can go on.
func (lf *cliLogFollower) anyLive(ctx context.Context) bool {
	rs, err := lf.db.ListRunners(ctx)
	if err != nil {
		return false
	}
	now := time.Now()
	for _, r := range rs {
		if r.Live(now) {
			return true
		}
	}
	return false
}

// cliDescribeEnd says how a task ended, for the line `logs -f` writes to stderr at the end.
func cliDescribeEnd(t store.TaskRow) string {
	s := t.Status
	switch {
	case t.ExitCode != nil:
		s += fmt.Sprintf(" (exit %d)", *t.ExitCode)
	case t.Signal != nil:
		s += " (" + *t.Signal + ")"
	}
	if t.Message != nil && *t.Message != "" && (t.ErrorCode == nil || *t.ErrorCode != "EXIT_NONZERO") {
		s += ": " + *t.Message
	}
	return s
}

// cliTailOffset returns where the last n lines of the file at path start (its size for n 0).
// A final newline ends the last line rather than starting another, as tail(1) counts. It
// reads backwards from the end a block at a time, so a long log costs what the tail does.
func cliTailOffset(path string, n int) (int64, error) {
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

// cliPrintArchivedLog prints a task's log from its graph's artifact (an expired graph has
// no live logs), the last tailLines lines only when tailLines >= 0. The archive is
// compressed, so this reads it from the start whatever is printed.
func cliPrintArchivedLog(ctx context.Context, db *store.DB, w io.Writer, graphID, taskID string, tailLines int) error {
	a, err := db.GetArtifact(ctx, graphID)
	if err != nil {
		return fmt.Errorf("graph %s has expired but its archive is not recorded: %w", graphID, err)
	}
	r, _, err := tasks.OpenArtifactLog(a.Path, taskID)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the task never wrote a log
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if tailLines < 0 {
		_, err = io.Copy(w, r)
		return err
	}
	// Keep the last tailLines lines as they stream past.
	lines := make([]string, 0, tailLines+1)
	sc := bufio.NewScanner(r)
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
