package pty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"
)

// exchange is the body of IO and of Open's first read: write input (or type a run's
// command line), wait, read. It runs in phases. Those that look at the session take its
// lock once each, so what a phase sees is consistent and the reader goroutine is held
// up by one phase's bookkeeping at most; the two waits look once per wake-up:
//
//   - beginExchange: where the read starts, what the state refuses, typed input noted;
//   - prepareRun (a run only, a wait): the shell back at its prompt, the line recorded;
//   - writeInput: deliver the input (the lock only to take back a run that went nowhere);
//   - await (a wait): the first reason to return;
//   - collectResult: the command reported, the cursor moved, the output copied out.
func (m *Manager) exchange(ctx context.Context, op string, s *session, in Input, ro readOpts, opening bool) (ReadResult, error) {
	deadline := time.Now().Add(ro.timeout)
	res := ReadResult{SessionID: s.id, Pid: s.pid, Sandbox: s.policy}
	if ro.end != nil {
		return s.reread(op, ro, res)
	}

	if len(in.Keys) > 0 {
		// Encoded now, in the modes of the output up to here, and sent with Data.
		keys, err := appendKeys(slices.Clip(in.Data), in.Keys, s.term.keyModes())
		if err != nil {
			return res, err
		}
		in.Data, in.Keys = keys, nil
	}
	b, err := s.beginExchange(op, in, ro, opening)
	if err != nil {
		return res, err
	}
	w := waitSpec{start: b.start, baseEnd: b.end, idle: ro.idle, port: ro.port, deadline: deadline, cmd: b.follow}
	input := in.Data
	if b.paste {
		input = pasteBytes(input)
	}
	var run *command
	if in.Run != "" {
		if input, run, err = s.prepareRun(ctx, op, in.Run, deadline); err != nil {
			return res, err
		}
		w.cmd = run.ID
	}
	if len(input) > 0 {
		res.Written, w.timedOut, err = s.writeInput(ctx, op, input, run, deadline)
		if err != nil {
			return res, err
		}
	}

	// Without input or WaitFor, unread output is an answer in itself; Open and IO with
	// input wait for the program's response to settle instead. A run, a waitPort and
	// the first prompt of an integrated shell wait for their own event: quiet output
	// ends them only when idle was asked for.
	w.immediate = len(input) == 0 && !opening && w.cmd == 0
	w.noInput = len(input) == 0
	integrated := s.kind != kindNone
	w.opening = opening && integrated
	w.prompt = integrated && ro.re == nil && w.cmd == 0 && w.port == 0
	if (w.cmd != 0 || w.port != 0 || w.opening) && !ro.idleSet {
		w.idle = 0
		if w.opening && !foregroundKnown {
			w.idle = DefaultIdle // no way to tell a shell without marks at its prompt
		}
	}
	we, err := s.await(ctx, w, ro.re, ro.maxBytes)
	if err != nil {
		return res, fmt.Errorf("%s: session %q: wait: %w", op, s.id, err)
	}
	return s.collectResult(res, b, w, we, ro), nil
}

// exchangeStart is what beginExchange found when the call began.
type exchangeStart struct {
	start   int64 // where the read starts: Since, or the read cursor
	end     int64 // the end of the output when the call began
	running int   // the shell command running when the call began, 0 if none
	follow  int   // the run command a plain read goes on waiting for, 0 if none
	paste   bool  // Data goes as a bracketed paste: the program has turned it on
}

// beginExchange is the first phase of an exchange: it reads where the call starts,
// refuses a Since past the output and input to an exited program, and notes what the
// call is about to do: typed input for the command history, or a plain read going on
// waiting for the run an earlier call returned before its command finished.
func (s *session) beginExchange(op string, in Input, ro readOpts, opening bool) (exchangeStart, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := exchangeStart{start: s.cursor, end: s.ring.End()}
	if s.sh.cur != nil {
		b.running = s.sh.cur.ID
	}
	if ro.since != nil {
		if *ro.since > b.end {
			return b, invalidf(op, "since %d is past the end of session %s's output (%d); use a cursor a call returned, or 0", *ro.since, s.id, b.end)
		}
		b.start = *ro.since
	}
	if (len(in.Data) > 0 || in.Run != "") && s.status.exited {
		return b, fmt.Errorf("%s: session %q: %w (%s); read without input to get its remaining output, or close it", op, s.id, ErrExited, s.status)
	}
	if (len(in.Data) > 0 || in.Run != "") && s.answering {
		return b, fmt.Errorf("%s: %w", op, &AnswerPendingError{Session: s.id}) // see ask.go
	}
	switch {
	case in.Run != "":
		// Recorded by prepareRun, once the shell is at its prompt.
	case len(in.Data) > 0:
		b.paste = in.Paste && s.sh.paste
		s.sh.typedLine(in.Data, b.paste, s.ring.End(), time.Now())
		s.noteInputLocked()
	case ro.since == nil && !opening:
		// A read after a run that returned before its command finished goes on
		// waiting for that command.
		if id := s.openRun; id != 0 {
			if _, ok := s.sh.find(id, &s.ring, time.Now()); ok {
				b.follow = id
			}
		}
	}
	return b, nil
}

// noteInputLocked records that the exchange is about to write the input it has just
// noted in the shell state (a typed line, a run's command line): the state knows of the
// line before the terminal has it, so that the line's output is found by where it was
// typed. Until the shell has it, the shell still sits at its prompt reading (bash's
// readline), and that, judged with the state's word that a command was typed, would pass
// for the command asking a question, or for a prompt without marks. So input counts as
// written just now while its write is in flight (await, checkIntegration), and a look at
// the kernel that a note falls within is void (inputSeq): the kernel may have shown the
// shell before the line. writeInput ends what this begins. The caller holds mu.
func (s *session) noteInputLocked() {
	s.writing++
	s.inputSeq++
}

// writeInput is the phase of an exchange that delivers its input (noted by beginExchange
// or prepareRun), and takes back the run it typed when nothing of it went in. It returns
// how many bytes went in and whether the write used up the timeout (a program that
// stopped reading its input: the call reports what went in and reads); any other failure
// is the call's error.
func (s *session) writeInput(ctx context.Context, op string, input []byte, run *command, deadline time.Time) (int, bool, error) {
	// The write gets at least minWriteTime even when the caller wants no wait: a short
	// timeout is about waiting for output, and a write that meets a deadline already
	// past (a loaded machine) would deliver nothing at all.
	n, err := s.write(ctx, input, latest(deadline, time.Now().Add(minWriteTime)))
	s.mu.Lock()
	s.writing-- // what went in is the write's lastWrite from here on
	if n == 0 && run != nil {
		s.sh.unrun(run)
	}
	s.mu.Unlock()
	switch {
	case err == nil:
		return n, false, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The write used up the timeout, whatever the output did meanwhile.
		return n, true, nil
	case ctx.Err() != nil:
		return n, false, fmt.Errorf("%s: session %q: write: %w", op, s.id, ctx.Err())
	case errors.Is(err, os.ErrClosed):
		return n, false, fmt.Errorf("%s: %w %q (closed)", op, ErrNoSession, s.id)
	case errors.Is(err, syscall.EIO):
		// Nobody holds the terminal any more: the program is gone.
		return n, false, fmt.Errorf("%s: session %q: %w; read without input to get its remaining output, or close it", op, s.id, ErrExited)
	default:
		return n, false, fmt.Errorf("%s: session %q: write: %w", op, s.id, err)
	}
}

// collectResult is the last phase of an exchange, after the wait ended as we says: under
// one hold of the lock it settles which command the result reports and what range of
// output that gives, moves the read cursor, and copies the output out, which outputText
// cleans with the lock released.
func (s *session) collectResult(res ReadResult, b exchangeStart, w waitSpec, we waitEnd, ro readOpts) ReadResult {
	s.mu.Lock()
	now := time.Now()
	end := s.ring.End()
	var cmd *Command
	if w.cmd != 0 {
		if c, ok := s.sh.find(w.cmd, &s.ring, now); ok {
			cmd = &c
		}
	}
	var from, to, want int64
	if cmd != nil {
		// Only the command's own output: from where it starts (or where the last read
		// of it ended) to where the next prompt begins. The prompt counts as read.
		want = max(s.cursor, cmd.Since)
		to = end
		if cmd.Done {
			to = cmd.Cursor
		}
		from = max(want, s.ring.Start())
		to = max(to, from)
		if cmd.Done {
			if s.openRun == cmd.ID {
				s.openRun = 0
			}
		} else {
			s.openRun = cmd.ID
		}
	} else {
		want = b.start
		from = max(b.start, s.ring.Start())
		to = end
		if c, ok := s.sh.last(&s.ring, now); ok && (!c.Done || c.Cursor > b.start || c.ID == b.running) {
			cmd = &c // running, or finished during this call or within what it returns
			if c.Done && c.ID == s.openRun {
				s.openRun = 0 // reported done: a later read has nothing more to wait for
			}
		}
	}
	s.cursor = max(s.cursor, end)
	st := s.status
	res.Integration = s.sh.integrated()
	s.personSeenLocked(&res)
	if we.input != nil {
		res.WaitingForInput = &InputWanted{Kind: we.input.kind, Prompt: promptLine(&s.ring, s.askedSince(end), end)}
	}
	if we.reason == ReasonInput {
		s.inputNoted, s.inputNotedEnd = true, end
	}
	if mt := we.mt; mt != nil && !ro.raw && mt.Covers(from, to) && s.plainText(from, mt) {
		s.mu.Unlock()
		// Already cleaned while waiting.
		res.Output, res.OmittedBytes = mt.Text(from)
	} else {
		res.Output, res.OmittedBytes, from = s.outputText(from, to, ro.maxBytes, ro.raw, true, cmd != nil && cmd.Done && to == cmd.Cursor) // releases s.mu
	}

	res.Since, res.Cursor, res.DroppedBytes = from, max(to, from), from-want
	res.Reason = we.reason
	res.Command = cmd
	res.Exited, res.ExitCode, res.Signal = st.exited, st.code, st.signal
	return res
}

// askedSince returns where the output of the program that waits for input starts: the
// current shell command's output, or a program session's whole output; with neither
// (nothing runs that the marks know of), end: no text is the program's. The caller holds
// mu.
func (s *session) askedSince(end int64) int64 {
	switch {
	case s.sh.cur != nil:
		return s.sh.cur.outputStart(&s.ring, end)
	case s.kind == kindNone:
		return 0
	}
	return end
}
