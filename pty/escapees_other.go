//go:build !linux

package pty

import "time"

// awaitGone has nothing to wait for where no process outside the session's process
// group is signalled (signalSession).
func awaitGone([]procKey, time.Time) {}

// procKey names one process: a pid is reused, a pid with its start time is not.
type procKey struct {
	pid   int
	start uint64
}

// sessionRef names a session to the process checks, which find nothing here.
type sessionRef struct {
	leader int
	mark   string
	bySid  bool
	pts    string
}

func noteSession(sessionRef) {}
