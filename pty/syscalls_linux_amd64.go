package pty

import "golang.org/x/sys/unix"

// legacyWaitSyscall classifies the waiting calls that amd64 has besides the ones every
// Linux architecture has (select, poll and epoll_wait predate pselect6, ppoll and
// epoll_pwait, which arm64 has alone).
func legacyWaitSyscall(nr int64) waitKind {
	switch nr {
	case unix.SYS_SELECT:
		return waitSelect
	case unix.SYS_POLL:
		return waitPoll
	case unix.SYS_EPOLL_WAIT:
		return waitEpoll
	}
	return waitOther
}
