// Package operator is a server's Unix socket for a person's commands on the same
// workspace (`mcp-harness sessions`, `attach`, `answer`): the listener, the check of who
// connects, the protocol, and the client side of it that those commands use. It is an
// adapter like tools/: each request is decoded, becomes one call on the PTY engine
// (pty.Manager's Overview, Attach, Ask) and its answer is shaped; it knows nothing of MCP
// and nothing of the command line. The composition root (internal/server) starts a
// Server once the store has given the server its number, and closes it first at the
// shutdown, so that a person's view ends with "the server is shutting down" before the
// sessions are ended.
//
// Decisions:
//
//   - One socket per server process, op-<number>-<pid>-<start>.sock in the state
//     directory (0700), made 0600. Its name says which process made it, so a stale one
//     (the server died) is told from a live one without connecting: the commands pass it
//     by, and Reconcile, run by every server at its start and then every minute, removes
//     it. A process whose start time cannot be read makes no socket (its name would read
//     as a dead server's). Nothing is followed on the way: a file already under the
//     server's own name is removed first, and the mode is given to the socket before
//     bind (socket_linux.go). Long state directories are reached through /proc/self/fd
//     (socket.go).
//   - Who listens: a socket is only a file, and a command that can write the state
//     directory (a server without its mount layer) can make one under a server's name.
//     So Dial asks the kernel who listens (SO_PEERCRED, SO_PEERPIDFD) and sends nothing
//     unless it is the process the name says, run by the same user, without
//     no_new_privs (checkServer, ErrNotServer); the CLI then takes a session only from
//     the server its id names, and from no number two sockets claim.
//   - Who may connect: the server's own user only (SO_PEERCRED; getpeereid's
//     LOCAL_PEERCRED on macOS), and never a process with no_new_privs, which every
//     command the sandbox confines has (peer_linux.go). Unix sockets stay open to
//     confined commands, so without this a command confined to the workspace could type
//     into a session started with less confinement, or answer its password prompt. A
//     person whose own shell runs with no_new_privs (some containers set it) cannot use
//     the operator commands either.
//   - The protocol is JSON lines (protocol.go), one purpose per connection: hello,
//     sessions, attach or answer. A view sends frames, the screen rendered by the engine
//     for the person's size with its styles, never the program's byte stream: the
//     person's terminal is not put into modes the program asked its own terminal for,
//     and a flood costs a few frames a second (pty's viewer.go coalesces them).
//   - An answer's line goes from the person to the program and nowhere else: it is not
//     logged (the log says that an answer was written, and its kind), the person is
//     shown which process asks (Asking's Asker), it is written only if that process
//     still asks the same question and nothing was typed meanwhile (pty's Ask and
//     Answer.Send), and the buffers that held it are cleared once it is written (the
//     scanner's line, the request's bytes; the client encodes it without encoding/json's
//     pooled buffers), as far as Go lets them be.
//   - Every goroutine is the Server's: the accept loop, the reconcile loop, one per
//     connection and, for a view, its reader of the person's keys. Close ends them all
//     (views get an End saying the server is shutting down) and removes the socket;
//     from then on no write to a person waits more than endTimeout, so one whose
//     terminal stopped reading does not hold the shutdown up, and what is still open
//     when Close's context ends is closed.
package operator
