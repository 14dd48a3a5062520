package vt

import (
	"slices"
	"strings"
	"testing"
)

// Every key name there is parses: the names KeySummary lists (the summary an unknown
// name's error gives, and shell_io's keys description), their aliases, and C-a..C-z. The list must cover
// namedKeys, so a key added there without being documented here fails.
func TestKey_everyName(t *testing.T) {
	documented := []string{
		"Enter", "Tab", "BSpace", "Escape", "Space", "Up", "Down", "Left", "Right",
		"Home", "End", "PageUp", "PageDown", "Insert", "Delete",
		"C-Space", "C-@", "C-[", "C-\\", "C-]", "KPEnter",
	}
	aliases := []string{
		"F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12", // summarised as F1..F12
		"KP0", "KP1", "KP2", "KP3", "KP4", "KP5", "KP6", "KP7", "KP8", "KP9", // summarised as KP0..KP9
		"KP/", "KP*", "KP-", "KP+", "KP.",
		"C-^", "C-_", "BTab", "PgUp", "PPage", "PgDn", "NPage", "IC", "DC",
	}
	for _, name := range documented {
		if !strings.Contains(KeySummary, name) {
			t.Errorf("KeySummary does not name %q", name)
		}
	}
	names := append(slices.Clone(documented), aliases...)
	for c := 'a'; c <= 'z'; c++ {
		names = append(names, "C-"+string(c))
	}
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			t.Errorf("the test lists %q twice", name)
		}
		seen[name] = true
		if b, ok := Key(name); !ok || len(b) == 0 {
			t.Errorf("Key(%q) = %q, %v, want a key", name, b, ok)
		}
	}
	for name := range namedKeys {
		if !seen[name] {
			t.Errorf("namedKeys has %q, which this test's list misses", name)
		}
	}
}

// The cursor keys, Home and End follow application cursor mode, the keypad follows
// application keypad mode, and the rest send the same in every mode, as in xterm.
func TestKeyIn(t *testing.T) {
	tests := []struct {
		name string
		m    KeyModes
		want string
	}{
		{"Up", KeyModes{}, "\x1b[A"},
		{"Up", KeyModes{Cursor: true}, "\x1bOA"},
		{"Down", KeyModes{Cursor: true}, "\x1bOB"},
		{"Right", KeyModes{Cursor: true}, "\x1bOC"},
		{"Left", KeyModes{Cursor: true}, "\x1bOD"},
		{"Home", KeyModes{Cursor: true}, "\x1bOH"},
		{"End", KeyModes{Cursor: true}, "\x1bOF"},
		{"End", KeyModes{Keypad: true}, "\x1b[F"},
		{"M-Up", KeyModes{Cursor: true}, "\x1b\x1bOA"},
		{"PageUp", KeyModes{Cursor: true, Keypad: true}, "\x1b[5~"},
		{"F1", KeyModes{}, "\x1bOP"},
		{"KP5", KeyModes{}, "5"},
		{"KP5", KeyModes{Cursor: true}, "5"},
		{"KP5", KeyModes{Keypad: true}, "\x1bOu"},
		{"KPEnter", KeyModes{}, "\r"},
		{"KPEnter", KeyModes{Keypad: true}, "\x1bOM"},
		{"KP/", KeyModes{Keypad: true}, "\x1bOo"},
		{"Enter", KeyModes{Cursor: true, Keypad: true}, "\r"},
	}
	for _, tt := range tests {
		if got, ok := KeyIn(tt.name, tt.m); !ok || got != tt.want {
			t.Errorf("KeyIn(%q, %+v) = %q, %v, want %q", tt.name, tt.m, got, ok, tt.want)
		}
	}
}

// The scanner follows the key modes through every way a program sets them.
func TestScanner_keyModes(t *testing.T) {
	tests := []struct {
		name, out string
		want      KeyModes
	}{
		{"none", "hello", KeyModes{}},
		{"DECCKM", "\x1b[?1h", KeyModes{Cursor: true}},
		{"DECCKM off", "\x1b[?1h\x1b[?1l", KeyModes{}},
		{"with other modes", "\x1b[?1049;1h", KeyModes{Cursor: true}},
		{"curses smkx", "\x1b[?1h\x1b=", KeyModes{Cursor: true, Keypad: true}},
		{"curses rmkx", "\x1b[?1h\x1b=\x1b[?1l\x1b>", KeyModes{}},
		{"DECNKM", "\x1b[?66h", KeyModes{Keypad: true}},
		{"soft reset", "\x1b[?1h\x1b=\x1b[!p", KeyModes{}},
		{"full reset", "\x1b[?1h\x1b=\x1bc", KeyModes{}},
		{"split", "\x1b[?", KeyModes{}},
	}
	for _, tt := range tests {
		sc := NewScanner(80, 24)
		sc.Scan([]byte(tt.out))
		if got := sc.State().KeyModes(); got != tt.want {
			t.Errorf("%s: after %q, KeyModes() = %+v, want %+v", tt.name, tt.out, got, tt.want)
		}
	}
	// A sequence split across scans counts once it ends.
	sc := NewScanner(80, 24)
	sc.Scan([]byte("\x1b[?"))
	sc.Scan([]byte("1h"))
	if got := sc.State().KeyModes(); !got.Cursor {
		t.Errorf("after a split CSI ? 1 h, KeyModes() = %+v, want Cursor", got)
	}
}
