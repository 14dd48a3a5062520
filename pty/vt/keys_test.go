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
		"C-Space", "C-@", "C-[", "C-\\", "C-]",
	}
	aliases := []string{
		"F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12", // summarised as F1..F12
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
