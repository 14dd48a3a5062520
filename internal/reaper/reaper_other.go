//go:build !linux

package reaper

import (
	"errors"
	"syscall"
)

// Start does nothing on this system, which has no child subreaper: an orphan goes to
// init, as it always did. The error says so; stop may be called all the same.
func Start() (stop func(), err error) {
	return func() {}, errors.New("reaper: no child subreaper on this system; orphans of sessions go to init")
}

// Active reports whether this process is a child subreaper now: never here.
func Active() bool { return false }

// Collect reports whether pid is gone; this system adopts no orphans to collect.
func Collect(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}
