//go:build !linux

package pty

import "os"

// foregroundKnown is false where the package cannot see what the foreground process
// group is blocked in: waits there end on quiet output (idle), as before.
const foregroundKnown = false

func ptsPath(master *os.File) string { return "" }

func (s *session) foreground() (foregroundRead, bool) { return foregroundRead{}, false }

// backgroundJobs is false where the session's processes cannot be listed: a read at the
// prompt returns at once, as before.
func backgroundJobs(sid int, pts string) bool { return false }

func (s *session) masterUnread() int { return -1 }
