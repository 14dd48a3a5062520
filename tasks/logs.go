package tasks

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"
)

// LogSlice is a part of a task's log.
type LogSlice struct {
	Path       string
	Size       int64 // the log's size when it was read
	Offset     int64 // where Text starts
	NextOffset int64 // where the next page starts
	EOF        bool  // Text reaches the end of the log as it was
	Text       string
}

// MaxLogSlice is the most a single read returns.
const MaxLogSlice = 1 << 20

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
