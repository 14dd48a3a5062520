package pty

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// A hostile ~/.bashrc: its own prompt, a PROMPT_COMMAND that replaces ours, clobbers $?
// and rewrites PS1 at every prompt, a PS0 of its own, vi mode. Each is a way VS Code's
// integration broke: the status must be read before anything else runs, C must come
// from PS0 once per command line (not a DEBUG trap per simple command), PS0 takes no
// \[ \], and marks must be put back at every prompt.
func TestRun_bashHostileRC(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	rc := `PS1='custom \w \$ '
PROMPT_COMMAND='false; PS1="rewritten \$ "; PS0="[ps0]"'
PS0='[ps0]'
set -o vi
`
	id := openShell(t, m, "bash", map[string]string{".bashrc": rc}).SessionID
	for _, tt := range []struct {
		line, out string
		code      int
	}{
		{"true", "", 0},
		{"false", "", 1},
		{"(exit 7)", "", 7},
		{"echo a; echo b", "a\nb\n", 0},
		{"no_such_command_here 2>/dev/null", "", 127},
	} {
		res := run(t, m, id, tt.line)
		if res.Output != tt.out || exitOf(res) != tt.code {
			t.Errorf("run %q = %q exit %d, want %q exit %d", tt.line, res.Output, exitOf(res), tt.out, tt.code)
		}
	}
	// The user's PS0 still prints, before the command's output starts.
	raw, err := m.IO(t.Context(), id, Input{}, ReadOptions{Since: new(int64(0)), Raw: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw.Output, "[ps0]") || strings.Contains(raw.Output, `\[`) || strings.Contains(raw.Output, "133;") {
		t.Errorf("raw output %q: want the user's PS0, no literal \\[ and no marks", raw.Output)
	}
	if !strings.Contains(raw.Output, "rewritten $ ") {
		t.Errorf("raw output %q: want the prompt the user's PROMPT_COMMAND sets", raw.Output)
	}
}

// An empty Enter shows a new prompt (A, B, and in bash a stray D) and runs nothing: no
// command is recorded, and the next run gets the next id and its own status.
func TestRun_emptyEnter(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, sh := range []string{"bash", "dash"} {
		id := openShell(t, m, sh, nil).SessionID
		run(t, m, id, "false")
		res := mustIO(t, m, id, "\r", ReadOptions{})
		if res.Reason != ReasonPrompt {
			t.Errorf("%s: empty Enter: reason %q, want %q", sh, res.Reason, ReasonPrompt)
		}
		res = run(t, m, id, "true")
		if res.Command.ID != 2 || exitOf(res) != 0 {
			t.Errorf("%s: run after an empty Enter = command %+v, want id 2, exit 0", sh, res.Command)
		}
		info, err := m.Get(id)
		if err != nil || len(info.Commands) != 2 {
			t.Errorf("%s: Get = %d commands, %v; want 2", sh, len(info.Commands), err)
		}
	}
}

// zsh redraws its prompt (vi mode, a transient prompt reset at zle-line-finish): the
// redraw is not a command ending.
func TestRun_zshRedraws(t *testing.T) {
	needShell(t, "zsh")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	rc := `bindkey -v
PROMPT='full %~ %# '
zle-line-finish() { PROMPT='> '; zle reset-prompt; PROMPT='full %~ %# ' }
zle -N zle-line-finish
precmd_clobber() { false }
precmd_functions+=(precmd_clobber)
`
	id := openShell(t, m, "zsh", map[string]string{".zshrc": rc}).SessionID
	for _, tt := range []struct {
		line, out string
		code      int
	}{
		{"true", "", 0},
		{"echo OUT_$((40+2))", "OUT_42\n", 0},
		{"false", "", 1},
	} {
		res := run(t, m, id, tt.line)
		if res.Output != tt.out || exitOf(res) != tt.code {
			t.Errorf("run %q = %q exit %d, want %q exit %d", tt.line, res.Output, exitOf(res), tt.out, tt.code)
		}
	}
}

// Without integration (turned off, or a program that is not a shell we know), a run is
// refused with nothing typed, and the shell works as before.
func TestRun_noIntegration(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, o := range []OpenOptions{
		{Command: "bash --norc --noprofile", NoIntegration: true, Env: map[string]string{"PS1": "PROMPT> "}},
		{Command: "PS1='PROMPT> ' bash --norc --noprofile"}, // through sh -c: not recognised
	} {
		res := mustOpen(t, m, o, ReadOptions{WaitFor: prompt})
		if res.Integration {
			t.Errorf("Open(%q, off %v): integration true, want false", o.Command, o.NoIntegration)
		}
		_, err := m.IO(t.Context(), res.SessionID, Input{Run: "echo TYPED"}, ReadOptions{Timeout: time.Second})
		if !errors.Is(err, ErrNoIntegration) {
			t.Errorf("run without integration = %v, want ErrNoIntegration", err)
		}
		got := mustIO(t, m, res.SessionID, "echo OUT_$((40+2))\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^OUT_42`)})
		raw := mustIO(t, m, res.SessionID, "", ReadOptions{Since: new(int64(0)), Raw: true})
		if got.Reason != ReasonMatched || strings.Contains(raw.Output, "TYPED") || strings.Contains(raw.Output, "133;") {
			t.Errorf("shell without integration: reason %q, raw output %q; want a plain shell, nothing typed by the refused run", got.Reason, raw.Output)
		}
	}
}

// A run while a command runs is refused (BUSY), with nothing typed; once the command
// ends, the same session runs again.
func TestRun_busy(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res, err := m.IO(t.Context(), id, Input{Run: "sleep 30"}, ReadOptions{Timeout: 200 * time.Millisecond})
	if err != nil || res.Command == nil || res.Command.Done || res.Reason != ReasonTimeout {
		t.Fatalf("run sleep 30 (200ms) = %v, reason %q, command %+v; want timeout, not done", err, res.Reason, res.Command)
	}
	_, err = m.IO(t.Context(), id, Input{Run: "echo TYPED"}, ReadOptions{Timeout: time.Second})
	var busy *BusyError
	if !errors.As(err, &busy) || busy.ID != 1 || busy.Text != "sleep 30" {
		t.Fatalf("run while sleep runs = %v, want a BusyError naming command 1 \"sleep 30\"", err)
	}
	keys, _ := ParseKeys([]string{"C-c"})
	res = mustIO(t, m, id, string(keys), ReadOptions{})
	if res.Reason != ReasonPrompt || res.Command == nil || res.Command.ID != 1 || !res.Command.Done || exitOf(res) != 130 {
		t.Errorf("C-c = reason %q command %+v, want %q, command 1 done with 130", res.Reason, res.Command, ReasonPrompt)
	}
	// At an idle prompt with nothing unread a read returns at once (a wait would end with
	// a timeout after waitLong).
	res = mustIO(t, m, id, "", ReadOptions{Timeout: waitLong})
	if res.Reason != ReasonPrompt || res.Output != "" || res.Command != nil {
		t.Errorf("read at the idle prompt = reason %q output %q command %+v, want %q at once, nothing", res.Reason, res.Output, res.Command, ReasonPrompt)
	}
	raw := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0)), Raw: true})
	if strings.Contains(raw.Output, "TYPED") {
		t.Errorf("the refused run typed something: %q", raw.Output)
	}
	if res := run(t, m, id, "echo again"); res.Output != "again\n" || res.Command.ID != 2 {
		t.Errorf("run after the busy one = %q command %+v, want again, id 2", res.Output, res.Command)
	}
}

// A run's wait is not ended by quiet output unless idle is asked for; a run that returns
// early (its timeout) is read on without input, which returns the rest of its output
// alone and the same command.
func TestRun_waitsForItsPrompt(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, sh := range []string{"bash", "dash"} {
		id := openShell(t, m, sh, nil).SessionID
		res := run(t, m, id, "echo one; sleep 1; echo two")
		if res.Output != "one\ntwo\n" {
			t.Errorf("%s: run with a pause = %q, want both lines: a pause does not end a run", sh, res.Output)
		}
		res, err := m.IO(t.Context(), id, Input{Run: "echo three; sleep 1; echo four"}, ReadOptions{Idle: 300 * time.Millisecond, Timeout: waitLong})
		if err != nil || res.Reason != ReasonIdle || res.Output != "three\n" || res.Command.Done {
			t.Fatalf("%s: run with idle 300ms = %v, reason %q output %q command %+v; want %q after three, not done", sh, err, res.Reason, res.Output, res.Command, ReasonIdle)
		}
		res = mustIO(t, m, id, "", ReadOptions{})
		if res.Reason != ReasonPrompt || res.Output != "four\n" || res.Command == nil || res.Command.ID != 2 || !res.Command.Done {
			t.Errorf("%s: read after the early return = reason %q output %q command %+v; want %q, four alone, command 2 done", sh, res.Reason, res.Output, res.Command, ReasonPrompt)
		}
	}
}

// Bad run, paste and end arguments are refused before anything is typed.
func TestIO_runArguments(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	five := int64(5)
	for _, tt := range []struct {
		in   Input
		r    ReadOptions
		want string
	}{
		{Input{Run: "a\nb"}, ReadOptions{}, "run takes one command line"},
		{Input{Run: "   "}, ReadOptions{}, "run is blank"},
		{Input{Run: "ls", Data: []byte("x")}, ReadOptions{}, "run types its own command line"},
		{Input{Run: "ls\t"}, ReadOptions{}, "control character"},
		{Input{Run: "ls", Paste: true}, ReadOptions{}, "paste needs input"},
		{Input{Run: "ls"}, ReadOptions{Since: &five}, "drop since"},
		{Input{Paste: true}, ReadOptions{}, "paste needs input"},
		{Input{}, ReadOptions{End: &five}, "end needs since"},
		{Input{Data: []byte("x")}, ReadOptions{Since: &five, End: &five}, "end re-reads output and takes no input"},
		{Input{}, ReadOptions{Since: &five, End: new(int64(2))}, "end 2 is before since 5"},
		{Input{}, ReadOptions{WaitPort: 70000}, "waitPort must be a TCP port 1..65535, got 70000"},
	} {
		_, err := m.IO(t.Context(), id, tt.in, tt.r)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("IO(%+v, %+v) = %v, want ErrInvalid saying %q", tt.in, tt.r, err, tt.want)
		}
	}
	if info, _ := m.Get(id); len(info.Commands) != 0 {
		t.Errorf("refused calls ran %d commands", len(info.Commands))
	}
}

// A history entry's since and end re-read exactly that command's output, however much
// came after it.
func TestHistory_reread(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, sh := range []string{"bash", "dash"} {
		id := openShell(t, m, sh, nil).SessionID
		run(t, m, id, "echo first; echo line2")
		run(t, m, id, "echo second")
		run(t, m, id, "cd /")
		info, err := m.Get(id)
		if err != nil || len(info.Commands) != 3 {
			t.Fatalf("%s: Get = %+v, %v; want 3 commands", sh, info.Commands, err)
		}
		c := info.Commands[0]
		if c.ID != 1 || c.Text != "echo first; echo line2" || c.ExitCode == nil || *c.ExitCode != 0 {
			t.Errorf("%s: first command = %+v", sh, c)
		}
		res, err := m.IO(t.Context(), id, Input{}, ReadOptions{Since: &c.Since, End: &c.Cursor})
		if err != nil || res.Output != "first\nline2\n" {
			t.Errorf("%s: re-read [%d, %d) = %q, %v; want the first command's output", sh, c.Since, c.Cursor, res.Output, err)
		}
		if info.Commands[2].Cwd != "/" || info.Dir != "/" {
			t.Errorf("%s: after cd /: command cwd %q, session cwd %q; want /", sh, info.Commands[2].Cwd, info.Dir)
		}
	}
}

// A command line typed in pieces at a dash prompt (no C mark: the text comes from what
// was typed) is recorded whole, with its own output.
func TestHistory_typedInPieces(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "dash", nil).SessionID
	mustIO(t, m, id, "echo sp", ReadOptions{})
	res := mustIO(t, m, id, "lit\n", ReadOptions{})
	if res.Reason != ReasonPrompt || res.Command == nil || res.Command.Text != "echo split" || exitOf(res) != 0 {
		t.Fatalf("typed in pieces = reason %q command %+v, want %q, \"echo split\" exit 0", res.Reason, res.Command, ReasonPrompt)
	}
	c := *res.Command
	out, err := m.IO(t.Context(), id, Input{}, ReadOptions{Since: &c.Since, End: &c.Cursor})
	if err != nil || out.Output != "split\n" {
		t.Errorf("its output = %q, %v; want split", out.Output, err)
	}
}
