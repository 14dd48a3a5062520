package pty

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// A person answers read -s: the program gets the line, the terminal never echoes it, so
// neither the agent's output nor the raw stream holds it; the agent's next result says a
// person typed. A second answer while one is pending is refused.
func TestAsk_password(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res, err := m.IO(t.Context(), id, Input{Run: "read -rs -p 'Password: ' pw; echo; echo got=${#pw}:${pw//?/x}"}, ReadOptions{Timeout: waitLong})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonInput || res.WaitingForInput == nil || res.WaitingForInput.Kind != InputPassword {
		t.Fatalf("run read -s: reason %q waiting %+v, want input, password", res.Reason, res.WaitingForInput)
	}
	a, err := m.Ask(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a.Want.Kind != InputPassword || a.Want.Prompt != "Password:" {
		t.Errorf("Ask() = %+v, want password at \"Password:\"", a.Want)
	}
	if _, err := m.Ask(t.Context(), id); !errors.Is(err, ErrAnswerPending) {
		t.Errorf("second Ask() = %v, want ErrAnswerPending", err)
	}
	if err := a.Send(t.Context(), []byte("two\nlines")); !errors.Is(err, ErrInvalid) {
		t.Errorf("Send(two lines) = %v, want ErrInvalid", err)
	}
	// A refused Send ends the answer: a new one begins.
	if a, err = m.Ask(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-SECRET"
	if err := a.Send(t.Context(), []byte(secret)); err != nil {
		t.Fatal(err)
	}
	a.Close() // after Send: nothing more
	got := mustIO(t, m, id, "", ReadOptions{WaitFor: regexp.MustCompile(`got=\d+`)})
	if want := "got=14:xxxxxxxxxxxxxx"; !strings.Contains(got.Output, want) || !got.PersonTyped {
		t.Errorf("after the answer: output %q personTyped %v, want %q, true", got.Output, got.PersonTyped, want)
	}
	raw := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0)), Raw: true, Timeout: 1})
	if strings.Contains(raw.Output, secret) {
		t.Errorf("the session's raw output holds the secret: %q", raw.Output)
	}
	// Once answered, the shell is back at its prompt: nothing to answer.
	var na *NotAskingError
	if _, err := m.Ask(t.Context(), id); !errors.As(err, &na) || na.State != StatePrompt {
		t.Errorf("Ask() at the prompt = %v, want a NotAskingError at the prompt", err)
	}
}

// An answer is written only while the program still asks: one that stopped (it was
// interrupted) gets nothing, and the shell's prompt does not get the secret. While the
// answer is pending the agent's keys are refused, the C-c included.
func TestAsk_stoppedAsking(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res, err := m.IO(t.Context(), id, Input{Run: "read -rs -p 'Password: ' pw"}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput {
		t.Fatalf("run read -s = %v, reason %q; want input", err, res.Reason)
	}
	a, err := m.Ask(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var pending *AnswerPendingError
	if _, err := m.IO(t.Context(), id, Input{Keys: []string{"C-c"}}, ReadOptions{Timeout: waitLong}); !errors.As(err, &pending) || !errors.Is(err, ErrBusy) {
		t.Fatalf("the agent's C-c while an answer is pending = %v, want an AnswerPendingError (busy)", err)
	}
	// The shell's read is interrupted all the same (a signal, as a program in the
	// session could send): the shell is back at its prompt.
	if err := syscall.Kill(a.Asker.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if res := mustIO(t, m, id, "", ReadOptions{}); res.Reason != ReasonPrompt {
		t.Fatalf("after SIGINT: reason %q, want the prompt", res.Reason)
	}
	var na *NotAskingError
	err = a.Send(t.Context(), []byte("leaked"))
	if !errors.As(err, &na) || !na.Changed || na.State != StatePrompt {
		t.Errorf("Send() after the question ended = %v, want a NotAskingError saying it changed, at the prompt", err)
	}
	raw := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0)), Raw: true, Timeout: 1})
	if strings.Contains(raw.Output, "leaked") {
		t.Errorf("the refused answer reached the terminal: %q", raw.Output)
	}
	// The answer is over: the agent types again.
	run(t, m, id, "true")
}

// The question the person was shown is the one that gets the line: when another
// process asks the same question in its place (the first one ended, by a signal here,
// with no input from anyone), the answer is refused and the newcomer gets nothing.
func TestAsk_askerSwapped(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	script := filepath.Join(t.TempDir(), "swap.sh")
	// The first asker, on SIGUSR1, starts a second one that asks the same question on a
	// line of its own: the same prompt.
	body := `trap 'echo; bash -c "read -rs -p \"Password: \" b; echo; echo LEAK=\$b"' USR1
read -rs -p 'Password: ' a
echo; echo FIRST=$a
`
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := m.IO(t.Context(), id, Input{Run: "bash " + script}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput {
		t.Fatalf("run the script = %v, reason %q; want input", err, res.Reason)
	}
	a, err := m.Ask(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Want.Kind != InputPassword || len(a.Asker.Args) != 2 || a.Asker.Args[0] != "bash" || a.Asker.Args[1] != script {
		t.Fatalf("Ask() = %+v, asker %+v; want a password asked by bash %s", a.Want, a.Asker, script)
	}
	if err := syscall.Kill(a.Asker.Pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	// The second asker is up once the session waits for input again, after its prompt.
	res = mustIO(t, m, id, "", ReadOptions{})
	if res.Reason != ReasonInput || res.WaitingForInput == nil || res.WaitingForInput.Prompt != a.Want.Prompt {
		t.Fatalf("after the swap: reason %q waiting %+v, want the same question again", res.Reason, res.WaitingForInput)
	}
	const secret = "hunter2-SWAPPED"
	var na *NotAskingError
	err = a.Send(t.Context(), []byte(secret))
	if !errors.As(err, &na) || !na.Changed || !strings.Contains(na.Error(), "another process reads the terminal") {
		t.Errorf("Send() to a swapped asker = %v, want a NotAskingError saying another process reads", err)
	}
	raw := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0)), Raw: true, Timeout: 1})
	if strings.Contains(raw.Output, secret) || strings.Contains(raw.Output, "LEAK=h") {
		t.Errorf("the refused answer reached the newcomer: %q", raw.Output)
	}
}

// Keys typed into the session after the question was shown (a person attached with
// --write here; the agent's are refused while the answer is pending) refuse the answer:
// the program still asks the same question, but it would read them and the secret as one
// line, so nothing is written.
func TestAsk_typedMeanwhile(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	res, err := m.IO(t.Context(), id, Input{Run: "read -rs -p 'Password: ' pw; echo; echo got=${#pw}"}, ReadOptions{Timeout: waitLong})
	if err != nil || res.Reason != ReasonInput {
		t.Fatalf("run read -s = %v, reason %q; want input", err, res.Reason)
	}
	a, err := m.Ask(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v, err := m.Attach(id, AttachOptions{Write: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if n, err := v.Write(t.Context(), []byte("typed")); err != nil || n != 5 {
		t.Fatalf("the viewer's keys: %d, %v; want 5 written", n, err)
	}
	const secret = "hunter2-MEANWHILE"
	var na *NotAskingError
	err = a.Send(t.Context(), []byte(secret))
	if !errors.As(err, &na) || !na.Changed || !strings.Contains(na.Error(), "input was written to it meanwhile") {
		t.Errorf("Send() after keys were typed = %v, want a NotAskingError saying input was written meanwhile", err)
	}
	// The read still waits with what was typed: Enter ends it, without the secret.
	got := mustIO(t, m, id, "\r", ReadOptions{WaitFor: regexp.MustCompile(`got=\d+`)})
	if !strings.Contains(got.Output, "got=5") {
		t.Errorf("the program read %q, want only the 5 typed keys (got=5)", got.Output)
	}
}

// Ask says which process asks: its command line, its executable, whether it is setuid
// and whether it is a relay (here a copy of bash named ssh, with the setuid bit).
func TestAsk_asker(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	b, err := os.ReadFile(bash)
	if err != nil {
		t.Fatal(err)
	}
	ssh := filepath.Join(t.TempDir(), "ssh")
	if err := os.WriteFile(ssh, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ssh, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{})
	id := openShell(t, m, "bash", nil).SessionID
	line := ssh + ` -c 'read -rs -p "Passphrase: " x'`
	if res, err := m.IO(t.Context(), id, Input{Run: line}, ReadOptions{Timeout: waitLong}); err != nil || res.Reason != ReasonInput {
		t.Fatalf("run %s = %v, reason %+v; want input", line, err, res.Reason)
	}
	a, err := m.Ask(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	want := []string{ssh, "-c", `read -rs -p "Passphrase: " x`}
	if a.Asker.Pid <= 0 || a.Asker.Exe != ssh || !slices.Equal(a.Asker.Args, want) || !a.Asker.Setuid || !a.Asker.Relay {
		t.Errorf("Ask().Asker = %+v, want the copy's pid, %s, %q, setuid, a relay", a.Asker, ssh, want)
	}
}

// Overview says what each session does: at its prompt, asking, running, exited.
func TestManager_Overview(t *testing.T) {
	if !foregroundKnown {
		t.Skip("needs the kernel's view of the terminal")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	m := newManager(t, Config{})
	atPrompt := openShell(t, m, "bash", nil).SessionID
	asking := openShell(t, m, "bash", nil).SessionID
	if res, err := m.IO(t.Context(), asking, Input{Run: "read -r -p 'Name? ' n"}, ReadOptions{Timeout: waitLong}); err != nil || res.Reason != ReasonInput {
		t.Fatalf("run read = %v, reason %q; want input", err, res.Reason)
	}
	running := mustOpen(t, m, OpenOptions{Command: "exec sleep 100"}, ReadOptions{Timeout: 1}).SessionID
	exited := mustOpen(t, m, OpenOptions{Command: "true"}, ReadOptions{WaitFor: never}).SessionID
	want := map[string]SessionState{atPrompt: StatePrompt, asking: StateInput, running: StateRunning, exited: StateExited}
	for _, in := range m.Overview(t.Context()) {
		if in.State != want[in.ID] {
			t.Errorf("Overview(): %s is %q, want %q", in.ID, in.State, want[in.ID])
		}
		if in.ID == asking && (in.Waiting == nil || in.Waiting.Kind != InputLine || in.Waiting.Prompt != "Name?") {
			t.Errorf("Overview(): %s waits for %+v, want a line at \"Name?\"", in.ID, in.Waiting)
		}
	}
	var na *NotAskingError
	if _, err := m.Ask(t.Context(), running); !errors.As(err, &na) || na.State != StateRunning {
		t.Errorf("Ask(running) = %v, want a NotAskingError, running", err)
	}
	if _, err := m.Ask(t.Context(), exited); !errors.As(err, &na) || na.State != StateExited {
		t.Errorf("Ask(exited) = %v, want a NotAskingError, exited", err)
	}
}
