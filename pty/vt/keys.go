package vt

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// namedKeys maps tmux-style key names to the bytes an xterm sends for them. The cursor
// and editing keys use xterm's normal (not application) cursor mode, which is what a
// program sees unless it switched modes; readline, Python's REPL and most TUIs accept both.
var namedKeys = map[string]string{
	"Enter":    "\r", // a terminal sends CR; the tty's ICRNL turns it into \n for cooked programs
	"Tab":      "\t",
	"BTab":     "\x1b[Z",
	"BSpace":   "\x7f", // what xterm sends for Backspace (the tty's default VERASE)
	"Escape":   "\x1b",
	"Space":    " ",
	"Up":       "\x1b[A",
	"Down":     "\x1b[B",
	"Right":    "\x1b[C",
	"Left":     "\x1b[D",
	"Home":     "\x1b[H",
	"End":      "\x1b[F",
	"PageUp":   "\x1b[5~",
	"PgUp":     "\x1b[5~",
	"PPage":    "\x1b[5~",
	"PageDown": "\x1b[6~",
	"PgDn":     "\x1b[6~",
	"NPage":    "\x1b[6~",
	"Insert":   "\x1b[2~",
	"IC":       "\x1b[2~",
	"Delete":   "\x1b[3~",
	"DC":       "\x1b[3~",
	"F1":       "\x1bOP",
	"F2":       "\x1bOQ",
	"F3":       "\x1bOR",
	"F4":       "\x1bOS",
	"F5":       "\x1b[15~",
	"F6":       "\x1b[17~",
	"F7":       "\x1b[18~",
	"F8":       "\x1b[19~",
	"F9":       "\x1b[20~",
	"F10":      "\x1b[21~",
	"F11":      "\x1b[23~",
	"F12":      "\x1b[24~",
	"C-Space":  "\x00",
	"C-@":      "\x00",
	"C-[":      "\x1b",
	"C-\\":     "\x1c",
	"C-]":      "\x1d",
	"C-^":      "\x1e",
	"C-_":      "\x1f",
}

// KeySummary is the compact list of key names used in error messages: short enough to
// read, complete enough to fix a call with.
const KeySummary = "Enter, Tab, BSpace, Escape, Space, Up, Down, Left, Right, Home, End, " +
	"PageUp, PageDown, Insert, Delete, F1..F12, C-a..C-z, C-Space, C-@, C-[, C-\\, C-], " +
	"M-<key> (Escape then the key, e.g. M-x, M-Enter), or a single character; " +
	"names are case-sensitive"

// Key returns the bytes a terminal sends for the tmux-style key name, and false for a
// name it does not know. Names are case-sensitive, as in tmux's documentation ("Enter",
// not "enter"), and control keys take a lower-case letter ("C-c").
func Key(name string) (string, bool) {
	if s, ok := namedKeys[name]; ok {
		return s, true
	}
	if len(name) == 3 && strings.HasPrefix(name, "C-") && name[2] >= 'a' && name[2] <= 'z' {
		return string(rune(name[2] - 'a' + 1)), true
	}
	// M- is Meta: xterm (with metaSendsEscape, the common setting) sends Escape first.
	if rest, ok := strings.CutPrefix(name, "M-"); ok && rest != "" {
		s, ok := Key(rest)
		if !ok {
			return "", false
		}
		return "\x1b" + s, true
	}
	// A single printable character stands for itself, as in tmux's send-keys.
	if r, size := utf8.DecodeRuneInString(name); size == len(name) && r != utf8.RuneError && unicode.IsPrint(r) {
		return name, true
	}
	return "", false
}
