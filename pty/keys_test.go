package pty

import (
	"errors"
	"strings"
	"testing"
)

var keyTests = []struct {
	name string
	keys []string
	want string
}{
	{"Enter", []string{"Enter"}, "\r"},
	{"editing", []string{"Tab", "BSpace", "Escape", "Space"}, "\t\x7f\x1b "},
	{"arrows", []string{"Up", "Down", "Right", "Left"}, "\x1b[A\x1b[B\x1b[C\x1b[D"},
	{"navigation", []string{"Home", "End", "PageUp", "PageDown", "Insert", "Delete"}, "\x1b[H\x1b[F\x1b[5~\x1b[6~\x1b[2~\x1b[3~"},
	{"function", []string{"F1", "F4", "F5", "F12"}, "\x1bOP\x1bOS\x1b[15~\x1b[24~"},
	{"control letters", []string{"C-a", "C-c", "C-d", "C-z"}, "\x01\x03\x04\x1a"},
	{"control symbols", []string{"C-Space", "C-@", "C-[", "C-\\", "C-]"}, "\x00\x00\x1b\x1c\x1d"},
	{"meta", []string{"M-x", "M-Enter", "M-C-c"}, "\x1bx\x1b\r\x1b\x03"},
	{"single characters", []string{"y", "é", "-"}, "yé-"},
	{"tmux aliases", []string{"PgUp", "PgDn", "IC", "DC", "BTab"}, "\x1b[5~\x1b[6~\x1b[2~\x1b[3~\x1b[Z"},
	{"none", nil, ""},
}

func TestParseKeys(t *testing.T) {
	for _, tt := range keyTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKeys(tt.keys)
			if err != nil || string(got) != tt.want {
				t.Errorf("ParseKeys(%q) = %q, %v, want %q, nil", tt.keys, got, err, tt.want)
			}
		})
	}
}

func TestParseKeys_ErrUnknownKey(t *testing.T) {
	for _, name := range []string{"enter", "C-C", "Foo", "", "C-", "M-", "F13", "C-ab", "\x01", "ab"} {
		got, err := ParseKeys([]string{"Enter", name})
		var uk *UnknownKeyError
		if !errors.As(err, &uk) || uk.Name != name || !errors.Is(err, ErrUnknownKey) {
			t.Errorf("ParseKeys([Enter %q]) = %q, %v, want *UnknownKeyError{%q}", name, got, err, name)
			continue
		}
		if got != nil {
			t.Errorf("ParseKeys([Enter %q]) returned %q with the error, want nothing", name, got)
		}
		// The message alone must be enough to fix the call.
		for _, want := range []string{"unknown key", "Enter", "C-a..C-z", "F1..F12", "M-<key>"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	}
}

func FuzzParseKeys(f *testing.F) {
	for _, tt := range keyTests {
		f.Add(strings.Join(tt.keys, " "))
	}
	f.Add("M-M-M-C-x")
	f.Fuzz(func(t *testing.T, spec string) {
		names := strings.Fields(spec)
		all, err := ParseKeys(names)
		if err != nil {
			var uk *UnknownKeyError
			if !errors.As(err, &uk) || !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("ParseKeys(%q) error %v is not an *UnknownKeyError", names, err)
			}
			return
		}
		// Keys are independent: the whole is the concatenation of the parts.
		var cat []byte
		for _, n := range names {
			b, err := ParseKeys([]string{n})
			if err != nil {
				t.Fatalf("ParseKeys([%q]) = %v, but the list containing it parsed", n, err)
			}
			cat = append(cat, b...)
		}
		if string(cat) != string(all) {
			t.Fatalf("ParseKeys(%q) = %q, concatenated parts %q", names, all, cat)
		}
	})
}
