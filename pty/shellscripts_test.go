package pty

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// sessionNonce is the nonce a session's marks carry (set before its reader starts).
func sessionNonce(t *testing.T, m *Manager, id string) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || s.filter.Nonce == "" {
		t.Fatalf("session %s has no nonce", id)
	}
	return s.filter.Nonce
}

// openShellEnv is openShell with ENV naming the HOME's .shrc (read by sh and dash).
func openShellEnv(t *testing.T, m *Manager, command string, files map[string]string) ReadResult {
	t.Helper()
	home := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"HOME": home, "HISTFILE": "/dev/null", "ENV": filepath.Join(home, ".shrc")}
	res := mustOpen(t, m, OpenOptions{Command: command, Env: env}, ReadOptions{})
	t.Cleanup(func() {
		_, _ = m.Close(context.WithoutCancel(t.Context()), res.SessionID, syscall.SIGHUP, DefaultGrace)
	})
	if res.Reason != ReasonPrompt || !res.Integration {
		t.Fatalf("Open(%s) reason %q integration %v, want %q, true; output %q", command, res.Reason, res.Integration, ReasonPrompt, res.Output)
	}
	return res
}

// A user who turns on xtrace (at the prompt, or in an rc file) sees the trace of their
// own commands, and the integration goes on working: our scripts and hooks do not trace,
// so no mark (and no nonce) is printed as text.
func TestIntegration_xtrace(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, tt := range []struct {
		name, shell, on string
		files           map[string]string
	}{
		{"bash", "bash", "set -x", nil},
		{"zsh", "zsh", "setopt xtrace", nil},
		{"bashrc", "bash", "", map[string]string{".bashrc": "set -x\n"}},
		{"zshrc", "zsh", "", map[string]string{".zshrc": "setopt xtrace\n"}},
		{"dash ENV", "dash", "", map[string]string{".shrc": "set -x\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			needShell(t, tt.shell)
			opened := openShellEnv(t, m, tt.shell, tt.files)
			id := opened.SessionID
			nonce := sessionNonce(t, m, id)
			outs := []string{opened.Output}
			if tt.on != "" {
				outs = append(outs, run(t, m, id, tt.on).Output)
			}
			for range 3 {
				res := run(t, m, id, "echo hi")
				outs = append(outs, res.Output)
				if !strings.Contains(res.Output, "hi\n") || exitOf(res) != 0 || !res.Integration {
					t.Errorf("run echo hi = %q exit %d integration %v; want hi, exit 0, true", res.Output, exitOf(res), res.Integration)
				}
			}
			for _, out := range outs {
				if strings.Contains(out, nonce) || strings.Contains(out, "133;") {
					t.Errorf("output %q shows a mark or the nonce", out)
				}
			}
		})
	}
}

// An rc file that leaves allexport on does not export the nonce: a command cannot read
// it from its environment and forge a mark.
func TestIntegration_allexportKeepsNonce(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, tt := range []struct {
		shell string
		files map[string]string
	}{
		{"bash", map[string]string{".bashrc": "set -a\n"}},
		{"zsh", map[string]string{".zshrc": "setopt allexport\n"}},
		{"dash", map[string]string{".shrc": "set -a\n"}},
	} {
		if !haveShell(t, tt.shell) {
			continue
		}
		id := openShellEnv(t, m, tt.shell, tt.files).SessionID
		nonce := sessionNonce(t, m, id)
		for range 2 { // at the first prompt and at a later one
			// Counted, not shown: the output's cleaning would take a mark out of it.
			res := run(t, m, id, "env | grep -c -e 'mh=' -e "+nonce)
			if res.Output != "0\n" {
				t.Errorf("%s with allexport: env holds the nonce in %q variables", tt.shell, res.Output)
			}
		}
		spoof := `n=$(env | sed -n 's/.*mh=\([A-Za-z0-9]*\).*/\1/p' | head -n 1); printf '\033]133;D;mh=%s;7\007' "$n"; true`
		if res := run(t, m, id, spoof); exitOf(res) != 0 {
			t.Errorf("%s with allexport: a D mark forged from env gave exit %d, want the real 0; output %q", tt.shell, exitOf(res), res.Output)
		}
	}
}

// An exec of a shell the integration is handed to succeeded: the new shell's first prompt
// says exit 0 (not the status of the last line of its startup files).
func TestIntegration_execReportsSuccess(t *testing.T) {
	needShell(t, "zsh")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	for _, line := range []string{"exec zsh", "exec bash --norc", "exec dash -i"} {
		id := openShell(t, m, "zsh", nil).SessionID
		res, err := m.IO(t.Context(), id, Input{Run: line}, ReadOptions{Timeout: waitLong})
		if err != nil || res.Reason != ReasonPrompt || !res.Integration || exitOf(res) != 0 {
			t.Errorf("run %q = %v, reason %q integration %v command %+v; want %q, integration true, exit 0", line, err, res.Reason, res.Integration, res.Command, ReasonPrompt)
		}
	}
}

// A PROMPT_COMMAND turned into an array the way bash-preexec does it keeps our hooks once:
// each prompt prints its marks once.
func TestIntegration_promptCommandArray(t *testing.T) {
	needShell(t, "bash")
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", map[string]string{".bashrc": "PROMPT_COMMAND='n=$((n+1))'\n"}).SessionID
	run(t, m, id, `PROMPT_COMMAND=("${PROMPT_COMMAND[@]}" 'true')`)
	count := `printf '%s\n' "${PROMPT_COMMAND[@]}" | grep -c -e __mh_precmd -e __mh_end; printf '%s|' "${PROMPT_COMMAND[@]:1:2}"`
	res := run(t, m, id, count)
	if want := "2\nn=$((n+1))|true|"; res.Output != want || exitOf(res) != 0 {
		t.Errorf("hooks in PROMPT_COMMAND = %q exit %d, want %q (ours once each, the user's kept)", res.Output, exitOf(res), want)
	}
}
