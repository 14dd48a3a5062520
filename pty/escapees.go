package pty

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// markVar names the environment variable every session's processes carry: the session's
// id and its Manager's nonce (see newNonce), "s1.3f9a0c21d4e6". The environment survives
// setsid and the death of a parent, so it is how a process that left the session's
// process group and session is still found to be the session's (escapees_linux.go).
const markVar = "MCP_HARNESS_SESSION"

// newNonce returns a Manager's part of the marks: ids repeat between Managers (and
// between a server and one running inside its session), marks do not.
func newNonce() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// leaderMarks maps the pid of each running session's program to its session's mark,
// for the callers that name a session by that pid (the port checks). Entries are added
// once the program has started and removed when its session is stopped.
var leaderMarks struct {
	sync.Mutex
	m map[int]string
}

func registerLeader(pid int, mark string) {
	leaderMarks.Lock()
	defer leaderMarks.Unlock()
	if leaderMarks.m == nil {
		leaderMarks.m = map[int]string{}
	}
	leaderMarks.m[pid] = mark
}

// unregisterLeader forgets pid's mark, unless it is another session's by now (the pid
// was reaped and taken by a new session's program).
func unregisterLeader(pid int, mark string) {
	leaderMarks.Lock()
	defer leaderMarks.Unlock()
	if leaderMarks.m[pid] == mark {
		delete(leaderMarks.m, pid)
	}
}

func leaderMark(pid int) string {
	leaderMarks.Lock()
	defer leaderMarks.Unlock()
	return leaderMarks.m[pid]
}
