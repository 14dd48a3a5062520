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
			return res, fmt.Errorf("%s: session %q: %w: since %d is past the end of the output (%d)", op, s.id, ErrInvalid, *ro.since, end)
		}
		start = *ro.since
	}

	writeTimedOut := false
	if len(input) > 0 {
		if st.exited {
			return res, fmt.Errorf("%s: session %q: %w (%s); read without input to get its remaining output, or close it", op, s.id, ErrExited, st)
		}
		n, err := s.write(ctx, input, deadline)
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
		mt = &matcher{re: ro.re, from: -1}
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
		if mt != nil {
			mt.load(&s.ring, start)
		}
		changed := s.changedLocked()
		s.mu.Unlock()

		now := time.Now()
		wake := deadline
		if mt != nil {
			mt.feed()
			ok, retry := mt.match(false)
			if ok {
				return ReasonMatched, mt, nil
			}
			if !retry.IsZero() && retry.Before(wake) {
				wake = retry
			}
		}
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
		if reason != "" {
			// Matching may have been deferred to spare the CPU; the answer must not be.
			if mt != nil {
				if ok, _ := mt.match(true); ok {
					reason = ReasonMatched
				}
			}
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

// matcher runs WaitFor over the cleaned text from the read's start, cleaning only the
// bytes that arrived since the last look (the cleaner is incremental), and running the
// regular expression over the whole text so a match spanning chunks is found. The regexp
// pass is what costs on a large text, so it is spaced out in proportion to how long the
// last one took; the final check before any other answer is never skipped.
type matcher struct {
	re        *regexp.Regexp
	c         cleaner
	from      int64  // raw offset the cleaner started at; -1 before the first load
	next      int64  // raw offset of the next byte to clean
	pending   []byte // raw bytes loaded but not yet cleaned
	checked   int64  // next at the last regexp run; -1 for none since a reset
	nextCheck time.Time
}

// load copies the new raw bytes out of the ring (under the session lock); feed cleans
// them outside it.
func (mt *matcher) load(r *ring, start int64) {
	if oldest := max(start, r.start()); mt.from < 0 || mt.next < oldest {
		// First load, or the ring overflowed past what was cleaned: the text this call
		// returns now starts later, so start the cleaner again from there.
		mt.c = cleaner{}
		mt.c.init()
		mt.from, mt.next, mt.checked = oldest, oldest, -1
	}
	mt.pending, _ = r.appendFrom(mt.pending[:0], mt.next)
	mt.next = r.end
}

func (mt *matcher) feed() {
	mt.c.write(mt.pending)
	mt.pending = mt.pending[:0]
}

// match reports whether the text matches. Unless force is set it may decline to look yet,
// returning when to look again.
func (mt *matcher) match(force bool) (bool, time.Time) {
	if mt.checked == mt.next {
		return false, time.Time{} // nothing new since the last look
	}
	now := time.Now()
	if !force && now.Before(mt.nextCheck) {
		return false, mt.nextCheck
	}
	ok := mt.re.Match(mt.c.bytes())
	done := time.Now()
	mt.checked = mt.next
	mt.nextCheck = done.Add(4 * done.Sub(now)) // regexp work stays under a fifth of the time
	return ok, time.Time{}
}

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
