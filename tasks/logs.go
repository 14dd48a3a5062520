package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"

	"github.com/mcp-harness/mcp-harness/tasks/archive"
)

// LogSlice is a part of a task's log.
type LogSlice struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`       // the log's size when it was read
	Offset     int64  `json:"offset"`     // where Text starts
	NextOffset int64  `json:"nextOffset"` // where the next page starts
	EOF        bool   `json:"eof"`        // Text reaches the end of the log as it was
	// SkippedBytes is, for a tail, how many bytes of the log come before Text (its
	// Offset, said in the tail's own words); null for a page, which starts where asked.
	SkippedBytes *int64 `json:"skippedBytes"`
	Text         string `json:"text"`
}

// Bounds of a log read.
const (
	MaxLogSlice     = 1 << 20 // the most a single read returns
	DefaultLogTail  = 2048    // bytes from the end of each log, unless asked otherwise
	MaxLogTail      = 65536   // the most a tail may ask for, per task
	DefaultLogLimit = 65536   // bytes of one page, unless asked otherwise
	MaxLogLines     = 1000    // the most lines a lines tail may ask for, per task
)

// LogQuery says which part of a task's log a read returns: its tail, or, when Offset is
// set, up to Limit bytes from Offset (paging through one task's log). A tail is the last
// Tail bytes, or, when Lines is set, the last *Lines lines of at most Tail bytes; either
// starts at a line (tail.go).
type LogQuery struct {
	Tail   int64
	Lines  *int
	Offset *int64
	Limit  int64
}

// wantsText reports whether q asks for any log text at all.
func (q LogQuery) wantsText() bool {
	switch {
	case q.Offset != nil:
		return true
	case q.Lines != nil:
		return *q.Lines > 0 && q.Tail > 0
	}
	return q.Tail > 0
}

// tailLines is the line count of q's tail, -1 for a byte tail.
func (q LogQuery) tailLines() int {
	if q.Lines == nil {
		return -1
	}
	return *q.Lines
}

// Check refuses a query that makes no sense for a read of n selected tasks (0: all):
// callers that wait before they read check first, so bad input is refused at once.
// Values above the maxima are the caller's to clamp (and say so); Check refuses them.
func (q LogQuery) Check(n int) error {
	if q.Tail < 0 || q.Tail > MaxLogTail {
		return invalid("logTail must be 0..%d, got %d", MaxLogTail, q.Tail)
	}
	if q.Lines != nil && (*q.Lines < 0 || *q.Lines > MaxLogLines) {
		return invalid("logLines must be 0..%d, got %d", MaxLogLines, *q.Lines)
	}
	if q.Offset == nil {
		return nil
	}
	switch {
	case n != 1:
		return invalid("logOffset and logLimit page one task's log; give exactly one id in taskIds")
	case *q.Offset < 0:
		return invalid("logOffset must be 0 or more, got %d", *q.Offset)
	case q.Limit < 1 || q.Limit > MaxLogSlice:
		return invalid("logLimit must be 1..%d, got %d", MaxLogSlice, q.Limit)
	}
	return nil
}

// readLogs reads the part of each task's log that q asks for: from the live logs, or, once
// the graph expired (its live logs are then gone), from its archive, in one pass through
// it. When the archive cannot be read (deleted by hand, or damaged) the logs are left out
// of the map and gone says why in words: the tasks' states are still worth answering.
func (r *Reader) readLogs(ctx context.Context, g Graph, art *Artifact, ids []string, q LogQuery) (logs map[string]LogSlice, gone string, err error) {
	logs = make(map[string]LogSlice, len(ids))
	if g.ExpiredAt == nil {
		for _, id := range ids {
			var s LogSlice
			if q.Offset != nil {
				s, err = ReadLog(r.LogPath(g.ID, id), *q.Offset, q.Limit)
			} else {
				s, err = tailLog(r.LogPath(g.ID, id), q.tailLines(), q.Tail)
			}
			if err != nil {
				return nil, "", fmt.Errorf("read the log of task %s: %w", id, err)
			}
			logs[id] = s
		}
		return logs, "", nil
	}
	if art == nil {
		return nil, "the graph expired but no archive of its logs is recorded, so its logs are gone", nil
	}
	if ix, remote, ierr := parseIndex(art.index); ierr != nil {
		err = ierr
	} else if remote {
		logs, err = readRemoteLogs(ctx, ix, art.Path, ids, q)
	} else {
		logs, err = readArtifactLogs(art.Path, ids, q)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Sprintf("the graph expired and its archive %s is missing, so its logs are gone", art.Path), nil
	case err != nil:
		return nil, fmt.Sprintf("the graph expired and its archive %s cannot be read (%v), so its logs are not shown", art.Path, err), nil
	}
	return logs, "", nil
}

// readArtifactLogs reads the slice q asks for of each task's log inside an archive, in one
// pass: it is compressed, so each read costs up to the end of its slice, and one pass for
// a page of tasks costs what one read of the last of them would. A task without a log in
// the archive reads as empty.
func readArtifactLogs(artifact string, ids []string, q LogQuery) (map[string]LogSlice, error) {
	out := make(map[string]LogSlice, len(ids))
	for _, id := range ids {
		out[id] = LogSlice{Path: artifact + "#" + archive.LogEntry(id), EOF: true}
	}
	err := archive.ReadLogs(artifact, ids, func(id string, size int64, r io.Reader) error {
		s, err := sliceOf(out[id], size, r, q)
		out[id] = s
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sliceOf fills in s with the slice q asks for of a log of size bytes that r reads from
// its start (an archived log: a stream, read no further than the slice's end).
func sliceOf(s LogSlice, size int64, r io.Reader, q LogQuery) (LogSlice, error) {
	s.Size = size
	if q.Offset == nil {
		// A tail: read its window (and the byte before it) into memory, bounded by
		// q.Tail, and find where it starts as a live log's tail does.
		low := max(size-min(q.Tail, MaxLogSlice)-1, 0)
		if _, err := io.CopyN(io.Discard, r, low); err != nil {
			return s, err
		}
		w := window{base: low, buf: make([]byte, size-low)}
		if _, err := io.ReadFull(r, w.buf); err != nil {
			return s, err
		}
		start, atLine, err := tailStart(w, size, q.tailLines(), min(q.Tail, MaxLogSlice))
		if err != nil {
			return s, err
		}
		return tailSlice(s, start, atLine, string(w.buf[start-low:])), nil
	}
	offset := min(*q.Offset, size)
	limit := min(q.Limit, MaxLogSlice, size-offset)
	if _, err := io.CopyN(io.Discard, r, offset); err != nil {
		return s, err
	}
	buf := make([]byte, limit)
	if _, err := io.ReadFull(r, buf); err != nil {
		return s, err
	}
	s.Offset, s.Text, s.NextOffset = offset, string(buf), offset+limit
	s.EOF = s.NextOffset >= size
	return s, nil
}

// ReadLog reads up to limit bytes of the log at path from offset. It seeks and reads only
// what it returns, so it costs the same on a 1 KB log as on a 10 GB one. A log that does
// not exist yet (the task has not started) reads as empty.
func ReadLog(path string, offset, limit int64) (LogSlice, error) {
	s := LogSlice{Path: path, Offset: offset}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.NextOffset, s.EOF = offset, true
		return s, nil
	}
	if err != nil {
		return s, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return s, err
	}
	s.Size = fi.Size()
	if limit > MaxLogSlice {
		limit = MaxLogSlice
	}
	if offset > s.Size {
		offset = s.Size
		s.Offset = offset
	}
	n := min(limit, s.Size-offset)
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, offset)
	if err != nil && err != io.EOF {
		return s, err
	}
	s.Text = string(buf[:got])
	s.NextOffset = offset + int64(got)
	s.EOF = s.NextOffset >= s.Size
	return s, nil
}

// TailLog reads the tail of the log at path: its last n bytes (fewer when it is shorter),
// from the first line that starts within them (tail.go). A log that does not exist yet
// reads as empty.
func TailLog(path string, n int64) (LogSlice, error) {
	return tailLog(path, -1, n)
}

// TailLines reads the last n lines of the log at path, of at most maxBytes bytes: when
// they are longer, the tail starts at the first line that starts within its last
// maxBytes (tail.go). It reads backwards from the end, so it costs what the tail does.
func TailLines(path string, n int, maxBytes int64) (LogSlice, error) {
	return tailLog(path, n, maxBytes)
}

// tailLog reads the last lines lines (lines < 0: a byte tail) within the last maxBytes
// bytes of the log at path, through one open file so the slice is of one size.
func tailLog(path string, lines int, maxBytes int64) (LogSlice, error) {
	s := LogSlice{Path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return tailSlice(s, 0, true, ""), nil
	}
	if err != nil {
		return s, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return s, err
	}
	s.Size = fi.Size()
	maxBytes = min(maxBytes, MaxLogSlice)
	start, atLine, err := tailStart(f, s.Size, lines, maxBytes)
	if err != nil {
		return s, err
	}
	buf := make([]byte, s.Size-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && err != io.EOF {
		return s, err
	}
	return tailSlice(s, start, atLine, string(buf[:n])), nil
}

// tailSlice fills in s, a tail of a log of s.Size bytes, with text from start to the end;
// a tail that does not start at a line is cut at a character instead.
func tailSlice(s LogSlice, start int64, atLine bool, text string) LogSlice {
	s.Offset, s.Text, s.NextOffset, s.EOF = start, text, s.Size, true
	if !atLine && start > 0 {
		s = startAtRune(s)
	}
	skipped := s.Offset
	s.SkippedBytes = &skipped
	return s
}

// startAtRune drops the continuation bytes a tail may start with (at most 3: a UTF-8
// sequence is at most 4 bytes long), so the text does not open with half a character.
func startAtRune(s LogSlice) LogSlice {
	skip := 0
	for skip < 3 && skip < len(s.Text) && !utf8.RuneStart(s.Text[skip]) {
		skip++
	}
	s.Text = s.Text[skip:]
	s.Offset += int64(skip)
	return s
}
