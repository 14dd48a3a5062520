// Package reaper makes this process the reaper of what its children leave behind (Linux:
// a child subreaper, PR_SET_CHILD_SUBREAPER), so that a process a PTY session started
// stays this process's descendant even after it called setsid and its parent exited:
// the sessions can then find it, and end it, instead of losing it to init.
//
// Adopted orphans become this process's children, and their exit statuses must be
// collected here or they stay zombies. A blanket wait for any child would take the status
// of a child that os/exec (a session's program, a task's command) is about to collect for
// its own Cmd.Wait. So the reaper collects only a zombie child that nothing in this
// process holds a pidfd for: Go's os package (Go 1.23 and later, on Linux 5.4 and later)
// holds a pidfd for every child it starts, taken atomically at the fork, until its Wait
// has collected it; an orphan the kernel handed over has none. A round that cannot read
// every pidfd (the process is out of descriptors) collects nothing, since a pidfd it
// missed could be a Cmd's, and the next round, a second later, looks again. Start checks that this
// holds on the running system before it changes anything, and does nothing where it does
// not. A child started without the os package (syscall.ForkExec) would be collected here:
// nothing in this module starts one.
package reaper
