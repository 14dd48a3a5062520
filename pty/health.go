package pty

import (
	"context"
	"time"

	"github.com/mcp-harness/mcp-harness/pty/ring"
)

// Integration health: a shell can go on showing prompts without marks. An rc hook or a
// command replaces PROMPT_COMMAND, precmd_functions or PS1 (bash's hook puts itself back
// at every prompt it still runs at, but a command that empties PROMPT_COMMAND leaves no
// hook to do it), PROMPT_COMMAND is readonly, or `exec zsh` replaces the integrated shell
// with one that has none. The integration then believes a command still runs, and
// without a check a run would wait for an end that never comes and every later run
// would be refused as busy. The session notices such a prompt in two ways:
//
//   - by the marks: a prompt's end (B, which lives in PS1) comes while the command it
//     believes running has not ended (no D), so the hook that marks a command's end and a
//     prompt's start no longer runs;
//   - by the kernel (Linux): output has been quiet, and the shell process itself, the one
//     the session started, reads its terminal while the integration believes a command
//     runs (or that no prompt has started since the last marks), and reads it the way a
//     shell reads a command line, not the way a command asks a question, and the reader
//     has nothing more (see checkIntegration). A shell that exec'd another program
//     (its /proc cmdline is not the one that marked the last prompt) has lost its
//     integration whatever reads. Otherwise a line editor (bash's readline, zsh's zle)
//     puts the terminal in raw mode without echo, which bash's and zsh's read builtins
//     do not; dash has no line editor and reads its command line in one large read, its
//     read builtin one byte at a time. A continuation line (PS2, which carries B) is a
//     question, not a lost prompt. fish is judged by the exec rule only: its marks come
//     from events no prompt theme replaces, and its reader reads a continuation line
//     like a command line.
//
// Where it can, the integration re-arms itself instead: bash's hook puts itself back into
// PROMPT_COMMAND at every prompt it still runs at, zsh's preexec hook puts the precmd
// hooks back, and hands the integration on to a shell it sees an exec start (mh.zsh).
//
// From then on the session says integration: false, the command it believed running is
// finished at that prompt with no exit code, and a run is refused (ErrNoIntegration)
// with the reason, never left busy. The integration comes back at the next prompt that
// is marked (a prompt start, A, with the session's nonce). Raw mode without echo alone
// does not make a line editor: bash's readline turns ICRNL off (read -s -n 1 keeps it),
// zsh's zle turns INLCR on (its one-key questions, RM_STAR, read -k, read -q, leave it
// off), and zle before a command's C mark is zsh asking (correct, correctall), since
// preexec has not run. Still taken for a lost prompt until their command's marks come:
// what uses the line editor itself after the C mark (bash's `read -e`, zsh's `select`
// and `vared`).

// Reasons for a lost integration, as a run's refusal says them.
const (
	lostByMarks  = "its prompt came without the marks of the command's end: something removed the shell's prompt hook (PROMPT_COMMAND, precmd_functions)"
	lostByKernel = "it shows a prompt without integration marks: something replaced the shell's prompt hook or its prompt (PROMPT_COMMAND, precmd_functions, PS1), or made them readonly"
)

// integrated reports whether the shell's prompts come with marks: a mark has arrived and
// none has gone missing since.
func (st *shellState) integrated() bool { return st.marks && st.lost == "" }

// loseIntegration records that the shell shows a prompt without marks, for reason why:
// the command believed running ends here, its status unknown.
func (st *shellState) loseIntegration(why string, r *ring.Buffer) {
	st.lost = why
	if st.cur != nil {
		st.finish(r.End(), r)
	}
	st.atPrompt, st.typed, st.typedText = false, false, nil
}

// checkIntegration asks the kernel, when the integration believes the shell busy and
// output has been quiet, whether the shell shows a prompt without marks (see above), and
// if so records the integration as lost. What the shell wrote before it blocked may
// still be in the reader's hands, and it may be the marks: the reader is made to catch
// up first (syncReader), and the answer counts only if nothing came. Where the reader
// cannot be made to, the answer must hold twice, inputConfirm apart with no output
// between, as an "input" answer must; retry is then when to ask again, zero when
// nothing is pending. The caller does not hold s.mu.
func (s *session) checkIntegration(ctx context.Context, now time.Time) (retry time.Time) {
	if !foregroundKnown || s.kind == kindNone {
		return time.Time{}
	}
	s.mu.Lock()
	st := &s.sh
	quietSince := latest(s.lastOutput, s.lastWrite.Add(inputAfterWrite-inputQuiet))
	// Input on its way is not quiet: the command it types is in the state, not yet in
	// the terminal, where the shell still reads at its prompt (see noteInputLocked).
	suspect := s.writing == 0 && st.marks && st.lost == "" && !st.waitsAtPrompt() && !s.status.exited && !now.Before(quietSince.Add(inputQuiet))
	inputs := s.inputSeq
	started := false
	if c := st.cur; c != nil {
		started = c.started
		if !c.started && c.cont {
			suspect = false // a continuation line: the shell asks for the rest of the command
		}
	}
	end := s.ring.End()
	s.mu.Unlock()
	if !suspect {
		return time.Time{}
	}
	why, synced := "", false
	if fg, ok := s.foreground(); ok && fg.pid == s.pid {
		if why = s.promptWithoutMarks(started); why != "" {
			synced = s.syncReader(ctx)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.unmarked
	s.unmarked = unmarkedPrompt{}
	// Output meanwhile may have been the marks after all; input noted meanwhile may be
	// what the shell was about to read.
	if why == "" || s.ring.End() != end || s.inputSeq != inputs || st.lost != "" || st.waitsAtPrompt() {
		return time.Time{}
	}
	if !synced {
		if seen.end != end || seen.at.IsZero() {
			s.unmarked = unmarkedPrompt{end: end, at: now}
			return now.Add(inputConfirm)
		}
		if confirm := seen.at.Add(inputConfirm); now.Before(confirm) {
			s.unmarked = seen
			return confirm
		}
	}
	st.loseIntegration(why, &s.ring)
	s.wakeLocked(true)
	return time.Time{}
}

// unmarkedPrompt is a prompt without marks seen once (checkIntegration), at the end of
// the output then.
type unmarkedPrompt struct {
	end int64
	at  time.Time
}

// integrationLost reports whether the shell's prompts come without marks now.
func (s *session) integrationLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sh.lost != ""
}
