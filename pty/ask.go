package pty

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"
)

// A person's answer to a program's question (the operator's `answer`): the session is
// asked whether its program waits for input now, the way a wait finds reason "input"
// (the kernel's view of the foreground process, the terminal's modes), one answer is
// taken at a time, and the line goes in with Enter only if the program still waits for
// the same kind of input when the person has typed it. A password typed into a program
// that stopped asking would otherwise land at a shell prompt, echoed into the output and
// the shell's history; so the check is made again just before the write.

// askWait bounds how long Ask and Answer.Send wait for the program's output to go quiet
// (and, behind a relay whose far side is out of sight, for relayQuiet) before they judge
// whether it waits for input.
const askWait = 2 * time.Second

// NotAskingError refuses an answer to a session whose program does not wait for input.
type NotAskingError struct {
	Session string
	State   SessionState // running, prompt or exited
	// Changed says that the program asked when the answer began and no longer does (or
	// asks for another kind of input): nothing was written.
	Changed bool
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
// writes the line, Close lets another answer begin. Only one is pending per session.
type Answer struct {
	s *session
	// Want is what the program asked for when Ask looked.
	Want InputWanted
	done bool
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
	want, state := s.asking(ctx, askWait)
	if want == nil {
		s.endAnswer()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: session %q: %w", op, id, err)
		}
		return nil, fmt.Errorf("%s: %w", op, &NotAskingError{Session: id, State: state})
	}
	return &Answer{s: s, Want: *want}, nil
}

// Send writes line and Enter (a carriage return, as a terminal's Enter key sends) to the
// program, if it still waits for the kind of input Ask found; otherwise nothing is
// written (a *NotAskingError with Changed). line is one line: a line break in it is
// refused (ErrInvalid). It ends the answer, written or not.
func (a *Answer) Send(ctx context.Context, line []byte) error {
	const op = "pty.Answer.Send"
	if a.done {
		return fmt.Errorf("%s: session %q: the answer was already sent or closed", op, a.s.id)
	}
	defer a.Close()
	if bytes.ContainsAny(line, "\r\n") {
		return invalidf(op, "an answer is one line; it holds a line break")
	}
	want, state := a.s.asking(ctx, askWait)
	if want == nil || want.Kind != a.Want.Kind {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: session %q: %w", op, a.s.id, err)
		}
		return fmt.Errorf("%s: %w", op, &NotAskingError{Session: a.s.id, State: state, Changed: true})
	}
	data := make([]byte, 0, len(line)+1)
	data = append(append(data, line...), '\r')
	_, err := a.s.personWrite(ctx, op, data)
	clear(data)
	return err
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
			wg.Go(func() { infos[i].Waiting, infos[i].State = s.asking(ctx, overviewWait) })
		}
	}
	wg.Wait()
	return infos
}

// asking judges whether the session's program waits for input from the terminal now,
// and what for; when it does not, the state says what it does. It waits (up to budget,
// and ctx) for the output to be quiet long enough to judge, as a call's wait does before
// it answers "input"; output that goes on past the budget is running.
func (s *session) asking(ctx context.Context, budget time.Duration) (*InputWanted, SessionState) {
	deadline := time.Now().Add(budget)
	heldEnd := int64(-1)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for range 20 { // each round either answers or waits; a bound for a program that flickers
		now := time.Now()
		s.mu.Lock()
		if s.status.exited || s.closed {
			s.mu.Unlock()
			return nil, StateExited
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
			return nil, state
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
				return nil, StatePrompt
			case reason != ReasonInput:
				return nil, state
			case fg.opaque && now.Before(last.Add(relayQuiet)):
				next = last.Add(relayQuiet) // ssh, docker exec: only quiet says it asks
			case synced && s.outputEnd() != end, !synced && heldEnd != end:
				heldEnd = end // output came meanwhile, or the reader may hold some: look again
				next = now.Add(inputConfirm)
			default:
				s.mu.Lock()
				want = &InputWanted{Kind: fg.kind, Prompt: promptLine(&s.ring, s.askedSince(end), end)}
				s.mu.Unlock()
				return want, StateInput
			}
		}
		if next.After(deadline) {
			return nil, state
		}
		timer.Reset(time.Until(next))
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, state
		}
	}
	return nil, StateRunning
}
