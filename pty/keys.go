package pty

import (
	"math"

	"github.com/mcp-harness/mcp-harness/pty/vt"
)

// ParseKeys turns tmux-style key names into the bytes a terminal in its normal modes
// would send, concatenated in order (vt.Key says which names there are). Names are
// case-sensitive, as in tmux's documentation ("Enter", not "enter"), and control keys
// take a lower-case letter ("C-c"). An unknown name is an *UnknownKeyError; nothing is
// returned for the valid names before it, so a bad list never sends half its keys.
// Input.Keys sends keys in the modes the program has set instead.
func ParseKeys(names []string) ([]byte, error) {
	return appendKeys(nil, names, vt.KeyModes{})
}

// appendKeys appends the bytes the keys send in modes m to b, or returns nil and an
// *UnknownKeyError.
func appendKeys(b []byte, names []string, m vt.KeyModes) ([]byte, error) {
	for _, name := range names {
		k, ok := vt.KeyIn(name, m)
		if !ok {
			return nil, &UnknownKeyError{Name: name}
		}
		b = append(b, k...)
	}
	return b, nil
}

// keyModes returns the key modes the program has set in the output read so far. The
// scanner runs behind the output: it is brought up to the end of the ring first, so a
// mode switch printed just before the keys are written counts, as it would in a
// terminal that had drawn it. Without a terminal side (Config.NoEmulator) keys are sent
// in the normal modes.
func (t *term) keyModes() vt.KeyModes {
	if t == nil {
		return vt.KeyModes{}
	}
	t.mu.Lock()
	t.scanTo(math.MaxInt64, true)
	m := t.sc.State().KeyModes()
	t.flush() // answers to queries printed before the keys go before them; releases mu
	return m
}
