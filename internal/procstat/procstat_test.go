package procstat

import (
	"os"
	"testing"
)

// A command name with spaces and ')' does not shift the fields after it.
func TestParse(t *testing.T) {
	line := []byte("4242 (a) b (c)) S 1 4242 4242 34816 4300 4194560 0 0 0 0 3 1 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n")
	got, ok := Parse(line)
	want := Stat{State: 'S', PPid: 1, Pgrp: 4242, Session: 4242, TTY: 34816, TPGID: 4300, Start: 987654}
	if !ok || got != want {
		t.Errorf("Parse = %+v, %v; want %+v", got, ok, want)
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S 1 2", "12 (x) S one 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, ok := Parse([]byte(bad)); ok {
			t.Errorf("Parse(%q) = ok, want false", bad)
		}
	}
}

// This process's own line reads: its parent is the one that started the test.
func TestRead_self(t *testing.T) {
	st, ok := Read(os.Getpid())
	if !ok {
		t.Skip("no /proc here")
	}
	if st.PPid != os.Getppid() || st.Start == 0 {
		t.Errorf("Read(self) = %+v, want parent %d and a start time", st, os.Getppid())
	}
}
