package vt

import (
	"slices"
	"testing"
)

// DEC line drawing is drawn as boxes whichever way it is selected: designated into G0, or
// into G1 and shifted in with SO (curses programs do that), also when the output arrives
// cut anywhere.
func TestEmulator_lineDrawing(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     []string
	}{
		{"G0", "\x1b(0lqqk\x1b(B ok\r\nx", []string{"┌──┐ ok", "x"}},
		{"G1 shifted in", "\x1b)0a\x0elqk\x0fb\r\n\x0ex\x0f!", []string{"a┌─┐b", "│!"}},
		{"G0 designated while shifted", "\x1b)0\x0eq\x1b(Bq\x0fq\x0eq", []string{"──q─"}},
		{"reset", "\x1b)0\x0eq\x1bcq", []string{"q"}},
	} {
		for cut := 0; cut <= len(tt.in); cut++ {
			e := New(20, 3)
			e.Write([]byte(tt.in[:cut]))
			e.Write([]byte(tt.in[cut:]))
			got := e.Lines(nil)
			for len(got) > 0 && got[len(got)-1] == "" {
				got = got[:len(got)-1]
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s, cut at %d: screen %q, want %q", tt.name, cut, got, tt.want)
				break
			}
		}
	}
}
