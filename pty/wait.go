package pty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"syscall"
	"time"
	"unicode/utf8"
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

// exchange is the body of IO and of Open's first read: write input, wait, read.
func (m *Manager) exchange(ctx context.Context, op string, s *session, input []byte, ro readOpts, opening bool) (ReadResult, error) {
	deadline := time.Now().Add(ro.timeout)
	res := ReadResult{SessionID: s.id, Pid: s.pid}

	s.mu.Lock()
	end := s.ring.end
	start := s.cursor
	st := s.status
	s.mu.Unlock()
	if ro.since != nil {
		if *ro.since > end {
			return res, invalidf(op, "since %d is past the end of session %s's output (%d); use a cursor a call returned, or 0", *ro.since, s.id, end)
		}
		start = *ro.since
	}

	writeTimedOut := false
	if len(input) > 0 {
		if st.exited {
			return res, fmt.Errorf("%s: session %q: %w (%s); read without input to get its remaining output, or close it", op, s.id, ErrExited, st)
		}
		// The write gets at least minWriteTime even when the caller wants no wait: a short
		// timeout is about waiting for output, and a write that meets a deadline already
		// past (a loaded machine) would deliver nothing at all.
		n, err := s.write(ctx, input, latest(deadline, time.Now().Add(minWriteTime)))
		res.Written = n
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			// A program that stopped reading its input: report what went in and read.
			// The write used up the timeout, whatever the output did meanwhile.
			writeTimedOut = true
		case ctx.Err() != nil:
			return res, fmt.Errorf("%s: session %q: write: %w", op, s.id, ctx.Err())
		case errors.Is(err, os.ErrClosed):
			return res, fmt.Errorf("%s: %w %q (closed)", op, ErrNoSession, s.id)
		case errors.Is(err, syscall.EIO):
			// Nobody holds the terminal any more: the program is gone.
			return res, fmt.Errorf("%s: session %q: %w; read without input to get its remaining output, or close it", op, s.id, ErrExited)
		default:
			return res, fmt.Errorf("%s: session %q: write: %w", op, s.id, err)
		}
	}

	// Without input or WaitFor, unread output is an answer in itself; Open and IO with
	// input wait for the program's response to settle instead.
	immediate := len(input) == 0 && !opening
	reason, mt, err := s.await(ctx, start, end, immediate, writeTimedOut, ro, deadline)
	if err != nil {
		return res, fmt.Errorf("%s: session %q: wait: %w", op, s.id, err)
	}

	s.mu.Lock()
	data, from := s.ring.appendFrom(nil, start)
	end = s.ring.end
	s.cursor = max(s.cursor, end)
	st = s.status
	s.mu.Unlock()

	res.Since, res.Cursor, res.DroppedBytes = from, end, from-start
	res.Reason = reason
	res.Exited, res.ExitCode, res.Signal = st.exited, st.code, st.signal
	if ro.raw {
		res.Output, res.OmittedBytes = capText(data, ro.maxBytes, func(h int) int64 { return from + int64(h) })
		return res, nil
	}
	var text []byte
	if mt != nil && mt.from == from && mt.next == end {
		text = mt.c.bytes() // already cleaned while waiting
	} else {
		text = []byte(Clean(data))
	}
	res.Output, res.OmittedBytes = capText(text, ro.maxBytes, func(h int) int64 { return from + lineStart(data, h) })
	return res, nil
}

// await waits for the first of the reasons IO documents and returns it. The waiting is
// driven by the session's change notifications and one timer; nothing polls.
func (s *session) await(ctx context.Context, start, baseEnd int64, immediate, timedOut bool, ro readOpts, deadline time.Time) (string, *matcher, error) {
	var mt *matcher
	if ro.re != nil {
		mt = &matcher{re: ro.re, from: -1, checked: -1}
	}
	s.mu.Lock()
	s.waiters++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiters--
		s.mu.Unlock()
	}()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for first := true; ; first = false {
		s.mu.Lock()
		end := s.ring.end
		exited := s.status.exited
		last := s.lastOutput
		changed := s.changedLocked()
		s.mu.Unlock()

		now := time.Now()
		settling := ro.idle > 0 && end > baseEnd
		var reason string
		switch {
		case exited:
			reason = ReasonExited
		case first && immediate && mt == nil && end > start:
			reason = ReasonIdle
		case timedOut:
			reason = ReasonTimeout
		case settling && !now.Before(last.Add(ro.idle)):
			reason = ReasonIdle
		case !now.Before(deadline):
			reason = ReasonTimeout
		}
		wake := deadline
		if mt != nil {
			// Before any other answer the pattern is always checked: matching may be
			// spaced out to spare the CPU, the answer must not depend on it.
			due := reason != "" || !now.Before(mt.nextCheck)
			s.mu.Lock()
			mt.load(&s.ring, start, due)
			s.mu.Unlock()
			if mt.check(due) {
				return ReasonMatched, mt, nil
			}
			if mt.unchecked() && mt.nextCheck.Before(wake) {
				wake = mt.nextCheck
			}
		}
		if reason != "" {
			return reason, mt, nil
		}
		if settling && last.Add(ro.idle).Before(wake) {
			wake = last.Add(ro.idle)
		}
		timer.Reset(time.Until(wake))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			return "", nil, ctx.Err()
		}
	}
}

// matcher runs WaitFor over the cleaned text from the read's start to the end of the
// output, which is what the call would return. The cleaner is incremental, so each chunk
// is cleaned once; the regular expression runs over the whole text, so a match spanning
// chunks is found. On a large text the regexp pass is what costs, so passes are spaced
// out in proportion to how long the last one took (keeping them under a fifth of the
// time), and the check before any other answer is never skipped.
//
// When output overflows the ring during the wait, the returned text starts later than
// the matcher's; the matcher then starts over from the oldest buffered byte at its next
// pass, so it never matches text the call would not return and its memory stays bounded
// by the ring.
type matcher struct {
	re        *regexp.Regexp
	c         cleaner
	from      int64  // raw offset the cleaner started at; -1 before the first load
	next      int64  // raw offset of the next byte to clean
	seen      int64  // the end of the output at the last load
	pending   []byte // raw bytes loaded but not yet cleaned
	checked   int64  // next at the last regexp pass; -1 for none since a reset
	nextCheck time.Time
}

// load takes the new output from the ring; the caller holds the session lock. due says
// whether a regexp pass will follow, which is when an overflowed matcher is rebuilt.
func (mt *matcher) load(r *ring, start int64, due bool) {
	mt.seen = r.end
	oldest := max(start, r.start())
	switch {
	case mt.from < 0 || mt.from < oldest && due:
		mt.c = cleaner{}
		mt.c.init()
		mt.from, mt.next, mt.checked = oldest, oldest, -1
	case mt.from < oldest:
		return // overflowed: rebuilt at the next pass rather than at every chunk
	}
	mt.pending, _ = r.appendFrom(mt.pending[:0], mt.next)
	mt.next = r.end
}

// check cleans what load took and, if due, runs the pattern over the text.
func (mt *matcher) check(due bool) bool {
	t0 := time.Now()
	mt.c.write(mt.pending)
	mt.pending = mt.pending[:0]
	if !due || mt.checked == mt.next {
		return false
	}
	ok := mt.re.Match(mt.c.bytes())
	mt.checked = mt.next
	t1 := time.Now()
	mt.nextCheck = t1.Add(4 * t1.Sub(t0))
	return ok
}

// unchecked reports whether output arrived that no pass has looked at yet.
func (mt *matcher) unchecked() bool { return mt.checked != mt.seen }

// lineStart returns the offset in raw of the start of the line holding byte h of
// Clean(raw), for the "re-read from here" hint.
func lineStart(raw []byte, h int) int64 {
	var c cleaner
	c.init()
	c.watch = h
	c.write(raw)
	return c.lineStart()
}

// capText keeps text within max bytes: the head (a quarter, since the end of a terminal's
// output, with the prompt and the last result, matters most) and the tail, cut at line
// breaks when one is near and never inside a UTF-8 character, with one short marker
// between them. sinceOf, when not nil, gives the raw offset to re-read the omitted part
// from. It returns the text and how many bytes were left out.
func capText(text []byte, max int, sinceOf func(h int) int64) (string, int64) {
	if len(text) <= max {
		return string(text), 0
	}
	headMax := max / 4
	tailMax := max - headMax
	h := headMax
	if i := bytes.LastIndexByte(text[:h], '\n'); i >= 0 && i+1 >= h/2 {
		h = i + 1
	} else {
		for h > 0 && !utf8.RuneStart(text[h]) {
			h--
		}
	}
	t := len(text) - tailMax
	if i := bytes.IndexByte(text[t:], '\n'); i >= 0 && i < tailMax/2 {
		t += i + 1
	} else {
		for t < len(text) && !utf8.RuneStart(text[t]) {
			t++
		}
	}
	omitted := t - h
	var marker string
	if sinceOf != nil {
		marker = fmt.Sprintf("[... %d bytes omitted; re-read them with since=%d ...]\n", omitted, sinceOf(h))
	} else {
		marker = fmt.Sprintf("[... %d bytes omitted ...]\n", omitted)
	}
	if h > 0 && text[h-1] != '\n' {
		marker = "\n" + marker
	}
	return string(text[:h]) + marker + string(text[t:]), int64(omitted)
}
