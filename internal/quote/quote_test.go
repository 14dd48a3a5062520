package quote

import (
	"strings"
	"testing"
)

func TestShort(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"Empty", "", `""`},
		{"Short", "build", `"build"`},
		{"Escapes", "a\"b\n", `"a\"b\n"`},
		{"AtLimit", strings.Repeat("x", MaxShown), `"` + strings.Repeat("x", MaxShown) + `"`},
		{"OverLimit", strings.Repeat("x", MaxShown+1), `"` + strings.Repeat("x", MaxShown) + `"... (65 bytes)`},
		{"Megabyte", long, `"` + strings.Repeat("a", MaxShown) + `"... (1048576 bytes)`},
		// é is two bytes: a cut inside it backs off to the character before.
		{"RuneBoundary", strings.Repeat("x", MaxShown-1) + "éé", `"` + strings.Repeat("x", MaxShown-1) + `"... (67 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Short(tc.in); got != tc.want {
				t.Errorf("Short(%d bytes) = %s, want %s", len(tc.in), got, tc.want)
			}
		})
	}
}

// Whatever is sent, the quoted form stays short: at most MaxShown bytes, each escaped in
// at most 10 characters (\U0010ffff), plus the length note.
func FuzzShort(f *testing.F) {
	f.Add("build")
	f.Add(strings.Repeat("\xff", 200))
	f.Add(strings.Repeat("é", 100))
	f.Fuzz(func(t *testing.T, s string) {
		if got := Short(s); len(got) > 10*MaxShown+40 {
			t.Errorf("Short(%d bytes) is %d bytes long", len(s), len(got))
		}
	})
}

func TestShell(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/home/me/project", "/home/me/project"},
		{"/tmp/a b", "'/tmp/a b'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
		{"$HOME", "'$HOME'"},
	} {
		if got := Shell(tc.in); got != tc.want {
			t.Errorf("Shell(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
