package pty

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A person's answer to a program's question (the operator's `answer`): the session is
// asked whether its program waits for input now, the way a wait finds reason "input"
// (the kernel's view of the foreground process, the terminal's modes), one answer is
// taken at a time, and the line goes in with Enter only if the very question the person
// was shown is still asked when they have typed it. A password typed into a program that
// stopped asking would otherwise land at a shell prompt, echoed into the output and the
// shell's history; and one that the agent replaced meanwhile (it interrupts sudo and
// starts a read -s of its own with the same prompt) would hand the agent the secret.
//
// So Ask records the question as the person sees it: the kind of input, the prompt, the
// terminal's foreground process group, the process that reads (pid and start time, its
// executable and command line: Asker, shown to the person) and the session's input
// sequence; Send looks again just before the write and writes only if none of them
// changed, and the write is noted under the same lock that checks that no input came in
// between. While an answer is pending the agent's input (IO with Data, Keys or Run) is
// refused with an *AnswerPendingError: nothing the agent types can reach the asker, or
// replace it, between the look and the write. What this cannot tell is a program that
// asks honestly from one that lies: the guarantee is that the line goes to the process
// the person was shown, asking the question they were shown, and to nothing else.

// relays are programs that pass what they read on, to another program or machine: an
// answer typed to one goes further than the process that asks. Shown to the person.
var relays = map[string]bool{
	"sudo": true, "su": true, "doas": true, "pkexec": true, "runuser": true, "login": true,
	"ssh": true, "sshpass": true, "mosh-client": true, "telnet": true,
	"docker": true, "podman": true, "kubectl": true, "machinectl": true,
	"script": true, "tmux": true, "screen": true,
}

// Asker is the process that waits for an answer, as the kernel shows it when the answer
// begins: a person sees which program will read what they type.
type Asker struct {
	Pid int
	// Exe is its executable, "" where the kernel does not show it (a setuid program of
	// another user).
	Exe string
	// Args is its command line (the program may have rewritten it).
	Args []string
	// Setuid says that it runs with rights its user does not have: its executable is
	// setuid or setgid, or its real and effective ids differ (sudo, su).
	Setuid bool
	// Relay says that it passes what it reads on to another program or machine (sudo,
	// su, ssh, docker, script, tmux: the relays list).
	Relay bool
	start uint64 // its start time (procid): with Pid, one process
}

// same reports whether b is the process a was: the same pid and start time, running the
// same executable with the same command line (an exec keeps the pid).
func (a Asker) same(b Asker) bool {
	return a.Pid == b.Pid && a.start == b.start && a.start != 0 && a.Exe == b.Exe && slices.Equal(a.Args, b.Args)
}

// AnswerPendingError refuses the agent's input to a session while a person's answer to
// its question is pending: the input could reach the program that asks, or end it and
// start another in its place, before the person's line is written. errors.Is(err,
// ErrBusy) holds: it is a BUSY answer, and nothing was typed.
type AnswerPendingError struct{ Session string }

// Error says what waits and how to go on.
func (e *AnswerPendingError) Error() string {
	return fmt.Sprintf("a person is answering the question in session %s (mcp-harness answer); input is refused until the answer is written or given up: read without input to follow it", e.Session)
}

// Is makes errors.Is(err, ErrBusy) and errors.Is(err, ErrAnswerPending) true.
func (e *AnswerPendingError) Is(target error) bool {
	return target == ErrBusy || target == ErrAnswerPending
}

// askWait bounds how long Ask and Answer.Send wait for the program's output to go quiet
// (and, behind a relay whose far side is out of sight, for relayQuiet) before they judge
// whether it waits for input.
const askWait = 2 * time.Second

// NotAskingError refuses an answer to a session whose program does not wait for input.
type NotAskingError struct {
	Session string
	State   SessionState // running, prompt or exited
	// Changed says that the program asked when the answer began and no longer does, or
	// another question is asked now (Why says what changed): nothing was written.
	Changed bool
	Why     string
}

// Error says what the session does instead, so a person knows what to do.
func (e *NotAskingError) Error() string {
	what := map[SessionState]string{
		StateRunning: "its program is running, not reading its terminal",
		StatePrompt:  "its shell is at its prompt",
		StateExited:  "its program has exited",
	}[e.State]
	if what == "" {
		what = "it waits for another kind of input"
	}
	// The id is a session's (Ask found it), so short: it is shown as it is.
	if e.Changed && e.Why != "" {
		return fmt.Sprintf("session %s no longer asks the question you were shown: %s; nothing was written", e.Session, e.Why)
	}
	if e.Changed {
		return fmt.Sprintf("session %s stopped waiting for that input (%s); nothing was written", e.Session, what)
	}
	return fmt.Sprintf("session %s is %s: %s", e.Session, ErrNotAsking, what)
}

// Sentence is Error: the whole message, for a person (see usageError.Sentence).
func (e *NotAskingError) Sentence() string { return e.Error() }

// Is makes errors.Is(err, ErrNotAsking) true for a *NotAskingError.
func (e *NotAskingError) Is(target error) bool { return target == ErrNotAsking }

// Answer is a person's pending answer to one session's question: Ask makes it, Send
// writes the line, Close lets another answer begin. Only one is pending per session, and
// the agent's input to the session is refused meanwhile (AnswerPendingError).
type Answer struct {
	s *session
	// Want is what the program asked for when Ask looked.
	Want InputWanted
	// Asker is the process that asked.
	Asker  Asker
	pgrp   int    // the terminal's foreground process group then
	inputs uint64 // the session's input sequence then
	done   bool
}

// Ask begins a person's answer to session id: its program must wait for input from the
// terminal now (else a *NotAskingError), and no other answer may be pending
// (ErrAnswerPending). It waits up to askWait for the output to go quiet before it judges.
// The caller Closes the Answer, sent or not.
func (m *Manager) Ask(ctx context.Context, id string) (*Answer, error) {
	const op = "pty.Ask"
	s, err := m.get(op, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.answering {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: session %q: %w: answer one question at a time", op, id, ErrAnswerPending)
	}
	s.answering = true
	s.mu.Unlock()
	l := s.asking(ctx, askWait)
	if l.want == nil {
		s.endAnswer()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: session %q: %w", op, id, err)
		}
		return nil, fmt.Errorf("%s: %w", op, &NotAskingError{Session: id, State: l.state})
	}
	return &Answer{s: s, Want: *l.want, Asker: describeAsker(l.fg.pid), pgrp: l.fg.pgrp, inputs: l.inputs}, nil
}

// Send writes line and Enter (a carriage return, as a terminal's Enter key sends) to the
// program, if the question Ask found is still asked: the same kind of input and prompt,
// the same foreground group, the same process reading (Asker), and no input since;
// otherwise nothing is written (a *NotAskingError with Changed, Why saying what
// changed). line is one line: a line break in it is refused (ErrInvalid). It ends the
// answer, written or not.
func (a *Answer) Send(ctx context.Context, line []byte) error {
	const op = "pty.Answer.Send"
	if a.done {
		return fmt.Errorf("%s: session %q: the answer was already sent or closed", op, a.s.id)
	}
	defer a.Close()
	if bytes.ContainsAny(line, "\r\n") {
		return invalidf(op, "an answer is one line; it holds a line break")
	}
	l := a.s.asking(ctx, askWait)
	if l.want == nil {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: session %q: %w", op, a.s.id, err)
		}
		return fmt.Errorf("%s: %w", op, &NotAskingError{Session: a.s.id, State: l.state, Changed: true})
	}
	if why := a.changed(l); why != "" {
		return fmt.Errorf("%s: %w", op, &NotAskingError{Session: a.s.id, State: l.state, Changed: true, Why: why})
	}
	data := make([]byte, 0, len(line)+1)
	data = append(append(data, line...), '\r')
	_, err := a.s.personWriteIf(ctx, op, data, func() error {
		if a.s.inputSeq != a.inputs {
			return fmt.Errorf("%s: %w", op, &NotAskingError{Session: a.s.id, State: StateInput, Changed: true,
				Why: "input was written to it meanwhile"})
		}
		return nil
	})
	clear(data)
	return err
}

// changed says what differs between the question Ask found and look l, which found one:
// "" when it is the same question.
func (a *Answer) changed(l askLook) string {
	switch {
	case l.want.Kind != a.Want.Kind:
		return fmt.Sprintf("it waits for %s now, not %s", l.want.Kind, a.Want.Kind)
	case l.want.Prompt != a.Want.Prompt:
		return fmt.Sprintf("its last line is %q now, not %q", clip(l.want.Prompt), clip(a.Want.Prompt))
	case l.fg.pgrp != a.pgrp:
		return fmt.Sprintf("another process group is in the foreground (%d, not %d)", l.fg.pgrp, a.pgrp)
	case l.inputs != a.inputs:
		return "input was written to it meanwhile"
	}
	if b := describeAsker(l.fg.pid); !a.Asker.same(b) {
		if b.Pid != a.Asker.Pid {
			return fmt.Sprintf("another process reads the terminal (pid %d, not pid %d)", b.Pid, a.Asker.Pid)
		}
		return fmt.Sprintf("the process that asked (pid %d) runs another program now, or is gone", a.Asker.Pid)
	}
	return ""
}

// Close ends the answer without writing, unless Send did; another may begin. It is safe
// to call more than once.
func (a *Answer) Close() {
	if !a.done {
		a.done = true
		a.s.endAnswer()
	}
}

func (s *session) endAnswer() {
	s.mu.Lock()
	s.answering = false
	s.mu.Unlock()
}

// overviewWait bounds how long Overview waits for a session's output to be quiet enough
// to judge whether its program asks: the sessions are looked at side by side, so a
// listing takes about this long at most.
const overviewWait = inputAfterWrite

// Overview describes every session not yet closed, as List does, with what each does now
// (State, and Waiting for a program that waits for input): for a person's listing. It
// asks the kernel about the live sessions side by side, each waiting up to overviewWait
// for its output to be quiet: a session whose output goes on is running.
func (m *Manager) Overview(ctx context.Context) []Info {
	infos := m.List()
	m.mu.Lock()
	ss := make([]*session, len(infos))
	for i, in := range infos {
		ss[i] = m.sessions[in.ID]
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for i, s := range ss {
		switch {
		case infos[i].Exited, s == nil: // exited, or closed meanwhile
			infos[i].State = StateExited
		default:
			wg.Go(func() {
				l := s.asking(ctx, overviewWait)
				infos[i].Waiting, infos[i].State = l.want, l.state
			})
		}
	}
	wg.Wait()
	return infos
}

// askLook is what one look at a session found: what its program waits for (want, nil if
// nothing, and the reader fg), or what it does instead (state), and the session's input
// sequence when the look was made.
type askLook struct {
	want   *InputWanted
	state  SessionState
	fg     foregroundRead
	inputs uint64
}

// asking judges whether the session's program waits for input from the terminal now,
// and what for; when it does not, the state says what it does. It waits (up to budget,
// and ctx) for the output to be quiet long enough to judge, as a call's wait does before
// it answers "input"; output that goes on past the budget is running.
func (s *session) asking(ctx context.Context, budget time.Duration) askLook {
	deadline := time.Now().Add(budget)
	heldEnd := int64(-1)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for range 20 { // each round either answers or waits; a bound for a program that flickers
		now := time.Now()
		s.mu.Lock()
		if s.status.exited || s.closed {
			s.mu.Unlock()
			return askLook{state: StateExited}
		}
		end, last, lastWrite, inputs := s.ring.End(), s.lastOutput, s.lastWrite, s.inputSeq
		if s.writing > 0 {
			lastWrite = now
		}
		atPrompt := s.sh.waitsAtPrompt()
		s.mu.Unlock()
		state := StateRunning
		if atPrompt {
			state = StatePrompt
		}
		if !foregroundKnown {
			return askLook{state: state}
		}
		quietAt := latest(latest(last, s.startedAt).Add(inputQuiet), lastWrite.Add(inputAfterWrite))
		var want *InputWanted
		var next time.Time
		if now.Before(quietAt) {
			next = quietAt
		} else {
			reason, fg, redo, synced := s.inputReason(ctx, waitSpec{prompt: true}, inputs)
			switch {
			case redo:
				continue
			case reason == ReasonPrompt:
				return askLook{state: StatePrompt}
			case reason != ReasonInput:
				return askLook{state: state}
			case fg.opaque && now.Before(last.Add(relayQuiet)):
				next = last.Add(relayQuiet) // ssh, docker exec: only quiet says it asks
			case synced && s.outputEnd() != end, !synced && heldEnd != end:
				heldEnd = end // output came meanwhile, or the reader may hold some: look again
				next = now.Add(inputConfirm)
			default:
				s.mu.Lock()
				want = &InputWanted{Kind: fg.kind, Prompt: promptLine(&s.ring, s.askedSince(end), end)}
				s.mu.Unlock()
				return askLook{want: want, state: StateInput, fg: *fg, inputs: inputs}
			}
		}
		if next.After(deadline) {
			return askLook{state: state}
		}
		timer.Reset(time.Until(next))
		select {
		case <-timer.C:
		case <-ctx.Done():
			return askLook{state: state}
		}
	}
	return askLook{state: StateRunning}
}
