// Package marks reads the shell integration marks (OSC 133 prompt and command marks, OSC 7
// directories) out of a session's output as it streams, and notes where bracketed paste
// is turned on and off. It is pure code over bytes; what a mark means for the session's
// commands is the pty package's business.
//
// Marks are authenticated: each carries the session's nonce as its first parameter, so
// a mark that a program prints (a test of a terminal, `cat` of a recorded session) is
// not taken for the shell's. Ours are, with K one of A, B, C, D:
//
//	ESC ] 133 ; K ; mh=NONCE [; more parameters] BEL    (D: ;status, C: ;cmdline_url=...)
//	ESC ] 7 ; mh=NONCE ; file://host/path BEL           (the path percent-encoded)
//	ESC ] 7 ; mh=NONCE ; raw ; file://host/path BEL     (the path as it is: sh cannot encode)
//
// A sequence that looks like a mark but lacks the nonce is output like any other OSC
// string (the cleaner drops it from text; raw output keeps it).
package marks

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"
)

// Mark is one shell integration mark read from the output.
type Mark struct {
	Kind    byte   // 'A', 'B', 'C', 'D' (OSC 133) or '7' (OSC 7, the directory)
	Code    *int   // D: the command's exit status, nil when the shell gave none
	Cmdline string // C: the command line, when the shell reported it
	Cwd     string // 7: the directory, decoded
}

// maxMark bounds how much of an unterminated OSC 133 or OSC 7 sequence is held back
// waiting for its end: a path of PATH_MAX bytes, percent-encoded, fits. Anything longer is
// not one of ours and passes through as output.
const maxMark = 16 << 10

// pasteMode is the sequence with which a program turns bracketed paste on (…h) or off (…l).
const pasteMode = "\x1b[?2004"

// Filter takes the shell integration marks out of a session's output, which the
// reader feeds it chunk by chunk: a mark may be split across chunks, so the start of an
// escape sequence at the end of a chunk is held back until the next one says what it is.
// Marks are consumed only for an integrated shell (Consume); in every session it also
// notes the bracketed paste mode, leaving those bytes in the output. Only the reader
// goroutine uses a Filter.
type Filter struct {
	Consume bool   // take the marks out; false leaves them in the output
	Nonce   string // what a mark must carry to be the shell's (see the package doc)
	held    []byte
}

// Sink receives what Feed finds, in stream order: output to keep, marks, and changes
// of the bracketed paste mode.
type Sink interface {
	Output(p []byte)
	Mark(m Mark)
	PasteMode(on bool)
}

// Feed filters p into sink.
func (f *Filter) Feed(p []byte, sink Sink) {
	data := p
	if len(f.held) > 0 {
		data = append(f.held, p...)
		f.held = nil
	}
	start, i := 0, 0
	for {
		j := bytes.IndexByte(data[i:], 0x1b)
		if j < 0 {
			break
		}
		j += i
		rest := data[j:]
		if len(rest) < 2 {
			f.hold(data, j, start, sink)
			return
		}
		switch rest[1] {
		case ']':
			if !f.Consume {
				i = j + 1
				continue
			}
			body := rest[2:]
			ours := bytes.HasPrefix(body, []byte("133;")) || bytes.HasPrefix(body, []byte("7;"))
			if !ours {
				if len(body) < 4 && (bytes.HasPrefix([]byte("133;"), body) || bytes.HasPrefix([]byte("7;"), body)) {
					f.hold(data, j, start, sink) // too short to tell yet
					return
				}
				i = j + 1
				continue
			}
			n, term := oscEnd(body)
			if n < 0 && len(body) <= maxMark {
				f.hold(data, j, start, sink)
				return
			}
			if n < 0 || n > maxMark {
				i = j + 1 // far too long to be ours: let it through
				continue
			}
			m, ok := parseMark(string(body[:n]), f.Nonce)
			if !ok {
				i = j + 1 // not the shell's: a program printed it
				continue
			}
			if j > start {
				sink.Output(data[start:j])
			}
			if m.Kind != 0 {
				sink.Mark(m)
			}
			start = j + 2 + n + term
			i = start
		case '[':
			if len(rest) <= len(pasteMode) {
				if bytes.HasPrefix([]byte(pasteMode), rest) {
					f.hold(data, j, start, sink)
					return
				}
			} else if bytes.HasPrefix(rest, []byte(pasteMode)) && (rest[len(pasteMode)] == 'h' || rest[len(pasteMode)] == 'l') {
				// Left in the output: only noted, at its place in the stream.
				if j > start {
					sink.Output(data[start:j])
				}
				sink.Output(rest[:len(pasteMode)+1])
				sink.PasteMode(rest[len(pasteMode)] == 'h')
				start = j + len(pasteMode) + 1
				i = start
				continue
			}
			i = j + 1
		default:
			i = j + 1
		}
	}
	if start < len(data) {
		sink.Output(data[start:])
	}
}

// hold passes data[start:j] on and keeps data[j:] for the next feed.
func (f *Filter) hold(data []byte, j, start int, sink Sink) {
	if j > start {
		sink.Output(data[start:j])
	}
	f.held = append([]byte(nil), data[j:]...)
}

// Flush passes on what is held back, at the end of the output.
func (f *Filter) Flush(sink Sink) {
	if len(f.held) > 0 {
		sink.Output(f.held)
		f.held = nil
	}
}

// oscEnd finds the end of an OSC string: the length of its body and of its terminator
// (BEL, or ESC \), or -1 if it has not ended yet.
func oscEnd(body []byte) (n, term int) {
	for k, b := range body {
		switch b {
		case 0x07:
			return k, 1
		case 0x1b:
			if k+1 < len(body) {
				return k, 2 // ESC \ is ST; any other ESC ends the string as well
			}
			return -1, 0
		}
	}
	return -1, 0
}

// parseMark reads the body of an OSC 133 or OSC 7 sequence. ok is false when it does not
// carry nonce: it is not the shell's. A mark of ours that means nothing known (an OSC 133
// kind we do not use) is ok with a zero Kind: taken out, and ignored.
func parseMark(body, nonce string) (m Mark, ok bool) {
	if rest, found := strings.CutPrefix(body, "7;"); found {
		if rest, ok = cutNonce(rest, nonce); !ok {
			return Mark{}, false
		}
		// Our sh script cannot percent-encode, and says so.
		rest, raw := strings.CutPrefix(rest, "raw;")
		// file://host/path. Not url.Parse: a '#' or '?' in a directory name is not a
		// fragment or a query here.
		rest, found = strings.CutPrefix(rest, "file://")
		i := strings.IndexByte(rest, '/')
		if !found || i < 0 {
			return Mark{}, true
		}
		p := rest[i:]
		if !raw {
			if d, err := url.PathUnescape(p); err == nil {
				p = d
			}
		}
		return Mark{Kind: '7', Cwd: p}, true
	}
	rest, found := strings.CutPrefix(body, "133;")
	if !found || rest == "" {
		return Mark{}, false
	}
	m = Mark{Kind: rest[0]}
	if len(rest) < 2 || rest[1] != ';' {
		return Mark{}, false
	}
	if rest, ok = cutNonce(rest[2:], nonce); !ok {
		return Mark{}, false
	}
	var params []string
	if rest != "" {
		params = strings.Split(rest, ";")
	}
	switch m.Kind {
	case 'A', 'B':
	case 'C':
		for i, p := range params {
			if v, ok := strings.CutPrefix(p, "cmdline_url="); ok {
				// The value runs to the end: a ';' in it was the command's own.
				v = strings.Join(append([]string{v}, params[i+1:]...), ";")
				if s, err := url.PathUnescape(v); err == nil {
					m.Cmdline = s
				} else {
					m.Cmdline = v
				}
				break
			}
		}
	case 'D':
		if len(params) > 0 {
			if n, err := strconv.Atoi(params[0]); err == nil {
				m.Code = &n
			}
		}
	default:
		return Mark{}, true
	}
	return m, true
}

// cutNonce takes "mh=NONCE" and the ';' after it off the front of params, ok false if
// they do not start with it. An empty nonce matches nothing: a Filter without one
// authenticates no mark.
func cutNonce(params, nonce string) (rest string, ok bool) {
	if nonce == "" {
		return "", false
	}
	rest, ok = strings.CutPrefix(params, "mh="+nonce)
	if !ok {
		return "", false
	}
	if rest == "" {
		return "", true
	}
	return strings.CutPrefix(rest, ";")
}
