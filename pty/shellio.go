package pty

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/internal/quote"
	"github.com/mcp-harness/mcp-harness/pty/clean"
	"github.com/mcp-harness/mcp-harness/pty/ring"
)

// checkRange refuses End and WaitPort values that cannot be met.
func checkRange(op string, r ReadOptions) error {
	switch {
	case r.End != nil && r.Since == nil:
		return invalidf(op, "end needs since: give both to re-read the bytes between them (a command's since and cursor from shell_list)")
	case r.End != nil && *r.End < *r.Since:
		return invalidf(op, "end %d is before since %d; give end >= since", *r.End, *r.Since)
	case r.End != nil && r.WaitPort != 0:
		return invalidf(op, "end re-reads output and waits for nothing; drop waitPort, or end")
	case r.WaitPort < 0 || r.WaitPort > 65535:
		return invalidf(op, "waitPort must be a TCP port 1..65535, got %d", r.WaitPort)
	case r.WaitPort != 0 && !portsKnown:
		return invalidf(op, "waitPort needs Linux /proc to see which ports a session listens on; use waitFor on the server's startup message instead")
	}
	return nil
}

// checkInput refuses Run, Paste and End combinations that cannot be meant.
func checkInput(op string, in Input, r ReadOptions) error {
	switch {
	case r.End != nil && (in.typed() || in.Run != ""):
		return invalidf(op, "end re-reads output and takes no input; send the input in another call")
	case in.Paste && !in.typed():
		return invalidf(op, "paste needs input: the text to paste")
	case in.Run == "":
		return nil
	case in.typed():
		return invalidf(op, "run types its own command line; send input or keys in a separate call")
	case in.Paste:
		return invalidf(op, "run types one line and needs no paste; to paste several lines, send them as input with paste")
	case r.Since != nil:
		return invalidf(op, "run returns its command's own output; drop since (re-read earlier output in another call)")
	case len(in.Run) > MaxInputBytes:
		return invalidf(op, "run is %d bytes; send at most %d per call", len(in.Run), MaxInputBytes)
	case strings.TrimSpace(in.Run) == "":
		return invalidf(op, "run is blank; give a command line")
	case strings.ContainsAny(in.Run, "\r\n"):
		return invalidf(op, "run takes one command line; join commands with ; or &&, or send several lines as input with paste: true")
	case strings.IndexFunc(in.Run, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return invalidf(op, "run contains a control character, which the shell would take as a key; send keys separately")
	}
	return nil
}

// prepareRun checks that the session's shell can take a command line now, records it,
// and returns the bytes to type. The shell must be integrated, idle, and done drawing its
// prompt; a prompt still being drawn is waited for until deadline.
func (s *session) prepareRun(ctx context.Context, op, text string, deadline time.Time) ([]byte, *command, error) {
	if s.kind == kindNone {
		return nil, nil, fmt.Errorf("%s: %w in session %s: it runs no bash, zsh, fish or sh, or was opened with integration: false; type the command as input and wait with waitFor",
			op, ErrNoIntegration, quote.Short(s.id))
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		s.mu.Lock()
		switch {
		case !s.sh.marks:
			s.mu.Unlock()
			return nil, nil, fmt.Errorf("%s: %w in session %s: its shell has sent no integration marks (yet); type the command as input and wait with waitFor",
				op, ErrNoIntegration, quote.Short(s.id))
		case s.sh.lost != "":
			why := s.sh.lost
			s.mu.Unlock()
			return nil, nil, fmt.Errorf("%s: %w in session %s any more: %s; type commands as input and wait with waitFor",
				op, ErrNoIntegration, quote.Short(s.id), why)
		case s.sh.cur != nil:
			// Busy, unless the shell shows a prompt the marks did not announce.
			c := s.sh.cur
			changed := s.changedLocked()
			s.mu.Unlock()
			retry := s.checkIntegration(ctx, now)
			if s.integrationLost() {
				continue
			}
			if retry.IsZero() || retry.After(deadline) {
				return nil, nil, fmt.Errorf("%s: %w", op, &BusyError{Session: s.id, ID: c.ID, Text: c.Text, For: now.Sub(c.StartedAt)})
			}
			timer.Reset(time.Until(retry))
			select {
			case <-changed:
			case <-timer.C:
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("%s: session %q: %w", op, s.id, ctx.Err())
			}
			continue
		case s.sh.promptReady(s.lastOutput, now):
			data := []byte(text + "\r")
			if s.sh.typed {
				// Text typed at this prompt earlier would run in front of the command:
				// C-u clears the line first (in emacs and vi insert mode, and in a
				// terminal's line mode).
				data = append([]byte{0x15}, data...)
			}
			c := s.sh.startRun(text, s.ring.End(), now)
			s.noteInputLocked()
			s.mu.Unlock()
			return data, c, nil
		}
		wake := s.sh.settleAt(s.lastOutput)
		if wake.IsZero() || wake.After(deadline) {
			wake = deadline
		}
		// A prompt without a B mark is drawn once the shell reads its terminal.
		check := foregroundKnown && s.sh.waitsAtPrompt() && !now.Before(latest(s.lastOutput, s.lastWrite).Add(inputQuiet))
		if foregroundKnown && s.sh.waitsAtPrompt() && !check {
			wake = earliest(wake, latest(s.lastOutput, s.lastWrite).Add(inputQuiet))
		}
		// No prompt has started since the last marks: one may be showing without them.
		unmarked := foregroundKnown && !s.sh.waitsAtPrompt()
		if unmarked {
			wake = earliest(wake, latest(latest(s.lastOutput, s.lastWrite).Add(inputAfterWrite), now.Add(inputQuiet)))
		}
		at := s.sh.promptAt
		changed := s.changedLocked()
		s.mu.Unlock()
		if unmarked {
			if retry := s.checkIntegration(ctx, now); !retry.IsZero() {
				wake = earliest(wake, retry)
			}
		}
		if check {
			if fg, ok := s.foreground(); ok && fg.pid == s.pid {
				s.mu.Lock()
				if s.sh.promptAt == at {
					s.sh.drawnAt = at
				}
				s.mu.Unlock()
				continue
			}
			wake = earliest(wake, time.Now().Add(inputQuiet))
		}
		if !now.Before(deadline) {
			return nil, nil, fmt.Errorf("%s: %w", op, &BusyError{Session: s.id})
		}
		timer.Reset(time.Until(wake))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%s: session %q: %w", op, s.id, ctx.Err())
		}
	}
}

// pasteBytes wraps text in bracketed paste, as a terminal pastes: line breaks become
// carriage returns, and the paste's end marker cannot appear inside it. A final line
// break is sent after the paste, as Enter.
func pasteBytes(text []byte) []byte {
	enter := false
	if n := len(text); n > 0 && text[n-1] == '\n' {
		text, enter = text[:n-1], true
		if n := len(text); n > 0 && text[n-1] == '\r' {
			text = text[:n-1]
		}
	}
	text = bytes.ReplaceAll(text, []byte("\x1b[201~"), nil)
	text = bytes.ReplaceAll(text, []byte("\r\n"), []byte("\r"))
	text = bytes.ReplaceAll(text, []byte("\n"), []byte("\r"))
	out := append([]byte("\x1b[200~"), text...)
	out = append(out, "\x1b[201~"...)
	if enter {
		out = append(out, '\r')
	}
	return out
}

// reread returns exactly the bytes [Since, End) and waits for nothing; it moves no
// cursor and consumes no notice.
func (s *session) reread(op string, ro readOpts, res ReadResult) (ReadResult, error) {
	s.mu.Lock()
	end := s.ring.End()
	if *ro.end > end {
		s.mu.Unlock()
		return res, invalidf(op, "end %d is past the end of session %s's output (%d)", *ro.end, s.id, end)
	}
	st := s.status
	ready := s.sh.promptReady(s.lastOutput, time.Now())
	res.Integration = s.sh.integrated()
	// A re-read reports the people at the session but takes no notice of them: like the
	// cursor, the notice that a person typed stays for the agent's next read, which a
	// watcher re-reading (an MCP App's view) must not steal.
	res.Viewers, res.PersonTyped = len(s.viewers), s.personInputs != s.personSeen
	var from int64
	res.Output, res.OmittedBytes, from = s.outputText(*ro.since, *ro.end, ro.maxBytes, ro.raw, true, false) // releases s.mu

	res.Since, res.Cursor, res.DroppedBytes = from, max(*ro.end, from), from-*ro.since
	switch {
	case st.exited:
		res.Reason = ReasonExited
	case ready:
		res.Reason = ReasonPrompt
	default:
		res.Reason = ReasonIdle
	}
	res.Exited, res.ExitCode, res.Signal = st.exited, st.code, st.signal
	return res, nil
}

// promptLine is the question a program waiting for input asks: the last non-empty line
// of its output (from, to), trimmed; "" when it printed nothing. The caller holds the
// session lock.
func promptLine(r *ring.Buffer, from, to int64) string {
	data, _ := r.AppendRange(nil, max(from, to-4096), to)
	lines := strings.Split(clean.Text(data), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return clip(l)
		}
	}
	return ""
}

// listensOn reports whether a process of the session listens on TCP port.
func (s *session) listensOn(port int) bool {
	return len(sessionPorts(map[int]bool{s.pid: true}, port)[s.pid]) > 0
}

// Get describes one session like List does, with its last commands (at most 100, oldest
// first) when its shell is integrated.
func (m *Manager) Get(id string) (Info, error) { return m.info(anyOwner, id) }

// info is Get of a session that sc sees.
func (m *Manager) info(sc scope, id string) (Info, error) {
	s, err := m.getAs("pty.Get", sc, id)
	if err != nil {
		return Info{}, err
	}
	in := s.info()
	if portsKnown {
		in.Ports = sessionPorts(map[int]bool{s.pid: true}, 0)[s.pid]
	}
	s.mu.Lock()
	in.Commands = append([]Command{}, s.sh.hist...)
	s.mu.Unlock()
	return in, nil
}

// withPorts fills in the listening ports of the sessions described by infos.
func withPorts(infos []Info) {
	if !portsKnown || len(infos) == 0 {
		return
	}
	sids := map[int]bool{}
	for _, in := range infos {
		if !in.Exited {
			sids[in.Pid] = true
		}
	}
	ports := sessionPorts(sids, 0)
	for i := range infos {
		if !infos[i].Exited {
			infos[i].Ports = ports[infos[i].Pid]
		}
	}
}

// BusyError refuses a run while the session's shell is running a command (ID, Text, For)
// or has not come back to its prompt (ID 0).
type BusyError struct {
	Session string
	ID      int
	Text    string
	For     time.Duration
}

// Error says what runs and how to go on; errors.Is(err, ErrBusy) says it is busy.
func (e *BusyError) Error() string {
	if e.ID == 0 {
		return fmt.Sprintf("session %s's shell is not back at its prompt; read without input until it is", quote.Short(e.Session))
	}
	d := e.For.Round(time.Second)
	if e.For < time.Second {
		d = e.For.Round(time.Millisecond)
	}
	return fmt.Sprintf("session %s is still running command %d %s (for %s); read on without input, answer it with input, or interrupt it with C-c",
		quote.Short(e.Session), e.ID, quote.Short(e.Text), d)
}

// Is makes errors.Is(err, ErrBusy) true for a *BusyError.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }
