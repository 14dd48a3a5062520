//go:build !linux

package pty

import "os"

// foregroundKnown is false where the package cannot see what the foreground process
// group is blocked in: waits there end on quiet output (idle), as before.
const foregroundKnown = false

func ptsPath(master *os.File) string { return "" }

func (s *session) foreground() (pid int, kind InputKind, ok bool) { return 0, "", false }
