package pty

import "github.com/mcp-harness/mcp-harness/pty/vt"

// ParseKeys turns tmux-style key names into the bytes a terminal would send, concatenated
// in order (vt.Key says which names there are). Names are case-sensitive, as in tmux's
// documentation ("Enter", not "enter"), and control keys take a lower-case letter
// ("C-c"). An unknown name is an *UnknownKeyError; nothing is returned for the valid
// names before it, so a bad list never sends half its keys.
func ParseKeys(names []string) ([]byte, error) {
	var out []byte
	for _, name := range names {
		b, ok := vt.Key(name)
		if !ok {
			return nil, &UnknownKeyError{Name: name}
		}
		out = append(out, b...)
	}
	return out, nil
}
