// Package pty runs programs under pseudo-terminals that outlive the call that started
// them, for an agent that types into shells, REPLs, installers and dev servers one tool
// call at a time. It is the engine behind the shell_* tools: it knows nothing of MCP.
//
// A Manager owns the sessions of one server process. Each session's program runs in its
// own session and process group (setsid, with the terminal as its controlling tty), and
// every signal goes to the whole group and to the rest of the session, so a background
// job dies with the session. A goroutine per session drains the terminal into a bounded
// ring buffer whether or not anyone reads, so the program never blocks on a full
// terminal and memory stays bounded however much it prints. Output is addressed by
// absolute byte offsets in the stream; what fell out of the ring is reported as
// DroppedBytes, never silently skipped.
//
// Decisions worth knowing when calling it:
//
//   - Ids are "s1", "s2", ... in creation order, never reused within a Manager (an id
//     taken by an Open that failed is skipped).
//   - A wait ends at the first of: WaitFor matches, the program exits, output settles,
//     the timeout. With WaitFor and no explicit Idle, settling does not end the wait: a
//     caller that names a pattern wants the pattern, and a build that pauses for a second
//     has not answered. Open waits for its first output to settle even when some has
//     already arrived; IO without input or WaitFor returns unread output at once.
//   - "exited" means the program's process has been reaped and its output drained: the
//     terminal reported end of output, or, when a background grandchild still holds the
//     terminal open, 200ms passed. The exit status is published only then, so Exited
//     never comes with output still in flight.
//   - WaitFor always sees cleaned text (Clean), also when Raw is set, so one pattern
//     works for both. The tty echoes typed input, so anchor patterns (`(?m)^42$`) when the
//     input itself would match.
//   - The write shares the read Timeout. It is given up at the deadline and Written says
//     how much went in; the call then reports "timeout" with whatever output there is.
//   - MaxBytes keeps the first quarter and the last three quarters of the text (the end
//     of terminal output matters most), cut at line breaks where one is close, with a
//     marker line between them: "[... N bytes omitted; re-read them with since=O ...]".
//     O is the raw offset of the line the omitted text starts in.
//   - Cleaning follows what a terminal would show on one line, not a simplified rule: a
//     carriage return moves to the start of the line and what follows overwrites it, so a
//     shorter overwrite keeps the tail of the longer text (see Clean).
//   - Close always ends with SIGKILL to the group and session, also for a program that
//     has exited, since it may have left a background job; the kill is skipped if the
//     leader's pid has been reused by an unrelated process.
//   - A Recorder's errors are logged and ignored: a session works without its record.
//   - Resize and reads work on an exited session (until Close); only input is refused.
package pty
