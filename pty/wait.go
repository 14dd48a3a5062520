package pty

import (
	"context"
	"regexp"
	"time"

	"github.com/mcp-harness/mcp-harness/pty/clean"
)

// minWriteTime is the least time a write is given before it gives up on a program that
// does not read its input.
const minWriteTime = time.Second

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// inputQuiet is how long output must have been quiet before the foreground process is
// asked whether it waits for input, and inputAfterWrite how long after input was
// written: the program needs a moment to take what it was sent, and until the terminal
// has passed it on, a program that is about to wake up still looks blocked.
const (
	inputQuiet      = 50 * time.Millisecond
	inputAfterWrite = 100 * time.Millisecond
	maxInputCheck   = 250 * time.Millisecond // checks back off to this while nothing changes
	// inputConfirm is how long a "waits for input" answer is held before it counts where
	// the reader cannot be asked whether it has put all it read into the buffer (see
	// syncReader): the program's last output may have left the terminal (the check sees
	// nothing unread) and still be in the reader's hands. Output that arrives meanwhile
	// cancels it.
	inputConfirm = 30 * time.Millisecond
	portCheck    = 100 * time.Millisecond
	// relayQuiet is how long output must have been quiet before a relay whose inner side
	// is out of sight (ssh, docker exec) counts as asking: its wait looks the same whether
	// the far side asks or works, and only quiet tells them apart. Output that comes in
	// pauses shorter than this (a remote apt-get's progress) is never a question.
	relayQuiet = time.Second
	jobsCheck  = 100 * time.Millisecond // how often a read at a prompt looks whether its background jobs still run
)

// waitSpec says what ends one wait (see IO).
type waitSpec struct {
	start, baseEnd int64 // where the read starts; the end of the output when the call began
	immediate      bool  // a read without input: unread output (or an idle prompt) answers at once
	timedOut       bool  // the write used up the timeout
	idle           time.Duration
	cmd            int  // wait for this shell command to finish (run, or reading on after one)
	port           int  // wait for a process of the session to listen on this port
	prompt         bool // a prompt the shell shows after the call began ends the wait
	opening        bool // the first read of an integrated shell: its first prompt ends it
	noInput        bool // the call wrote nothing: a question already answered "input" is not asked again
	deadline       time.Time
}

// waitEnd is how a wait ended.
type waitEnd struct {
	reason Reason
	mt     *clean.Matcher  // the pattern's cleaned text, when WaitFor was given
	input  *foregroundRead // the process waiting for input, for reason "input"
}

type foregroundRead struct {
	pid    int
	kind   InputKind
	opaque bool // a relay whose far side is out of sight waits: see relayQuiet
	pgrp   int  // the session's terminal's foreground process group (the reader may be outside it)
}

// await waits for the first of the reasons IO documents and returns it. The waiting is
// driven by the session's change notifications and one timer; what the kernel knows
// (a process blocked reading the terminal, a listening port) is asked on that timer.
func (s *session) await(ctx context.Context, w waitSpec, re *regexp.Regexp, maxBytes int) (waitEnd, error) {
	var mt *clean.Matcher
	if re != nil {
		mt = clean.NewMatcher(re, maxBytes)
	}
	s.mu.Lock()
	s.waiters++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiters--
		s.mu.Unlock()
	}()

	// Input checks start once output (and our input) has been quiet a moment and back
	// off while nothing changes; port checks run at a fixed pace.
	inputEvery, checkedEnd := inputQuiet, int64(-1)
	var nextInput, nextPort time.Time
	var held waitEnd // an input answer waiting for confirmation
	heldEnd := int64(-1)
	jobs := false // a read at the prompt waiting on background jobs
	var nextJobs time.Time
	jobsGoneEnd := int64(-1) // the output's end when the jobs were first seen gone
	jobsGone := false        // ... and their output was found all in the buffer
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for first := true; ; first = false {
		now := time.Now()
		s.mu.Lock()
		end := s.ring.End()
		exited := s.status.exited
		last, lastWrite := s.lastOutput, s.lastWrite
		if s.writing > 0 {
			lastWrite = now // input noted and still on its way: not the program's yet
		}
		inputs := s.inputSeq
		// After a call ended with "input", the same quiet state is no news: a read
		// without input waits for output (or its timeout) instead.
		asked := w.noInput && s.inputNoted && s.inputNotedEnd == end
		ready := s.sh.promptReady(last, now)
		newPrompt := ready && s.sh.promptAt >= w.baseEnd
		cmdDone := w.cmd != 0 && s.sh.done(w.cmd) && (ready || s.sh.cur != nil)
		settleAt := s.sh.settleAt(last)
		// A command that has ended (its D mark) with its prompt's mark still to come: the
		// shell draws that prompt next, and a read waiting for a prompt is not answered
		// "idle" in between unless the prompt is promptAfterEnd late (a slow shell on a
		// loaded machine drew fish's prompt more than the idle time after its command).
		var promptDue time.Time
		if c := s.sh.cur; w.prompt && c != nil && c.ended {
			promptDue = c.endTime.Add(promptAfterEnd)
		}
		// A prompt shown after the last write means the shell has taken that input: the
		// wait for it to do so does not apply.
		freshPrompt := s.sh.waitsAtPrompt() && s.sh.promptTime.After(lastWrite)
		settling := w.idle > 0 && end > w.baseEnd
		// Output only moves the answers below later (idle, input) unless a pattern
		// waits for it, or it would start the idle clock.
		var changed <-chan struct{}
		if mt != nil || w.idle > 0 && !settling {
			changed = s.changedLocked()
		} else {
			changed = s.eventLocked()
		}
		s.mu.Unlock()

		var reason Reason
		var input *foregroundRead
		switch {
		case exited:
			reason = ReasonExited
		case first && w.immediate && mt == nil && w.port == 0 && ready && end == w.start && s.backgroundJobs():
			// At the prompt with a background job running: a long-poll read like any
			// other, which also ends when the last job does.
			jobs, w.prompt = true, false
			nextJobs = now.Add(jobsCheck)
		case first && w.immediate && mt == nil && w.port == 0 && (ready || end > w.start):
			reason = ReasonIdle
			if ready {
				reason = ReasonPrompt
			}
		case w.timedOut:
			reason = ReasonTimeout
		case cmdDone:
			reason = ReasonPrompt
		case (w.prompt || w.opening) && newPrompt:
			reason = ReasonPrompt
		}
		if reason == "" && jobsGone {
			reason = ReasonPrompt
		}
		if reason == "" && jobs && !jobsGone && !now.Before(nextJobs) {
			switch {
			case s.backgroundJobs():
				jobsGoneEnd = -1
			case s.masterUnread() > 0:
				// Gone, and their last output still on its way to the reader.
			case s.syncReader(ctx):
				// Gone, and their last output is in the buffer: look at it once more.
				if jobsGone = true; s.outputEnd() != end {
					continue
				}
				reason = ReasonPrompt
			case jobsGoneEnd == end:
				reason = ReasonPrompt // gone, and their last output has had time to arrive
			default:
				jobsGoneEnd = end
			}
			nextJobs = time.Now().Add(jobsCheck)
			if jobsGoneEnd >= 0 {
				nextJobs = time.Now().Add(inputConfirm)
			}
		}
		if reason == "" && w.port != 0 && !now.Before(nextPort) {
			if s.listensOn(w.port) {
				reason = ReasonPort
			}
			nextPort = time.Now().Add(portCheck)
		}
		quietSince := latest(last, s.startedAt)
		if !freshPrompt {
			quietSince = latest(quietSince, lastWrite.Add(inputAfterWrite-inputQuiet))
		}
		if end != checkedEnd {
			inputEvery = inputQuiet // something changed: look again soon
		}
		if reason == "" && foregroundKnown && !now.Before(quietSince.Add(inputQuiet)) && !now.Before(nextInput) {
			var redo, synced bool
			reason, input, redo, synced = s.inputReason(ctx, w, inputs)
			checkedEnd = end
			nextInput = time.Now().Add(inputEvery)
			inputEvery = min(2*inputEvery, maxInputCheck)
			if redo {
				continue // the prompt turned out drawn: look at the state again
			}
			if reason == ReasonInput && asked {
				reason, input = "", nil
			}
			if reason == ReasonInput && input.opaque && now.Before(last.Add(relayQuiet)) {
				reason, input = "", nil
				nextInput = latest(nextInput, last.Add(relayQuiet))
			}
			switch {
			case reason == "":
				heldEnd = -1
			case synced:
				// The reader has put all the program wrote before it blocked into the
				// buffer: unless that is more than this round saw, the answer stands.
				if s.outputEnd() != end {
					reason, input = "", nil
					continue
				}
			case heldEnd != end || held.reason != reason:
				// First seen: hold it, and ask again once the reader has surely put
				// whatever it read into the buffer.
				held, heldEnd = waitEnd{reason: reason, input: input}, end
				reason, input = "", nil
				nextInput = time.Now().Add(inputConfirm)
				inputEvery = inputQuiet
			}
		}
		if reason == "" {
			switch {
			case settling && !now.Before(last.Add(w.idle)) && !now.Before(promptDue):
				reason = ReasonIdle
			case !now.Before(w.deadline):
				reason = ReasonTimeout
			}
		}
		wake := w.deadline
		if mt != nil {
			// Before any other answer the pattern is always checked: matching may be
			// spaced out to spare the CPU, the answer must not depend on it.
			due := reason != "" || !now.Before(mt.NextCheck())
			s.mu.Lock()
			upTo := s.ring.End()
			s.mu.Unlock()
			for more := true; more; {
				s.mu.Lock()
				more = mt.Load(&s.ring, w.start, upTo, s.widthsLocked())
				s.mu.Unlock()
				if mt.Check(due && !more) {
					return waitEnd{reason: ReasonMatched, mt: mt}, nil
				}
			}
			if mt.Unchecked() && mt.NextCheck().Before(wake) {
				wake = mt.NextCheck()
			}
		}
		if reason != "" {
			return waitEnd{reason: reason, mt: mt, input: input}, nil
		}
		if settling {
			wake = earliest(wake, latest(last.Add(w.idle), promptDue))
		}
		if !settleAt.IsZero() {
			wake = earliest(wake, settleAt)
		}
		if w.port != 0 {
			wake = earliest(wake, nextPort)
		}
		if jobs {
			wake = earliest(wake, nextJobs)
		}
		if foregroundKnown {
			wake = earliest(wake, latest(quietSince.Add(inputQuiet), nextInput))
		}
		timer.Reset(time.Until(wake))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			return waitEnd{}, ctx.Err()
		}
	}
}

// inputReason asks the kernel whether the terminal's foreground process waits for input
// and says what that means for wait w: "input" for a program asking a question, "prompt"
// for an integrated shell waiting at its own prompt, "idle" for the first read of a
// shell that is reading its terminal without having sent a mark (no integration: its
// prompt is all there is to wait for), or nothing. redo says that it learnt the prompt is
// drawn, which the caller should look at before anything else. synced says that the
// reader has put everything the program wrote before it blocked into the buffer and the
// shell state: the caller need only see whether that is more than it had looked at.
// inputs is the session's inputSeq when the caller found the session quiet.
func (s *session) inputReason(ctx context.Context, w waitSpec, inputs uint64) (reason Reason, input *foregroundRead, redo, synced bool) {
	fg, ok := s.foreground()
	if !ok {
		return "", nil, false, false
	}
	// What the kernel says left the terminal is in the buffer, marks included, before
	// the shell state is looked at: a shell's first marks still in the reader's hands
	// would make an integrated shell look like one without integration.
	synced = s.syncReader(ctx)
	shell := s.kind != kindNone && fg.pid == s.pid
	if shell {
		// The shell itself reads its terminal: at a prompt the marks did not announce,
		// the integration is lost (health.go).
		s.checkIntegration(ctx, time.Now())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.inputSeq != inputs:
		// Input was noted since: the kernel may have shown the program before it (the
		// shell at its prompt, while the state says a line was typed). Look again once
		// it is written (see noteInputLocked).
		return "", nil, false, synced
	case !shell:
		return ReasonInput, &fg, false, synced
	}
	switch {
	case s.sh.waitsAtPrompt():
		if s.sh.drawnAt != s.sh.promptAt {
			s.sh.drawnAt = s.sh.promptAt
			return "", nil, true, synced
		}
		if w.prompt {
			return ReasonPrompt, nil, false, synced // text typed at the prompt, a completion shown
		}
		return "", nil, false, synced
	case !s.sh.marks:
		// No integration after all: its prompt and a question look the same.
		if w.opening {
			return ReasonIdle, nil, false, synced
		}
		return "", nil, false, synced
	}
	// A command of its own reads (read, a continuation line): a question.
	return ReasonInput, &fg, false, synced
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// backgroundJobs reports whether a background job of the session's shell still runs
// that writes to the terminal (the shell is the session leader: its jobs are the rest
// of its session).
func (s *session) backgroundJobs() bool { return backgroundJobs(s.pid, s.pts) }

// outputEnd is where the session's output ends now.
func (s *session) outputEnd() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.End()
}
