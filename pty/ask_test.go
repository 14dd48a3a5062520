package pty

import (
	"errors"
	"regexp"
	"strings"
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

// An answer is written only while the program still asks: one that stopped (the agent
// interrupted it) gets nothing, and the shell's prompt does not get the secret.
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
	if res, err := m.IO(t.Context(), id, Input{Keys: []string{"C-c"}}, ReadOptions{Timeout: waitLong}); err != nil || res.Reason != ReasonPrompt {
		t.Fatalf("C-c = %v, reason %q; want the prompt", err, res.Reason)
	}
	run(t, m, id, "true") // the shell is at its prompt, done drawing it
	var na *NotAskingError
	err = a.Send(t.Context(), []byte("leaked"))
	if !errors.As(err, &na) || !na.Changed || na.State != StatePrompt {
		t.Errorf("Send() after the question ended = %v, want a NotAskingError saying it changed, at the prompt", err)
	}
	raw := mustIO(t, m, id, "", ReadOptions{Since: new(int64(0)), Raw: true, Timeout: 1})
	if strings.Contains(raw.Output, "leaked") {
		t.Errorf("the refused answer reached the terminal: %q", raw.Output)
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
