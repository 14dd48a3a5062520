package tasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"
)

// LogSlice is a part of a task's log.
type LogSlice struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`       // the log's size when it was read
	Offset     int64  `json:"offset"`     // where Text starts
	NextOffset int64  `json:"nextOffset"` // where the next page starts
	EOF        bool   `json:"eof"`        // Text reaches the end of the log as it was
	Text       string `json:"text"`
}

// Bounds of a log read.
const (
	MaxLogSlice     = 1 << 20 // the most a single read returns
	DefaultLogTail  = 2048    // bytes from the end of each log, unless asked otherwise
	MaxLogTail      = 65536   // the most a tail may ask for, per task
	DefaultLogLimit = 65536   // bytes of one page, unless asked otherwise
)

// LogQuery says which part of a task's log a read returns: the last Tail bytes, or, when
// Offset is set, up to Limit bytes from Offset (paging through one task's log).
type LogQuery struct {
	Tail   int64
	Offset *int64
	Limit  int64
}

// Check refuses a query that makes no sense for a read of n selected tasks (0: all):
// callers that wait before they read check first, so bad input is refused at once.
func (q LogQuery) Check(n int) error {
	if q.Tail < 0 || q.Tail > MaxLogTail {
		return fmt.Errorf("%w: logTail must be 0..%d, got %d", ErrInvalid, MaxLogTail, q.Tail)
	}
	if q.Offset == nil {
		return nil
	}
	switch {
	case n != 1:
		return fmt.Errorf("%w: logOffset/logLimit page one task's log: give exactly one id in taskIds", ErrInvalid)
	case *q.Offset < 0:
		return fmt.Errorf("%w: logOffset must be 0 or more, got %d", ErrInvalid, *q.Offset)
	case q.Limit < 1 || q.Limit > MaxLogSlice:
		return fmt.Errorf("%w: logLimit must be 1..%d, got %d", ErrInvalid, MaxLogSlice, q.Limit)
	}
	return nil
}

// readLog reads the part of a task's log that q asks for: from the live log, or from the
// graph's archive once it expired (its live logs are then gone).
func (r *Reader) readLog(g Graph, art *Artifact, taskID string, q LogQuery) (LogSlice, error) {
	switch {
	case g.ExpiredAt != nil && art != nil:
		offset, limit := -q.Tail, q.Tail
		if q.Offset != nil {
			offset, limit = *q.Offset, q.Limit
		}
		return ReadArtifactLog(art.Path, taskID, offset, limit)
	case q.Offset != nil:
		return ReadLog(r.LogPath(g.ID, taskID), *q.Offset, q.Limit)
	}
	return TailLog(r.LogPath(g.ID, taskID), q.Tail)
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

// TailLog reads the last n bytes of the log at path (fewer when it is shorter), starting
// at a character boundary so the text does not open with half a UTF-8 sequence.
func TailLog(path string, n int64) (LogSlice, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return LogSlice{Path: path, EOF: true}, nil
	}
	if err != nil {
		return LogSlice{Path: path}, err
	}
	start := max(fi.Size()-n, 0)
	s, err := ReadLog(path, start, n)
	if err != nil || start == 0 {
		return s, err
	}
	// Skip at most 3 continuation bytes: a UTF-8 sequence is at most 4 bytes long.
	skip := 0
	for skip < 3 && skip < len(s.Text) && !utf8.RuneStart(s.Text[skip]) {
		skip++
	}
	s.Text = s.Text[skip:]
	s.Offset += int64(skip)
	return s, nil
}
