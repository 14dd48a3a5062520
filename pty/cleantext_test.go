package pty

import (
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// zsh's PROMPT_SP marks a last line the command left unfinished (a reverse-video % or #)
// and pads it to the terminal's width, so that the prompt starts on a line of its own.
// The mark and its padding are the shell's: a run's output is what the command printed,
// in every configuration that draws them.
func TestRun_zshPromptSP(t *testing.T) {
	needShell(t, "zsh")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, tc := range []struct{ name, zshrc string }{
		{"default", ""},
		{"setopt", "setopt PROMPT_SP PROMPT_CR\n"},
		{"custom mark", "PROMPT_EOL_MARK='<no newline>'\n"},
		{"empty mark", "PROMPT_EOL_MARK=''\n"},
		{"no PROMPT_SP", "unsetopt PROMPT_SP\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := openShell(t, m, "zsh", map[string]string{".zshrc": tc.zshrc}).SessionID
			for _, c := range []struct{ line, want string }{
				{"printf foo", "foo"},
				{"echo bar", "bar\n"},
				{"printf 'one\\ntwo'", "one\ntwo"},
			} {
				res := run(t, m, id, c.line)
				if res.Output != c.want {
					raw, _ := m.IO(t.Context(), id, Input{}, ReadOptions{Since: new(res.Command.Since - 200), Raw: true})
					t.Errorf("run %q: output %q, want %q (raw from its start: %q)", c.line, res.Output, c.want, raw.Output)
				}
			}
		})
	}
}

// Cleaned text models the terminal's width (each part of the output at the width it was
// drawn at, also after a resize) but joins the rows a line wrapped onto back into one
// line, as a copy from the terminal does: a line is the same text whatever the width.
func TestRead_joinsWrappedRows(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	o := bash(t)
	o.Cols, o.Rows = 20, 10
	id := mustOpen(t, m, o, ReadOptions{WaitFor: prompt}).SessionID
	line := strings.Repeat("x", 15) + strings.Repeat("y", 15)
	done := regexp.MustCompile(`(?m)^42\n`)
	// The carriage return after the wrap goes back to the start of the second row only,
	// as on the screen: Z overwrites its first y.
	cmd := "printf '%s\\rZ\\n' " + line + "; echo $((6*7))\n"
	res := mustIO(t, m, id, cmd, ReadOptions{WaitFor: done})
	if want := "\n" + line[:20] + "Z" + line[21:] + "\n"; !strings.Contains(res.Output, want) {
		t.Errorf("at 20 columns: output %q, want it to hold %q", res.Output, want)
	}
	start := res.Cursor
	res, err := m.IO(t.Context(), id, Input{Data: []byte(cmd), Cols: 40, Rows: 10}, ReadOptions{WaitFor: done, Timeout: waitLong})
	if err != nil {
		t.Fatal(err)
	}
	if want := "\nZ" + line[1:] + "\n"; !strings.Contains(res.Output, want) {
		t.Errorf("at 40 columns: output %q, want it to hold %q", res.Output, want)
	}
	// A re-read of both cleans each at its own width.
	all := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0)), End: &res.Cursor})
	before, after, ok := strings.Cut(all.Output, "\nZ"+line[1:]+"\n")
	if !ok || !strings.Contains(before, "\n"+line[:20]+"Z"+line[21:]+"\n") {
		t.Errorf("re-read: %q, want the first line as at 20 columns and the second as at 40 (start %d, after %q)", all.Output, start, after)
	}
}

// A program's line longer than the terminal is one line to the user who waits for it: a
// waitFor of a URL a dev server prints matches whatever column the line starts at, and
// the output holds the URL whole.
func TestIO_waitForAcrossTheMargin(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	o := bash(t)
	o.Cols, o.Rows = 40, 10
	id := mustOpen(t, m, o, ReadOptions{WaitFor: prompt}).SessionID
	url := "http://127.0.0.1:8080/api/v1/health-check-endpoint"
	res := mustIO(t, m, id, "printf '%s%s\\n' 'Listening http://127.0.0.1:8080/api/v1/health-' check-endpoint\n",
		ReadOptions{WaitFor: regexp.MustCompile(regexp.QuoteMeta("Listening " + url)), Timeout: waitLong})
	if res.Reason != ReasonMatched {
		t.Errorf("waitFor %q: reason %q, output %q; want it matched", "Listening "+url, res.Reason, res.Output)
	}
	if !strings.Contains(res.Output, "Listening "+url+"\n") {
		t.Errorf("output %q does not hold the line %q whole", res.Output, "Listening "+url)
	}
}

// DEC line drawing, as curses programs draw boxes (tput smacs is ESC ( 0 for xterm), reads
// as the box characters the terminal shows.
func TestRun_lineDrawing(t *testing.T) {
	need(t, "tput")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res := run(t, m, id, "tput smacs; printf 'lqqk\\nmqqj'; tput rmacs; echo ' done'")
	if want := "┌──┐\n└──┘ done\n"; res.Output != want {
		t.Errorf("boxes drawn with tput smacs: output %q, want %q", res.Output, want)
	}
}
