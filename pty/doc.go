// Package pty runs programs under pseudo-terminals that outlive the call that started
// them, for an agent that types into shells, REPLs, installers and dev servers one tool
// call at a time. It is the engine behind the shell_* tools and knows nothing of MCP.
//
// A Manager owns the sessions of one server process. Each session's program runs in its
// own session and process group (setsid, with the terminal as its controlling tty), and
// signals go to the whole group and to the rest of the session's processes, so a
// background job, or a server that left with setsid, dies with the session. A goroutine per session drains the terminal into a bounded ring
// buffer whether or not anyone reads, so the program never blocks on a full terminal and
// memory stays bounded however much it prints. Output is addressed by absolute byte
// offsets in the stream; what fell out of the ring is reported as DroppedBytes, never
// silently skipped.
//
// Decisions a caller should know:
//
//   - A command runs under sh -c with exec in front of its last simple command
//     (`cd web && exec npm run dev`), so the session's pid, exit code and signal are the
//     program's: a C-c the program handles is not the shell's death by SIGINT, and kill
//     of the pid reaches the program. Where exec would change the meaning or the line is
//     more than the check reads (a pipeline, a subshell or compound command, a line
//     break, also one after a comment, a backquote, a last command in the background or
//     a shell builtin), the command runs under sh as written and the pid is the shell's;
//     so it does after an earlier command that may set a trap, which exec would skip:
//     trap, . or source (the file may set one), eval, any of them behind `command`, or
//     a command named by an expansion ($setup). What only sets up the shell for the
//     program (set -e, ulimit, umask, exec 3>&1, assignments) keeps exec, since the
//     program inherits it. Write exec yourself to choose.
//   - Ids are "s1", "s2", ... in creation order and never reused within a Manager (an id
//     taken by an Open that failed is skipped), unless Config.SessionID names them: a
//     server that shares its workspace with others gives ServerSessionIDs of the number
//     the workspace's store handed it, "s4-1", "s4-2", ..., so an id names one session on
//     the workspace (ids.go; the seam for ids that must not be guessable).
//   - A wait ends at the first of: WaitFor matches, the program exits, output settles,
//     the timeout. With WaitFor set and Idle zero, settling does not end the wait: a
//     caller that names a pattern wants the pattern, and a build that pauses for a second
//     has not answered. Set Idle explicitly to have both.
//   - Open waits for its first output to settle even when some has already arrived; IO
//     without input or WaitFor returns unread output at once.
//   - "exited" means the program's process has been reaped and its output drained: the
//     terminal reported the end of output or, when a background grandchild still holds
//     the terminal open, 200ms passed. The exit status is published only then, so Exited
//     never comes with output still in flight.
//   - WaitFor always sees cleaned text (see clean.Text), also when Raw is set, so one pattern
//     works for both. The tty echoes typed input, so anchor patterns (`(?m)^42$`) when
//     the input itself would match.
//   - The write shares the call's Timeout. A write the program does not take is given up
//     at the deadline; Written says how much went in and the reason is "timeout".
//   - MaxBytes keeps the first quarter and the last three quarters of the text (the end
//     of terminal output, with the prompt and the last result, matters most), cut at line
//     breaks where one is close, with a one-line marker between them:
//     "[... N bytes omitted; re-read them with since=O ...]", where O is the raw offset
//     of the line the omitted text starts in.
//   - Cleaning follows what a terminal shows on one line rather than a simpler rule: a
//     carriage return moves to the start of the line and what follows overwrites it, so
//     a shorter overwrite keeps the tail of the longer text, as on screen.
//   - Cleaned text matches the terminal: the cleaner models the terminal's width as it
//     was when each part was drawn (a resize applies from where it happened in the
//     stream), so a carriage return after a line wrapped goes back to the start of the
//     row the cursor is on only, and what follows overwrites that row, as on screen. The
//     text, though, joins the rows a line wrapped onto back into one line, as a copy from
//     the terminal or tmux capture-pane -J does: only line feeds end lines, so a URL or a
//     log line reads whole and WaitFor matches it whatever the width. Spaces padded across
//     the margin and then a carriage return (how zsh's PROMPT_SP reaches a fresh row
//     without a line feed) end the line. Trailing spaces are dropped (except on the last
//     line, up to the cursor: "$ " stays a prompt), and DEC line drawing shows as box
//     characters.
//   - zsh's PROMPT_SP (its PROMPT_EOL_MARK, % or # in reverse video, padded with spaces
//     to the terminal's width, then a carriage return) is the shell's: zsh prints it
//     before the precmd hooks, so before the D mark, and a finished command's range ends
//     where it begins (clean.PromptSPStart recognises it by its exact padding at the
//     width of the moment), so `printf foo` has the output "foo".
//   - While the alternate screen is on (DEC modes 1047/1049: vim, less, top, menus), what
//     a full-screen program draws is not text a read returns: a read that ends on it
//     returns the main screen's text before it and then the screen's rows (trimmed, the
//     empty rows at the bottom dropped), so a vim edit costs its screen, not its repaint
//     stream; a read of no new output returns nothing, as before (Screen asks for the
//     screen whatever was printed). A read whose range leaves the alternate screen (vim's :q) returns the main
//     screen's text around it only, as a terminal shows the main screen again; a re-read
//     (End) that ends on the alternate screen before the newest output, whose screen is
//     gone, ends with a one-line note instead. A finished command's output that ends on
//     the alternate screen (the program died without leaving it: vim killed, a crashed
//     curses program, tput smcup; or the command ran after one did) is the main screen's
//     text before it and then what the command printed on the alternate screen since it
//     was last switched on, cleaned as the stream shows it: the screen of the moment the
//     command ended is gone once the prompt is drawn over it, and its rows would hold
//     what earlier programs drew, while what the command printed is its output. The
//     read cursor moves over the whole
//     stream as always; Raw returns the stream, and WaitFor also sees what is drawn on
//     the alternate screen (vim's "-- INSERT --"), as the stream shows it. Without an
//     emulator (Config.NoEmulator, or a terminal larger than MaxScreenCells) reads return
//     the cleaned stream.
//   - A session's processes are all of it, also those that called setsid: those in its
//     session, those whose parent is one of them, and the orphans this process adopted
//     as a child subreaper that carry the session's mark, MCP_HARNESS_SESSION=<id>.<nonce>,
//     in their environment (escapees_linux.go; the server is the subreaper, see
//     internal/reaper). An orphan whose environment was reset (sudo's env_reset, env -i)
//     is the session's when its standard input, output or error is the session's
//     terminal, or when a check (waitPort, ports, Close, the end of every IO call) saw it
//     as the session's before its parent died: each process seen is remembered by pid
//     and start time. Still missed: one that left, lost its parent and its mark between
//     two checks and holds no descriptor of the session's terminal (sudo setsid -f sleep
//     under sudo's use_pty, whose descriptors are sudo's own inner terminal); and without
//     the subreaper an orphan goes to init and only what was seen before is found.
//   - Close always ends with SIGKILL to the group and to all of the session's processes,
//     also for a program that has exited, since it may have left a background job
//     running, and returns once they are gone (up to 5s for one that cannot die). Once
//     the program's pid is free, the group and session id are skipped if an unrelated
//     process has taken the pid; what the mark finds is still killed.
//   - Reads and Resize work on an exited session until it is closed; only input is
//     refused (ErrExited). When MaxSessions is reached, Open evicts the oldest exited
//     session; with none, it fails with a *LimitError naming what to close.
//   - A Recorder's errors are logged and ignored: a session works without its record.
//
// Shell integration (integration.go; the marks, commands.go; its health, health.go; the
// kernel's view, foreground_linux.go and ports_linux.go):
//
//   - A run types its line and a carriage return; if text was typed at that prompt
//     without Enter, C-u clears it first. It takes one line of printable text: several
//     lines go as Input.Data with Paste.
//   - A run's result holds only its command's output: Since is where it starts, Cursor
//     where it ends (before the next prompt); the read cursor moves past the prompt,
//     which counts as read. Other results' Command is the command running, or the newest
//     one if it finished during the call or within what it returns.
//   - Quiet output ends a run, a WaitPort wait and an integrated shell's first read only
//     when Idle is given; "prompt" ends plain waits without WaitFor (a pattern is what its
//     caller wants), "input" ends every wait.
//   - "input" needs the kernel (Linux): a process of the foreground group blocked in
//     read, select, poll or epoll on the terminal, the output quiet for 50ms (100ms after
//     input was written, which the program may not have taken yet) and nothing left for
//     the reader, counted by poll, not TIOCINQ: a write waits in the kernel's flip
//     buffer for a worker that a loaded machine runs late, and TIOCINQ does not count it
//     (python -i looked "waiting for a line" with no prompt yet). The terminal's modes
//     must be the same before and after the reader is looked at (python sets raw keys
//     just before its prompt), or the check is made again. The shell itself reading is
//     "prompt" at a marked prompt, and nothing before its first marks: its prompt and a
//     question look the same. Before the answer counts, the reader is made to catch up
//     (a read deadline in the past cuts its Read short; it answers between reads), so
//     output and marks the program wrote before it blocked are in the buffer and the
//     shell state: no time hold. Input a call sends counts as written from the moment
//     the call records it (a typed line or a run's command line is in the shell state
//     before the terminal has it) until its write returns, and a look at the kernel that
//     such input falls within counts for nothing: until the shell has the line, it reads
//     at its prompt with its line editor, which is not the typed command asking.
//   - "input" looks through relays (sudo with use_pty, script, su: a reader that holds a
//     pty master) to the inner terminal's foreground group, judged the same way with the
//     inner terminal's modes, and sees a process that opened the terminal by name from
//     outside the foreground group (gpg-agent's pinentry) or was passed it (the tmux
//     server, looked through as a relay to the pane's terminal). A relay whose far side
//     is out of sight (waiting on the terminal and a socket: ssh, docker exec) asks only
//     after 1s of quiet output; a Unix socket pair whose both ends the program holds (an
//     event loop's wake-up: asyncio's self-pipe) is no far side. After a call ended with "input", a read without input waits for
//     new output instead of answering "input" again for the same quiet state.
//     As an ordinary user, what a setuid relay (sudo) runs cannot be inspected: its own
//     password prompt is seen (asleep with the terminal in password mode), a program
//     working under it is not taken for a question, and a question asked under it is
//     not seen.
//   - InputWanted.Prompt is the last line the waiting program printed since its command
//     started (a program session: since it started), "" when it printed none.
//   - A read without input at an idle prompt returns at once unless a background job of
//     the shell (its session, outside its own group, not stopped, its stdout or stderr
//     the terminal) still runs: then it is a long-poll read, which also ends ("prompt")
//     once the last job is gone. A daemon the rc started with its output elsewhere
//     (gitstatusd) does not count.
//   - Marks carry the session's nonce (integration.go); a mark without it is output. A
//     prompt shown without marks once they came (a prompt hook removed, exec of another
//     shell) turns Integration false until the next marked prompt: the command believed
//     running is finished there without an exit code, and a run is refused with
//     ErrNoIntegration and the reason, not ErrBusy. How such a prompt is told from a
//     question is in health.go: the shell's own questions (zsh's RM_STAR, correct, read
//     -k and -q; bash's read -rsn1 and select) are input, told from the line editor by
//     the terminal's input flags; bash's read -e and zsh's select and vared use the line
//     editor itself and are taken for a lost prompt until their command's marks come.
//   - An exec that hands the integration on to a new shell (zsh's preexec sees exec zsh,
//     exec bash --norc, exec dash -i) ends, at the new shell's first prompt, with exit
//     code 0: the exec succeeded. Each script makes its first prompt say so (zsh and a
//     bash that loads from PROMPT_COMMAND report 0 there, not the status of the last
//     line of the startup files; dash's $? there is that of our ENV file's last line, 0).
//   - Commands are numbered from 1 per session; History (Get) keeps the last 100
//     finished ones. For sh/dash, which mark no command start, only the first line typed
//     at a prompt is recorded, its output starting after the terminal's echo of what was
//     typed (or the last continuation prompt).
//   - End re-reads [Since, End) and waits for nothing; it moves no cursor.
//   - WaitPort and Info.Ports count TCP sockets in LISTEN held by the session's
//     processes, setsid'd ones included; Linux only, refused elsewhere.
//   - Paste with bracketed paste off types the text as it is.
//   - Input.Keys are sent as a terminal sends them in the modes the program has set (the
//     scanner follows them): the cursor keys, Home and End as ESC O x under application
//     cursor mode (DECCKM), the keypad keys (KP0..KP9, KPEnter...) as ESC O x under
//     application keypad mode (DECKPAM/DECNKM). The mode is that of all output read
//     before the keys are written; without a terminal side (Config.NoEmulator) keys go
//     in the normal modes.
//   - Every session has a terminal side (screen.go): a scanner that reads all output on
//     its own goroutine and answers the terminal queries programs wait on (vt.Scanner
//     lists them), and a VT emulator (vt.Emulator) that keeps the screen for
//     ReadOptions.Screen. Answers go out in query order; a cursor position report waits
//     for the emulator to reach its query. The emulator may lag: while output arrives in
//     bulk it waits for a pause, then skips to the newest place the screen starts afresh
//     (a full clear, a screen switch, a reset, or the last two screenfuls of plain
//     scrolling rows); a snapshot or a cursor query catches it up first. A screen
//     reflects at least the output up to the call's Cursor. Terminals over
//     MaxScreenCells have no emulator.
//   - The screen resizes as tmux's does: a shrink drops the rows below the cursor, then
//     scrolls the top rows off, so the cursor row stays in view; a grow brings back the
//     rows scrolled off since a shrink (at most about 8,000 cells of them; none across a
//     skip ahead or ED 3), then adds blank rows. Lines are cut or padded to a new width,
//     not rewrapped (as in xterm; tmux rewraps). A wide character that does not fit the
//     last column goes to the next row with autowrap on, and is dropped with it off.
//
// A person at the session (viewer.go, ask.go):
//
//   - Attach makes a Viewer: frames of the screen the emulator keeps, rendered with its
//     styles for the person's terminal size (the part around the cursor when it is
//     smaller, blank beyond the screen when larger; the program's terminal keeps its
//     size unless the viewer asks to resize it). A frame brings the emulator up to the
//     end of the output first, as a snapshot does, and is the only parsing a viewer adds:
//     frames come frameSettle after a change, at least minFrameGap apart, and
//     bulkFrameGap apart while output floods. Viewers of one size share a rendering. A
//     viewer never moves the agent's read cursor.
//   - A viewer is read-only until SetWrite; its keys (and an answer) go through
//     personWrite, noted as input in flight as the agent's is, and the agent's next IO
//     says PersonTyped (then no more until a person types again); ReadResult and Info
//     count the viewers. List and Get report PersonTyped without clearing it.
//   - Ask takes a session's one pending answer (ErrAnswerPending for a second) when its
//     program waits for input now, judged as a wait judges "input" (the output quiet, the
//     kernel's view of the reader, the terminal's modes), and records the question: its
//     kind and prompt, the foreground group, the process that reads (Asker: pid and
//     start time, executable, command line, setuid, relay) and the input sequence.
//     Answer.Send writes the line and a carriage return only if all of them are as they
//     were, checked again under the lock that notes the write (else a NotAskingError
//     with Changed and Why, nothing written). Meanwhile the agent's input is refused
//     (AnswerPendingError, a BUSY): it could end the question and ask another in its
//     place. The program that asks is trusted to be what it says. Nothing here logs
//     what a person typed.
//   - Overview is List with what each session does now (SessionState, and what a program
//     waits for): the kernel asked about every live session side by side, each given
//     overviewWait for its output to go quiet.
//
// What touches no session state lives in subpackages, which know nothing of this one: ring
// (the output buffer, by absolute offset), clean (terminal output as the text a person
// reads, capped, and WaitFor matched against it as it streams), marks (shell integration
// marks read out of the stream) and vt (the terminal's query answers, skip points and
// emulator behind the screen). This package owns the sessions, their goroutines and locks,
// and what the kernel knows.
//
// Every error a caller can act on wraps one of the Err* sentinels (or is a typed error
// that matches one with errors.Is), so the MCP adapter maps errors to codes without
// parsing messages; anything else (a failed fork, an ioctl error) is a fault of the host.
package pty
