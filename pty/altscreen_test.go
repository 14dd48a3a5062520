package pty

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// While a full-screen program shows the alternate screen, a read's output is that screen
// as text, not the stream that painted it: a vim edit costs its screen. What it drew
// there is not in the output once it has left it, as a terminal shows the main screen
// again; the read cursor still moves over the whole stream.
func TestIO_altScreenOutput(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	vim := need(t, "vim")
	m := newManager(t, Config{})
	file := writeFile(t, "notes.txt", "line 1\nline 2\nline 3\nline 4\nline 5\n")
	o := bash(t)
	o.Cols, o.Rows = 120, 12
	id := mustOpen(t, m, o, ReadOptions{WaitFor: prompt}).SessionID
	start := mustIO(t, m, id, "", ReadOptions{Timeout: 1}).Cursor

	// Each read ends once vim waits for keys (reason input), its screen drawn; no
	// pattern of vim's could say so, since its message comes before the file.
	want := []string{"line 1", "line 2", "line 3", "line 4", "line 5", "~", "~", "~", "~", "~", "~"}
	check := func(what string, res ReadResult, prefix []string, last *regexp.Regexp) {
		t.Helper()
		lines := strings.Split(res.Output, "\n")
		rows := append(prefix[:len(prefix):len(prefix)], want...)
		if len(lines) != len(rows)+1 || !cmp.Equal(lines[:len(rows)], rows) || !last.MatchString(lines[len(rows)]) {
			t.Errorf("%s: output (%d bytes) %q, want the rows %q and a last row matching %v", what, len(res.Output), res.Output, rows, last)
		}
	}
	res := mustIO(t, m, id, vim+" -u NONE -N -i NONE "+file+"\n", ReadOptions{})
	if res.Cursor <= start {
		t.Fatalf("opening vim: cursor %d, want past %d", res.Cursor, start)
	}
	cmdline := vim + " -u NONE -N -i NONE " + file
	check("opening vim", res, []string{cmdline}, regexp.MustCompile(`^".*notes.txt" 5L`))

	// An edit: the output is the screen after it, whether or not a pattern was waited for.
	res = mustIO(t, m, id, "ggA edited\x1b", ReadOptions{WaitFor: regexp.MustCompile(`edited`)})
	want[0] = "line 1 edited"
	check("an edit waited for with waitFor", res, nil, regexp.MustCompile(`^(-- INSERT --)?$`))
	mid := res.Cursor
	res = mustIO(t, m, id, "jA too\x1b", ReadOptions{})
	want[1] = "line 2 too"
	check("an edit read when output settles", res, nil, regexp.MustCompile(`^(-- INSERT --)?$`))

	// Leaving: the main screen again, and none of vim's drawing.
	res = mustIO(t, m, id, ":q!\r", ReadOptions{WaitFor: prompt})
	if res.Output != "PROMPT> " {
		t.Errorf("after :q!: output %q, want the next prompt only", res.Output)
	}

	// A re-read over all of it is the main screen's text; one that ends on the alternate
	// screen before the newest output says that screen is gone.
	all := mustIO(t, m, id, "", ReadOptions{Since: &start, End: &res.Cursor})
	if want := cmdline + "\nPROMPT> "; all.Output != want {
		t.Errorf("re-read of the whole: %q, want %q", all.Output, want)
	}
	part := mustIO(t, m, id, "", ReadOptions{Since: &start, End: &mid})
	if !strings.HasSuffix(part.Output, "\n"+altNotKept) || strings.Contains(part.Output, "line 1") {
		t.Errorf("re-read up to vim's screen: %q, want the command line and the note %q", part.Output, altNotKept)
	}
}
