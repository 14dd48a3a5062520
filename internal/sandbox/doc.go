// Package sandbox confines the commands an agent runs (tasks and terminal sessions, and
// everything they start) to what the server's --sandbox and --network allow: a mode for
// the file system (workspace-write, read-only, off) and a network setting (on, off), each
// of which a call may tighten but never loosen.
//
// What holds, on Linux (every rule is enforced by the kernel, before the command's first
// instruction, for it and everything it starts, setsid and daemons included):
//
//   - Landlock (no privilege needed, Linux 5.13+): writes, creations, removals, renames,
//     links and truncation only under the mode's writable roots (Config.Roots); TCP bind
//     and connect refused for network off (ABI 4+).
//   - seccomp, for network off: no socket but AF_UNIX, in the native and the 32-bit ABI,
//     and no io_uring.
//   - no_new_privs: no setuid, setgid or file capability takes effect (sudo cannot work).
//   - For a root server: capabilities outside Docker's default set are dropped, so a root
//     command cannot read the server's memory or environment through /proc, load modules
//     or open files by handle. Landlock refuses any confined command /proc access to
//     processes outside its sandbox (the server's environ, mem, fd, root) in any case.
//   - The mount layer, where the server can make mount namespaces (root, or an ordinary
//     user whose server entered a user namespace at start: userns_linux.go): the file
//     system is read-only for the command but for its writable roots, and the state and
//     artifacts directories are read-only even inside the workspace, so chmod, chown,
//     touch -d and rm -rf .mcp-harness fail too. Without it, Landlock and seccomp hold, and
//     the state directory inside the workspace stays writable, chmod and file times
//     outside the roots are not refused (the README says so).
//
// On macOS a Seatbelt profile (sandbox-exec) gives the same rules; elsewhere nothing is
// enforced, and a default policy degrades to off, saying so everywhere, while an explicit
// one refuses to start.
//
// Reads stay open everywhere in every mode: a secret file the user can read is readable
// by a command, and only network off keeps it from leaving the machine.
package sandbox
