package pty

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An interactive shell keeps its history in a file of its session's in the temp
// directory, not in the person's: the agent's commands do not fill it, and a confined
// shell is not refused the write. The file goes with the session.
func TestHistory_ownFile(t *testing.T) {
	for shell, save := range map[string]string{
		// Add a line to the history and write the history file now.
		"bash": "history -s agent-command; history -a",
		"zsh":  "print -s agent-command; fc -W",
	} {
		t.Run(shell, func(t *testing.T) {
			needShell(t, shell)
			m := newManager(t, Config{})
			home := t.TempDir()
			// The person's history file exists, so a write to it would show.
			personal := filepath.Join(home, "."+shell+"_history")
			if err := os.WriteFile(personal, []byte("person's command\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// zsh keeps no history without these (a person's .zshrc sets them).
			env := map[string]string{"HOME": home, "HISTSIZE": "100", "SAVEHIST": "100"}
			res := mustOpen(t, m, OpenOptions{Command: shell, Env: env}, ReadOptions{})
			if res.Reason != ReasonPrompt {
				t.Fatalf("Open(%s) = %q, want a prompt; output %q", shell, res.Reason, res.Output)
			}
			got := strings.TrimSpace(run(t, m, res.SessionID, `echo "$HISTFILE"`).Output)
			if !strings.HasPrefix(got, os.TempDir()) || !strings.HasSuffix(got, "/"+res.SessionID) {
				t.Fatalf("HISTFILE = %q, want the session's own file in %s", got, os.TempDir())
			}
			run(t, m, res.SessionID, save)
			if b, err := os.ReadFile(got); err != nil || !strings.Contains(string(b), "agent-command") {
				t.Errorf("the session's history file = %q, %v; want the agent's command in it", b, err)
			}
			if _, err := m.Close(context.WithoutCancel(t.Context()), res.SessionID, syscall.SIGHUP, DefaultGrace); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(personal); string(b) != "person's command\n" {
				t.Errorf("the person's history = %q, want it unchanged", b)
			}
			if _, err := os.Stat(got); err == nil {
				t.Errorf("the session's history file %s outlived the session", got)
			}
		})
	}
}
