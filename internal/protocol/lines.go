package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// MaxLineBytes bounds one message from the client: one line of the stdio stream, newline
// excluded. The largest argument a tool takes is shell_io's input, 1 MiB, which JSON can
// spell in up to 6 MiB (\u0001 for each byte); 8 MiB leaves room for the rest of the
// message, and for a tasks_run of 10,000 tasks of a few hundred bytes each. A longer line
// is answered with a JSON-RPC error and skipped without being held in memory.
const MaxLineBytes = 8 << 20

// prefixBytes is how much of an oversized line is kept to find its id and method, which
// clients write first.
const prefixBytes = 4 << 10

// lineReader reads the client's messages, one a line, each at most max bytes.
type lineReader struct {
	r   *bufio.Reader
	max int
	err error // to return once the line that hit it has been returned
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// lineTooLongError reports a line over the limit, which was read to its end and dropped.
type lineTooLongError struct {
	size   int    // the line's length in bytes, newline excluded
	prefix []byte // its first prefixBytes, where the id and method usually are
}

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("a message of %d bytes, over the limit of %d", e.size, MaxLineBytes)
}

// next returns the next line, with its newline when it has one; the slice is the caller's.
// At the end of the input it returns what is left with io.EOF: a last line without a
// newline is still a message. A line longer than max is read to its end without being
// kept and returned as a *lineTooLongError, with no line.
//
// A line is kept as the pieces the buffer returns and joined at its end, so a line cut
// short by the limit has cost max bytes, not the doublings of a growing slice.
func (lr *lineReader) next() ([]byte, error) {
	if lr.err != nil {
		return nil, lr.err
	}
	var pieces [][]byte
	var prefix []byte
	size := 0 // bytes of the line so far, newline excluded
	for {
		chunk, err := lr.r.ReadSlice('\n')
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
		}
		size += len(body)
		switch {
		case prefix != nil: // over the limit: count, do not keep
		case size > lr.max:
			prefix = make([]byte, 0, prefixBytes)
			for _, p := range append(pieces, body) {
				prefix = append(prefix, p[:min(len(p), prefixBytes-len(prefix))]...)
			}
			pieces = nil
		default:
			pieces = append(pieces, append([]byte(nil), chunk...))
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if prefix != nil {
			lr.err = err // nil after a newline: go on with the next line
			return nil, &lineTooLongError{size: size, prefix: prefix}
		}
		if len(pieces) == 1 {
			return pieces[0], err
		}
		return bytes.Join(pieces, nil), err
	}
}

// peekRequest finds the id and method of a message from its first bytes, as far as they
// go: the id is nil when it is not among them (or the message is a notification).
func peekRequest(prefix []byte) (id json.RawMessage, method string) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, ""
	}
	for id == nil || method == "" {
		t, err := dec.Token()
		if err != nil {
			return id, method
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return id, method // the value runs past the prefix
		}
		switch key {
		case "id":
			if _, ok := idKey(raw); ok {
				id = raw
			}
		case "method":
			_ = json.Unmarshal(raw, &method)
		}
	}
	return id, method
}
