package pty

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// lostRun runs a line after which the shell shows a prompt without marks, and checks
// what the session says within that prompt: the run ends (input: the shell waits at a
// prompt the integration cannot see), its command done with no exit code, integration
// false in the result and in List; a later run is refused with NO_INTEGRATION and why
// (never BUSY), and typing still works (the integration may come back then: see
// TestHealth_promptHookLost).
func lostRun(t *testing.T, m *Manager, id, line, why string) {
	t.Helper()
	res, err := m.IO(t.Context(), id, Input{Run: line}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput || res.Integration || res.Command == nil || !res.Command.Done || res.Command.ExitCode != nil {
		t.Fatalf("run %q = %v, reason %q integration %v command %+v; want %q, integration false, the command done without an exit code",
			line, err, res.Reason, res.Integration, res.Command, ReasonInput)
	}
	if infos := m.List(); len(infos) == 0 || infos[len(infos)-1].ID != id || infos[len(infos)-1].Integration {
		t.Errorf("List() after %q = %+v, want session %s with integration false", line, infos, id)
	}
	_, err = m.IO(t.Context(), id, Input{Run: "echo TYPED"}, ReadOptions{Timeout: waitLong})
	if !errors.Is(err, ErrNoIntegration) || errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), why) {
		t.Errorf("run after %q = %v, want ErrNoIntegration saying %q", line, err, why)
	}
	// Up to the next prompt, whose marks (if any) come before it.
	got := mustIO(t, m, id, "echo OUT_$((40+2))\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^OUT_42\n.*[#$%>] ?$`)})
	if got.Reason != ReasonMatched {
		t.Errorf("typing after %q: reason %q output %q, want the shell to answer", line, got.Reason, got.Output)
	}
}

// exec of another shell (or the same one without its rc files) replaces the integrated
// shell with one that reports no prompts.
func TestHealth_execAnotherShell(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, tt := range []struct{ shell, line string }{
		{"bash", "PS1='PROMPT> ' exec bash --norc --noprofile"},
		{"bash", "exec zsh -f"},
		{"zsh", "exec zsh -f"},
		{"zsh", "PS1='PROMPT> ' exec bash --noprofile"},
		{"dash", "exec bash --norc --noprofile"},
		{"bash", "exec dash"},
		{"fish", "exec bash --norc --noprofile"},
	} {
		if !haveShell(t, tt.shell) || strings.Contains(tt.line, "zsh") && !haveShell(t, "zsh") {
			continue
		}
		id := openShell(t, m, tt.shell, nil).SessionID
		lostRun(t, m, id, tt.line, "replaced")
	}
}

// zsh's preexec hook sees an exec of a shell coming and hands the integration on (the
// nonce and the way to the scripts, in that command's environment alone): the new shell
// marks its prompts, and nothing it runs inherits the nonce.
func TestHealth_execHandsOn(t *testing.T) {
	needShell(t, "zsh")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, line := range []string{"exec zsh", "exec bash --norc", "exec dash -i", "exec zsh -i"} {
		id := openShell(t, m, "zsh", nil).SessionID
		res, err := m.IO(t.Context(), id, Input{Run: line}, ReadOptions{Timeout: waitLong})
		if err != nil || res.Reason != ReasonPrompt || !res.Integration || res.Command == nil || !res.Command.Done {
			t.Fatalf("run %q = %v, reason %q integration %v command %+v; want %q at the new shell's marked prompt", line, err, res.Reason, res.Integration, res.Command, ReasonPrompt)
		}
		for _, tt := range []struct {
			line, out string
			code      int
		}{
			{"echo OUT_$((40+2)); false", "OUT_42\n", 1},
			{"env | grep -c -e MCP_HARNESS_NONCE -e MCP_HARNESS_ZDOTDIR -e MCP_HARNESS_ENV", "0\n", 1},
			{"read x; echo got=$x", "", -1},
		} {
			if tt.code < 0 {
				// A question in the new shell is a question, not a lost prompt.
				res, err := m.IO(t.Context(), id, Input{Run: tt.line}, ReadOptions{Timeout: waitLong})
				if err != nil || res.Reason != ReasonInput || !res.Integration {
					t.Errorf("after %q: run %q = %v, reason %q integration %v; want %q, integration true", line, tt.line, err, res.Reason, res.Integration, ReasonInput)
				}
				if res := mustIO(t, m, id, "yes\n", ReadOptions{}); res.Reason != ReasonPrompt || exitOf(res) != 0 {
					t.Errorf("after %q: the answer = reason %q command %+v, want %q, exit 0", line, res.Reason, res.Command, ReasonPrompt)
				}
				continue
			}
			res := run(t, m, id, tt.line)
			if res.Output != tt.out || exitOf(res) != tt.code || !res.Integration {
				t.Errorf("after %q: run %q = %q exit %d integration %v, want %q exit %d, true", line, tt.line, res.Output, exitOf(res), res.Integration, tt.out, tt.code)
			}
		}
	}
}

// A prompt hook taken away: bash's hook puts itself back when an rc hook rewrites
// PROMPT_COMMAND at a prompt; a command that empties PROMPT_COMMAND (or zsh's
// precmd_functions) leaves no hook to do it, and the prompt that follows is seen to have
// no marks, by its prompt's end mark alone or, with PS1 replaced too, by the kernel.
func TestHealth_promptHookLost(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})

	// An rc whose hook replaces PROMPT_COMMAND at the first prompt: re-armed.
	id := openShell(t, m, "bash", map[string]string{".bashrc": `PROMPT_COMMAND='PROMPT_COMMAND="history -a"'` + "\n"}).SessionID
	for i, line := range []string{"true", "false", "echo three"} {
		res := run(t, m, id, line)
		if exitOf(res) != []int{0, 1, 0}[i] || !res.Integration {
			t.Errorf("run %q after the rc replaced PROMPT_COMMAND = exit %d integration %v, want %d, true", line, exitOf(res), res.Integration, []int{0, 1, 0}[i])
		}
	}

	for _, tt := range []struct {
		shell, line, why string
		rearmed          bool // the next command line puts the hook back (zsh's preexec hook)
	}{
		{"bash", "PROMPT_COMMAND=", "prompt hook", false},
		{"bash", "readonly PROMPT_COMMAND=true", "prompt hook", false},
		{"bash", "PROMPT_COMMAND= PS1='plain$ '", "without integration marks", false},
		{"zsh", "precmd_functions=()", "prompt hook", true},
		{"zsh", "precmd_functions=(); PS1='plain%# '", "without integration marks", true},
		{"dash", "PS1='plain$ '", "without integration marks", false},
	} {
		if !haveShell(t, tt.shell) {
			continue
		}
		id := openShell(t, m, tt.shell, nil).SessionID
		lostRun(t, m, id, tt.line, tt.why)
		res, err := m.IO(t.Context(), id, Input{Run: "echo back"}, ReadOptions{Timeout: waitLong})
		if tt.rearmed && (err != nil || res.Output != "back\n" || exitOf(res) != 0 || !res.Integration) {
			t.Errorf("%s: run after %q and a typed command = %v, output %q exit %d integration %v; want the hook put back: back, 0, true", tt.shell, tt.line, err, res.Output, exitOf(res), res.Integration)
		}
		if !tt.rearmed && !errors.Is(err, ErrNoIntegration) {
			t.Errorf("%s: run after %q and a typed command = %v, want ErrNoIntegration still", tt.shell, tt.line, err)
		}
	}
}

// A PROMPT_COMMAND made readonly before the integration loads leaves it nothing to hook:
// the shell opens without integration, and a run says so instead of staying busy.
func TestHealth_readonlyPromptCommand(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("PS1='PROMPT> '\nreadonly PROMPT_COMMAND='true'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := mustOpen(t, m, OpenOptions{Command: "bash", Env: map[string]string{"HOME": home, "HISTFILE": "/dev/null"}}, ReadOptions{WaitFor: prompt})
	if res.Integration {
		t.Errorf("Open(bash with a readonly PROMPT_COMMAND): integration true, want false")
	}
	if infos := m.List(); len(infos) != 1 || infos[0].Integration {
		t.Errorf("List() = %+v, want integration false", infos)
	}
	_, err := m.IO(t.Context(), res.SessionID, Input{Run: "echo TYPED"}, ReadOptions{Timeout: waitLong})
	if !errors.Is(err, ErrNoIntegration) {
		t.Errorf("run = %v, want ErrNoIntegration", err)
	}
	got := mustIO(t, m, res.SessionID, "echo OUT_$((40+2))\n", ReadOptions{WaitFor: regexp.MustCompile(`(?m)^OUT_42`)})
	if got.Reason != ReasonMatched {
		t.Errorf("typing: reason %q output %q, want the shell to answer", got.Reason, got.Output)
	}
	if _, err := m.Close(t.Context(), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil { // before its HOME goes
		t.Fatal(err)
	}
}

// What a shell asks itself is a question, not a lost prompt: its read builtin, a
// continuation line. The integration stays, and the command ends with its status.
func TestHealth_questionsKeepIntegration(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, tt := range []struct{ shell, line, answer string }{
		{"bash", "read x; echo got=$x", "yes\n"},
		{"bash", "echo 'open", "quote'\n"},
		{"zsh", "read x; echo got=$x", "yes\n"},
		{"zsh", "echo 'open", "quote'\n"},
		{"dash", "read x; echo got=$x", "yes\n"},
		{"dash", "echo 'open", "quote'\n"},
		{"fish", "read x; echo got=$x", "yes\n"},
	} {
		if !haveShell(t, tt.shell) {
			continue
		}
		id := openShell(t, m, tt.shell, nil).SessionID
		res, err := m.IO(t.Context(), id, Input{Run: tt.line}, ReadOptions{Timeout: waitLong})
		if err != nil || res.Reason != ReasonInput || !res.Integration || res.Command == nil || res.Command.Done {
			t.Fatalf("%s: run %q = %v, reason %q integration %v command %+v; want %q, integration true, running", tt.shell, tt.line, err, res.Reason, res.Integration, res.Command, ReasonInput)
		}
		if infos, _ := m.Get(id); !infos.Integration {
			t.Errorf("%s: Get() while %q asks: integration false, want true", tt.shell, tt.line)
		}
		res = mustIO(t, m, id, tt.answer, ReadOptions{})
		if res.Reason != ReasonPrompt || !res.Integration || res.Command == nil || !res.Command.Done || exitOf(res) != 0 {
			t.Errorf("%s: answer to %q = reason %q integration %v command %+v, want %q, done with 0", tt.shell, tt.line, res.Reason, res.Integration, res.Command, ReasonPrompt)
		}
	}
}

// haveShell reports whether a shell is installed, saying so in the log when it is not
// (.ci/run installs them all).
func haveShell(t *testing.T, name string) bool {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Logf("%s is not installed: skipped", name)
		return false
	}
	return true
}

// A question the shell asks itself, in raw mode without echo like its line editor, is
// input with its prompt, not a lost prompt: zsh's RM_STAR and correct questions, its
// read -k and read -q, bash's read -s -n 1. Answered, the command ends with its status.
func TestHealth_shellAsksItself(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	dir := t.TempDir()
	for _, tt := range []struct {
		shell, setup, line, prompt, answer string
		exit                               int
	}{
		{"zsh", "", "mkdir -p " + dir + "/b && touch " + dir + "/b/x " + dir + "/b/y && rm -rf " + dir + "/b/*", "[yn]?", "y", 0},
		{"zsh", "", "mkdir -p " + dir + "/d && touch " + dir + "/d/x && rm " + dir + "/d/*", "[yn]?", "n", 1},
		{"zsh", "setopt correct", "cta /dev/null", "[nyae]?", "y", 0},
		{"zsh", "", "read -sk1 'k?press a key '; echo got=$k", "press a key", "z", 0},
		{"zsh", "", "read -q 'q?sure? '", "sure?", "y", 0},
		{"bash", "", "read -rsn1 -p 'press a key '; echo got=$REPLY", "press a key", "z", 0},
		{"bash", "", "select x in a b c; do echo got=$x; break; done", "#?", "2\n", 0},
	} {
		if !haveShell(t, tt.shell) {
			continue
		}
		id := openShell(t, m, tt.shell, nil).SessionID
		if tt.setup != "" {
			run(t, m, id, tt.setup)
		}
		res, err := m.IO(t.Context(), id, Input{Run: tt.line}, ReadOptions{Timeout: waitLong})
		if err != nil || res.Reason != ReasonInput || !res.Integration || res.Command == nil || res.Command.Done ||
			res.WaitingForInput == nil || !strings.Contains(res.WaitingForInput.Prompt, tt.prompt) {
			t.Fatalf("%s: run %q = %v, reason %q integration %v command %+v waiting %+v; want %q asking %q, integration true, running",
				tt.shell, tt.line, err, res.Reason, res.Integration, res.Command, res.WaitingForInput, ReasonInput, tt.prompt)
		}
		res = mustIO(t, m, id, tt.answer, ReadOptions{})
		if res.Reason != ReasonPrompt || !res.Integration || res.Command == nil || !res.Command.Done || exitOf(res) != tt.exit {
			t.Errorf("%s: answer %q to %q = reason %q integration %v command %+v output %q, want %q, done with %d",
				tt.shell, tt.answer, tt.line, res.Reason, res.Integration, res.Command, res.Output, ReasonPrompt, tt.exit)
		}
		if got := run(t, m, id, "echo after"); got.Output != "after\n" || exitOf(got) != 0 {
			t.Errorf("%s: run after answering %q = output %q exit %d, want after, 0", tt.shell, tt.line, got.Output, exitOf(got))
		}
	}
}
