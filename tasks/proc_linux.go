package tasks

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExitNoReap blocks until process pid has exited, leaving it a zombie: while it is
// unreaped its pid, which is also its process group id, cannot be reused, so signalling
// the group afterwards cannot hit a stranger.
func waitExitNoReap(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != syscall.EINTR {
			return
		}
	}
}

// signalName is a signal's conventional name, e.g. "SIGKILL".
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return sig.String()
}
