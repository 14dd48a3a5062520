//go:build !linux

// The process handling that macOS and the other BSDs share: both have kqueue and neither
// has a parent-death signal.

package tasks

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExitNoReap blocks until process pid has exited, leaving it a zombie, as the Linux
// version does: while it is unreaped its pid, which is also its process group id, cannot
// be reused, so signalling the group afterwards cannot hit a stranger.
//
// macOS and the BSDs have no waitid with WNOWAIT in golang.org/x/sys (FreeBSD's wait6 has
// it, macOS has nothing portable), so a kqueue EVFILT_PROC watch for NOTE_EXIT stands in:
// it reports the exit and reaps nothing. Watching a process that has already exited fails
// with ESRCH, which says the same thing. If no watch can be set at all (kqueue fails only
// when the process is out of file descriptors), this returns at once: the caller then
// signals a group whose leader may still run, so the task ends early and is recorded as
// killed, which is visible, rather than waiting on nothing forever.
func waitExitNoReap(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		return
	}
	defer unix.Close(kq)
	var watch unix.Kevent_t
	unix.SetKevent(&watch, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	watch.Fflags = unix.NOTE_EXIT
	// The event slot also receives a failed registration (EV_ERROR, ESRCH: exited already).
	// After EINTR the watch is registered again: adding a watch that exists changes nothing.
	changes, events := []unix.Kevent_t{watch}, make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, changes, events, nil)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		return
	}
}

// taskProcAttr puts a task's command in a session (and process group) of its own, so the
// whole group can be signalled. macOS and the BSDs have no parent-death signal: a task
// outlives a runner that dies without shutting down. What stands in is reconciliation: the
// next runner finds the dead runner's tasks by the pid and start time it recorded and kills
// what is left of them.
func taskProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
