package pty

import (
	"regexp"
	"strings"
	"testing"

	"time"

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

// A program that dies without leaving the alternate screen (vim killed with SIGKILL, a
// crashed curses program, tput smcup) leaves the terminal on it. The commands run after it
// still print, and each run returns what it printed, as the stream shows it: the screen
// of the moment the command ended is gone once the prompt is drawn over it, and the rows
// would hold what others drew before.
func TestRun_afterAltScreenLeftOn(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res := run(t, m, id, `printf '\033[?1049hdrawn\n'; echo FATAL: config missing; false`)
	if want := "drawn\nFATAL: config missing\n"; res.Output != want {
		t.Errorf("the run that left the alternate screen on: output %q, want %q", res.Output, want)
	}
	for _, c := range []struct{ line, want string }{
		{"echo after", "after\n"},
		{"ls /nonexistent-alt-dir", "No such file"},
	} {
		res = run(t, m, id, c.line)
		if !strings.Contains(res.Output, c.want) || strings.Contains(res.Output, "not kept") {
			t.Errorf("run %q with the terminal left on the alternate screen: output %q, want it to hold %q", c.line, res.Output, c.want)
		}
	}
}

// A run whose output leaves the alternate screen and switches to it again ends with what
// it printed on the screen still shown: the main screen's text, then that.
func TestRun_endsOnTheAltScreen(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res := run(t, m, id, `printf 'MAIN0\n\033[?1049hALT1\033[?1049lMAIN1\n\033[?1049h\033[HALT2 screen'`)
	if want := "MAIN0\nMAIN1\nALT2 screen"; res.Output != want {
		t.Errorf("output %q, want %q", res.Output, want)
	}
}

// vim killed with SIGKILL never switches back: the runs after it return their output.
func TestRun_afterVimKilled(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	vim := need(t, "vim")
	need(t, "timeout")
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	// The run returns as vim waits for keys; it is done once timeout has killed it.
	res, err := m.IO(t.Context(), id, Input{Run: "timeout -s KILL 1 " + vim + " -u NONE -N -i NONE"}, ReadOptions{Timeout: waitLong})
	for deadline := time.Now().Add(waitLong); err == nil && (res.Command == nil || !res.Command.Done) && time.Now().Before(deadline); {
		res, err = m.IO(t.Context(), id, Input{}, ReadOptions{Timeout: waitLong})
	}
	if err != nil {
		t.Fatal(err)
	}
	if exitOf(res) != 137 {
		t.Fatalf("vim under timeout -s KILL: exit %d, output %q; want 137", exitOf(res), res.Output)
	}
	if res = run(t, m, id, "echo after; id -u"); !strings.HasPrefix(res.Output, "after\n") {
		t.Errorf("run after vim was killed on the alternate screen: output %q, want it to start with %q", res.Output, "after\n")
	}
	if res = mustIO(t, m, id, "", ReadOptions{Screen: true, Timeout: 1}); res.Screen == nil || !res.Screen.AltScreen {
		t.Errorf("the screen after vim was killed: %+v, want the alternate screen still on", res.Screen)
	}
}
