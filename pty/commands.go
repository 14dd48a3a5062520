package pty

import (
	"bytes"
	"strings"
	"time"

	"github.com/mcp-harness/mcp-harness/pty/clean"
	"github.com/mcp-harness/mcp-harness/pty/marks"
	"github.com/mcp-harness/mcp-harness/pty/ring"
)

// maxHistory is how many finished commands a session remembers.
const maxHistory = 100

// maxCommandText bounds the text kept for one command line.
const maxCommandText = 4096

// A shell that does not mark where its prompt ends (B: fish, or a prompt an rc rewrote
// after the hook ran) has drawn it when the kernel says it reads its terminal (see
// foreground); where the kernel cannot say, or does not, when output has been quiet for
// promptSettle after the prompt started (A).
var promptSettle = map[bool]time.Duration{false: 50 * time.Millisecond, true: time.Second}[foregroundKnown]

// promptAfterEnd bounds how long a read that waits for a prompt waits for it after the
// command's end mark, before quiet output may end it as idle: an integrated shell draws
// its prompt right after, unless the machine is busy (wait.go).
const promptAfterEnd = 2 * time.Second

// Command is one command line a shell ran, as its integration marks told it.
type Command struct {
	ID        int       // 1 for the session's first command, then 2, 3...
	Text      string    // the command line
	ExitCode  *int      // nil while it runs, or when the shell did not say
	Cwd       string    // the shell's directory after it finished (before, while it runs)
	StartedAt time.Time // when it was typed (run) or its output started
	Duration  time.Duration
	Done      bool
	// Since and Cursor are the raw offsets of its output in the session's stream:
	// after the echoed command line, up to where the next prompt begins.
	Since, Cursor int64
}

// command is the command a shell is running, or has been typed and not yet started.
type command struct {
	Command
	run     bool  // typed by a run: its result holds only its output
	pasted  bool  // typed as one bracketed paste: Text is exactly what was pasted
	started bool  // C arrived: Since is where its output starts
	writeAt int64 // where the output stood when its line was typed; -1 if it came from C
	lines   int   // line breaks typed with it: the terminal echoes them all before any output
	cont    bool  // a continuation prompt ended (B) before it started: the shell reads the rest
	ended   bool  // D arrived
	endAt   int64
	endTime time.Time
	code    *int
}

// shellState is what the marks say about a session's shell. It is guarded by the
// session's mu and changed by the reader (marks) and by writes (typed lines).
type shellState struct {
	kind       shellKind // kindNone: no integration for this session
	marks      bool      // a mark has arrived: the shell is integrated
	atPrompt   bool      // a prompt started (A) and no command has been typed or started since
	promptAt   int64     // offset of the last A
	promptTime time.Time
	inputAt    int64 // offset of the last B after the last A, -1 if none yet
	drawnAt    int64 // promptAt when the kernel saw the shell read its terminal at that prompt
	typed      bool  // text was typed at this prompt without Enter
	typedText  []byte
	cwd        string
	cur        *command
	hist       []Command // finished commands, oldest first, at most maxHistory
	n          int       // commands so far
	paste      bool      // the program has turned bracketed paste on
	cols       int       // the terminal's width when the last mark came (zsh's PROMPT_SP)
	lost       string    // why the shell's prompts come without marks now; "" while they come (health.go)
}

// onMark applies one mark; at is the offset in the stream where it was, r the output.
func (st *shellState) onMark(m marks.Mark, at int64, now time.Time, r *ring.Buffer) {
	st.marks = true
	switch m.Kind {
	case 'A':
		st.lost = "" // a marked prompt: the integration is back
		if c := st.cur; c != nil && (c.started || c.ended) {
			st.finish(at, r)
		}
		// A prompt while a typed line has neither started nor ended is a redraw of the
		// prompt it was typed at: the command is still to come.
		st.atPrompt = st.cur == nil
		st.promptAt, st.promptTime, st.inputAt = at, now, -1
		st.typed, st.typedText = false, nil
	case 'B':
		switch c := st.cur; {
		case st.atPrompt:
			st.inputAt = at
		case c != nil && !c.started:
			// The end of a continuation prompt (PS2, while a heredoc or an open quote
			// is read): the output starts after the last one.
			c.Since, c.cont = at, true
		case c != nil && !c.ended:
			// A prompt while its command has not ended: the hook that marks a
			// command's end and a prompt's start no longer runs.
			st.loseIntegration(lostByMarks, r)
		}
	case 'C':
		c := st.cur
		if c == nil {
			c = st.newCommand(-1, now)
			c.Cwd = st.cwd
			st.cur = c
		}
		if c.started {
			return // a second C for one command line (a nested shell): the first counts
		}
		c.started, c.Since = true, at
		switch {
		case m.Cmdline != "" && !c.run:
			c.Text = clip(strings.TrimSpace(m.Cmdline))
		case !c.run && !c.pasted && st.inputAt >= st.promptAt && st.inputAt >= 0:
			// What the person saw typed: the cleaned echo between the prompt's end and
			// the output, which has every edit applied. Not for a paste, which has no
			// edits, and whose echo readline draws twice (highlighted, then again after
			// moving the cursor back up), which the cleaned text would keep both of.
			if echo := echoText(r, st.inputAt, at); echo != "" {
				c.Text = echo
			}
		}
		st.atPrompt = false
	case 'D':
		if c := st.cur; c != nil && !c.ended {
			c.ended, c.endAt, c.endTime, c.code = true, at, now, m.Code
		}
	case '7':
		st.cwd = m.Cwd
	}
}

// newCommand numbers a new command typed (writeAt >= 0) or started now.
func (st *shellState) newCommand(writeAt int64, now time.Time) *command {
	st.n++
	return &command{Command: Command{ID: st.n, StartedAt: now, Since: -1}, writeAt: writeAt}
}

// finish ends the current command at a prompt that started at promptAt.
func (st *shellState) finish(promptAt int64, r *ring.Buffer) {
	c := st.cur
	st.cur = nil
	end, endTime := promptAt, time.Now()
	if c.ended {
		end, endTime = c.endAt, c.endTime
	}
	c.Since = min(c.outputStart(r, end), end)
	c.Cursor = st.outputEnd(r, c.Since, end)
	c.ExitCode, c.Cwd, c.Done = c.code, st.cwd, true
	c.Duration = max(endTime.Sub(c.StartedAt), 0)
	st.hist = append(st.hist, c.Command)
	if len(st.hist) > maxHistory {
		st.hist = append(st.hist[:0], st.hist[len(st.hist)-maxHistory:]...)
	}
}

// typedLine records input written to the shell: a line typed at an idle prompt becomes
// the command that prompt is waiting for (shells without a C mark, dash, tell where its
// output starts and ends only by the line they were sent). Only the first line counts:
// what a shell does with the rest (a heredoc's body, a continuation, the next command)
// is not known until its marks say so. paste says the whole input is one pasted edit.
func (st *shellState) typedLine(data []byte, paste bool, at int64, now time.Time) {
	if !st.marks || !st.atPrompt || st.cur != nil {
		return
	}
	i := bytes.IndexAny(data, "\r\n")
	if paste {
		i = -1
		if n := len(data); n > 0 && (data[n-1] == '\n' || data[n-1] == '\r') {
			i = n - 1
		}
	}
	if i < 0 {
		if len(data) > 0 {
			st.typed = true
			if len(st.typedText) < maxCommandText {
				st.typedText = append(st.typedText, data...)
			}
		}
		return
	}
	line := append(st.typedText, data[:i]...) // what was typed at this prompt before, too
	if len(bytes.TrimSpace(line)) == 0 && !st.typed {
		return // an empty Enter: the shell shows a new prompt and runs nothing
	}
	c := st.newCommand(at, now)
	c.Text = clip(strings.TrimSpace(clean.Text(line)))
	c.Cwd, c.pasted = st.cwd, paste
	if !paste {
		c.lines = bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) - bytes.Count(data, []byte("\r\n"))
	}
	st.cur = c
	st.atPrompt, st.typed, st.typedText = false, false, nil
}

// startRun records a run's command line, about to be typed at offset at.
func (st *shellState) startRun(text string, at int64, now time.Time) *command {
	c := st.newCommand(at, now)
	c.Text, c.run, c.Cwd = text, true, st.cwd
	st.cur = c
	st.atPrompt, st.typed, st.typedText = false, false, nil
	return c
}

// promptReady reports whether the shell is idle at a prompt it has finished drawing.
func (st *shellState) promptReady(lastOutput, now time.Time) bool {
	if !st.waitsAtPrompt() {
		return false
	}
	return st.inputAt >= st.promptAt || st.drawnAt == st.promptAt || !now.Before(latest(lastOutput, st.promptTime).Add(promptSettle))
}

// waitsAtPrompt reports whether the shell is at a prompt (drawn or not) with no command.
func (st *shellState) waitsAtPrompt() bool { return st.marks && st.atPrompt && st.cur == nil }

// find returns a copy of command id with its figures as of now, ok false if the session
// has forgotten it.
func (st *shellState) find(id int, r *ring.Buffer, now time.Time) (Command, bool) {
	if c := st.cur; c != nil && c.ID == id {
		return st.snapshot(r, now), true
	}
	for i := len(st.hist) - 1; i >= 0; i-- {
		if st.hist[i].ID == id {
			return st.hist[i], true
		}
		if st.hist[i].ID < id {
			break
		}
	}
	return Command{}, false
}

// snapshot is the current command as a caller sees it: output so far, time so far.
func (st *shellState) snapshot(r *ring.Buffer, now time.Time) Command {
	c := st.cur
	out := c.Command
	out.Cursor = r.End()
	out.Since = c.outputStart(r, r.End())
	out.Duration = max(now.Sub(c.StartedAt), 0)
	if c.ended {
		out.ExitCode = c.code
		out.Duration = max(c.endTime.Sub(c.StartedAt), 0)
	}
	return out
}

// last returns the newest command: the current one, or else the last finished one.
func (st *shellState) last(r *ring.Buffer, now time.Time) (Command, bool) {
	if st.cur != nil {
		return st.snapshot(r, now), true
	}
	if n := len(st.hist); n > 0 {
		return st.hist[n-1], true
	}
	return Command{}, false
}

// outputStart returns where the command's output starts: at its C mark, or for a shell
// without one after the terminal's echo of the typed line, which ends at the first line
// break after the offset it was typed at. Until the echo has arrived, that is the end of
// the output so far (end). Once found it is kept.
func (c *command) outputStart(r *ring.Buffer, end int64) int64 {
	if c.Since >= 0 || c.writeAt < 0 {
		if c.Since < 0 {
			return end
		}
		return c.Since
	}
	const window = 64 << 10 // an echo is a few command lines
	data, from := r.AppendRange(nil, c.writeAt, min(end, c.writeAt+window))
	k := 0
	for n := max(c.lines, 1); n > 0; n-- {
		i := bytes.IndexByte(data[k:], '\n')
		if i < 0 {
			return end
		}
		k += i + 1
	}
	c.Since = from + int64(k)
	return c.Since
}

// outputEnd returns where a finished command's output ends, its D mark (or the next
// prompt) at end: before what zsh's PROMPT_SP printed there, which comes before the
// precmd hooks that send D, and before a last line that shows nothing (blankTail).
func (st *shellState) outputEnd(r *ring.Buffer, since, end int64) int64 {
	if st.kind == kindZsh {
		const window = 4 << 10 // PROMPT_SP is one terminal line and its mark
		data, from := r.AppendRange(nil, max(since, end-window), end)
		if i := clean.PromptSPStart(data, st.cols); i >= 0 {
			end = from + int64(i)
		}
	}
	return blankTail(r, since, end)
}

// blankTail returns where a finished command's output ends: at end, or before a last
// line that shows nothing (blanks after the last line break), which is the shell's, not
// the command's: zsh's PROMPT_SP pads a partial last line and returns before its prompt.
func blankTail(r *ring.Buffer, since, end int64) int64 {
	const window = 4 << 10 // PROMPT_SP's padding is one terminal line
	data, from := r.AppendRange(nil, max(since, end-window), end)
	i := bytes.LastIndexByte(data, '\n')
	if i < 0 && from > since {
		return end // the last line is longer than the window: not padding
	}
	if !clean.Blank(data[i+1:]) {
		return end // what is drawn on the alternate screen counts: it is shown
	}
	return from + int64(i) + 1
}

// echoText is the cleaned text of [from, to) of the output: a command line as echoed.
func echoText(r *ring.Buffer, from, to int64) string {
	if to-from > 64<<10 {
		return ""
	}
	data, _ := r.AppendRange(nil, from, to)
	return clip(strings.TrimSpace(clean.Text(data)))
}

func clip(s string) string {
	if len(s) <= maxCommandText {
		return s
	}
	s = s[:maxCommandText]
	for len(s) > 0 && s[len(s)-1]&0xc0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xc0 {
		s = s[:len(s)-1]
	}
	return s
}

// done reports whether command id has finished (or was forgotten long ago).
func (st *shellState) done(id int) bool {
	return id <= st.n && (st.cur == nil || st.cur.ID != id)
}

// settleAt returns when a prompt being drawn without a B mark will count as drawn, or
// the zero time when no such prompt is pending.
func (st *shellState) settleAt(lastOutput time.Time) time.Time {
	if !st.waitsAtPrompt() || st.inputAt >= st.promptAt || st.drawnAt == st.promptAt {
		return time.Time{}
	}
	return latest(lastOutput, st.promptTime).Add(promptSettle)
}

// unrun forgets a run's command line that never reached the shell.
func (st *shellState) unrun(c *command) {
	if st.cur != c {
		return
	}
	st.cur = nil
	st.atPrompt = true
	if st.n == c.ID {
		st.n--
	}
}
