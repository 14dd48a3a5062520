// Package quote quotes values a client sent for use in error messages and logs. A message
// that echoes what was sent helps the sender find the mistake, but a client can send a
// megabyte where a name was expected, and an error text (and the log line, and the model's
// context) must not grow with it: Short keeps a short prefix and says how long the value
// was. Every package that echoes a client's string in an error uses it: pty, tasks, store
// and tools.
package quote

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxShown is how many bytes of a value Short shows before it cuts the value off: enough to
// recognise an id, a path or the start of a command.
const MaxShown = 64

// Short returns s as a Go-quoted string, like %q, when it is at most MaxShown bytes long.
// A longer s is cut at a character boundary at or before MaxShown bytes and shown as
// "prefix"... followed by its length in bytes: "abc"... (1048576 bytes).
func Short(s string) string {
	if len(s) <= MaxShown {
		return strconv.Quote(s)
	}
	cut := MaxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// Shell quotes s for a POSIX shell where it needs it (single quotes), so that a command
// line shown to a person can be pasted: a path of letters, digits and ./_-+=:,@% stays
// as it is.
func Shell(s string) string {
	safe := s != ""
	for i := 0; i < len(s) && safe; i++ {
		c := s[i]
		safe = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("./_-+=:,@%", c) >= 0
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
