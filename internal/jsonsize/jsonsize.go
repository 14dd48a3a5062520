// Package jsonsize measures and cuts text by the size it takes in JSON as encoding/json
// writes it (compact, HTML-escaped: '<' is six bytes, a control character six, a newline
// two), without encoding it. The server bounds its results by that size, since it is what
// a client receives and what its message limits count; tasks (the read side) and tools (the
// adapter) both fit text into such a budget.
package jsonsize

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Of is the size of v as encoding/json writes it. v is one of our own result types, so an
// error is a programming error.
func Of(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("jsonsize: %T does not encode: %v", v, err))
	}
	return len(b)
}

// String is the size of s as a JSON string, quotes included.
func String(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c, w := unit(s, i)
		n += c
		i += w
	}
	return n
}

// unit is the encoded size and the width of the unit of s at i, as encoding/json sees
// units: one ASCII byte, one valid UTF-8 sequence, or one invalid byte (written \ufffd).
func unit(s string, i int) (cost, width int) {
	b := s[i]
	if b < utf8.RuneSelf {
		switch {
		case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
			return 2, 1
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			return 6, 1 // \u00XX
		}
		return 1, 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && w == 1:
		return 6, 1 // \ufffd
	case r == '\u2028' || r == '\u2029':
		return 6, w
	}
	return w, w
}

// Tail returns the longest end of s whose JSON string body (quotes aside) takes at most
// room bytes, and how many bytes of s it leaves out at the start. It starts at a unit
// boundary, so it encodes as that part of s did.
func Tail(s string, room int) (kept string, cut int) {
	total := String(s) - 2
	i := 0
	for total > room && i < len(s) {
		c, w := unit(s, i)
		total -= c
		i += w
	}
	return s[i:], i
}

// Head returns the longest start of s whose JSON string body takes at most room bytes,
// ending at a unit boundary.
func Head(s string, room int) string {
	n, i := 0, 0
	for i < len(s) {
		c, w := unit(s, i)
		if n+c > room {
			break
		}
		n += c
		i += w
	}
	return s[:i]
}

// Level is the largest cap c such that sizes, each cut to at most c, sum to at most room:
// the fair share when not everything fits (the smaller ones stay whole). When everything
// fits it is the largest size.
func Level(sizes []int, room int) int {
	sorted := slices.Clone(sizes)
	slices.Sort(sorted)
	rest := room
	for i, s := range sorted {
		left := len(sorted) - i
		if s*left > rest {
			return max(rest/left, 0)
		}
		rest -= s
	}
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)-1]
}
