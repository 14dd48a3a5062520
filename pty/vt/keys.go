package vt

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// namedKeys maps tmux-style key names to the bytes an xterm sends for them in its normal
// modes; cursorKeys and keypadKeys hold those that change with the program's modes.
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
	// The numeric keypad, as tmux names it: its characters while the keypad is numeric.
	"KP0": "0", "KP1": "1", "KP2": "2", "KP3": "3", "KP4": "4",
	"KP5": "5", "KP6": "6", "KP7": "7", "KP8": "8", "KP9": "9",
	"KP/": "/", "KP*": "*", "KP-": "-", "KP+": "+", "KP.": ".", "KPEnter": "\r",
}

// cursorKeys is what the cursor keys send instead while application cursor mode (DECCKM,
// CSI ? 1 h) is on: SS3 and the same letter. curses programs in keypad mode (dialog,
// mc, tig, vim) turn it on and then know only these: ESC [ B reads as Escape, [ and B.
var cursorKeys = map[string]string{
	"Up":    "\x1bOA",
	"Down":  "\x1bOB",
	"Right": "\x1bOC",
	"Left":  "\x1bOD",
	"Home":  "\x1bOH",
	"End":   "\x1bOF",
}

// keypadKeys is what the keypad sends while application keypad mode (DECKPAM, ESC =, or
// DECNKM, CSI ? 66 h) is on, as in xterm.
var keypadKeys = map[string]string{
	"KP0": "\x1bOp", "KP1": "\x1bOq", "KP2": "\x1bOr", "KP3": "\x1bOs", "KP4": "\x1bOt",
	"KP5": "\x1bOu", "KP6": "\x1bOv", "KP7": "\x1bOw", "KP8": "\x1bOx", "KP9": "\x1bOy",
	"KP/": "\x1bOo", "KP*": "\x1bOj", "KP-": "\x1bOm", "KP+": "\x1bOk", "KP.": "\x1bOn",
	"KPEnter": "\x1bOM",
}

// KeyModes are the terminal modes that change what keys send, as the program set them.
type KeyModes struct {
	Cursor bool // application cursor keys (DECCKM)
	Keypad bool // application keypad (DECKPAM or DECNKM)
}

// KeyModes returns the key modes the output scanned so far has set.
func (st *State) KeyModes() KeyModes {
	return KeyModes{Cursor: st.Dec[1], Keypad: st.Dec[66]}
}

// KeySummary is the compact list of key names used in error messages: short enough to
// read, complete enough to fix a call with.
const KeySummary = "Enter, Tab, BSpace, Escape, Space, Up, Down, Left, Right, Home, End, " +
	"PageUp, PageDown, Insert, Delete, F1..F12, C-a..C-z, C-Space, C-@, C-[, C-\\, C-], " +
	"KP0..KP9, KPEnter, M-<key> (Escape then the key, e.g. M-x, M-Enter), or a single character; " +
	"names are case-sensitive"

// Key returns the bytes a terminal in its normal modes sends for the tmux-style key name,
// and false for a name it does not know (KeyIn for other modes).
func Key(name string) (string, bool) { return KeyIn(name, KeyModes{}) }

// KeyIn returns the bytes a terminal in modes m sends for the tmux-style key name, and
// false for a name it does not know. Names are case-sensitive, as in tmux's documentation
// ("Enter", not "enter"), and control keys take a lower-case letter ("C-c").
func KeyIn(name string, m KeyModes) (string, bool) {
	if s, ok := cursorKeys[name]; ok && m.Cursor {
		return s, true
	}
	if s, ok := keypadKeys[name]; ok && m.Keypad {
		return s, true
	}
	if s, ok := namedKeys[name]; ok {
		return s, true
	}
	if len(name) == 3 && strings.HasPrefix(name, "C-") && name[2] >= 'a' && name[2] <= 'z' {
		return string(rune(name[2] - 'a' + 1)), true
	}
	// M- is Meta: xterm (with metaSendsEscape, the common setting) sends Escape first.
	if rest, ok := strings.CutPrefix(name, "M-"); ok && rest != "" {
		s, ok := KeyIn(rest, m)
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
