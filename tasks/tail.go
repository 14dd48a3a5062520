package tasks

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
)

// This file finds where a log's tail starts, for every tail the engine reads: a byte tail
// (tasks_status logTail), a lines tail (tasks_status logLines, `mcp-harness tasks logs
// --tail`, and where `--follow` starts), from a live log or from an archived one. The
// rules, in one place:
//
//   - A line ends at a newline; a final newline ends the last line rather than starting
//     another, as tail(1) counts, so "a\nb\n" is two lines and "a\nb" two as well.
//   - A tail starts at a line: the last n lines start after the n-th newline from the end;
//     a byte tail of n bytes starts at the first line that starts within its last n bytes
//     (at most n bytes, fewer when that window opens mid-line).
//   - A window with no line start in it (one line longer than the window, a progress bar
//     redrawn with \r, a minified JSON document) is cut mid-line instead, at a character
//     boundary: showing its end beats showing nothing.
//   - Finding the start reads backwards from the end a block at a time and never past the
//     window, so it costs what the tail does whatever the log's size.

// tailBlock is the most tailStart reads at a time.
const tailBlock = 64 << 10

// tailStart returns where the tail of a log of size bytes, read through r, starts: its
// last lines lines (lines < 0: as many as fit) within its last maxBytes bytes, and
// whether that is the start of a line (when false, the window holds no line start and the
// caller cuts it at a character instead). lines == 0 or maxBytes <= 0 is an empty tail.
// r is read only within the window and the one byte before it.
func tailStart(r io.ReaderAt, size int64, lines int, maxBytes int64) (start int64, atLine bool, err error) {
	if lines == 0 || maxBytes <= 0 || size == 0 {
		return size, true, nil
	}
	floor := max(size-maxBytes, 0)
	if floor == 0 && lines < 0 {
		return 0, true, nil // the whole log
	}
	low := max(floor-1, 0) // the byte before the window says whether it opens a line
	// The last lines are often short: read little first, then twice as much each time.
	var buf []byte
	earliest, found := int64(-1), 0
	for pos, chunk := size, int64(4<<10); pos > low; chunk = min(2*chunk, tailBlock) {
		k := min(chunk, pos-low)
		if int64(len(buf)) < k {
			buf = make([]byte, k)
		}
		pos -= k
		if _, err := r.ReadAt(buf[:k], pos); err != nil && err != io.EOF {
			return 0, false, err
		}
		for i := k - 1; i >= 0; i-- {
			// A newline at i starts a line at i+1, unless it is the log's last byte.
			if buf[i] != '\n' || pos+i == size-1 {
				continue
			}
			earliest = pos + i + 1
			if found++; found == lines {
				return earliest, true, nil
			}
		}
	}
	switch {
	case floor == 0:
		return 0, true, nil // fewer lines than asked for: all of them
	case earliest >= 0:
		return earliest, true, nil
	}
	return floor, false, nil
}

// tailOffset returns where the last n lines of the file at path start: 0 for n < 0 (the
// whole file), its size for n == 0. A log that does not exist yet reads as empty.
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
	start, _, err := tailStart(f, fi.Size(), n, fi.Size())
	return start, err
}

// window is the end of a log held in memory, read as the log itself (an io.ReaderAt at
// the log's offsets): an archived log is a stream, so its tail's window is read into
// memory first and tailStart looks for the start in it.
type window struct {
	base int64 // the log offset of buf[0]
	buf  []byte
}

func (w window) ReadAt(p []byte, off int64) (int, error) {
	if off < w.base || off > w.base+int64(len(w.buf)) {
		return 0, errors.New("read outside the window")
	}
	n := copy(p, w.buf[off-w.base:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// lineCounter counts the lines of a stream as tailStart does (a final newline ends the
// last line rather than starting another), for a lines tail of a log that can only be read
// forwards: one pass counts, a second skips to the start. It holds no text, so memory
// stays bounded whatever the lines' lengths.
type lineCounter struct {
	newlines int64 // newlines seen
	n        int64 // bytes seen
	last     byte  // the last byte seen
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.newlines += int64(bytes.Count(p, []byte{'\n'}))
	if len(p) > 0 {
		c.n += int64(len(p))
		c.last = p[len(p)-1]
	}
	return len(p), nil
}

// skipNewlines returns how many newlines come before the last n lines of the stream c
// counted (n >= 0): the lines start after that many.
func (c *lineCounter) skipNewlines(n int) int64 {
	if c.n == 0 {
		return 0
	}
	starts := c.newlines // line starts after the first: one per newline but a final one
	if c.last == '\n' {
		starts--
	}
	return max(starts+1-int64(n), 0)
}

// afterNewlines writes what r holds after its first skip newlines to w.
func afterNewlines(r io.Reader, skip int64, w io.Writer) error {
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		p := buf[:k]
		for skip > 0 && len(p) > 0 {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				p = p[:0]
				break
			}
			p, skip = p[i+1:], skip-1
		}
		if len(p) > 0 {
			if _, werr := w.Write(p); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
